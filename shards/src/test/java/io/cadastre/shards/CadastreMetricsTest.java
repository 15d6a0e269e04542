package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.shards.CadastreMetrics.IpamUsage;
import io.cadastre.shards.CadastreMetrics.NodeUsage;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBucket;
import io.prometheus.metrics.model.snapshots.DataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Label;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;

/** The metric names, types and label sets, and what each method records. */
class CadastreMetricsTest {
    private final CadastreMetrics metrics = new CadastreMetrics();

    /** @return the metric's data points, by their labels ({@code name=value,...}) */
    private Map<String, DataPointSnapshot> points(String name) {
        MetricSnapshot snapshot =
                metrics.registry().scrape(name::equals).stream()
                        .findFirst()
                        .orElseThrow(() -> new AssertionError("no metric " + name));
        Map<String, DataPointSnapshot> points = new TreeMap<>();
        for (DataPointSnapshot p : snapshot.getDataPoints()) {
            points.put(
                    p.getLabels().stream()
                            .map(l -> l.getName() + "=" + l.getValue())
                            .collect(Collectors.joining(",")),
                    p);
        }
        return points;
    }

    private OptionalDouble sample(String name, String... labels) {
        return metrics.sample(name, labels);
    }

    private OptionalDouble reclamations(String node, String reason) {
        return sample(
                "cadastre_ipam_allocations_gc_reclamations_total", "node", node, "reason", reason);
    }

    @Test
    void everyMetricIsRegisteredWithItsTypeAndLabels() {
        Map<String, String> expected =
                new TreeMap<>(
                        Map.ofEntries(
                                // the client keeps a counter's name without _total; the text format
                                // adds it
                                Map.entry("cadastre_cni_requests", "counter [result, verb]"),
                                Map.entry(
                                        "cadastre_cni_request_duration_seconds",
                                        "histogram [verb]"),
                                Map.entry("cadastre_entity_recovery_seconds", "histogram [entity]"),
                                Map.entry(
                                        "cadastre_ipam_allocations_gc_candidates", "gauge [node]"),
                                Map.entry(
                                        "cadastre_ipam_allocations_gc_reclamations",
                                        "counter [node, reason]"),
                                Map.entry("cadastre_ipam_blocks_reclaimed", "counter [reason]"),
                                Map.entry("cadastre_ipam_metrics_refresh_failures", "counter []"),
                                Map.entry("cadastre_ipam_ippool_size", "gauge [pool]"),
                                Map.entry("cadastre_ipam_allocations_in_use", "gauge [node, pool]"),
                                Map.entry(
                                        "cadastre_ipam_allocations_borrowed", "gauge [node, pool]"),
                                Map.entry("cadastre_ipam_blocks", "gauge [node, pool]"),
                                Map.entry("cadastre_ipam_blocks_per_node", "gauge [node]"),
                                Map.entry("cadastre_routing_reconciles", "counter [node, result]"),
                                Map.entry(
                                        "cadastre_routing_reconcile_duration_seconds",
                                        "histogram [node]"),
                                Map.entry(
                                        "cadastre_routing_changes", "counter [change, kind, node]"),
                                Map.entry("cadastre_routing_errors", "counter [kind, node]"),
                                Map.entry("cadastre_routing_routes", "gauge [node, type]"),
                                Map.entry("cadastre_routing_peers", "gauge [mode, node]"),
                                Map.entry("cadastre_routing_entries", "gauge [kind, node]"),
                                Map.entry("cadastre_routing_conflicts", "gauge [node]"),
                                Map.entry("cadastre_pod_spoofed_packets_dropped", "counter [node]"),
                                Map.entry(
                                        "cadastre_policy_dropped_packets",
                                        "counter [direction, node]")));
        // one series of each, so that every metric shows its labels
        metrics.cniAnswered("ADD", "ok", Duration.ofMillis(3));
        metrics.recovery(CadastreMetrics.ENTITY_BLOCK).completed(Duration.ofMillis(20));
        metrics.watchGcCandidates("n1", () -> 0);
        metrics.ipamRefreshFailed();
        metrics.publishIpamUsage(
                new IpamUsage(Map.of("p", 256.0), List.of(new NodeUsage("p", "n1", 1, 0, 1))));
        metrics.watchRouting(
                "n1",
                () ->
                        new CadastreMetrics.RoutingGauges(
                                Map.of("block", 2L), Map.of("vxlan", 1L), 1, 1, 0));
        metrics.routingReconciled("n1", "ok", Duration.ofMillis(4));
        metrics.routingChanged("n1", "route", "added", 2);
        metrics.routingFailed("n1", "fdb", 1);
        metrics.watchSpoofDrops("n1", () -> 7);
        metrics.watchPolicyDrops("n1", () -> Map.of("ingress", 3L));

        Map<String, String> found = new TreeMap<>();
        for (MetricSnapshot s : metrics.registry().scrape()) {
            Set<String> labels = new TreeSet<>();
            s.getDataPoints()
                    .forEach(p -> p.getLabels().forEach((Label l) -> labels.add(l.getName())));
            String type = s.getClass().getSimpleName().replace("Snapshot", "").toLowerCase();
            found.put(s.getMetadata().getName(), type + " " + new ArrayList<>(labels));
        }
        assertEquals(expected, found);
    }

    @Test
    void routingMetricsReadTheRoutersStateAndCountItsReconciles() {
        CadastreMetrics metrics = new CadastreMetrics();
        metrics.watchRouting(
                "n1",
                () ->
                        new CadastreMetrics.RoutingGauges(
                                Map.of("block", 3L, "blackhole", 2L),
                                Map.of("direct", 2L, "vxlan", 1L),
                                2,
                                2,
                                1));
        metrics.routingReconciled("n1", "ok", Duration.ofMillis(4));
        metrics.routingReconciled("n1", "errors", Duration.ofMillis(6));
        metrics.routingChanged("n1", "route", "added", 3);
        metrics.routingChanged("n1", "route", "added", 0);
        metrics.routingFailed("n1", "device", 1);
        metrics.watchSpoofDrops("n1", () -> 42);
        metrics.watchPolicyDrops("n1", () -> Map.of("ingress", 5L, "egress", 9L));
        assertEquals(
                3.0,
                metrics.sample("cadastre_routing_routes", "node", "n1", "type", "block")
                        .orElseThrow());
        assertEquals(
                1.0,
                metrics.sample("cadastre_routing_peers", "node", "n1", "mode", "vxlan")
                        .orElseThrow());
        assertEquals(
                2.0,
                metrics.sample("cadastre_routing_entries", "node", "n1", "kind", "fdb")
                        .orElseThrow());
        assertEquals(1.0, metrics.sample("cadastre_routing_conflicts", "node", "n1").orElseThrow());
        assertEquals(
                1.0,
                metrics.sample("cadastre_routing_reconciles_total", "node", "n1", "result", "ok")
                        .orElseThrow());
        assertEquals(
                0.0,
                metrics.sample(
                                "cadastre_routing_reconciles_total",
                                "node",
                                "n1",
                                "result",
                                "failed")
                        .orElseThrow(),
                "every result starts at 0");
        assertEquals(
                2.0,
                metrics.sample("cadastre_routing_reconcile_duration_seconds_count", "node", "n1")
                        .orElseThrow());
        assertEquals(
                3.0,
                metrics.sample(
                                "cadastre_routing_changes_total",
                                "node",
                                "n1",
                                "kind",
                                "route",
                                "change",
                                "added")
                        .orElseThrow());
        assertEquals(
                1.0,
                metrics.sample("cadastre_routing_errors_total", "node", "n1", "kind", "device")
                        .orElseThrow());
        assertEquals(
                42.0,
                metrics.sample("cadastre_pod_spoofed_packets_dropped_total", "node", "n1")
                        .orElseThrow());
        assertEquals(
                9.0,
                metrics.sample(
                                "cadastre_policy_dropped_packets_total",
                                "node",
                                "n1",
                                "direction",
                                "egress")
                        .orElseThrow());
    }

    @Test
    void eachActorSystemHasItsOwnRegistryAndNoneIsTheDefault() {
        ActorTestKit a = ActorTestKit.create("CadastreMetricsTestA");
        ActorTestKit b = ActorTestKit.create("CadastreMetricsTestB");
        try {
            CadastreMetrics ma = CadastreMetrics.get(a.system());
            assertSame(ma, CadastreMetrics.get(a.system()));
            assertNotSame(ma, CadastreMetrics.get(b.system()));
            assertNotSame(ma.registry(), CadastreMetrics.get(b.system()).registry());
            ma.cniAnswered("DEL", "ok", Duration.ofMillis(1));
            assertTrue(
                    CadastreMetrics.get(b.system()).registry().scrape().stream()
                            .filter(s -> s.getMetadata().getName().equals("cadastre_cni_requests"))
                            .allMatch(s -> s.getDataPoints().isEmpty()),
                    "b counts nothing of a's");
            assertTrue(
                    PrometheusRegistry.defaultRegistry.scrape().stream()
                            .noneMatch(s -> s.getMetadata().getName().startsWith("cadastre_")));
        } finally {
            a.shutdownTestKit();
            b.shutdownTestKit();
        }
    }

    @Test
    void cniRequestsAreCountedByVerbAndResultAndTimedByVerb() {
        metrics.cniAnswered("ADD", "ok", Duration.ofMillis(3));
        metrics.cniAnswered("ADD", "ok", Duration.ofMillis(40));
        metrics.cniAnswered("ADD", "100", Duration.ofMillis(2));
        metrics.cniAnswered("DEL", "ok", Duration.ofSeconds(20));

        assertEquals(
                OptionalDouble.of(2.0),
                sample("cadastre_cni_requests_total", "result", "ok", "verb", "ADD"));
        assertEquals(
                OptionalDouble.of(1.0),
                sample("cadastre_cni_requests_total", "result", "100", "verb", "ADD"));
        assertEquals(
                OptionalDouble.of(1.0),
                sample("cadastre_cni_requests_total", "result", "ok", "verb", "DEL"));
        assertEquals(
                OptionalDouble.of(3.0),
                sample("cadastre_cni_request_duration_seconds_count", "verb", "ADD"));

        var add =
                (HistogramDataPointSnapshot)
                        points("cadastre_cni_request_duration_seconds").get("verb=ADD");
        assertEquals(
                0.045,
                sample("cadastre_cni_request_duration_seconds_sum", "verb", "ADD").orElseThrow(),
                1e-9);
        Map<Double, Long> perBucket = new TreeMap<>();
        for (ClassicHistogramBucket bucket : add.getClassicBuckets()) {
            perBucket.put(bucket.getUpperBound(), bucket.getCount());
        }
        // classic buckets from 1 ms to 30 s, then +Inf; counts are per bucket here (the text format
        // sums them)
        assertEquals(
                List.of(
                        0.001,
                        0.0025,
                        0.005,
                        0.01,
                        0.025,
                        0.05,
                        0.1,
                        0.25,
                        0.5,
                        1.0,
                        2.5,
                        5.0,
                        10.0,
                        15.0,
                        30.0,
                        Double.POSITIVE_INFINITY),
                new ArrayList<>(perBucket.keySet()));
        assertEquals(1L, perBucket.get(0.0025), "the 2 ms ADD");
        assertEquals(1L, perBucket.get(0.005), "the 3 ms ADD");
        assertEquals(1L, perBucket.get(0.05), "the 40 ms ADD");
        var del =
                (HistogramDataPointSnapshot)
                        points("cadastre_cni_request_duration_seconds").get("verb=DEL");
        assertEquals(
                1L,
                del.getClassicBuckets().stream()
                        .filter(b -> b.getUpperBound() == 30.0)
                        .findFirst()
                        .orElseThrow()
                        .getCount(),
                "the 20 s DEL");
    }

    @Test
    void recoveriesAreTimedPerEntityTypeAndEveryTypeShowsFromTheStart() {
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_entity_recovery_seconds_count", "entity", "pool"));
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_entity_recovery_seconds_count", "entity", "block"));
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_entity_recovery_seconds_count", "entity", "node"));
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_entity_recovery_seconds_count", "entity", "pool-registry"));
        CadastreMetrics.Recovery nodes = metrics.recovery(CadastreMetrics.ENTITY_NODE);
        nodes.completed(Duration.ofMillis(5));
        nodes.completed(Duration.ofMillis(7));
        assertEquals(
                OptionalDouble.of(2.0),
                sample("cadastre_entity_recovery_seconds_count", "entity", "node"));
        assertEquals(
                0.012,
                sample("cadastre_entity_recovery_seconds_sum", "entity", "node").orElseThrow(),
                1e-9);
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_entity_recovery_seconds_count", "entity", "pool"));
        assertThrows(IllegalArgumentException.class, () -> metrics.recovery("Block"));
    }

    @Test
    void gcCandidatesAreReadAtEachScrapeAndReclamationsCountedByReason() {
        AtomicInteger candidates = new AtomicInteger(2);
        metrics.watchGcCandidates("n1", candidates::get);
        assertEquals(
                OptionalDouble.of(2.0),
                sample("cadastre_ipam_allocations_gc_candidates", "node", "n1"));
        candidates.set(0);
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_ipam_allocations_gc_candidates", "node", "n1"));
        for (String reason : List.of("netns-gone", "pod-gone", "cni-gc", "admin-gc")) {
            assertEquals(
                    OptionalDouble.of(0.0),
                    reclamations("n1", reason),
                    "shown from the start: " + reason);
        }

        metrics.gcReclaimed("n1", CadastreMetrics.GC_NETNS_GONE, 1);
        metrics.gcReclaimed("n1", CadastreMetrics.GC_CNI, 3);
        metrics.gcReclaimed("n1", CadastreMetrics.GC_CNI, 0);
        metrics.gcReclaimed("n1", CadastreMetrics.GC_ADMIN, 2);
        assertEquals(OptionalDouble.of(1.0), reclamations("n1", "netns-gone"));
        assertEquals(OptionalDouble.of(3.0), reclamations("n1", "cni-gc"));
        assertEquals(OptionalDouble.of(2.0), reclamations("n1", "admin-gc"));
        assertThrows(IllegalArgumentException.class, () -> metrics.gcReclaimed("n1", "gc", 1));
        assertThrows(
                IllegalArgumentException.class,
                () -> metrics.gcReclaimed("n1", CadastreMetrics.GC_CNI, -1));
    }

    @Test
    void blocksReclaimedAreCountedByReasonAndEveryReasonShowsFromTheStart() {
        for (String reason :
                List.of("node-gone", "unfinished-release", "node-removed", "pool-deleted")) {
            assertEquals(
                    OptionalDouble.of(0.0),
                    sample("cadastre_ipam_blocks_reclaimed_total", "reason", reason));
        }
        metrics.blockReclaimed(CadastreMetrics.BLOCK_NODE_GONE);
        metrics.blockReclaimed(CadastreMetrics.BLOCK_NODE_GONE);
        metrics.blockReclaimed(CadastreMetrics.BLOCK_POOL_DELETED);
        assertEquals(
                OptionalDouble.of(2.0),
                sample("cadastre_ipam_blocks_reclaimed_total", "reason", "node-gone"));
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_ipam_blocks_reclaimed_total", "reason", "node-removed"));
        assertEquals(
                OptionalDouble.of(1.0),
                sample("cadastre_ipam_blocks_reclaimed_total", "reason", "pool-deleted"));
        assertThrows(IllegalArgumentException.class, () -> metrics.blockReclaimed("node-departed"));
    }

    @Test
    void theIpamGaugesShowTheLastPublishedUsageWhole() {
        assertTrue(
                points("cadastre_ipam_allocations_in_use").isEmpty(),
                "nothing before the first reading");
        metrics.publishIpamUsage(
                new IpamUsage(
                        Map.of("v4", 65536.0, "v6", Math.pow(2, 80)),
                        List.of(
                                new NodeUsage("v4", "a", 5, 0, 2),
                                new NodeUsage("v4", "b", 2, 2, 0),
                                new NodeUsage("v6", "a", 5, 0, 1))));
        assertEquals(OptionalDouble.of(65536.0), sample("cadastre_ipam_ippool_size", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(Math.pow(2, 80)),
                sample("cadastre_ipam_ippool_size", "pool", "v6"));
        assertEquals(
                OptionalDouble.of(5.0),
                sample("cadastre_ipam_allocations_in_use", "node", "a", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(2.0),
                sample("cadastre_ipam_allocations_in_use", "node", "b", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(2.0),
                sample("cadastre_ipam_allocations_borrowed", "node", "b", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(0.0),
                sample("cadastre_ipam_allocations_borrowed", "node", "a", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(2.0), sample("cadastre_ipam_blocks", "node", "a", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(0.0), sample("cadastre_ipam_blocks", "node", "b", "pool", "v4"));
        assertEquals(
                OptionalDouble.of(3.0),
                sample("cadastre_ipam_blocks_per_node", "node", "a"),
                "summed over the pools");
        assertEquals(OptionalDouble.of(0.0), sample("cadastre_ipam_blocks_per_node", "node", "b"));

        metrics.publishIpamUsage(
                new IpamUsage(Map.of("v4", 65536.0), List.of(new NodeUsage("v4", "a", 1, 0, 1))));
        assertEquals(
                Set.of("node=a,pool=v4"),
                points("cadastre_ipam_allocations_in_use").keySet(),
                "b's series are gone");
        assertEquals(OptionalDouble.empty(), sample("cadastre_ipam_ippool_size", "pool", "v6"));
        assertEquals(OptionalDouble.of(1.0), sample("cadastre_ipam_blocks_per_node", "node", "a"));

        metrics.ipamRefreshFailed();
        assertEquals(
                OptionalDouble.of(1.0), sample("cadastre_ipam_metrics_refresh_failures_total"));
    }

    @Test
    void aSampleIsReadByItsNameInTheTextFormatAndItsLabelsInAnyOrder() {
        metrics.cniAnswered("ADD", "ok", Duration.ofMillis(250));
        assertEquals(
                OptionalDouble.of(1.0),
                sample("cadastre_cni_requests_total", "verb", "ADD", "result", "ok"));
        assertEquals(
                OptionalDouble.of(1.0),
                sample("cadastre_cni_requests_total", "result", "ok", "verb", "ADD"));
        assertEquals(
                OptionalDouble.empty(),
                sample("cadastre_cni_requests", "verb", "ADD", "result", "ok"),
                "a counter's name ends in _total");
        assertEquals(
                OptionalDouble.empty(),
                sample("cadastre_cni_requests_total", "verb", "ADD"),
                "all labels or none");
        assertEquals(
                OptionalDouble.of(1.0),
                sample("cadastre_cni_request_duration_seconds_count", "verb", "ADD"));
        assertEquals(
                OptionalDouble.of(0.25),
                sample("cadastre_cni_request_duration_seconds_sum", "verb", "ADD"));
        assertEquals(
                OptionalDouble.empty(),
                sample("cadastre_cni_request_duration_seconds", "verb", "ADD"));
    }
}
