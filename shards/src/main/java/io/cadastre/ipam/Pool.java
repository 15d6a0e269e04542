package io.cadastre.ipam;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A pool and its block affinities: which block of the pool is claimed by which node. The pool is
 * the source of truth for affinity (DESIGN.md); a block is claimed by at most one node.
 *
 * <p>Queries are pure; {@link #claim}, {@link #release} and {@link #redefine} are for the entity's
 * event handlers only. Blocks are handed out lowest address first.
 */
@JsonAutoDetect(fieldVisibility = Visibility.NONE, getterVisibility = Visibility.NONE,
        isGetterVisibility = Visibility.NONE)
public final class Pool {
    private PoolSpec spec;
    private boolean disabled;
    private final TreeMap<Cidr, String> claims;

    @JsonCreator
    Pool(@JsonProperty("spec") PoolSpec spec,
            @JsonProperty("disabled") boolean disabled,
            @JsonProperty("claims") Map<Cidr, String> claims) {
        this.spec = spec;
        this.disabled = disabled;
        this.claims = new TreeMap<>(claims);
    }

    /** @return a pool with no claimed block */
    public static Pool of(PoolSpec spec) {
        return new Pool(spec, false, Map.of());
    }

    @JsonProperty("spec")
    public PoolSpec spec() {
        return spec;
    }

    /** @return true when no new block may be claimed; existing allocations stay */
    @JsonProperty("disabled")
    public boolean disabled() {
        return disabled;
    }

    /** @return claimed blocks to their nodes, in address order */
    @JsonProperty("claims")
    public Map<Cidr, String> claims() {
        return new TreeMap<>(claims);
    }

    /** @return an independent copy, e.g. for a snapshot */
    public Pool copy() {
        return new Pool(spec, disabled, claims);
    }

    /** @return the node that a block is affine to, if claimed */
    public Optional<String> ownerOf(Cidr block) {
        return Optional.ofNullable(claims.get(block));
    }

    /** @return the blocks affine to the node, in address order */
    public List<Cidr> blocksOf(String node) {
        return claims.entrySet().stream().filter(e -> e.getValue().equals(node)).map(Map.Entry::getKey).toList();
    }

    /** @return the lowest block of the pool that no node has claimed, if any is left */
    public Optional<Cidr> firstUnclaimedBlock() {
        BigInteger count = spec.cidr().subnetCount(spec.blockPrefix());
        BigInteger index = BigInteger.ZERO;
        // Claims are sorted by address, so walking them in order finds the first gap.
        for (Cidr claimed : claims.keySet()) {
            BigInteger claimedIndex = spec.cidr().subnetIndex(claimed);
            if (claimedIndex.compareTo(index) > 0) {
                break;
            }
            index = claimedIndex.add(BigInteger.ONE);
        }
        return index.compareTo(count) < 0 ? Optional.of(spec.cidr().subnet(spec.blockPrefix(), index)) : Optional.empty();
    }

    /**
     * @return why the node may not claim another block, or empty when it may
     */
    public Optional<String> refusalToClaim(String node) {
        if (disabled) {
            return Optional.of("pool " + spec.name() + " is disabled");
        }
        if (spec.maxBlocksPerNode() > 0 && blocksOf(node).size() >= spec.maxBlocksPerNode()) {
            return Optional.of("node " + node + " already holds " + spec.maxBlocksPerNode()
                    + " blocks of pool " + spec.name() + " (maxBlocksPerNode)");
        }
        return Optional.empty();
    }

    /** @return the block of this pool that holds the literal address, if the pool holds it */
    public Optional<Cidr> blockContaining(String address) {
        return spec.cidr().contains(address)
                ? Optional.of(spec.cidr().subnetContaining(address, spec.blockPrefix()))
                : Optional.empty();
    }

    /**
     * Records a claim (event handler only).
     *
     * @throws IllegalStateException when the block is claimed by another node
     */
    public void claim(Cidr block, String node) {
        String owner = claims.putIfAbsent(block, node);
        if (owner != null && !owner.equals(node)) {
            throw new IllegalStateException(block + " is already affine to " + owner);
        }
    }

    /** Drops a claim (event handler only). */
    public void release(Cidr block) {
        claims.remove(block);
    }

    /** Replaces the flags of the definition, keeping range and block size (event handler only). */
    public void redefine(PoolSpec newSpec) {
        spec = newSpec;
    }

    public void setDisabled(boolean disabled) {
        this.disabled = disabled;
    }
}
