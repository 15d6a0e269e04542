package io.cadastre.shards;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.DataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.Unit;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The agent's Prometheus metrics: one {@link PrometheusRegistry} per actor system ({@link #get}),
 * never the client's static default registry, so that several actor systems in one JVM (tests)
 * keep their counts apart. The admin API serves {@link #registry()} at {@code /metrics}
 * (http/DESIGN.md lists the metrics). Thread-safe: every method may be called from any thread.
 *
 * <p>What is per member and what is cluster-wide: the CNI, GC and reclaim metrics count what this
 * agent did for its own node; the recovery histogram times the entities this member hosted; the
 * {@code cadastre_ipam_*} gauges fed by {@link #publishIpamUsage} describe the whole cluster (any
 * member's admin API computes them), so scrape one agent for them or aggregate with {@code max()}.
 *
 * <p>Units: durations in seconds, pool sizes and allocations in addresses, blocks in blocks,
 * reclamations in attachments.
 */
public final class CadastreMetrics implements Extension {
    /** Entity label of {@code cadastre_entity_recovery_seconds}: {@link PoolEntity}. */
    public static final String ENTITY_POOL = "pool";

    /** ... {@link BlockEntity}. */
    public static final String ENTITY_BLOCK = "block";

    /** ... {@link NodeEntity}. */
    public static final String ENTITY_NODE = "node";

    /** ... {@link PoolRegistry}. */
    public static final String ENTITY_POOL_REGISTRY = "pool-registry";

    private static final List<String> ENTITIES =
            List.of(ENTITY_POOL, ENTITY_BLOCK, ENTITY_NODE, ENTITY_POOL_REGISTRY);

    /** Reasons of {@code cadastre_ipam_allocations_gc_reclamations_total}: the node agent's netns-gone reclaim. */
    public static final String GC_NETNS_GONE = "netns-gone";

    /** ... the node agent's reclaim of attachments whose Kubernetes pod is gone from the API. */
    public static final String GC_POD_GONE = "pod-gone";

    /** ... CNI GC through the node agent. */
    public static final String GC_CNI = "cni-gc";

    /** ... the admin API's {@code POST /v1/gc}. */
    public static final String GC_ADMIN = "admin-gc";

    /**
     * Reasons of {@code cadastre_ipam_blocks_reclaimed_total}: the block's node had been gone from
     * the cluster for longer than the grace ({@link BlockReclaimer.Reason#NODE_GONE}).
     */
    public static final String BLOCK_NODE_GONE = "node-gone";

    /** ... a release left half done by a crash was finished ({@link BlockReclaimer.Reason#UNFINISHED_RELEASE}). */
    public static final String BLOCK_UNFINISHED_RELEASE = "unfinished-release";

    /** ... the block's node was removed by an operator. */
    public static final String BLOCK_NODE_REMOVED = "node-removed";

    /** ... the block's pool was deleted. */
    public static final String BLOCK_POOL_DELETED = "pool-deleted";

    private static final Set<String> GC_REASONS =
            Set.of(GC_NETNS_GONE, GC_POD_GONE, GC_CNI, GC_ADMIN);
    private static final List<String> BLOCK_REASONS =
            List.of(
                    BLOCK_NODE_GONE,
                    BLOCK_UNFINISHED_RELEASE,
                    BLOCK_NODE_REMOVED,
                    BLOCK_POOL_DELETED);

    /**
     * Upper bounds, in seconds, of the classic buckets of the duration histograms: 1 ms to 30 s
     * (an ADD normally takes milliseconds; one caught by a member's failover up to the 15 s ask
     * timeout, and a CNI call's whole budget is three times that).
     */
    static final double[] DURATION_BUCKETS = {
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30
    };

    /** Tells how long an entity took to recover; handed to an entity by its {@code init}. */
    @FunctionalInterface
    public interface Recovery {
        /** Records none: for entities run outside an agent (unit tests). */
        Recovery NONE = took -> {};

        /** @param took from the entity's start to its {@code RecoveryCompleted} signal */
        void completed(Duration took);

        /** @param startedNanos when the entity started, by {@link System#nanoTime()} */
        default void completedSince(long startedNanos) {
            completed(Duration.ofNanos(System.nanoTime() - startedNanos));
        }
    }

    /**
     * The cluster-wide IPAM usage, as read from the entities at one moment.
     *
     * @param poolSizes pool name → addresses in its CIDR (an IPv6 pool's count exceeds 64 bits,
     *     hence a double, as Prometheus holds it anyway)
     * @param nodes one entry per pool and node that has a block or an allocation in the pool
     */
    public record IpamUsage(Map<String, Double> poolSizes, List<NodeUsage> nodes) {
        /** Before the first reading: no samples. */
        public static final IpamUsage NONE = new IpamUsage(Map.of(), List.of());

        public IpamUsage {
            poolSizes = Map.copyOf(poolSizes);
            nodes = List.copyOf(nodes);
        }
    }

    /**
     * One node's share of one pool.
     *
     * @param inUse addresses of the pool allocated to attachments on the node, in any block
     * @param borrowed those of them in blocks affine to another node
     * @param blocks the pool's blocks claimed for (affine to) the node
     */
    public record NodeUsage(String pool, String node, long inUse, long borrowed, long blocks) {}

    private static final ExtensionId<CadastreMetrics> ID =
            new ExtensionId<>() {
                @Override
                public CadastreMetrics createExtension(ActorSystem<?> system) {
                    return new CadastreMetrics();
                }
            };

    /** @return the actor system's metrics, created on first use */
    public static CadastreMetrics get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter cniRequests;
    private final Histogram cniDuration;
    private final Histogram entityRecovery;
    private final Counter gcReclamations;
    private final Counter blocksReclaimed;
    private final Counter ipamRefreshFailures;
    private final Counter routingReconciles;
    private final Histogram routingReconcileDuration;
    private final Counter routingChanges;
    private final Counter routingErrors;

    /** node → the routing layer's current gauges. */
    private final Map<String, Supplier<RoutingGauges>> routing = new ConcurrentHashMap<>();

    /** node → packets its pods' source filters dropped. */
    private final Map<String, LongSupplier> spoofDrops = new ConcurrentHashMap<>();

    private final Map<String, Supplier<Map<String, Long>>> policyDrops = new ConcurrentHashMap<>();

    /** node → how many of its attachments wait for the reclaim grace (the node agent's {@code Reclaimer}). */
    private final Map<String, IntSupplier> gcCandidates = new ConcurrentHashMap<>();

    private volatile IpamUsage ipamUsage = IpamUsage.NONE;

    /**
     * A registry of its own with every metric registered. The agent uses {@link #get}; tests of
     * code that takes the metrics as a parameter may make their own.
     */
    public CadastreMetrics() {
        cniRequests =
                Counter.builder()
                        .name("cadastre_cni_requests_total")
                        .help(
                                "CNI requests answered by this agent, by verb (\"unknown\" when CNI_COMMAND was not a verb)"
                                        + " and result (\"ok\" or the CNI error code)")
                        .labelNames("verb", "result")
                        .register(registry);
        cniDuration =
                durations(
                        "cadastre_cni_request_duration_seconds",
                        "Time from a CNI request's arrival at the agent to its answer, by verb",
                        "verb");
        entityRecovery =
                durations(
                        "cadastre_entity_recovery_seconds",
                        "Time from an entity's start on this member to the end of its recovery (snapshot and events replayed)",
                        "entity");
        ENTITIES.forEach(entityRecovery::initLabelValues);
        GaugeWithCallback.builder()
                .name("cadastre_ipam_allocations_gc_candidates")
                .help(
                        "Attachments of this agent's node whose network namespace or Kubernetes pod is gone and that wait for"
                                + " the reclaim grace")
                .labelNames("node")
                .callback(
                        cb ->
                                gcCandidates.forEach(
                                        (node, count) -> cb.call(count.getAsInt(), node)))
                .register(registry);
        gcReclamations =
                Counter.builder()
                        .name("cadastre_ipam_allocations_gc_reclamations_total")
                        .help(
                                "Attachments of this agent's node released by reconciliation, by reason: netns-gone, pod-gone (the node"
                                        + " agent's reclaim), cni-gc (CNI GC), admin-gc (the admin API's GC)")
                        .labelNames("node", "reason")
                        .register(registry);
        blocksReclaimed =
                Counter.builder()
                        .name("cadastre_ipam_blocks_reclaimed_total")
                        .help(
                                "Blocks whose affinity this member took back, by reason: node-gone, unfinished-release, node-removed, pool-deleted")
                        .labelNames("reason")
                        .register(registry);
        BLOCK_REASONS.forEach(blocksReclaimed::initLabelValues);
        ipamRefreshFailures =
                Counter.builder()
                        .name("cadastre_ipam_metrics_refresh_failures_total")
                        .help(
                                "Readings of the cluster-wide IPAM usage that failed (an entity did not answer); the"
                                        + " cadastre_ipam_* gauges then keep the last values read")
                        .register(registry);

        routingReconciles =
                Counter.builder()
                        .name("cadastre_routing_reconciles_total")
                        .help(
                                "Reconciles of this host's routes to other hosts' pods, by result: ok, errors (the kernel refused"
                                        + " some objects), failed (the host's state could not be read)")
                        .labelNames("node", "result")
                        .register(registry);
        routingReconcileDuration =
                durations(
                        "cadastre_routing_reconcile_duration_seconds",
                        "Time one reconcile of this host's routes, VXLAN devices and entries took",
                        "node");
        routingChanges =
                Counter.builder()
                        .name("cadastre_routing_changes_total")
                        .help(
                                "Objects reconciles programmed, by kind (route, device, address, fdb, neighbour) and change"
                                        + " (added, removed, replaced)")
                        .labelNames("node", "kind", "change")
                        .register(registry);
        routingErrors =
                Counter.builder()
                        .name("cadastre_routing_errors_total")
                        .help(
                                "Objects the kernel refused during reconciles (or devices that could not be set up), by kind")
                        .labelNames("node", "kind")
                        .register(registry);
        GaugeWithCallback.builder()
                .name("cadastre_routing_routes")
                .help(
                        "Routes this host wants, by type: block (another node's block), borrowed (a host route to an"
                                + " address living on another node), blackhole (this node's own blocks), gateway (the pods' gateway)")
                .labelNames("node", "type")
                .callback(
                        cb ->
                                routing.forEach(
                                        (node, g) ->
                                                g.get()
                                                        .routes()
                                                        .forEach(
                                                                (type, n) ->
                                                                        cb.call(n, node, type))))
                .register(registry);
        GaugeWithCallback.builder()
                .name("cadastre_routing_peers")
                .help("Other nodes this host routes to, by mode (direct, vxlan)")
                .labelNames("node", "mode")
                .callback(
                        cb ->
                                routing.forEach(
                                        (node, g) ->
                                                g.get()
                                                        .peers()
                                                        .forEach(
                                                                (mode, n) ->
                                                                        cb.call(n, node, mode))))
                .register(registry);
        GaugeWithCallback.builder()
                .name("cadastre_routing_entries")
                .help(
                        "FDB and neighbour entries this host wants on its VXLAN devices, by kind (fdb, neighbour)")
                .labelNames("node", "kind")
                .callback(
                        cb ->
                                routing.forEach(
                                        (node, g) -> {
                                            RoutingGauges now = g.get();
                                            cb.call(now.fdb(), node, "fdb");
                                            cb.call(now.neighbours(), node, "neighbour");
                                        }))
                .register(registry);
        GaugeWithCallback.builder()
                .name("cadastre_routing_conflicts")
                .help(
                        "Wanted routes or devices left alone at the last reconcile because another owner's object is in"
                                + " the way (a route of another protocol at the destination)")
                .labelNames("node")
                .callback(cb -> routing.forEach((node, g) -> cb.call(g.get().conflicts(), node)))
                .register(registry);
        CounterWithCallback.builder()
                .name("cadastre_pod_spoofed_packets_dropped_total")
                .help(
                        "Packets of this host's pods dropped at their host-side interface because their source was not"
                                + " one of the pod's addresses (anti-spoofing), IPv4 and IPv6, since the agent started")
                .labelNames("node")
                .callback(
                        cb -> spoofDrops.forEach((node, drops) -> cb.call(drops.getAsLong(), node)))
                .register(registry);
        CounterWithCallback.builder()
                .name("cadastre_policy_dropped_packets_total")
                .help(
                        "Packets to (ingress) or from (egress) this host's pods dropped because a NetworkPolicy"
                                + " isolates the pod in that direction and no rule allows them, since the agent started")
                .labelNames("node", "direction")
                .callback(
                        cb ->
                                policyDrops.forEach(
                                        (node, drops) ->
                                                drops.get()
                                                        .forEach(
                                                                (direction, packets) ->
                                                                        cb.call(
                                                                                packets, node,
                                                                                direction))))
                .register(registry);

        ipamGauge(
                "cadastre_ipam_ippool_size",
                "Addresses in the pool's CIDR",
                List.of("pool"),
                (usage, cb) -> usage.poolSizes().forEach((pool, size) -> cb.call(size, pool)));
        ipamGauge(
                "cadastre_ipam_allocations_in_use",
                "Addresses of the pool allocated to attachments on the node, in any block",
                List.of("pool", "node"),
                (usage, cb) -> usage.nodes().forEach(n -> cb.call(n.inUse(), n.pool(), n.node())));
        ipamGauge(
                "cadastre_ipam_allocations_borrowed",
                "Addresses of the pool allocated to attachments on the node in blocks affine to another node",
                List.of("pool", "node"),
                (usage, cb) ->
                        usage.nodes().forEach(n -> cb.call(n.borrowed(), n.pool(), n.node())));
        ipamGauge(
                "cadastre_ipam_blocks",
                "Blocks of the pool claimed for (affine to) the node",
                List.of("pool", "node"),
                (usage, cb) -> usage.nodes().forEach(n -> cb.call(n.blocks(), n.pool(), n.node())));
        ipamGauge(
                "cadastre_ipam_blocks_per_node",
                "Blocks of all pools claimed for (affine to) the node",
                List.of("node"),
                (usage, cb) -> {
                    Map<String, Long> perNode = new TreeMap<>();
                    usage.nodes().forEach(n -> perNode.merge(n.node(), n.blocks(), Long::sum));
                    perNode.forEach((node, blocks) -> cb.call(blocks, node));
                });
    }

    private Histogram durations(String name, String help, String label) {
        return Histogram.builder()
                .name(name)
                .help(help)
                .unit(Unit.SECONDS)
                .labelNames(label)
                .classicOnly()
                .classicUpperBounds(DURATION_BUCKETS)
                .register(registry);
    }

    private interface UsageCallback {
        void samples(IpamUsage usage, GaugeWithCallback.Callback callback);
    }

    private void ipamGauge(String name, String help, List<String> labels, UsageCallback samples) {
        GaugeWithCallback.builder()
                .name(name)
                .help(help + " (cluster-wide)")
                .labelNames(labels.toArray(String[]::new))
                .callback(cb -> samples.samples(ipamUsage, cb))
                .register(registry);
    }

    /** @return the registry every Cadastre metric of this actor system is registered with */
    public PrometheusRegistry registry() {
        return registry;
    }

    /**
     * Counts one answered CNI request ({@code cadastre_cni_requests_total}) and observes its
     * duration ({@code cadastre_cni_request_duration_seconds}).
     *
     * @param verb the CNI verb, or "unknown"
     * @param result "ok" or the CNI error code in decimal
     * @param took from the request's arrival to its answer
     */
    public void cniAnswered(String verb, String result, Duration took) {
        cniRequests.labelValues(verb, result).inc();
        cniDuration.labelValues(verb).observe(seconds(took));
    }

    /**
     * @param entity {@link #ENTITY_POOL}, {@link #ENTITY_BLOCK}, {@link #ENTITY_NODE} or {@link #ENTITY_POOL_REGISTRY}
     * @return what the entity's recovery reports to ({@code cadastre_entity_recovery_seconds})
     * @throws IllegalArgumentException for another entity name
     */
    public Recovery recovery(String entity) {
        if (!ENTITIES.contains(entity)) {
            throw new IllegalArgumentException("unknown entity " + entity);
        }
        var series = entityRecovery.labelValues(entity);
        return took -> series.observe(seconds(took));
    }

    /**
     * Exposes {@code cadastre_ipam_allocations_gc_candidates{node}}, read at every scrape, and
     * starts the node's {@code cadastre_ipam_allocations_gc_reclamations_total} series at 0. A
     * second call for the same node replaces the first.
     *
     * @param candidates how many of the node's attachments have a gone netns and wait for the grace
     */
    public void watchGcCandidates(String node, IntSupplier candidates) {
        gcCandidates.put(node, Objects.requireNonNull(candidates, "candidates"));
        GC_REASONS.forEach(reason -> gcReclamations.initLabelValues(node, reason));
    }

    /**
     * Counts attachments released by reconciliation ({@code cadastre_ipam_allocations_gc_reclamations_total}).
     *
     * @param reason {@link #GC_NETNS_GONE}, {@link #GC_POD_GONE}, {@link #GC_CNI} or {@link #GC_ADMIN}
     * @param attachments how many attachments were released; 0 counts nothing
     * @throws IllegalArgumentException for another reason or a negative count
     */
    public void gcReclaimed(String node, String reason, int attachments) {
        if (!GC_REASONS.contains(reason) || attachments < 0) {
            throw new IllegalArgumentException("GC reclamation " + reason + " x" + attachments);
        }
        gcReclamations.labelValues(node, reason).inc(attachments);
    }

    /**
     * Counts one block whose affinity was taken back ({@code cadastre_ipam_blocks_reclaimed_total}).
     *
     * @param reason {@link #BLOCK_NODE_GONE}, {@link #BLOCK_UNFINISHED_RELEASE}, {@link #BLOCK_NODE_REMOVED} or
     *     {@link #BLOCK_POOL_DELETED}
     * @throws IllegalArgumentException for another reason
     */
    public void blockReclaimed(String reason) {
        if (!BLOCK_REASONS.contains(reason)) {
            throw new IllegalArgumentException(
                    "unknown block reclaim reason " + reason + " (known: " + BLOCK_REASONS + ")");
        }
        blocksReclaimed.labelValues(reason).inc();
    }

    /**
     * The routing layer's current state, for the {@code cadastre_routing_*} gauges.
     *
     * @param routes route type (block, borrowed, blackhole, gateway) → how many this host wants
     * @param peers mode (direct, vxlan) → how many nodes this host routes to that way
     * @param fdb FDB entries wanted on the VXLAN devices
     * @param neighbours neighbour entries wanted on the VXLAN devices
     * @param conflicts objects left alone at the last reconcile (another owner's in the way)
     */
    public record RoutingGauges(
            Map<String, Long> routes,
            Map<String, Long> peers,
            long fdb,
            long neighbours,
            long conflicts) {
        public static final RoutingGauges NONE = new RoutingGauges(Map.of(), Map.of(), 0, 0, 0);

        public RoutingGauges {
            routes = Map.copyOf(routes);
            peers = Map.copyOf(peers);
        }
    }

    /**
     * Exposes the node's {@code cadastre_routing_routes}, {@code _peers}, {@code _entries} and
     * {@code _conflicts} gauges, read at every scrape; a second call replaces the first.
     */
    public void watchRouting(String node, Supplier<RoutingGauges> gauges) {
        routing.put(node, Objects.requireNonNull(gauges, "gauges"));
        for (String result : List.of("ok", "errors", "failed")) {
            routingReconciles.initLabelValues(node, result);
        }
    }

    /**
     * Counts one reconcile of the host's routes ({@code cadastre_routing_reconciles_total}) and
     * observes its duration ({@code cadastre_routing_reconcile_duration_seconds}).
     *
     * @param result "ok", "errors" (some objects refused) or "failed" (the state could not be read)
     */
    public void routingReconciled(String node, String result, Duration took) {
        routingReconciles.labelValues(node, result).inc();
        routingReconcileDuration.labelValues(node).observe(seconds(took));
    }

    /**
     * Counts programmed objects ({@code cadastre_routing_changes_total}).
     *
     * @param kind route, device, address, fdb or neighbour
     * @param change added, removed or replaced
     * @param count how many; 0 counts nothing
     */
    public void routingChanged(String node, String kind, String change, long count) {
        if (count > 0) {
            routingChanges.labelValues(node, kind, change).inc(count);
        }
    }

    /** Counts objects the kernel refused ({@code cadastre_routing_errors_total}); 0 counts nothing. */
    public void routingFailed(String node, String kind, long count) {
        if (count > 0) {
            routingErrors.labelValues(node, kind).inc(count);
        }
    }

    /** Exposes {@code cadastre_pod_spoofed_packets_dropped_total{node}}, read at every scrape. */
    public void watchSpoofDrops(String node, LongSupplier drops) {
        spoofDrops.put(node, Objects.requireNonNull(drops, "drops"));
    }

    /**
     * Exposes {@code cadastre_policy_dropped_packets_total{node,direction}}, read at every scrape.
     *
     * @param drops direction ({@code ingress}, {@code egress}) → packets dropped so far; monotonic
     */
    public void watchPolicyDrops(String node, Supplier<Map<String, Long>> drops) {
        policyDrops.put(node, Objects.requireNonNull(drops, "drops"));
    }

    /** Replaces what the {@code cadastre_ipam_*} gauges report, at once for all of them. */
    public void publishIpamUsage(IpamUsage usage) {
        ipamUsage = Objects.requireNonNull(usage, "usage");
    }

    /** Counts a failed reading of the IPAM usage ({@code cadastre_ipam_metrics_refresh_failures_total}). */
    public void ipamRefreshFailed() {
        ipamRefreshFailures.inc();
    }

    /**
     * Reads one sample as the text format would show it; for tests and diagnostics.
     *
     * @param name the sample's name in the text format: {@code <counter>_total}, a gauge's name,
     *     {@code <histogram>_count} or {@code <histogram>_sum}
     * @param labels label names and values, alternating, in any order
     * @return the sample's value, or empty when there is no such series
     */
    public OptionalDouble sample(String name, String... labels) {
        Labels wanted = Labels.of(labels);
        for (MetricSnapshot metric : registry.scrape()) {
            String base = metric.getMetadata().getPrometheusName();
            for (DataPointSnapshot point : metric.getDataPoints()) {
                if (!point.getLabels().equals(wanted)) {
                    continue;
                }
                if (point instanceof CounterDataPointSnapshot c && name.equals(base + "_total")) {
                    return OptionalDouble.of(c.getValue());
                }
                if (point instanceof GaugeDataPointSnapshot g && name.equals(base)) {
                    return OptionalDouble.of(g.getValue());
                }
                if (point instanceof HistogramDataPointSnapshot h && name.equals(base + "_count")) {
                    return OptionalDouble.of(h.getCount());
                }
                if (point instanceof HistogramDataPointSnapshot h && name.equals(base + "_sum")) {
                    return OptionalDouble.of(h.getSum());
                }
            }
        }
        return OptionalDouble.empty();
    }

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }
}
