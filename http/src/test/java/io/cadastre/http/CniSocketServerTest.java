package io.cadastre.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.cni.CniBackend.AddRequest;
import io.cadastre.cni.CniBackend.AddResult;
import io.cadastre.cni.CniHandler;
import io.cadastre.cni.FakeBackend;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocatorMetric;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CNI endpoint end to end over a real Unix socket, spoken to by a raw HTTP/1.1 client that
 * sends what cni-bridge/DESIGN.md's request shows and reads the reply to EOF, as the C plugin does.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CniSocketServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static ActorTestKit testKit;

    @TempDir Path dir;

    private FakeBackend backend;
    private CniSocketServer server;
    private Path socket;

    @BeforeAll
    static void startSystem() {
        testKit = ActorTestKit.create();
    }

    @AfterAll
    static void stopSystem() {
        testKit.shutdownTestKit();
    }

    @BeforeEach
    void startServer() throws IOException {
        backend = new FakeBackend();
        socket = dir.resolve("run/cadastre/cni.sock");
        server = newServer(socket, 32);
        server.start();
    }

    @AfterEach
    void stopServer() {
        server.stop().toCompletableFuture().join();
    }

    private CniSocketServer newServer(Path path, int maxConnections) {
        return new CniSocketServer(
                testKit.system(),
                new CniHandler(backend),
                new CniSocketServer.Settings(path, Duration.ofSeconds(30), maxConnections));
    }

    private static final String NETCONF =
            "{\"cniVersion\":\"1.0.0\",\"name\":\"k8s-pod-network\",\"type\":\"cadastre\","
                    + "\"ipam\":{\"pools\":[\"default-ipv4\"]}}";

    private static Map<String, String> addHeaders() {
        Map<String, String> h = new LinkedHashMap<>();
        h.put("CNI-Command", "ADD");
        h.put("CNI-ContainerID", "abc123");
        h.put("CNI-Netns", "/var/run/netns/pod%201"); // "pod 1", percent-encoded as the plugin does
        h.put("CNI-Ifname", "eth0");
        h.put("CNI-Args", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0");
        h.put("CNI-Path", "/opt/cni/bin");
        return h;
    }

    /** @return an ADD of {@link #NETCONF} with {@link #addHeaders()}, as the plugin sends it */
    private static byte[] addRequest() {
        return request("POST", "/v1/cni", addHeaders(), NETCONF.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The backend answers every ADD with {@code answer} (completed by the test, or never).
     *
     * @return completed when the backend is first called
     */
    private CompletableFuture<Void> answerAddsWith(CompletableFuture<AddResult> answer) {
        CompletableFuture<Void> called = new CompletableFuture<>();
        backend.onAdd =
                r -> {
                    called.complete(null);
                    return answer;
                };
        return called;
    }

    @Test
    void addAnsweredWithResultAndConnectionClosed() throws Exception {
        Reply reply = send(addRequest());

        assertEquals("HTTP/1.1 200 OK", reply.statusLine);
        JsonNode body = JSON.readTree(reply.body);
        assertEquals("1.0.0", body.get("cniVersion").asText());
        assertEquals("198.18.0.5/32", body.at("/ips/0/address").asText());
        assertTrue(reply.closedByServer, "the server closes the connection");

        assertEquals(1, backend.calls.size());
        AddRequest add = (AddRequest) backend.calls.get(0).args().get(0);
        assertEquals("/var/run/netns/pod 1", add.attachment().netns());
        assertEquals("k8s-pod-network", add.attachment().network());
        assertEquals("abc123", add.attachment().containerId());
        assertEquals("eth0", add.attachment().ifname());
        assertEquals("web-0", add.pod().name());
        assertEquals(List.of("default-ipv4"), add.pools());
    }

    @Test
    void buffersComeFromTheEndpointsOwnSmallPool() throws Exception {
        PooledByteBufAllocatorMetric endpoints =
                ((PooledByteBufAllocator) ServerBuffers.ALLOCATOR).metric();
        PooledByteBufAllocatorMetric nettyDefault = PooledByteBufAllocator.DEFAULT.metric();
        long defaultBefore = nettyDefault.usedDirectMemory() + nettyDefault.usedHeapMemory();

        assertEquals("HTTP/1.1 200 OK", send(addRequest()).statusLine);

        assertEquals(256 * 1024, endpoints.chunkSize());
        assertTrue(endpoints.usedDirectMemory() > 0, "the call's buffers came from ServerBuffers");
        assertEquals(
                defaultBefore,
                nettyDefault.usedDirectMemory() + nettyDefault.usedHeapMemory(),
                "Netty's default pool (4 MiB chunks) stays unused");
    }

    @Test
    void delAnsweredWithEmptyBody() throws Exception {
        Map<String, String> h = addHeaders();
        h.put("CNI-Command", "DEL");
        h.remove("CNI-Netns");
        Reply reply = send(request("POST", "/v1/cni", h, NETCONF.getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 200 OK", reply.statusLine);
        assertEquals(0, reply.body.length);
        assertTrue(reply.closedByServer);
    }

    @Test
    void invalidRequestAnsweredWithErrorObject() throws Exception {
        Map<String, String> h = addHeaders();
        h.remove("CNI-Ifname");
        Reply reply = send(request("POST", "/v1/cni", h, NETCONF.getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 400 Bad Request", reply.statusLine);
        JsonNode body = JSON.readTree(reply.body);
        assertEquals(4, body.get("code").asInt());
        assertTrue(body.get("msg").asText().contains("CNI_IFNAME"));
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void versionAnsweredLikeThePlugin() throws Exception {
        Map<String, String> h = new LinkedHashMap<>();
        h.put("CNI-Command", "VERSION");
        Reply reply =
                send(
                        request(
                                "POST",
                                "/v1/cni",
                                h,
                                "{\"cniVersion\":\"0.4.0\"}".getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 200 OK", reply.statusLine);
        assertEquals(
                "{\"cniVersion\":\"0.4.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}",
                new String(reply.body, StandardCharsets.UTF_8));
    }

    @Test
    void socketFileIsOwnerOnlyAndRemovedOnStop() throws Exception {
        assertEquals(
                "rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
        assertEquals(
                "rwx------",
                PosixFilePermissions.toString(Files.getPosixFilePermissions(socket.getParent())));

        server.stop().toCompletableFuture().join();

        assertFalse(Files.exists(socket));
    }

    @Test
    void wrongPathIs404AndWrongMethodIs405() throws Exception {
        Reply notFound =
                send(
                        request(
                                "POST",
                                "/v1/other",
                                addHeaders(),
                                NETCONF.getBytes(StandardCharsets.UTF_8)));
        Reply badMethod = send(request("GET", "/v1/cni", Map.of(), new byte[0]));

        assertEquals("HTTP/1.1 404 Not Found", notFound.statusLine);
        assertTrue(notFound.closedByServer);
        assertEquals("HTTP/1.1 405 Method Not Allowed", badMethod.statusLine);
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void oversizeBodyIs413() throws Exception {
        byte[] big = new byte[(int) CniSocketServer.MAX_REQUEST_BYTES + 1];
        java.util.Arrays.fill(big, (byte) ' ');
        Reply reply = send(request("POST", "/v1/cni", addHeaders(), big));

        assertTrue(reply.statusLine.startsWith("HTTP/1.1 413 "), reply.statusLine);
        assertEquals(5, JSON.readTree(reply.body).get("code").asInt());
        assertWholeExchange(reply);
        assertTrue(backend.calls.isEmpty());
    }

    /**
     * After an early refusal the server reads and drops the rest of the request before it closes:
     * the client's send does not fail, and the reply ends in a clean EOF rather than a reset.
     */
    private static void assertWholeExchange(Reply reply) {
        assertTrue(reply.sentWhole, "the client could send its whole request");
        assertTrue(reply.closedByServer, "the reply ends in EOF, not a reset");
    }

    @Test
    void bodyOfExactlyTheLimitIsRead() throws Exception {
        byte[] netconf = NETCONF.getBytes(StandardCharsets.UTF_8);
        byte[] body = new byte[(int) CniSocketServer.MAX_REQUEST_BYTES];
        java.util.Arrays.fill(body, (byte) ' ');
        System.arraycopy(netconf, 0, body, 0, netconf.length);
        Reply reply = send(request("POST", "/v1/cni", addHeaders(), body));

        assertEquals("HTTP/1.1 200 OK", reply.statusLine);
        assertEquals(1, backend.calls.size());
    }

    @Test
    void concurrentRequestsAreServedTogether() throws Exception {
        int n = 24; // more than Pekko's default blocking-I/O pool of 16 threads
        AtomicInteger arrived = new AtomicInteger();
        CompletableFuture<AddResult> allArrived = new CompletableFuture<>();
        backend.onAdd =
                r -> {
                    if (arrived.incrementAndGet() == n) {
                        allArrived.complete(FakeBackend.DEFAULT_RESULT);
                    }
                    return allArrived; // nobody is answered before all n requests are in
                };
        ExecutorService clients = Executors.newFixedThreadPool(n);
        try {
            List<Future<Reply>> replies = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Map<String, String> h = addHeaders();
                h.put("CNI-ContainerID", "c" + i);
                byte[] req =
                        request("POST", "/v1/cni", h, NETCONF.getBytes(StandardCharsets.UTF_8));
                replies.add(clients.submit(() -> send(req)));
            }
            for (Future<Reply> f : replies) {
                assertEquals("HTTP/1.1 200 OK", f.get().statusLine);
            }
        } finally {
            clients.shutdownNow();
        }
    }

    @Test
    void clientThatHalfClosesStillGetsTheReply() throws Exception {
        byte[] req = addRequest();
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            writeFully(ch, req);
            ch.shutdownOutput();
            Reply reply = readReply(ch);
            assertEquals("HTTP/1.1 200 OK", reply.statusLine);
        }
    }

    @Test
    void staleSocketFileIsReplaced() throws Exception {
        Path stale = dir.resolve("stale.sock");
        try (ServerSocketChannel old = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            old.bind(UnixDomainSocketAddress.of(stale));
        } // closed: the file stays behind, nobody listens
        assertTrue(Files.exists(stale));

        CniSocketServer second = newServer(stale, 4);
        second.start();
        try {
            Map<String, String> h = new LinkedHashMap<>();
            h.put("CNI-Command", "VERSION");
            assertEquals(
                    "HTTP/1.1 200 OK",
                    send(stale, request("POST", "/v1/cni", h, new byte[0])).statusLine);
        } finally {
            second.stop().toCompletableFuture().join();
        }
    }

    @Test
    void refusesToStartOverALiveServerOrAnOrdinaryFile() throws Exception {
        CniSocketServer second = newServer(socket, 4);
        IOException live = assertThrows(IOException.class, second::start);
        assertTrue(live.getMessage().contains("another process"), live.getMessage());

        Path file = dir.resolve("plain-file");
        Files.writeString(file, "not a socket");
        IOException plain = assertThrows(IOException.class, newServer(file, 4)::start);
        assertTrue(plain.getMessage().contains("not a socket"), plain.getMessage());

        // the failed attempts left the running server alone
        Map<String, String> h = new LinkedHashMap<>();
        h.put("CNI-Command", "VERSION");
        assertEquals(
                "HTTP/1.1 200 OK", send(request("POST", "/v1/cni", h, new byte[0])).statusLine);
    }

    @Test
    void requestThatTakesTooLongIsTryAgainLater() throws Exception {
        backend.onAdd = r -> new CompletableFuture<>(); // never answers
        Path path = dir.resolve("slow.sock");
        CniSocketServer slow =
                new CniSocketServer(
                        testKit.system(),
                        new CniHandler(backend),
                        new CniSocketServer.Settings(path, Duration.ofMillis(300), 4));
        slow.start();
        try {
            Reply reply = send(path, addRequest());

            assertEquals("HTTP/1.1 503 Service Unavailable", reply.statusLine);
            JsonNode error = JSON.readTree(reply.body);
            assertEquals(11, error.get("code").asInt());
            assertEquals("1.0.0", error.get("cniVersion").asText());
            assertTrue(reply.closedByServer);
        } finally {
            slow.stop().toCompletableFuture().join();
        }
    }

    @Test
    void stopAbortsARequestThatDoesNotFinish() throws Exception {
        CompletableFuture<AddResult> never = new CompletableFuture<>();
        CompletableFuture<Void> called = answerAddsWith(never);
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            writeFully(ch, addRequest());
            called.get();

            CompletionStage<?> stopped = server.stop(Duration.ZERO);
            stopped.toCompletableFuture().get(10, TimeUnit.SECONDS);

            ByteBuffer b = ByteBuffer.allocate(1024);
            while (readOrEof(ch, b) >= 0) {
                // drain whatever the server sent before closing
            }
            assertFalse(Files.exists(socket));
        }
    }

    @Test
    void clientThatSendsNoWholeRequestIsClosedWithoutReply() throws Exception {
        Path path = dir.resolve("impatient.sock");
        CniSocketServer impatient =
                new CniSocketServer(
                        testKit.system(),
                        new CniHandler(backend),
                        new CniSocketServer.Settings(path, Duration.ofSeconds(30), 4),
                        Duration.ofMillis(200));
        impatient.start();
        try (SocketChannel silent = SocketChannel.open(UnixDomainSocketAddress.of(path));
                SocketChannel partial = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
            byte[] req = addRequest();
            writeFully(
                    partial, java.util.Arrays.copyOf(req, req.length - 10)); // the body stops short

            ByteBuffer b = ByteBuffer.allocate(1024);
            assertTrue(readOrEof(silent, b) < 0, "closed, and nothing was sent");
            assertTrue(readOrEof(partial, b) < 0, "closed, and nothing was sent");
        } finally {
            impatient.stop().toCompletableFuture().join();
        }
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void clientThatHalfClosesBeforeSendingIsClosed() throws Exception {
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            ch.shutdownOutput();
            assertTrue(readOrEof(ch, ByteBuffer.allocate(1024)) < 0);
        }
    }

    @Test
    void wrongPathAndMethodGetCniErrorObjects() throws Exception {
        Reply notFound =
                send(
                        request(
                                "POST",
                                "/v1/cni/extra",
                                addHeaders(),
                                NETCONF.getBytes(StandardCharsets.UTF_8)));
        Reply badMethod =
                send(
                        request(
                                "PUT",
                                "/v1/cni?x=1",
                                addHeaders(),
                                NETCONF.getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 404 Not Found", notFound.statusLine);
        assertEquals(4, JSON.readTree(notFound.body).get("code").asInt());
        assertEquals("HTTP/1.1 405 Method Not Allowed", badMethod.statusLine);
        assertEquals("POST", badMethod.headers.get("allow"));
        assertEquals(4, JSON.readTree(badMethod.body).get("code").asInt());
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void oversizeHeadersGetAnErrorObject() throws Exception {
        Map<String, String> h = addHeaders();
        h.put("CNI-Args", "K8S_POD_NAME=" + "x".repeat(300 * 1024));
        Reply reply = send(request("POST", "/v1/cni", h, NETCONF.getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 431 Request Header Fields Too Large", reply.statusLine);
        JsonNode error = JSON.readTree(reply.body);
        assertEquals(4, error.get("code").asInt());
        assertEquals(
                "1.1.0",
                error.get("cniVersion").asText(),
                "the body is not read, so no cniVersion to echo");
        assertTrue(error.get("msg").asText().contains("headers too long"), reply.toString());
        assertWholeExchange(reply);
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void tooManyHeadersGetAnErrorObject() throws Exception {
        // The head's byte limit bounds the number of headers too: 50,000 short ones are over it.
        Map<String, String> h = addHeaders();
        for (int i = 0; i < 50_000; i++) {
            h.put("X-" + i, "v");
        }
        Reply reply = send(request("POST", "/v1/cni", h, NETCONF.getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 431 Request Header Fields Too Large", reply.statusLine);
        assertEquals(4, JSON.readTree(reply.body).get("code").asInt());
        assertWholeExchange(reply);
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void oversizeRequestLineGetsAnErrorObject() throws Exception {
        Reply reply =
                send(
                        request(
                                "POST",
                                "/v1/cni?" + "x".repeat(8 * 1024),
                                addHeaders(),
                                NETCONF.getBytes(StandardCharsets.UTF_8)));

        assertEquals("HTTP/1.1 414 Request-URI Too Long", reply.statusLine);
        assertEquals(4, JSON.readTree(reply.body).get("code").asInt());
        assertWholeExchange(reply);
        assertTrue(backend.calls.isEmpty());
    }

    /** The plugin's limits on the CNI variables, in bytes (cni-bridge/DESIGN.md, "Request"). */
    private static final Map<String, Integer> PLUGIN_LIMITS =
            Map.of(
                    "CNI-Command",
                    64,
                    "CNI-ContainerID",
                    255,
                    "CNI-Netns",
                    4095,
                    "CNI-Ifname",
                    15,
                    "CNI-Args",
                    8192,
                    "CNI-Path",
                    8192);

    @Test
    void theLongestHeadThePluginSendsIsWithinTheLimits() throws Exception {
        // Every variable at the plugin's limit and every byte percent-encoded, as the plugin
        // encodes `%`: the agent must serve it, not refuse it in the HTTP codec. CNI-Command is
        // padded by a header of its own so the verb stays ADD.
        Map<String, String> values =
                Map.of(
                        "CNI-Command",
                        "ADD",
                        "CNI-ContainerID",
                        "c".repeat(255),
                        "CNI-Netns",
                        "/" + "n".repeat(4094),
                        "CNI-Ifname",
                        "e".repeat(15),
                        "CNI-Args",
                        "IgnoreUnknown=1;X=" + "a".repeat(8192 - 18),
                        "CNI-Path",
                        "/" + "p".repeat(8191));
        Map<String, String> h = new LinkedHashMap<>();
        values.forEach(
                (name, v) -> {
                    assertTrue(v.length() <= PLUGIN_LIMITS.get(name), name);
                    h.put(name, percentEncodeAll(v));
                });
        h.put("X-Pad", "%41".repeat(PLUGIN_LIMITS.get("CNI-Command") - 3));
        byte[] request = request("POST", "/v1/cni", h, NETCONF.getBytes(StandardCharsets.UTF_8));
        int values3x = PLUGIN_LIMITS.values().stream().mapToInt(n -> 3 * n).sum();
        assertTrue(request.length > values3x, "as long as the plugin's longest: " + request.length);

        Reply reply = send(request);

        assertEquals(
                "HTTP/1.1 200 OK",
                reply.statusLine,
                new String(reply.body, StandardCharsets.UTF_8));
        AddRequest add = (AddRequest) backend.calls.get(0).args().get(0);
        assertEquals("/" + "n".repeat(4094), add.attachment().netns());
        assertEquals("e".repeat(15), add.attachment().ifname());
    }

    private static String percentEncodeAll(String s) {
        StringBuilder sb = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            sb.append('%').append(String.format("%02X", b & 0xff));
        }
        return sb.toString();
    }

    @Test
    void replyHasContentLengthAndConnectionClose() throws Exception {
        Reply reply = send(addRequest());

        assertEquals(String.valueOf(reply.body.length), reply.headers.get("content-length"));
        assertEquals("close", reply.headers.get("connection"));
        assertEquals("application/json", reply.headers.get("content-type"));
    }

    @Test
    void handlerIsCalledOnTheEndpointsOwnThreads() throws Exception {
        CompletableFuture<String> thread = new CompletableFuture<>();
        backend.onAdd =
                r -> {
                    thread.complete(Thread.currentThread().getName());
                    return CompletableFuture.completedFuture(FakeBackend.DEFAULT_RESULT);
                };
        send(addRequest());

        assertEquals("cadastre-cni", thread.get());
    }

    @Test
    void connectionsBeyondTheLimitWaitForAFreeSlot() throws Exception {
        CompletableFuture<AddResult> release = new CompletableFuture<>();
        CompletableFuture<Void> called = answerAddsWith(release);
        Path path = dir.resolve("narrow.sock");
        CniSocketServer narrow = newServer(path, 1);
        narrow.start();
        ExecutorService clients = Executors.newSingleThreadExecutor();
        try (SocketChannel first = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
            writeFully(first, addRequest());
            called.get();
            Map<String, String> h = new LinkedHashMap<>();
            h.put(
                    "CNI-Command",
                    "VERSION"); // answered without the backend, so only the limit can hold it up
            Future<Reply> second =
                    clients.submit(() -> send(path, request("POST", "/v1/cni", h, new byte[0])));

            // Not a timing assumption: a correct server never answers here, however long one waits;
            // a server without the limit answers a VERSION in about a millisecond.
            assertThrows(
                    java.util.concurrent.TimeoutException.class,
                    () -> second.get(300, TimeUnit.MILLISECONDS));
            release.complete(FakeBackend.DEFAULT_RESULT);
            assertEquals("HTTP/1.1 200 OK", readReply(first).statusLine);
            assertEquals("HTTP/1.1 200 OK", second.get().statusLine);
        } finally {
            clients.shutdownNow();
            narrow.stop().toCompletableFuture().join();
        }
    }

    @Test
    void stopRemovesTheSocketAtOnceAndLetsARequestInFlightFinish() throws Exception {
        CompletableFuture<AddResult> release = new CompletableFuture<>();
        CompletableFuture<Void> called = answerAddsWith(release);
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            writeFully(ch, addRequest());
            called.get();

            CompletableFuture<?> stopped =
                    server.stop(Duration.ofSeconds(30)).toCompletableFuture();
            assertFalse(Files.exists(socket));
            assertThrows(
                    IOException.class,
                    () -> SocketChannel.open(UnixDomainSocketAddress.of(socket)));
            assertFalse(stopped.isDone(), "a request is still in flight");
            assertTrue(server.stop() == server.stop(), "stop is idempotent");

            release.complete(FakeBackend.DEFAULT_RESULT);
            assertEquals("HTTP/1.1 200 OK", readReply(ch).statusLine);
            stopped.get(10, TimeUnit.SECONDS);
        }
    }

    // --- a tiny HTTP/1.1 client ---

    /**
     * @param closedByServer the reply ended in a clean EOF (not a reset)
     * @param sentWhole the whole request could be written (see {@link #send(Path, byte[])})
     */
    private record Reply(
            String statusLine,
            Map<String, String> headers,
            byte[] body,
            boolean closedByServer,
            boolean sentWhole) {}

    private static byte[] request(
            String method, String path, Map<String, String> cniHeaders, byte[] body) {
        StringBuilder sb = new StringBuilder();
        sb.append(method).append(' ').append(path).append(" HTTP/1.1\r\n");
        sb.append("Host: cadastre\r\n");
        sb.append("Content-Type: application/json\r\n");
        sb.append("Content-Length: ").append(body.length).append("\r\n");
        sb.append("Connection: close\r\n");
        cniHeaders.forEach((k, v) -> sb.append(k).append(": ").append(v).append("\r\n"));
        sb.append("\r\n");
        byte[] head = sb.toString().getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[head.length + body.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(body, 0, all, head.length, body.length);
        return all;
    }

    private Reply send(byte[] request) throws IOException {
        return send(socket, request);
    }

    private static Reply send(Path socket, byte[] request) throws IOException {
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            boolean sentWhole = true;
            try {
                writeFully(ch, request);
            } catch (IOException e) {
                // a server that answers and closes before reading everything: read the reply anyway
                sentWhole = false;
            }
            Reply r = readReply(ch);
            return new Reply(r.statusLine, r.headers, r.body, r.closedByServer, sentWhole);
        }
    }

    private static void writeFully(SocketChannel ch, byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** @return bytes read, -1 at EOF, -2 when the server reset the connection */
    private static int readOrEof(SocketChannel ch, ByteBuffer b) {
        b.clear();
        try {
            return ch.read(b);
        } catch (IOException e) {
            return -2;
        }
    }

    /** Reads to EOF, then splits status line, headers and body (Content-Length or to EOF). */
    private static Reply readReply(SocketChannel ch) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        ByteBuffer b = ByteBuffer.allocate(8192);
        int n;
        while ((n = readOrEof(ch, b)) >= 0) {
            all.write(b.array(), 0, n);
        }
        boolean cleanEof = n == -1;
        byte[] bytes = all.toByteArray();
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new IOException("no complete reply: " + text);
        }
        String[] lines = text.substring(0, end).split("\r\n");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(
                    lines[i].substring(0, colon).trim().toLowerCase(),
                    lines[i].substring(colon + 1).trim());
        }
        byte[] body = java.util.Arrays.copyOfRange(bytes, end + 4, bytes.length);
        if (headers.containsKey("content-length")) {
            assertEquals(
                    Integer.parseInt(headers.get("content-length")), body.length, "body length");
        }
        return new Reply(lines[0], headers, body, cleanEof, true);
    }
}
