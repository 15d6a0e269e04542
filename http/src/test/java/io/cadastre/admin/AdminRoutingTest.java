package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.admin.AdminCluster.Env;
import io.cadastre.ipam.Cidr;
import io.cadastre.shards.BlockReleases.Claim;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The routing layer's part of the admin API, over a fake behind {@link HostRoutes}: a node's
 * routing in {@code GET /v1/nodes/{name}}, this host's route findings in {@code GET /v1/check}
 * (which make the report not clean), both in the document's shapes; without routing, nulls.
 */
class AdminRoutingTest {
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    /** A host that routes to every block, or reports what it is told to. */
    private static final class FakeRoutes implements HostRoutes {
        final AtomicReference<Map<Cidr, Claim>> audited = new AtomicReference<>();
        volatile List<AdminViews.RouteFinding> findings = List.of();

        @Override
        public String node() {
            return "here";
        }

        @Override
        public CompletionStage<Optional<AdminViews.Routing>> routing(String node) {
            return CompletableFuture.completedFuture(
                    Optional.of(
                            new AdminViews.Routing(
                                    "cross-subnet",
                                    "here",
                                    node.equals("here"),
                                    List.of(
                                            new AdminViews.RoutingPeer(
                                                    "h4",
                                                    "vxlan",
                                                    null,
                                                    "198.19.254.14/24",
                                                    "198.18.0.64",
                                                    "0e:00:00:00:00:04")),
                                    List.of(
                                            new AdminViews.RouteView(
                                                    "198.18.0.64/26",
                                                    "block",
                                                    "h4",
                                                    "198.18.0.64/26 via 198.18.0.64 dev cadastre.vx4 onlink"),
                                            new AdminViews.RouteView(
                                                    "169.254.1.1/32",
                                                    "gateway",
                                                    node,
                                                    "169.254.1.1/32 dev lo")),
                                    List.of("node h5 has published no peer"),
                                    "masquerade 198.18.0.0/16 except to 198.18.0.0/16",
                                    new AdminViews.Reconcile(
                                            1L,
                                            "added 2, removed 0, replaced 0, conflicts 0, errors 0 in 3 ms",
                                            List.of(),
                                            List.of(),
                                            null))));
        }

        @Override
        public CompletionStage<Optional<List<AdminViews.RouteFinding>>> audit(
                Map<Cidr, Claim> claims, Set<String> removed) {
            audited.set(claims);
            return CompletableFuture.completedFuture(Optional.of(findings));
        }
    }

    @Test
    void nodeDetailCarriesThePeerAndTheRoutingAndTheCheckTheRouteFindings() {
        try (Env env = cluster.env()) {
            env.add("c1");
            FakeRoutes routes = new FakeRoutes();
            AdminServer server =
                    new AdminServer(
                            cluster.system(),
                            env.inventory,
                            env.ipam,
                            Optional::empty,
                            new AdminServer.Settings("127.0.0.1", 0, AdminCluster.TOKEN),
                            routes);
            try {
                int port = AdminCluster.await(server.start()).getPort();
                JsonNode detail = get(env, port, "/v1/nodes/" + env.node).json();
                OpenApi.assertShape("NodeDetail", detail);
                assertTrue(
                        detail.get("peer").isNull(),
                        "this node's agent published no peer: " + detail);
                assertEquals("cross-subnet", detail.get("routing").get("mode").asText());
                assertEquals(
                        "vxlan", detail.get("routing").get("peers").get(0).get("ipv4").asText());
                assertEquals(
                        "gateway", detail.get("routing").get("routes").get(1).get("type").asText());
                assertEquals(
                        "masquerade 198.18.0.0/16 except to 198.18.0.0/16",
                        detail.get("routing").get("outgoingNat").asText());

                JsonNode clean = get(env, port, "/v1/check").json();
                OpenApi.assertShape("Report", clean);
                assertTrue(clean.get("clean").asBoolean(), clean.toString());
                assertEquals("here", clean.get("routesCheckedOn").asText());
                assertEquals(
                        Set.of(
                                Cidr.parse("198.18." + env.n + ".0/26"),
                                Cidr.parse("fd00:198:0:" + env.n + "::/122")),
                        routes.audited.get().keySet(),
                        "the check's own claims are audited");

                routes.findings =
                        List.of(
                                new AdminViews.RouteFinding(
                                        "198.18." + env.n + ".0/26",
                                        env.v4.name(),
                                        env.node,
                                        "missing",
                                        "blackhole 198.18." + env.n + ".0/26",
                                        null,
                                        null));
                JsonNode dirty = get(env, port, "/v1/check").json();
                OpenApi.assertShape("Report", dirty);
                assertFalse(
                        dirty.get("clean").asBoolean(),
                        "a missing route makes the report not clean");
                assertEquals("missing", dirty.get("routeFindings").get(0).get("problem").asText());
            } finally {
                AdminCluster.await(server.stop());
            }
            JsonNode withoutRouting = env.get("/v1/nodes/" + env.node).json();
            assertTrue(withoutRouting.get("routing").isNull(), withoutRouting.toString());
            JsonNode report = env.get("/v1/check").json();
            assertTrue(
                    report.get("routesCheckedOn").isNull() && report.get("routeFindings").isEmpty(),
                    report.toString());
        }
    }

    private static AdminCluster.Reply get(Env env, int port, String path) {
        return env.send(
                HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + port + path))
                        .GET(),
                env.token);
    }
}
