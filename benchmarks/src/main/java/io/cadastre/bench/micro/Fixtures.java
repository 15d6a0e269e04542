package io.cadastre.bench.micro;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Block;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import java.util.HexFormat;
import java.util.Random;

/** The blocks, pools and attachments the micro-benchmarks work on: default block sizes, realistic handles. */
final class Fixtures {
    /** Addresses of a default block: IPv4 /26, IPv6 /122. */
    static final int BLOCK_CAPACITY = 64;

    static final String NODE = "node-a";

    private Fixtures() {}

    /** @return the CIDR of a default-sized block of the family's pool */
    static Cidr blockCidr(IpFamily family) {
        return Cidr.parse(family == IpFamily.V4 ? "10.244.3.64/26" : "fd00:10:244::1c0/122");
    }

    /** @return the range of a pool that holds {@link #blockCidr} */
    static Cidr poolCidr(IpFamily family) {
        return Cidr.parse(family == IpFamily.V4 ? "10.244.0.0/16" : "fd00:10:244::/56");
    }

    /**
     * @return the {@code n}-th attachment of the node: handle {@code <network>.<64 hex digits>}, as the
     *     plugin builds it from the container id, so handle comparisons cost what they cost in production
     */
    static Allocation attachment(int n) {
        byte[] containerId = new byte[32];
        new Random(n).nextBytes(containerId);
        return new Allocation(
                "cadastre-net." + HexFormat.of().formatHex(containerId),
                "eth0",
                "default",
                "pod-" + n,
                NODE,
                1_700_000_000_000L + n);
    }

    /**
     * @return a block affine to {@link #NODE} whose first {@code others} addresses are held by
     *     attachments 0 to {@code others - 1}
     */
    static Block blockHolding(IpFamily family, int others) {
        Block block = Block.empty(blockCidr(family));
        block.claimAffinity(NODE);
        for (int n = 0; n < others; n++) {
            block.allocate(block.nextFreeOrdinal().getAsInt(), attachment(n));
        }
        return block;
    }
}
