package io.cadastre.admin;

import static io.cadastre.admin.AdminCluster.texts;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.admin.AdminCluster.Env;
import io.cadastre.admin.AdminCluster.Reply;
import io.cadastre.shards.AttachmentRecord;
import java.net.http.HttpRequest;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Request bodies are read one way only: exactly one JSON object, each field once, declared
 * {@code application/json}. A duplicate field (which a lenient reader resolves as "last wins"),
 * anything after the object, or another content type is refused (400, 400, 415) on every route
 * that takes a body, with the usual {@code {"error": ...}}, and nothing changes: the live
 * attachment keeps its addresses, no pool is created.
 */
class AdminRequestBodyTest {
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    /** What must stay as it was: the pools, the node's attachments, the address's holder. */
    private record State(JsonNode pools, JsonNode node, JsonNode address) {
        static State of(Env env, String address) {
            return new State(
                    env.get("/v1/pools").ok(),
                    env.get("/v1/nodes/" + env.node).ok(),
                    env.get("/v1/addresses/" + address).ok());
        }
    }

    /** Attachment c1 on the env's node, live: its IPv4 address, and the state before any refused request. */
    private record Live(AttachmentRecord c1, String address, State before) {
        static Live on(Env env) {
            AttachmentRecord c1 = env.add("c1");
            String address = c1.addresses().get(0).address();
            return new Live(c1, address, State.of(env, address));
        }

        void assertUnchanged(Env env) {
            assertEquals(before, State.of(env, address));
        }
    }

    private static String release(String address) {
        return "{\"address\":\"" + address + "\"}";
    }

    private static String gc(Env env) {
        return "{\"node\":\"" + env.node + "\",\"network\":\"net\",\"validAttachments\":[]}";
    }

    private static String pool(String name, String cidr) {
        return "{\"name\":\"" + name + "\",\"cidr\":\"" + cidr + "\"}";
    }

    @Test
    void aFieldGivenTwiceIs400AndChangesNothing() {
        try (Env env = cluster.env()) {
            Live c1 = Live.on(env);
            String live = c1.address();
            String free = "198.18." + env.n + ".200";
            for (String[] c :
                    new String[][] {
                        {
                            "/v1/release",
                            "{\"address\":\"" + free + "\",\"address\":\"" + live + "\"}",
                            "address"
                        },
                        {
                            "/v1/release",
                            "{\"node\":\""
                                    + env.node
                                    + "\",\"handle\":\"net.c9\",\"handle\":\"net.c1\"}",
                            "handle"
                        },
                        {
                            "/v1/gc",
                            "{\"node\":\""
                                    + env.node
                                    + "\",\"network\":\"net\",\"validAttachments\":[{\"containerId\":\"c1\","
                                    + "\"ifname\":\"eth0\"}],\"validAttachments\":[]}",
                            "validAttachments"
                        },
                        {
                            "/v1/gc",
                            "{\"node\":\""
                                    + env.node
                                    + "\",\"network\":\"net\",\"validAttachments\":[{\"containerId\":\"c1\","
                                    + "\"containerId\":\"c9\",\"ifname\":\"eth0\"}]}",
                            "containerId"
                        },
                        {
                            "/v1/pools",
                            "{\"name\":\"dup\",\"cidr\":\"198.19.40.0/24\",\"cidr\":\"198.19.41.0/24\"}",
                            "cidr"
                        }
                    }) {
                String error = env.post(c[0], c[1]).error(400);
                assertTrue(
                        error.startsWith("malformed JSON: Duplicate field '" + c[2] + "'"),
                        c[1] + ": " + error);
            }
            c1.assertUnchanged(env);
        }
    }

    @Test
    void anythingAfterTheObjectIs400AndChangesNothing() {
        try (Env env = cluster.env()) {
            Live c1 = Live.on(env);
            String release = release(c1.address());
            String gc = gc(env);
            String pool = pool("trailing", "198.19.42.0/24");
            for (String[] c :
                    new String[][] {
                        {"/v1/release", release + " {\"address\":\"198.18.0.1\"}"},
                        {"/v1/release", release + "garbage"},
                        {"/v1/release", release + " 1"},
                        {"/v1/release", release + "}"},
                        {"/v1/gc", gc + "\n[]"},
                        {"/v1/pools", pool + " x"},
                        {"/v1/pools", pool + pool}
                    }) {
                String error = env.post(c[0], c[1]).error(400);
                assertTrue(error.startsWith("malformed JSON"), c[1] + ": " + error);
            }
            c1.assertUnchanged(env);
            // Whitespace after the object is not "more".
            assertEquals(
                    List.of(c1.address(), c1.c1().addresses().get(1).address()),
                    texts(env.post("/v1/release", release + " \r\n\t").ok().get("released")));
        }
    }

    @Test
    void aBodyThatIsNotDeclaredJsonIs415AndChangesNothing() {
        try (Env env = cluster.env()) {
            Live c1 = Live.on(env);
            String release = release(c1.address());
            String gc = gc(env);
            String pool = pool("plain", "198.19.43.0/24");
            for (String[] c :
                    new String[][] {
                        {"/v1/release", release, "text/plain"},
                        {"/v1/release", release, "text/plain; charset=utf-8"},
                        {"/v1/release", release, "application/x-www-form-urlencoded"},
                        {"/v1/release", release, null},
                        {"/v1/gc", gc, "text/plain"},
                        {"/v1/pools", pool, "text/plain"},
                        {"/v1/pools", pool, "application/jsonx"}
                    }) {
                HttpRequest.Builder request =
                        HttpRequest.newBuilder(env.base.resolve(c[0]))
                                .POST(HttpRequest.BodyPublishers.ofString(c[1]));
                if (c[2] != null) {
                    request.header("Content-Type", c[2]);
                }
                Reply reply = env.send(request, env.token);
                assertTrue(
                        reply.error(415)
                                .startsWith(
                                        "the body must be JSON (Content-Type: application/json), not "),
                        c[0] + " " + c[2] + ": " + reply.body());
                assertEquals("application/json", reply.contentType());
            }
            c1.assertUnchanged(env);
            // A charset parameter is still JSON.
            Reply withCharset =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/v1/release"))
                                    .header("Content-Type", "application/json; charset=utf-8")
                                    .POST(HttpRequest.BodyPublishers.ofString(release)),
                            env.token);
            assertEquals(2, withCharset.ok().get("released").size(), withCharset.body());
        }
    }

    @Test
    void theTokenIsCheckedBeforeTheBody() {
        try (Env env = cluster.env()) {
            Reply reply =
                    env.send(
                            HttpRequest.newBuilder(env.base.resolve("/v1/release"))
                                    .header("Content-Type", "text/plain")
                                    .POST(
                                            HttpRequest.BodyPublishers.ofString(
                                                    "{\"a\":1,\"a\":2} x")),
                            Optional.empty());
            assertTrue(reply.error(401).contains("missing bearer token"), reply.body());
        }
    }
}
