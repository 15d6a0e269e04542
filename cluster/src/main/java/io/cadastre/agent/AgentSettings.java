package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AskTimeouts;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

/**
 * The agent's settings, read from the {@code cadastre} section of the HOCON configuration
 * ({@code application.conf} documents each key and its environment override).
 *
 * @param nodeName this host's node name
 * @param persistence which journal the entities use
 * @param dataDir where the embedded journal lives
 * @param cniSocket the CNI endpoint's Unix socket path
 * @param askTimeouts how long to wait for an entity, in all and per attempt, and which
 *     state-changing replies are read back first
 * @param dataplaneThreads platform threads for netlink work
 * @param pools every configured pool
 * @param defaultPools the pool per family used when a netconf names none
 */
public record AgentSettings(
        String nodeName,
        Persistence persistence,
        Path dataDir,
        Path cniSocket,
        AskTimeouts askTimeouts,
        int dataplaneThreads,
        List<PoolSpec> pools,
        Map<IpFamily, String> defaultPools) {

    /**
     * @throws IllegalArgumentException naming the key when a setting is invalid: a malformed
     *     pool, overlapping pools, a duplicate name, a default pool that is not defined
     */
    public static AgentSettings from(Config root) {
        Config c = root.getConfig("cadastre");
        String node = c.getString("node-name").isBlank() ? hostname() : c.getString("node-name").trim();
        Config defaults = c.getConfig("pool-defaults");
        List<PoolSpec> pools = new ArrayList<>();
        for (Config p : c.getConfigList("pools")) {
            Config merged = p.withFallback(defaults);
            Cidr cidr;
            try {
                cidr = Cidr.parse(merged.getString("cidr"));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cadastre.pools: " + e.getMessage(), e);
            }
            int blockSize = merged.hasPath("block-size") ? merged.getInt("block-size") : PoolSpec.defaultBlockPrefix(cidr.family());
            pools.add(new PoolSpec(merged.getString("name"), cidr, blockSize, merged.getBoolean("strict-affinity"),
                    merged.getBoolean("allow-borrowing"), merged.getInt("max-blocks-per-node")));
        }
        validatePools(pools);
        Map<IpFamily, String> defaultPools = new EnumMap<>(IpFamily.class);
        for (String name : c.getStringList("default-pools")) {
            PoolSpec spec = pools.stream().filter(p -> p.name().equals(name)).findFirst().orElseThrow(() ->
                    new IllegalArgumentException("cadastre.default-pools names " + name + ", which is not in cadastre.pools"));
            if (defaultPools.put(spec.family(), name) != null) {
                throw new IllegalArgumentException("cadastre.default-pools: two pools for " + spec.family());
            }
        }
        return new AgentSettings(node, Persistence.of(root), Path.of(c.getString("data-dir")), Path.of(c.getString("cni-socket")),
                askTimeouts(c), c.getInt("dataplane-threads"), List.copyOf(pools), Map.copyOf(defaultPools));
    }

    private static AskTimeouts askTimeouts(Config c) {
        try {
            return new AskTimeouts(c.getDuration("ask-timeout"), c.getDuration("ask-attempt-timeout"),
                    c.getDuration("confirm-replies-slower-than"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("cadastre.ask-timeout, ask-attempt-timeout, confirm-replies-slower-than: "
                    + e.getMessage(), e);
        }
    }

    private static void validatePools(List<PoolSpec> pools) {
        var names = new HashSet<String>();
        for (int i = 0; i < pools.size(); i++) {
            PoolSpec a = pools.get(i);
            if (!names.add(a.name())) {
                throw new IllegalArgumentException("cadastre.pools: pool name " + a.name() + " appears twice");
            }
            for (int j = 0; j < i; j++) {
                PoolSpec b = pools.get(j);
                if (a.cidr().overlaps(b.cidr())) {
                    throw new IllegalArgumentException("cadastre.pools: " + a.name() + " (" + a.cidr() + ") overlaps "
                            + b.name() + " (" + b.cidr() + ")");
                }
            }
        }
    }

    private static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("cadastre.node-name is empty and the hostname cannot be read", e);
        }
    }
}
