package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.dataplane.IpPrefix;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.NodeSelector;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.SpecialRanges;
import io.cadastre.kube.KubeSettings;
import io.cadastre.routing.RoutingMode;
import io.cadastre.routing.RoutingSettings;
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
import java.util.Optional;
import java.util.TreeMap;

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
 * @param cleanup when what no DEL released is released ({@code cadastre.cleanup})
 * @param pools the configured pools, defined in the cluster at start (more can be created at run time)
 * @param defaultPools the pools used, in order, when a request names none; empty for every enabled
 *     pool whose node selector matches this node
 * @param nodeLabels this node's labels, for the pools' node selectors
 * @param poolCatalogMaxAge how long this agent uses its copy of the cluster's pool catalogue
 * @param routing how this host reaches other hosts' pods ({@code cadastre.routing})
 * @param kubernetes whether and how Kubernetes objects drive the IPAM ({@code cadastre.kubernetes})
 * @param procSys where the kernel's sysctl tree is, for the network settings under its {@code net}
 *     ({@code cadastre.proc-sys}: {@code /proc/sys}, or a writable mount of the host's
 *     {@code /proc/sys/net} in a container whose own {@code /proc/sys} is read-only)
 */
public record AgentSettings(
        String nodeName,
        Persistence persistence,
        Path dataDir,
        Path cniSocket,
        AskTimeouts askTimeouts,
        int dataplaneThreads,
        Cleanup cleanup,
        List<PoolSpec> pools,
        List<String> defaultPools,
        Map<String, String> nodeLabels,
        Duration poolCatalogMaxAge,
        RoutingSettings routing,
        KubeSettings kubernetes,
        Path procSys) {

    /**
     * @throws IllegalArgumentException naming the key when a setting is invalid: a malformed
     *     pool, a pool over special-purpose addresses ({@link SpecialRanges}), overlapping pools,
     *     a duplicate name, a default pool that is not defined, a
     *     {@code cadastre.cleanup} duration that is not positive, a {@code cadastre.kubernetes} value ({@link KubeSettings#from};
     *     an empty pod label selector with the embedded journal),
     *     a {@code proc-sys} that is not an absolute path
     */
    public static AgentSettings from(Config root) {
        Config c = root.getConfig("cadastre");
        KubeSettings kubernetes =
                KubeSettings.from(c.getConfig("kubernetes"), c.getString("node-name"));
        String node =
                !c.getString("node-name").isBlank()
                        ? c.getString("node-name").trim()
                        : kubernetes.enabled() && !kubernetes.nodeName().isEmpty()
                                ? kubernetes.nodeName()
                                : hostname();
        kubernetes = kubernetes.enabled() ? kubernetes.withNodeName(node) : KubeSettings.DISABLED;
        Config defaults = c.getConfig("pool-defaults");
        List<PoolSpec> pools = new ArrayList<>();
        for (Config p : c.getConfigList("pools")) {
            Config merged = p.withFallback(defaults);
            Cidr cidr;
            try {
                cidr = Cidr.parse(merged.getString("cidr"));
                SpecialRanges.requireUsable(cidr);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cadastre.pools: " + e.getMessage(), e);
            }
            int blockSize =
                    merged.hasPath("block-size")
                            ? merged.getInt("block-size")
                            : PoolSpec.defaultBlockPrefix(cidr.family());
            try {
                List<Cidr> excluded =
                        merged.getStringList("excluded").stream().map(Cidr::parse).toList();
                pools.add(
                        new PoolSpec(
                                merged.getString("name"),
                                cidr,
                                blockSize,
                                merged.getBoolean("strict-affinity"),
                                merged.getBoolean("allow-borrowing"),
                                merged.getInt("max-blocks-per-node"),
                                merged.getString("node-selector"),
                                excluded));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cadastre.pools: " + e.getMessage(), e);
            }
        }
        validatePools(pools);
        Map<IpFamily, String> perFamily = new EnumMap<>(IpFamily.class);
        for (String name : c.getStringList("default-pools")) {
            // A default pool may be one created at run time; a configured one is checked here.
            pools.stream()
                    .filter(p -> p.name().equals(name))
                    .findFirst()
                    .ifPresent(
                            spec -> {
                                if (perFamily.put(spec.family(), name) != null) {
                                    throw new IllegalArgumentException(
                                            "cadastre.default-pools: two pools for "
                                                    + spec.family());
                                }
                            });
        }
        Duration catalogMaxAge = c.getDuration("pool-catalog-max-age");
        if (catalogMaxAge.isNegative() || catalogMaxAge.isZero()) {
            throw new IllegalArgumentException(
                    "cadastre.pool-catalog-max-age must be positive, not " + catalogMaxAge);
        }
        Persistence persistence = Persistence.of(root);
        if (kubernetes.enabled()
                && persistence == Persistence.EMBEDDED
                && kubernetes.bootstrap().podLabelSelector().isEmpty()) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes.bootstrap.pod-label-selector is empty: with the embedded"
                            + " journal the agent looks for the agents' pods on other nodes");
        }
        return new AgentSettings(
                node,
                persistence,
                Path.of(c.getString("data-dir")),
                Path.of(c.getString("cni-socket")),
                askTimeouts(c),
                c.getInt("dataplane-threads"),
                Cleanup.from(c),
                List.copyOf(pools),
                List.copyOf(c.getStringList("default-pools")),
                nodeLabels(c),
                catalogMaxAge,
                routing(c),
                kubernetes,
                procSys(c));
    }

    /**
     * @return {@code cadastre.proc-sys}
     * @throws IllegalArgumentException naming the key when it is not an absolute path
     */
    static Path procSys(Config c) {
        Path path = Path.of(c.getString("proc-sys").trim());
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException(
                    "cadastre.proc-sys must be an absolute path, not '" + path + "'");
        }
        return path.normalize();
    }

    /**
     * @return {@code cadastre.routing}
     * @throws IllegalArgumentException naming the key for an unknown mode, a VNI or port out of
     *     range, a duration that is not positive, an interface name that cannot be one
     */
    static RoutingSettings routing(Config c) {
        Config r = c.getConfig("routing");
        RoutingMode mode;
        try {
            mode = RoutingMode.parse(r.getString("mode"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("cadastre.routing.mode: " + e.getMessage(), e);
        }
        String device = r.getString("interface").trim();
        if (!device.isEmpty() && (device.length() > 15 || !device.matches("[^/:\\s]+"))) {
            throw new IllegalArgumentException(
                    "cadastre.routing.interface: '" + device + "' is no interface name");
        }
        return new RoutingSettings(
                mode,
                device,
                r.getInt("vni"),
                r.getInt("port"),
                positive(c, "routing.resync-interval"),
                r.getDuration("debounce"),
                natOutgoing(r.getConfig("nat-outgoing")));
    }

    /**
     * @return {@code cadastre.routing.nat-outgoing}
     * @throws IllegalArgumentException naming the key for an exempt entry that is not CIDR
     *     notation with host bits zero
     */
    static RoutingSettings.NatOutgoing natOutgoing(Config n) {
        List<IpPrefix> exempt = new ArrayList<>();
        for (String cidr : n.getStringList("exempt")) {
            try {
                exempt.add(IpPrefix.parse(cidr.trim()));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "cadastre.routing.nat-outgoing.exempt: " + e.getMessage(), e);
            }
        }
        return new RoutingSettings.NatOutgoing(n.getBoolean("ipv4"), n.getBoolean("ipv6"), exempt);
    }

    /**
     * @return {@code cadastre.node-labels} (an object), then the pairs of {@code node-labels-env}
     *     ({@code key=value,key=value}), which win
     * @throws IllegalArgumentException for a malformed key, value or pair
     */
    static Map<String, String> nodeLabels(Config c) {
        Map<String, String> labels = new TreeMap<>();
        Config fromConfig = c.getConfig("node-labels");
        fromConfig
                .root()
                .keySet()
                .forEach(key -> labels.put(key, fromConfig.getString("\"" + key + "\"")));
        String env = c.getString("node-labels-env").trim();
        if (!env.isEmpty()) {
            for (String pair : env.split(",")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException(
                            "cadastre.node-labels-env: '" + pair.trim() + "' is not key=value");
                }
                labels.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
            }
        }
        labels.forEach(
                (key, value) -> {
                    if (!NodeSelector.isLabelKey(key)) {
                        throw new IllegalArgumentException(
                                "cadastre.node-labels: '" + key + "' is not a label key");
                    }
                    if (!NodeSelector.isLabelValue(value)) {
                        throw new IllegalArgumentException(
                                "cadastre.node-labels: '"
                                        + value
                                        + "' (of "
                                        + key
                                        + ") is not a label value");
                    }
                });
        return Map.copyOf(labels);
    }

    private static AskTimeouts askTimeouts(Config c) {
        try {
            return new AskTimeouts(
                    c.getDuration("ask-timeout"),
                    c.getDuration("ask-attempt-timeout"),
                    c.getDuration("confirm-replies-slower-than"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "cadastre.ask-timeout, ask-attempt-timeout, confirm-replies-slower-than: "
                            + e.getMessage(),
                    e);
        }
    }

    private static void validatePools(List<PoolSpec> pools) {
        var names = new HashSet<String>();
        for (int i = 0; i < pools.size(); i++) {
            PoolSpec a = pools.get(i);
            if (!names.add(a.name())) {
                throw new IllegalArgumentException(
                        "cadastre.pools: pool name " + a.name() + " appears twice");
            }
            for (int j = 0; j < i; j++) {
                PoolSpec b = pools.get(j);
                if (a.cidr().overlaps(b.cidr())) {
                    throw new IllegalArgumentException(
                            "cadastre.pools: "
                                    + a.name()
                                    + " ("
                                    + a.cidr()
                                    + ") overlaps "
                                    + b.name()
                                    + " ("
                                    + b.cidr()
                                    + ")");
                }
            }
        }
    }

    private static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(
                    "cadastre.node-name is empty and the hostname cannot be read", e);
        }
    }

    /**
     * {@code cadastre.cleanup}: when the agents release what no DEL released (DESIGN.md,
     * "Cleanup").
     *
     * @param attachments the {@code Reclaimer}'s rounds on this agent: an attachment whose netns
     *     is gone is released once it has been gone for the grace
     * @param podsDeletedFromApi whether, with Kubernetes on, an attachment whose pod is gone from
     *     the API is released like one whose netns is gone
     * @param blocks the {@code BlockReclaimer}'s rounds, once per cluster: a block whose node has
     *     had no member for the grace is released when empty
     * @param deletedNodes the {@code DeletedNodeReleaser}'s rounds, once per cluster with
     *     Kubernetes on: a Node deleted for the grace, its agent no member, is removed with its
     *     addresses; empty when {@code deleted-nodes.enabled} is off
     */
    public record Cleanup(
            Rounds attachments,
            boolean podsDeletedFromApi,
            Rounds blocks,
            Optional<Rounds> deletedNodes) {
        /** @throws IllegalArgumentException naming the key when a duration is not positive */
        static Cleanup from(Config c) {
            return new Cleanup(
                    Rounds.from(c, "cleanup.attachments"),
                    c.getBoolean("cleanup.attachments.pods-deleted-from-api"),
                    Rounds.from(c, "cleanup.blocks"),
                    c.getBoolean("cleanup.deleted-nodes.enabled")
                            ? Optional.of(Rounds.from(c, "cleanup.deleted-nodes"))
                            : Optional.empty());
        }
    }

    /**
     * One cleanup mechanism's timing.
     *
     * @param interval how often it looks; positive
     * @param grace how long something must have been in the released state before it is
     *     released; positive
     */
    public record Rounds(Duration interval, Duration grace) {
        static Rounds from(Config c, String key) {
            return new Rounds(positive(c, key + ".interval"), positive(c, key + ".grace"));
        }
    }

    /** @throws IllegalArgumentException naming the key when the duration {@code cadastre.<key>} is not positive */
    private static Duration positive(Config c, String key) {
        Duration d = c.getDuration(key);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException("cadastre." + key + " must be positive, not " + d);
        }
        return d;
    }
}
