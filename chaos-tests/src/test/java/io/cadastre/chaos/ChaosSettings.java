package io.cadastre.chaos;

import io.cadastre.ipam.Cidr;
import java.security.SecureRandom;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The chaos run's parameters, from system properties (Surefire passes {@code -D} options of the
 * {@code mvn} command line through):
 *
 * <ul>
 *   <li>{@code chaos.seed}: the seed of the fault schedule and the clients' choices; default random
 *       (printed, and quoted in every failure).
 *   <li>{@code chaos.minutes}: minimum minutes of fault injection (default 1). The run first
 *       injects the mandatory faults ({@code chaos.kills} 2, {@code chaos.pauses} 1,
 *       {@code chaos.partitions} 1, {@code chaos.cassandraRestarts} 1, in a seeded order: the
 *       default run in the test command, a few minutes), then more drawn at random until the
 *       minutes are up. The full run: {@code -Dchaos.kills=10 -Dchaos.pauses=3
 *       -Dchaos.partitions=2 -Dchaos.minutes=3} (about 10 minutes); {@code -Dchaos.minutes=30} is
 *       a soak.
 *   <li>{@code chaos.hosts} (3), {@code chaos.clients} per host (3), {@code chaos.fullShare}
 *       (0.07: ADDs with the full plugin and a real pod netns), {@code chaos.retryShare} (0.05:
 *       repeated ADDs of a live attachment), {@code chaos.thinkMillis} (20: a client's pause
 *       between operations is uniform in 0..this).
 * </ul>
 *
 * The IPv4 pool is deliberately small (198.18.0.0/23: 8 blocks of /26 for 3 hosts), so blocks
 * fill, every block gets claimed, nodes borrow, and addresses are reused; the IPv6 pool is large
 * so that IPv4 is what runs out.
 */
record ChaosSettings(
        long seed,
        double minutes,
        int hosts,
        int clientsPerHost,
        double fullShare,
        double retryShare,
        int thinkMillis,
        int kills,
        int pauses,
        int partitions,
        int cassandraRestarts) {

    static final String IPV4_POOL = "198.18.0.0/23";
    static final int IPV4_BLOCK = 26;
    static final String IPV6_POOL = "fd00:198:3::/112";
    static final int IPV6_BLOCK = 122;

    static ChaosSettings fromSystemProperties() {
        String seed = System.getProperty("chaos.seed", "");
        return new ChaosSettings(
                seed.isBlank() ? new SecureRandom().nextLong() : Long.parseLong(seed.strip()),
                Double.parseDouble(System.getProperty("chaos.minutes", "1")),
                Integer.getInteger("chaos.hosts", 3),
                Integer.getInteger("chaos.clients", 3),
                Double.parseDouble(System.getProperty("chaos.fullShare", "0.07")),
                Double.parseDouble(System.getProperty("chaos.retryShare", "0.05")),
                Integer.getInteger("chaos.thinkMillis", 20),
                Integer.getInteger("chaos.kills", 2),
                Integer.getInteger("chaos.pauses", 1),
                Integer.getInteger("chaos.partitions", 1),
                Integer.getInteger("chaos.cassandraRestarts", 1));
    }

    /** The agents' pool configuration (HOCON, as {@link Member} takes it). */
    String poolsConfig() {
        return "cadastre.pools = [\n"
                + "  { name = \"chaos-ipv4\", cidr = \""
                + IPV4_POOL
                + "\", block-size = "
                + IPV4_BLOCK
                + ", allow-borrowing = true }\n"
                + "  { name = \"chaos-ipv6\", cidr = \""
                + IPV6_POOL
                + "\", block-size = "
                + IPV6_BLOCK
                + " }\n"
                + "]\n"
                + "cadastre.default-pools = [\"chaos-ipv4\", \"chaos-ipv6\"]\n";
    }

    /**
     * Every address of the IPv4 pool that the exhaustion check's IPAM-only ADDs can be given: all
     * but the pool's network and broadcast address, since an IPAM-only result puts the address on
     * the pool's CIDR as its subnet (shards/DESIGN.md, "IPAM-only on an L2 subnet"). A routed pod
     * of the full plugin may have those two as well.
     */
    static Set<String> ipv4Addresses() {
        Cidr pool = Cidr.parse(IPV4_POOL);
        Set<String> all = new LinkedHashSet<>();
        for (long i = 1; i < pool.size().longValueExact() - 1; i++) {
            all.add(pool.addressAt(i));
        }
        return all;
    }

    /** @return the block of the address's pool that holds it */
    static Cidr blockOf(String address) {
        return Checker.isIpv4(address)
                ? Cidr.parse(IPV4_POOL).subnetContaining(address, IPV4_BLOCK)
                : Cidr.parse(IPV6_POOL).subnetContaining(address, IPV6_BLOCK);
    }

    /** @return the persistence id of the block entity that owns the address */
    static String blockPersistenceId(String address) {
        return "Block|" + blockOf(address).entityId();
    }

    int ipv4PoolSize() {
        return Cidr.parse(IPV4_POOL).size().intValueExact();
    }

    @Override
    public String toString() {
        return "seed "
                + seed
                + ", "
                + minutes
                + " min of faults (at least "
                + kills
                + " kills, "
                + pauses
                + " pauses, "
                + partitions
                + " partitions, "
                + cassandraRestarts
                + " Cassandra restarts), "
                + hosts
                + " hosts x "
                + clientsPerHost
                + " clients, full share "
                + fullShare
                + ", retry share "
                + retryShare
                + ", pools "
                + IPV4_POOL
                + "/"
                + IPV4_BLOCK
                + " and "
                + IPV6_POOL
                + "/"
                + IPV6_BLOCK;
    }
}
