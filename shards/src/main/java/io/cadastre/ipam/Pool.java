package io.cadastre.ipam;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.math.BigInteger;
import java.util.List;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

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
    private final TreeSet<Cidr> releasing;

    /** @param releasing {@code null} (a snapshot from before blocks could be released) for none */
    @JsonCreator
    Pool(@JsonProperty("spec") PoolSpec spec,
            @JsonProperty("disabled") boolean disabled,
            @JsonProperty("claims") Map<Cidr, String> claims,
            @JsonProperty("releasing") Set<Cidr> releasing) {
        this.spec = spec;
        this.disabled = disabled;
        this.claims = new TreeMap<>(claims);
        this.releasing = releasing == null ? new TreeSet<>() : new TreeSet<>(releasing);
    }

    /** @return a pool with no claimed block */
    public static Pool of(PoolSpec spec) {
        return new Pool(spec, false, Map.of(), Set.of());
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

    /**
     * @return the claimed blocks whose release has begun ({@link #beginRelease}): still affine to
     *     their node, but the node must not use them again
     */
    @JsonProperty("releasing")
    public Set<Cidr> releasing() {
        return new TreeSet<>(releasing);
    }

    /** @return an independent copy, e.g. for a snapshot */
    public Pool copy() {
        return new Pool(spec, disabled, claims, releasing);
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
        Cidr range = spec.cidr();
        int prefix = spec.blockPrefix();
        BigInteger count = range.subnetCount(prefix);
        BigInteger index = BigInteger.ZERO;
        // Claims are sorted by address, so walking them in order finds the first gap; a block
        // wholly inside an excluded range is skipped with the whole range.
        Iterator<Cidr> claimed = claims.keySet().iterator();
        Cidr nextClaim = claimed.hasNext() ? claimed.next() : null;
        while (index.compareTo(count) < 0) {
            Cidr candidate = range.subnet(prefix, index);
            while (nextClaim != null && nextClaim.compareTo(candidate) < 0) {
                nextClaim = claimed.hasNext() ? claimed.next() : null;
            }
            Optional<Cidr> excludedRange = spec.excluded().stream().filter(r -> r.contains(candidate)).findFirst();
            if (excludedRange.isPresent()) {
                Cidr r = excludedRange.get();
                index = range.subnetIndex(r.prefixLength() >= prefix ? candidate : r.subnet(prefix, BigInteger.ZERO))
                        .add(r.prefixLength() >= prefix ? BigInteger.ONE : r.subnetCount(prefix));
            } else if (candidate.equals(nextClaim)) {
                index = index.add(BigInteger.ONE);
            } else {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
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

    /** Drops a claim, and its release mark (event handler only). */
    public void release(Cidr block) {
        claims.remove(block);
        releasing.remove(block);
    }

    /** Marks a claimed block as being released (event handler only). */
    public void beginRelease(Cidr block) {
        if (claims.containsKey(block)) {
            releasing.add(block);
        }
    }

    /** Unmarks a block whose release was given up: it holds allocations (event handler only). */
    public void cancelRelease(Cidr block) {
        releasing.remove(block);
    }

    /** Replaces the flags of the definition, keeping range and block size (event handler only). */
    public void redefine(PoolSpec newSpec) {
        spec = newSpec;
    }

    public void setDisabled(boolean disabled) {
        this.disabled = disabled;
    }
}
