package io.cadastre.admin;

import static io.cadastre.admin.AdminCluster.texts;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.admin.AdminCluster.Env;
import io.cadastre.admin.AdminCluster.Reply;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AssignRequests;
import io.cadastre.shards.Ipam;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Pools as cluster state through the admin API: create (with the cluster-pool preset), conflicts
 * and bad input, disable and enable, delete only when empty. Each test deletes what it creates
 * (the cluster's pools are shared by the tests of this class).
 */
class AdminPoolsTest {
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    @Test
    void aPoolIsCreatedOnceAndListed() {
        try (Env env = cluster.env()) {
            String body =
                    "{\"name\":\"team-a\",\"cidr\":\"198.19.1.0/24\",\"blockSize\":28,\"nodeSelector\":\"zone in (a,b)\","
                            + "\"excluded\":[\"198.19.1.0/30\"],\"maxBlocksPerNode\":2}";
            Reply created = env.post("/v1/pools", body);
            assertEquals(201, created.status(), created.body());
            JsonNode pool = created.json();
            assertEquals("team-a", pool.get("name").asText());
            assertEquals(28, pool.get("blockSize").asInt());
            assertEquals("zone in (a,b)", pool.get("nodeSelector").asText());
            assertEquals(List.of("198.19.1.0/30"), texts(pool.get("excluded")));
            assertEquals(2, pool.get("maxBlocksPerNode").asInt());
            assertEquals(true, pool.get("allowBorrowing").asBoolean());
            assertEquals(16, pool.get("blocks").get("total").asInt());

            // The same definition again is success, not a second pool.
            assertEquals(200, env.post("/v1/pools", body).status());
            assertTrue(
                    List.of("team-a", env.v4.name(), env.v6.name()).stream()
                            .allMatch(name -> names(env).contains(name)));

            assertEquals("team-a", env.delete("/v1/pools/team-a").ok().get("deleted").asText());
            assertTrue(!names(env).contains("team-a"));
            // The name and range are free again.
            assertEquals(
                    201,
                    env.post("/v1/pools", "{\"name\":\"team-a\",\"cidr\":\"198.19.1.0/25\"}")
                            .status());
            env.delete("/v1/pools/team-a").ok();
        }
    }

    private static List<String> names(Env env) {
        List<String> names = new java.util.ArrayList<>();
        env.get("/v1/pools").ok().get("pools").forEach(p -> names.add(p.get("name").asText()));
        return names;
    }

    @Test
    void theClusterPoolPresetGivesEachNodeOneStrictBlock() {
        try (Env env = cluster.env()) {
            JsonNode pool =
                    env.post(
                                    "/v1/pools",
                                    "{\"name\":\"per-node\",\"cidr\":\"198.19.0.0/22\",\"preset\":\"cluster-pool\"}")
                            .json();
            assertEquals(24, pool.get("blockSize").asInt());
            assertEquals(1, pool.get("maxBlocksPerNode").asInt());
            assertEquals(true, pool.get("strictAffinity").asBoolean());
            assertEquals(false, pool.get("allowBorrowing").asBoolean());
            assertTrue(
                    env.post(
                                    "/v1/pools",
                                    "{\"name\":\"x\",\"cidr\":\"198.19.8.0/22\",\"preset\":\"cluster-pool\",\"allowBorrowing\":true}")
                            .error(400)
                            .contains("cluster-pool"));
            env.delete("/v1/pools/per-node").ok();
        }
    }

    @Test
    void conflictsAre409AndChangeNothing() {
        try (Env env = cluster.env()) {
            String taken = env.v4.cidr().toString();
            assertTrue(
                    env.post("/v1/pools", "{\"name\":\"overlap\",\"cidr\":\"" + taken + "\"}")
                            .error(409)
                            .contains("overlaps pool " + env.v4.name()));
            assertTrue(
                    env.post(
                                    "/v1/pools",
                                    "{\"name\":\""
                                            + env.v4.name()
                                            + "\",\"cidr\":\"198.19.2.0/24\"}")
                            .error(409)
                            .contains("cannot change"));
            assertTrue(
                    env.post(
                                    "/v1/pools",
                                    "{\"name\":\""
                                            + env.v4.name()
                                            + "\",\"cidr\":\""
                                            + taken
                                            + "\",\"strictAffinity\":true}")
                            .error(409)
                            .contains("other settings"));
            assertTrue(!names(env).contains("overlap"));
        }
    }

    @Test
    void badInputIs400AndChangesNothing() {
        try (Env env = cluster.env()) {
            List<String[]> cases =
                    List.of(
                            new String[] {"{\"name\":\"b\"}", "\"cidr\" is required"},
                            new String[] {"{\"name\":\"b\",\"cidr\":\"198.19.3.0/33\"}", "cidr"},
                            new String[] {
                                "{\"name\":\"B_1\",\"cidr\":\"198.19.3.0/24\"}", "pool name"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"blockSize\":16}",
                                "larger than the pool"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"blockSize\":\"26\"}",
                                "must be an integer"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"maxBlocksPerNode\":-1}",
                                "maxBlocksPerNode"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"nodeSelector\":\"zone in a\"}",
                                "node selector"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"excluded\":[\"198.19.4.0/30\"]}",
                                "not inside"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"excluded\":\"198.19.3.0/30\"}",
                                "array of CIDRs"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"strictAffinity\":\"yes\"}",
                                "true or false"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"preset\":\"tiny\"}",
                                "unknown preset"
                            },
                            new String[] {
                                "{\"name\":\"b\",\"cidr\":\"198.19.3.0/24\",\"blocksize\":26}",
                                "unknown field blocksize"
                            },
                            new String[] {"[1]", "JSON object"});
            for (String[] c : cases) {
                assertTrue(env.post("/v1/pools", c[0]).error(400).contains(c[1]), c[0]);
            }
            assertTrue(!names(env).contains("b"));
            assertTrue(
                    env.post("/v1/pools/nope/disable", "")
                            .error(404)
                            .contains("unknown pool nope"));
            assertTrue(
                    env.post("/v1/pools/nope/enable", "").error(404).contains("unknown pool nope"));
            assertTrue(env.delete("/v1/pools/nope").error(404).contains("unknown pool nope"));
        }
    }

    @Test
    void aDisabledPoolServesNothingNewAndAPoolIsDeletedOnlyWhenEmpty() {
        try (Env env = cluster.env()) {
            env.post(
                            "/v1/pools",
                            "{\"name\":\"short-lived\",\"cidr\":\"198.19.5.0/26\",\"blockSize\":28}")
                    .json();
            Ipam ipam = env.ipam("t" + env.n + "-short", List.of("short-lived"));
            String held =
                    AdminCluster.await(ipam.assign(request("c1"))).addresses().get(0).address();
            assertTrue(held.startsWith("198.19.5."), held);

            assertEquals(
                    true,
                    env.post("/v1/pools/short-lived/disable", "").ok().get("disabled").asBoolean());
            IpamFailure refused =
                    IpamFailure.of(() -> AdminCluster.await(ipam.assign(request("c2"))));
            assertTrue(
                    refused.message().contains("pool short-lived is disabled"), refused.message());

            String conflict = env.delete("/v1/pools/short-lived").error(409);
            assertTrue(conflict.contains("still holds 1 allocations in 1 blocks"), conflict);
            assertTrue(names(env).contains("short-lived"));

            assertEquals(
                    false,
                    env.post("/v1/pools/short-lived/enable", "").ok().get("disabled").asBoolean());
            AdminCluster.await(ipam.assign(request("c2")));
            AdminCluster.await(ipam.release("net.c1", "eth0"));
            AdminCluster.await(ipam.release("net.c2", "eth0"));
            JsonNode deleted = env.delete("/v1/pools/short-lived").ok();
            assertEquals(List.of("198.19.5.0/28"), texts(deleted.get("releasedBlocks")));
            assertTrue(!names(env).contains("short-lived"));
        }
    }

    private static AssignRequest request(String container) {
        return AssignRequests.plain("net", container, "ns", "pod-" + container);
    }

    /** The message of what a call threw, its cause chain unwrapped. */
    private record IpamFailure(String message) {
        static IpamFailure of(Runnable call) {
            try {
                call.run();
            } catch (RuntimeException e) {
                Throwable cause = e;
                while (cause.getCause() != null) {
                    cause = cause.getCause();
                }
                return new IpamFailure(cause.getMessage());
            }
            throw new AssertionError("expected a failure");
        }
    }
}
