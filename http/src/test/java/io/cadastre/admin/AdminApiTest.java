package io.cadastre.admin;

import static io.cadastre.admin.AdminCluster.texts;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.admin.AdminCluster.Env;
import io.cadastre.admin.AdminCluster.Reply;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.Ipam;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The read endpoints, the probes and authentication, against a real server over the real
 * entities: each endpoint's answer after an ADD, held against the OpenAPI document's schema, and
 * its answer to bad input.
 */
class AdminApiTest {
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    @Test
    void probesAndTheDocumentNeedNoToken() {
        try (Env env = cluster.env()) {
            Reply health =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/healthz")).GET(),
                            Optional.empty());
            assertEquals(200, health.status());
            assertEquals("{\"status\":\"ok\"}", health.body());
            assertEquals("application/json", health.contentType());

            env.unreadiness.set(Optional.of("cluster member is Joining"));
            Reply notReady =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/readyz")).GET(),
                            Optional.empty());
            assertEquals(503, notReady.status());
            assertEquals("not ready", notReady.json().get("status").asText());
            assertEquals("cluster member is Joining", notReady.json().get("reason").asText());
            env.unreadiness.set(Optional.empty());
            Reply ready =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/readyz")).GET(),
                            Optional.empty());
            assertEquals(200, ready.status());
            assertEquals("{\"status\":\"ready\"}", ready.body());

            Reply document =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/openapi.yaml")).GET(),
                            Optional.empty());
            assertEquals(200, document.status());
            assertTrue(
                    document.contentType().startsWith("application/yaml"), document.contentType());
            assertTrue(document.body().startsWith("openapi: 3.0"), document.body());
        }
    }

    @Test
    void aServerRefusesV1RequestsWithoutItsTokenOnLoopbackToo() {
        try (Env env = cluster.env()) {
            Reply missing =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools")).GET(),
                            Optional.empty());
            assertTrue(missing.error(401).contains("missing bearer token"));
            assertEquals(Optional.of("Bearer realm=\"cadastre-admin\""), missing.wwwAuthenticate());
            Reply wrong =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools")).GET(),
                            Optional.of("guess"));
            assertEquals("wrong bearer token", wrong.error(401));
            Reply prefix =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools")).GET(),
                            Optional.of(
                                    AdminCluster.TOKEN.substring(
                                            0, AdminCluster.TOKEN.length() - 1)));
            assertEquals("wrong bearer token", prefix.error(401));
            Reply basic =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools"))
                                    .header("Authorization", "Basic Zm9vOmJhcg==")
                                    .GET(),
                            Optional.empty());
            assertTrue(basic.error(401).contains("missing bearer token"));
            assertEquals(200, env.get("/v1/pools").status(), "with the token");
        }
    }

    /** Every /v1 route, read or change, answers 401 without the token, and nothing changes. */
    @Test
    void everyV1RouteNeedsTheTokenAndNothingChangesWithoutIt() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            String address = c1.addresses().get(0).address();
            JsonNode pools = env.get("/v1/pools").ok();
            JsonNode node = env.get("/v1/nodes/" + env.node).ok();
            String json = "application/json";
            List<HttpRequest.Builder> requests =
                    List.of(
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools")).GET(),
                            HttpRequest.newBuilder(env.base.resolve("/v1/blocks")).GET(),
                            HttpRequest.newBuilder(env.base.resolve("/v1/nodes")).GET(),
                            HttpRequest.newBuilder(env.base.resolve("/v1/nodes/" + env.node)).GET(),
                            HttpRequest.newBuilder(env.base.resolve("/v1/addresses/" + address))
                                    .GET(),
                            HttpRequest.newBuilder(env.base.resolve("/v1/check")).GET(),
                            HttpRequest.newBuilder(env.base.resolve("/v1/release"))
                                    .header("Content-Type", json)
                                    .POST(
                                            HttpRequest.BodyPublishers.ofString(
                                                    "{\"address\":\"" + address + "\"}")),
                            HttpRequest.newBuilder(env.base.resolve("/v1/gc"))
                                    .header("Content-Type", json)
                                    .POST(
                                            HttpRequest.BodyPublishers.ofString(
                                                    "{\"node\":\""
                                                            + env.node
                                                            + "\",\"network\":\"net\",\"validAttachments\":[]}")),
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools"))
                                    .header("Content-Type", json)
                                    .POST(
                                            HttpRequest.BodyPublishers.ofString(
                                                    "{\"name\":\"intruder\",\"cidr\":\"198.19.99.0/24\"}")),
                            HttpRequest.newBuilder(
                                            env.base.resolve(
                                                    "/v1/pools/" + env.v4.name() + "/disable"))
                                    .POST(HttpRequest.BodyPublishers.noBody()),
                            HttpRequest.newBuilder(env.base.resolve("/v1/pools/" + env.v4.name()))
                                    .DELETE(),
                            HttpRequest.newBuilder(
                                            env.base.resolve(
                                                    "/v1/nodes/"
                                                            + env.node
                                                            + "?releaseAddresses=true"))
                                    .DELETE());
            for (HttpRequest.Builder request : requests) {
                HttpRequest built = request.copy().build();
                String what = built.method() + " " + built.uri().getPath();
                assertTrue(
                        env.send(request.copy(), Optional.empty())
                                .error(401)
                                .contains("missing bearer token"),
                        what);
                assertEquals(
                        "wrong bearer token",
                        env.send(request, Optional.of("guess")).error(401),
                        what);
            }
            assertEquals(pools, env.get("/v1/pools").ok(), "no pool created, disabled or deleted");
            assertEquals(
                    node,
                    env.get("/v1/nodes/" + env.node).ok(),
                    "the attachment and its addresses are kept");
            assertEquals(
                    "net.c1",
                    env.get("/v1/addresses/" + address)
                            .ok()
                            .get("allocation")
                            .get("handle")
                            .asText());
        }
    }

    @Test
    void poolsShowTheirUtilisation() {
        try (Env env = cluster.env()) {
            env.add("c1");
            env.add("c2");
            JsonNode pools = env.get("/v1/pools").ok().get("pools");
            assertEquals(2, pools.size());
            JsonNode v4 = pools.get(0);
            OpenApi.assertShape("Pool", v4);
            assertEquals(env.v4.name(), v4.get("name").asText());
            assertEquals("198.18." + env.n + ".0/24", v4.get("cidr").asText());
            assertEquals(26, v4.get("blockSize").asInt());
            assertFalse(v4.get("strictAffinity").asBoolean());
            assertTrue(v4.get("allowBorrowing").asBoolean());
            assertEquals(0, v4.get("maxBlocksPerNode").asInt());
            assertFalse(v4.get("disabled").asBoolean());
            assertEquals(256, v4.get("size").asLong());
            assertEquals(1, v4.get("blocks").get("claimed").asLong());
            assertEquals(4, v4.get("blocks").get("total").asLong());
            assertEquals(2, v4.get("allocated").asLong());
            JsonNode v6 = pools.get(1);
            assertEquals("fd00:198:0:" + env.n + "::/120", v6.get("cidr").asText());
            assertEquals(2, v6.get("allocated").asLong());
        }
    }

    @Test
    void blocksListTheClaimedOnesAndFilterByPoolAndNode() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            JsonNode blocks = env.get("/v1/blocks").ok().get("blocks");
            assertEquals(2, blocks.size());
            JsonNode v4 = blocks.get(0);
            OpenApi.assertShape("Block", v4);
            assertEquals("198.18." + env.n + ".0/26", v4.get("cidr").asText());
            assertEquals(env.v4.name(), v4.get("pool").asText());
            assertEquals(env.node, v4.get("affinity").asText());
            assertEquals(64, v4.get("size").asInt());
            assertEquals(1, v4.get("allocated").asInt());
            assertEquals(63, v4.get("free").asInt());
            assertEquals(0, v4.get("borrowedBy").size());
            assertEquals(
                    c1.addresses().get(1).block().toString(), blocks.get(1).get("cidr").asText());

            assertEquals(1, env.get("/v1/blocks?pool=" + env.v6.name()).ok().get("blocks").size());
            assertEquals(2, env.get("/v1/blocks?node=" + env.node).ok().get("blocks").size());
            assertEquals(
                    0,
                    env.get("/v1/blocks?node=" + AdminCluster.MEMBER_NODE)
                            .ok()
                            .get("blocks")
                            .size(),
                    "a member with no blocks is known and has none");

            assertTrue(
                    env.get("/v1/blocks?pool=no-such-pool")
                            .error(404)
                            .contains("unknown pool no-such-pool"));
            assertEquals("unknown node nobody", env.get("/v1/blocks?node=nobody").error(404));
            assertEquals("query parameter pool is empty", env.get("/v1/blocks?pool=").error(400));
        }
    }

    @Test
    void borrowedBlocksShowWhoBorrowed() {
        try (Env env = cluster.env()) {
            env.add("c1");
            Ipam other = env.borrowerAfterClaimingEveryV4Block();
            AttachmentRecord borrowed =
                    env.add(other, "b1"); // the same ADD again: the same address
            String block = borrowed.addresses().get(0).block().toString();

            JsonNode blocks = env.get("/v1/blocks?node=" + other.node()).ok().get("blocks");
            assertEquals(1, blocks.size());
            assertEquals(block, blocks.get(0).get("cidr").asText());
            assertEquals(List.of(other.node()), texts(blocks.get(0).get("borrowedBy")));

            JsonNode node = env.get("/v1/nodes/" + other.node()).ok();
            assertEquals(List.of(), texts(node.get("affineBlocks")));
            assertEquals(List.of(block), texts(node.get("borrowedBlocks")));
        }
    }

    @Test
    void nodesListMembersAndOwnersAndShowAttachments() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            JsonNode nodes = env.get("/v1/nodes").ok().get("nodes");
            Set<String> names = new TreeSet<>();
            nodes.forEach(
                    n -> {
                        OpenApi.assertShape("NodeSummary", n);
                        names.add(n.get("name").asText());
                    });
            assertTrue(
                    names.containsAll(List.of(AdminCluster.MEMBER_NODE, env.node)),
                    names.toString());
            JsonNode member = find(nodes, AdminCluster.MEMBER_NODE);
            assertEquals("up", member.get("member").asText());
            assertEquals(0, member.get("attachments").asInt());
            JsonNode mine = find(nodes, env.node);
            assertEquals(
                    "absent",
                    mine.get("member").asText(),
                    "no member carries this test node's role");
            assertEquals(
                    List.of("198.18." + env.n + ".0/26", c1.addresses().get(1).block().toString()),
                    texts(mine.get("affineBlocks")));
            assertEquals(1, mine.get("attachments").asInt());

            JsonNode detail = env.get("/v1/nodes/" + env.node).ok();
            OpenApi.assertShape("NodeDetail", detail);
            JsonNode attachment = detail.get("attachmentList").get(0);
            assertEquals("net.c1", attachment.get("handle").asText());
            assertEquals("eth0", attachment.get("ifname").asText());
            assertEquals("net", attachment.get("network").asText());
            assertEquals("c1", attachment.get("containerId").asText());
            assertEquals("ns", attachment.get("podNamespace").asText());
            assertEquals("pod-c1", attachment.get("podName").asText());
            assertEquals(
                    c1.addresses().stream().map(h -> h.address()).toList(),
                    texts(attachment.get("addresses")));
            assertEquals(c1.createdAtMillis(), attachment.get("createdAtMillis").asLong());

            assertEquals(
                    "unknown node nobody-" + env.n,
                    env.get("/v1/nodes/nobody-" + env.n).error(404));
        }
    }

    private static JsonNode find(JsonNode nodes, String name) {
        for (JsonNode n : nodes) {
            if (n.get("name").asText().equals(name)) {
                return n;
            }
        }
        throw new AssertionError("no node " + name + " in " + nodes);
    }

    @Test
    void anAddressShowsItsHolder() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            String v4 = c1.addresses().get(0).address();
            JsonNode held = env.get("/v1/addresses/" + v4).ok();
            OpenApi.assertShape("AddressHolder", held);
            assertEquals(v4, held.get("address").asText());
            assertEquals(env.v4.name(), held.get("pool").asText());
            assertEquals("198.18." + env.n + ".0/26", held.get("block").asText());
            JsonNode allocation = held.get("allocation");
            assertEquals("net.c1", allocation.get("handle").asText());
            assertEquals("eth0", allocation.get("ifname").asText());
            assertEquals(env.node, allocation.get("node").asText());
            assertEquals("ns", allocation.get("podNamespace").asText());
            assertEquals("pod-c1", allocation.get("podName").asText());
            assertTrue(allocation.get("allocatedAtMillis").asLong() > 0);

            // The IPv6 address spelt out in full comes back canonical.
            String v6 = c1.addresses().get(1).address();
            String spelt = io.cadastre.ipam.IpAddresses.parse(v6).toFullString();
            JsonNode held6 = env.get("/v1/addresses/" + spelt).ok();
            assertEquals(v6, held6.get("address").asText());
            assertEquals("net.c1", held6.get("allocation").get("handle").asText());

            JsonNode free = env.get("/v1/addresses/198.18." + env.n + ".63").ok();
            assertTrue(free.get("allocation").isNull());
            JsonNode unclaimed = env.get("/v1/addresses/198.18." + env.n + ".200").ok();
            assertEquals("198.18." + env.n + ".192/26", unclaimed.get("block").asText());
            assertTrue(unclaimed.get("allocation").isNull());

            assertTrue(env.get("/v1/addresses/198.18.1").error(400).contains("198.18.1"));
            assertTrue(
                    env.get("/v1/addresses/not-an-address").error(400).contains("not-an-address"));
            assertTrue(
                    env.get("/v1/addresses/192.0.2.1")
                            .error(404)
                            .contains("192.0.2.1 is in none of the pools"));
        }
    }

    @Test
    void anEntityThatDoesNotAnswerIs503() {
        cluster.withStuckPool(
                "stuck",
                "198.18.250.0/24",
                (env, port) -> {
                    Reply reply =
                            env.send(
                                    HttpRequest.newBuilder(
                                                    java.net.URI.create(
                                                            "http://127.0.0.1:"
                                                                    + port
                                                                    + "/v1/pools"))
                                            .GET(),
                                    env.token);
                    assertEquals("Pool stuck did not answer within 1000 ms", reply.error(503));
                });
    }

    @Test
    void unknownPathsAndWrongMethodsAnswerJsonErrors() {
        try (Env env = cluster.env()) {
            env.get("/v1/nothing-here").error(404);
            env.get("/elsewhere").error(404);
            assertTrue(env.post("/v1/check", "{}").error(405).contains("GET"));
            assertTrue(env.get("/v1/release").error(405).contains("POST"));
        }
    }
}
