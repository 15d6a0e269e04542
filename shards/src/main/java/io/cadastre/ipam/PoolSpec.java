package io.cadastre.ipam;

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
 */
public record PoolSpec(
        String name,
        Cidr cidr,
        int blockPrefix,
        boolean strictAffinity,
        boolean allowBorrowing,
        int maxBlocksPerNode) {

    private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?");

    /** @throws IllegalArgumentException with a message saying which field is wrong and why */
    public PoolSpec {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("pool name '" + name
                    + "' must be 1-63 lower-case letters, digits, '-' or '.', starting and ending alphanumeric");
        }
        if (cidr == null) {
            throw new IllegalArgumentException("pool " + name + " has no CIDR");
        }
        int bits = cidr.family().bits();
        if (blockPrefix < cidr.prefixLength()) {
            throw new IllegalArgumentException("pool " + name + ": block size /" + blockPrefix
                    + " is larger than the pool " + cidr);
        }
        if (blockPrefix > bits || bits - blockPrefix > Block.MAX_HOST_BITS) {
            throw new IllegalArgumentException("pool " + name + ": block size /" + blockPrefix + " must be between /"
                    + (bits - Block.MAX_HOST_BITS) + " and /" + bits + " for " + cidr.family());
        }
        if (maxBlocksPerNode < 0) {
            throw new IllegalArgumentException("pool " + name + ": maxBlocksPerNode must be 0 (no limit) or more");
        }
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
}
