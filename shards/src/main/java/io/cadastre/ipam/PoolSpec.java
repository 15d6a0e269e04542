package io.cadastre.ipam;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * A pool's definition: the address range and how it is carved and shared.
 *
 * @param name the pool's name: lower-case letters, digits, '-' and '.', 1-63 characters
 * @param cidr the pool's range
 * @param blockPrefix the prefix length of its blocks: IPv4 20-32, IPv6 116-128 (at most 4,096
 *     addresses a block, as Calico); defaults are 26 and 122
 * @param strictAffinity true: a node allocates only from blocks affine to it, and never borrows
 * @param allowBorrowing true: when the pool has no free block left, a node may allocate from
 *     another node's block (ignored under strict affinity)
 * @param maxBlocksPerNode how many blocks one node may claim; 0 for no limit
 * @param nodeSelector which nodes the pool serves when a request names no pool: a Kubernetes
 *     label selector ({@link NodeSelector}); {@code ""} (or {@code null}) for every node
 * @param excluded ranges of the pool whose addresses are never assigned (like Calico's IP
 *     reservations), each inside {@code cidr}; kept sorted, {@code null} for none
 */
public record PoolSpec(
        String name,
        Cidr cidr,
        int blockPrefix,
        boolean strictAffinity,
        boolean allowBorrowing,
        int maxBlocksPerNode,
        String nodeSelector,
        List<Cidr> excluded) {

    /** Parsed node selectors by expression; pools are few, so is this. */
    private static final Map<String, NodeSelector> SELECTORS = new ConcurrentHashMap<>();

    private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?");

    /** @throws IllegalArgumentException with a message saying which field is wrong and why */
    public PoolSpec {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "pool name '"
                            + name
                            + "' must be 1-63 lower-case letters, digits, '-' or '.', starting and ending alphanumeric");
        }
        if (cidr == null) {
            throw new IllegalArgumentException("pool " + name + " has no CIDR");
        }
        int bits = cidr.family().bits();
        if (blockPrefix < cidr.prefixLength()) {
            throw new IllegalArgumentException(
                    "pool "
                            + name
                            + ": block size /"
                            + blockPrefix
                            + " is larger than the pool "
                            + cidr);
        }
        if (blockPrefix > bits || bits - blockPrefix > Block.MAX_HOST_BITS) {
            throw new IllegalArgumentException(
                    "pool "
                            + name
                            + ": block size /"
                            + blockPrefix
                            + " must be between /"
                            + (bits - Block.MAX_HOST_BITS)
                            + " and /"
                            + bits
                            + " for "
                            + cidr.family());
        }
        if (maxBlocksPerNode < 0) {
            throw new IllegalArgumentException(
                    "pool " + name + ": maxBlocksPerNode must be 0 (no limit) or more");
        }
        try {
            nodeSelector = NodeSelector.parse(nodeSelector).expression();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("pool " + name + ": " + e.getMessage(), e);
        }
        excluded = excluded == null ? List.of() : excluded.stream().distinct().sorted().toList();
        for (Cidr range : excluded) {
            if (!cidr.contains(range)) {
                throw new IllegalArgumentException(
                        "pool " + name + ": excluded range " + range + " is not inside " + cidr);
            }
        }
    }

    /** A pool that serves every node and excludes nothing. */
    public PoolSpec(
            String name,
            Cidr cidr,
            int blockPrefix,
            boolean strictAffinity,
            boolean allowBorrowing,
            int maxBlocksPerNode) {
        this(
                name,
                cidr,
                blockPrefix,
                strictAffinity,
                allowBorrowing,
                maxBlocksPerNode,
                "",
                List.of());
    }

    /** @return the default block prefix length: /26 for IPv4, /122 for IPv6 (Calico's defaults) */
    public static int defaultBlockPrefix(IpFamily family) {
        return family == IpFamily.V4 ? 26 : 122;
    }

    public IpFamily family() {
        return cidr.family();
    }

    /** @return whether a node may allocate from another node's block when no free block is left */
    public boolean borrowingAllowed() {
        return allowBorrowing && !strictAffinity;
    }

    /** @return whether the pool serves a node with these labels (its node selector matches) */
    public boolean selects(Map<String, String> nodeLabels) {
        // Asked on every ADD that names no pool: parse each selector once, not per request.
        return SELECTORS.computeIfAbsent(nodeSelector, NodeSelector::parse).matches(nodeLabels);
    }

    /** @return whether a canonical address lies in an excluded range */
    public boolean isExcluded(String address) {
        return excluded.stream().anyMatch(range -> range.contains(address));
    }

    /**
     * @return the part of the excluded ranges inside one block of the pool, as CIDRs (CIDRs nest or
     *     are disjoint, so each is the range itself or, when the range holds the block, the block)
     */
    public List<Cidr> excludedWithin(Cidr block) {
        return excluded.stream()
                .filter(range -> range.overlaps(block))
                .map(range -> range.contains(block) ? block : range)
                .distinct()
                .toList();
    }

    /** @return whether every address of the block is excluded: such a block is never claimed */
    public boolean isWhollyExcluded(Cidr block) {
        return excluded.stream().anyMatch(range -> range.contains(block));
    }

    /** @return whether the two definitions differ only in what may change after creation */
    public boolean sameRangeAs(PoolSpec other) {
        return cidr.equals(other.cidr)
                && blockPrefix == other.blockPrefix
                && excluded.equals(other.excluded);
    }
}
