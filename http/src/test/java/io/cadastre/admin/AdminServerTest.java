package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.admin.AdminCluster.Env;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The admin server's HTTP handling below the routes, on a raw TCP connection. */
class AdminServerTest {
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int TIMEOUT_MS = 10_000;

    /** One answer as read off the connection. */
    record Answer(int status, Map<String, String> headers, String body) {
        String error() throws IOException {
            return JSON.readTree(body).get("error").asText();
        }
    }

    private static Socket connect(Env env) throws IOException {
        Socket socket = new Socket(env.base.getHost(), env.base.getPort());
        socket.setSoTimeout(TIMEOUT_MS);
        return socket;
    }

    private static void send(Socket socket, String request) throws IOException {
        OutputStream out = socket.getOutputStream();
        out.write(request.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    /** Reads one answer: status line, headers, then Content-Length bytes of body. */
    private static Answer read(InputStream in) throws IOException {
        Answer head = readHead(in);
        byte[] body = in.readNBytes(Integer.parseInt(head.headers().get("Content-Length")));
        return new Answer(head.status(), head.headers(), new String(body, StandardCharsets.UTF_8));
    }

    /** Reads the status line and the headers only; the body, if any, is left unread. */
    private static Answer readHead(InputStream in) throws IOException {
        String status = line(in);
        Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (String header = line(in); !header.isEmpty(); header = line(in)) {
            int colon = header.indexOf(':');
            headers.put(header.substring(0, colon).trim(), header.substring(colon + 1).trim());
        }
        return new Answer(Integer.parseInt(status.split(" ")[1]), headers, "");
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new IOException("the connection closed mid-answer: " + line);
            }
            if (b != '\r') {
                line.write(b);
            }
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }

    @Test
    void requestsSentTogetherOnOneConnectionAreAnsweredInTheirOrder() throws Exception {
        try (Env env = cluster.env();
                Socket socket = connect(env)) {
            env.add("c1");
            String auth = "Authorization: Bearer " + AdminCluster.TOKEN + "\r\n";
            // The pools' listing asks an entity; the probe after it does not: the probe's answer
            // must still come second.
            send(
                    socket,
                    "GET /v1/pools HTTP/1.1\r\nHost: a\r\n"
                            + auth
                            + "\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                            + "GET /v1/nodes/%74" // percent-encoded "t"
                            + env.node.substring(1)
                            + " HTTP/1.1\r\nHost: a\r\n"
                            + auth
                            + "\r\n");
            InputStream in = socket.getInputStream();
            Answer pools = read(in);
            assertEquals(200, pools.status(), pools.body());
            assertTrue(pools.body().contains(env.v4.name()), pools.body());
            Answer health = read(in);
            assertEquals(200, health.status());
            assertEquals("ok", JSON.readTree(health.body()).get("status").asText());
            Answer node = read(in);
            assertEquals(200, node.status(), node.body());
            assertEquals(env.node, JSON.readTree(node.body()).get("name").asText());
        }
    }

    @Test
    void headIsAnsweredAsGetWithoutTheBody() throws Exception {
        try (Env env = cluster.env();
                Socket socket = connect(env)) {
            send(
                    socket,
                    "HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /readyz HTTP/1.1\r\nHost: a\r\n\r\n");
            InputStream in = socket.getInputStream();
            Answer head = readHead(in);
            assertEquals(200, head.status());
            assertEquals("application/json", head.headers().get("Content-Type"));
            assertEquals(
                    Integer.toString("{\"status\":\"ok\"}".length()),
                    head.headers().get("Content-Length"));
            // No body: the next bytes are the second answer's.
            Answer ready = read(in);
            assertEquals(200, ready.status());
            assertEquals("ready", JSON.readTree(ready.body()).get("status").asText());
        }
    }

    @Test
    void aBodyOverTheLimitIs413AndTheConnectionCloses() throws Exception {
        try (Env env = cluster.env();
                Socket socket = connect(env)) {
            send(
                    socket,
                    "POST /v1/release HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer "
                            + AdminCluster.TOKEN
                            + "\r\nContent-Type: application/json\r\nContent-Length: "
                            + (AdminServer.MAX_BODY_BYTES + 1)
                            + "\r\n\r\n");
            Answer answer = read(socket.getInputStream());
            assertEquals(413, answer.status());
            assertTrue(
                    answer.error().contains("over " + AdminServer.MAX_BODY_BYTES), answer.body());
            assertEquals(-1, socket.getInputStream().read(), "closed after the answer");
        }
    }

    @Test
    void aMalformedRequestIs400InJson() throws Exception {
        try (Env env = cluster.env()) {
            List<String> requests =
                    List.of(
                            "GET /v1/nodes/%zz HTTP/1.1\r\nHost: a\r\n\r\n",
                            "GET /" + "x".repeat(5000) + " HTTP/1.1\r\nHost: a\r\n\r\n",
                            "NOT-HTTP\r\n\r\n");
            List<String> errors = new ArrayList<>();
            for (String request : requests) {
                try (Socket socket = connect(env)) {
                    send(socket, request);
                    Answer answer = read(socket.getInputStream());
                    assertEquals(400, answer.status(), answer.body());
                    assertEquals("application/json", answer.headers().get("Content-Type"));
                    errors.add(answer.error());
                }
            }
            assertTrue(errors.get(0).startsWith("malformed request target"), errors.get(0));
            assertTrue(errors.get(1).startsWith("malformed HTTP request"), errors.get(1));
        }
    }

    @Test
    void aTrailingSlashOrAnEmptySegmentIsNoRoute() {
        try (Env env = cluster.env()) {
            env.get("/v1/pools/").error(404);
            env.get("/v1//pools").error(404);
            env.get("/healthz/").error(404);
        }
    }

    @Test
    void stopClosesTheConnectionsKeptAliveAndThePort() throws Exception {
        try (Env env = cluster.env()) {
            try (Socket idle = connect(env)) {
                send(idle, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
                assertEquals(200, read(idle.getInputStream()).status());
                env.server
                        .stop()
                        .toCompletableFuture()
                        .get(AdminServer.STOP_GRACE.toSeconds() + 10, TimeUnit.SECONDS);
                assertEquals(-1, idle.getInputStream().read(), "closed by stop");
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            boolean refused = false;
            while (!refused && System.nanoTime() < deadline) {
                try (Socket again = new Socket(env.base.getHost(), env.base.getPort())) {
                    again.setSoTimeout(TIMEOUT_MS);
                    send(again, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
                    refused = again.getInputStream().read() < 0;
                } catch (IOException e) {
                    refused = true;
                }
            }
            assertTrue(refused, "the port no longer answers after stop");
        }
    }
}
