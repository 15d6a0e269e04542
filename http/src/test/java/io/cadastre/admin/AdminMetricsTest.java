package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.admin.AdminCluster.Env;
import io.cadastre.admin.AdminCluster.Reply;
import io.cadastre.shards.Ipam;
import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code GET /metrics} against the real entities: the cluster-wide IPAM gauges count what the
 * blocks and pools hold, the entities' recoveries are timed, admin GC is counted, and the
 * endpoint is open and in the Prometheus text format. A cluster of its own: its metrics registry
 * sees no other test class's work.
 */
class AdminMetricsTest {
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    private static Map<String, Double> scrape(Env env) {
        Reply reply = env.get("/metrics");
        assertEquals(200, reply.status(), reply.body());
        return PrometheusText.samples(reply.body());
    }

    /** @return the samples that another server, on the port given, answers */
    private static Map<String, Double> scrape(Env env, int port) {
        Reply reply =
                env.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                                .GET(),
                        Optional.empty());
        assertEquals(200, reply.status(), reply.body());
        return PrometheusText.samples(reply.body());
    }

    private static String poolNode(String metric, String pool, String node) {
        return metric + "{node=\"" + node + "\",pool=\"" + pool + "\"}";
    }

    @Test
    void metricsNeedNoTokenAndAreInThePrometheusTextFormat() {
        try (Env env = cluster.env()) {
            Reply reply =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/metrics")).GET(),
                            Optional.empty());
            assertEquals(200, reply.status(), reply.body());
            assertEquals(
                    "text/plain; version=0.0.4; charset=utf-8", reply.contentType().toLowerCase());
            assertTrue(
                    reply.body().contains("# TYPE cadastre_ipam_ippool_size gauge\n"),
                    reply.body());
            assertTrue(
                    reply.body().contains("# TYPE cadastre_entity_recovery_seconds histogram\n"),
                    reply.body());
            assertTrue(env.post("/metrics", "").error(405).contains("GET"));
        }
    }

    @Test
    void theIpamGaugesCountWhatThePoolsAndBlocksHold() {
        try (Env env = cluster.env()) {
            env.add("c1");
            env.add("c2");
            Ipam other = env.borrowerAfterClaimingEveryV4Block();

            Map<String, Double> m = scrape(env);
            String v4 = env.v4.name();
            String v6 = env.v6.name();
            assertEquals(256.0, m.get("cadastre_ipam_ippool_size{pool=\"" + v4 + "\"}"));
            assertEquals(256.0, m.get("cadastre_ipam_ippool_size{pool=\"" + v6 + "\"}"));
            assertEquals(2.0, m.get(poolNode("cadastre_ipam_allocations_in_use", v4, env.node)));
            assertEquals(2.0, m.get(poolNode("cadastre_ipam_allocations_in_use", v6, env.node)));
            assertEquals(
                    1.0, m.get(poolNode("cadastre_ipam_allocations_in_use", v4, other.node())));
            assertEquals(
                    1.0, m.get(poolNode("cadastre_ipam_allocations_borrowed", v4, other.node())));
            assertEquals(0.0, m.get(poolNode("cadastre_ipam_allocations_borrowed", v4, env.node)));
            assertEquals(4.0, m.get(poolNode("cadastre_ipam_blocks", v4, env.node)));
            assertEquals(1.0, m.get(poolNode("cadastre_ipam_blocks", v6, env.node)));
            assertEquals(0.0, m.get(poolNode("cadastre_ipam_blocks", v4, other.node())));
            assertEquals(5.0, m.get("cadastre_ipam_blocks_per_node{node=\"" + env.node + "\"}"));
            assertEquals(
                    0.0, m.get("cadastre_ipam_blocks_per_node{node=\"" + other.node() + "\"}"));
            assertNull(
                    m.get(poolNode("cadastre_ipam_blocks", v6, other.node())),
                    "no block nor address there");
            assertNull(
                    m.get(
                            "cadastre_ipam_blocks_per_node{node=\""
                                    + AdminCluster.MEMBER_NODE
                                    + "\"}"),
                    "a member without blocks or addresses has no series");

            // The entities that served these started here, and their recoveries were timed.
            for (String entity : List.of("pool", "block", "node", "pool-registry")) {
                Double count =
                        m.get("cadastre_entity_recovery_seconds_count{entity=\"" + entity + "\"}");
                assertTrue(count != null && count >= 1, entity + ": " + count);
                assertTrue(
                        m.get(
                                        "cadastre_entity_recovery_seconds_bucket{entity=\""
                                                + entity
                                                + "\",le=\"+Inf\"}")
                                >= 1);
            }
            assertEquals(0.0, m.get("cadastre_ipam_metrics_refresh_failures_total"));
        }
    }

    @Test
    void aReadingIsReusedForTheConfiguredRefresh() {
        try (Env env = cluster.env()) {
            env.add("c1");
            AdminServer hourly =
                    new AdminServer(
                            cluster.system(),
                            env.inventory,
                            env.ipam,
                            Optional::empty,
                            new AdminServer.Settings(
                                    "127.0.0.1", 0, AdminCluster.TOKEN, Duration.ofHours(1)));
            AdminServer always =
                    new AdminServer(
                            cluster.system(),
                            env.inventory,
                            env.ipam,
                            Optional::empty,
                            new AdminServer.Settings(
                                    "127.0.0.1", 0, AdminCluster.TOKEN, Duration.ZERO));
            try {
                int hourlyPort = AdminCluster.await(hourly.start()).getPort();
                int alwaysPort = AdminCluster.await(always.start()).getPort();
                String inUse =
                        poolNode("cadastre_ipam_allocations_in_use", env.v4.name(), env.node);
                assertEquals(1.0, scrape(env, hourlyPort).get(inUse));
                assertEquals(1.0, scrape(env, alwaysPort).get(inUse));
                env.add("c2");
                assertEquals(1.0, scrape(env, hourlyPort).get(inUse), "the first reading, reused");
                assertEquals(2.0, scrape(env, alwaysPort).get(inUse), "read afresh");
            } finally {
                AdminCluster.await(hourly.stop());
                AdminCluster.await(always.stop());
            }
        }
    }

    @Test
    void aReadingThatFailsIsCountedAndTheScrapeStillAnswers() {
        cluster.withStuckPool(
                "metrics-stuck",
                "198.18.251.0/24",
                (env, port) -> {
                    // The reading fails after the ask timeout (1 s), within the scrape's wait (5
                    // s).
                    Map<String, Double> m = scrape(env, port);
                    assertEquals(1.0, m.get("cadastre_ipam_metrics_refresh_failures_total"));
                    assertFalse(m.containsKey("cadastre_ipam_ippool_size{pool=\"metrics-stuck\"}"));
                });
    }

    @Test
    void adminGcCountsTheAttachmentsItReleased() {
        try (Env env = cluster.env()) {
            env.add("c1");
            env.add("c2");
            env.add("c3");
            String reclaimed =
                    "cadastre_ipam_allocations_gc_reclamations_total{node=\""
                            + env.node
                            + "\",reason=\"admin-gc\"}";
            assertNull(
                    scrape(env).get(reclaimed),
                    "this env's node has no node agent here: no series yet");
            String body =
                    "{\"node\":\""
                            + env.node
                            + "\",\"network\":\"net\",\"validAttachments\":[{\"containerId\":\"c2\","
                            + "\"ifname\":\"eth0\"}]}";
            assertEquals(2, env.post("/v1/gc", body).ok().get("released").size());
            assertEquals(2.0, scrape(env).get(reclaimed));
            assertEquals(0, env.post("/v1/gc", body).ok().get("released").size());
            assertEquals(
                    2.0, scrape(env).get(reclaimed), "nothing more released, nothing more counted");
        }
    }
}
