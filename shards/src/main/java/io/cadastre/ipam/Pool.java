package io.cadastre.ipam;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * A pool and its block affinities: which block of the pool is claimed by which node. The pool is
 * the source of truth for affinity (root DESIGN.md, invariant 3); a block is claimed by at most
 * one node.
 *
 * <p>Queries are pure; {@link #claim}, {@link #release} and {@link #redefine} are for the entity's
 * event handlers only. Blocks are handed out lowest address first.
 */
@JsonAutoDetect(
        fieldVisibility = Visibility.NONE,
        getterVisibility = Visibility.NONE,
        isGetterVisibility = Visibility.NONE)
public final class Pool {
    private PoolSpec spec;
    private boolean disabled;
    private final TreeMap<Cidr, String> claims;
    private final TreeSet<Cidr> releasing;

    /** @param releasing {@code null} (a snapshot from before blocks could be released) for none */
    @JsonCreator
    Pool(
            @JsonProperty("spec") PoolSpec spec,
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
        return claims.entrySet().stream()
                .filter(e -> e.getValue().equals(node))
                .map(Map.Entry::getKey)
                .toList();
    }

    /**
     * The block a repeated claim finds ({@code PoolEntity.ClaimBlock} with its {@code known}).
     *
     * @param known the blocks the claiming node is known to use
     * @param within the ranges the block must hold an allowed address of; {@code null} for any block
     * @return the lowest block affine to {@code node} that is outside {@code known}, not being
     *     released and holds an address {@code within} allows, if any
     */
    public Optional<Cidr> claimOutside(String node, Set<Cidr> known, RangeSet within) {
        return claims.entrySet().stream()
                .filter(e -> e.getValue().equals(node))
                .map(Map.Entry::getKey)
                .filter(b -> !known.contains(b) && !releasing.contains(b))
                .filter(b -> within == null || within.allowsAnyIn(b))
                .findFirst();
    }

    /** @return the lowest block of the pool that no node has claimed, if any is left */
    public Optional<Cidr> firstUnclaimedBlock() {
        BigInteger count = spec.cidr().subnetCount(spec.blockPrefix());
        return firstUnclaimedBlockBetween(
                BigInteger.ZERO, count.subtract(BigInteger.ONE), block -> true);
    }

    /**
     * @param within the ranges the block must hold an allowed address of; {@code null} for any block
     * @return the lowest unclaimed block of the pool that holds an address the ranges allow, the
     *     ranges tried in order (host-local's order); any unclaimed block when {@code within} is null
     */
    public Optional<Cidr> firstUnclaimedBlock(RangeSet within) {
        if (within == null) {
            return firstUnclaimedBlock();
        }
        Cidr range = spec.cidr();
        int hostBits = range.family().bits() - spec.blockPrefix();
        for (AddressRange r : within.ranges()) {
            BigInteger lo = range.firstValue().max(r.firstValue());
            BigInteger hi = range.lastValue().min(r.lastValue());
            if (lo.compareTo(hi) > 0) {
                continue;
            }
            Optional<Cidr> found =
                    firstUnclaimedBlockBetween(
                            lo.subtract(range.firstValue()).shiftRight(hostBits),
                            hi.subtract(range.firstValue()).shiftRight(hostBits),
                            r::allowsAnyIn);
            if (found.isPresent()) {
                return found;
            }
        }
        return Optional.empty();
    }

    /** The lowest unclaimed, not wholly excluded block with index in [from, to] that {@code usable} accepts. */
    private Optional<Cidr> firstUnclaimedBlockBetween(
            BigInteger from, BigInteger to, Predicate<Cidr> usable) {
        Cidr range = spec.cidr();
        int prefix = spec.blockPrefix();
        BigInteger index = from;
        // Claims are sorted by address, so walking them in order finds the first gap; a block
        // wholly inside an excluded range is skipped with the whole range.
        while (index.compareTo(to) <= 0) {
            Cidr candidate = range.subnet(prefix, index);
            Optional<Cidr> excludedRange =
                    spec.excluded().stream().filter(r -> r.contains(candidate)).findFirst();
            if (excludedRange.isPresent()) {
                Cidr r = excludedRange.get();
                index =
                        range.subnetIndex(
                                        r.prefixLength() >= prefix
                                                ? candidate
                                                : r.subnet(prefix, BigInteger.ZERO))
                                .add(
                                        r.prefixLength() >= prefix
                                                ? BigInteger.ONE
                                                : r.subnetCount(prefix));
            } else if (claims.containsKey(candidate) || !usable.test(candidate)) {
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
            return Optional.of(
                    "node "
                            + node
                            + " already holds "
                            + spec.maxBlocksPerNode()
                            + " blocks of pool "
                            + spec.name()
                            + " (maxBlocksPerNode)");
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
