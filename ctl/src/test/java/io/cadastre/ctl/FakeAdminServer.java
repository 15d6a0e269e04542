package io.cadastre.ctl;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A stand-in for an agent's admin API on 127.0.0.1 (an ephemeral port): answers fixed JSON per
 * {@code "METHOD /raw/path?query"}, 404 {@code {"error": ...}} for anything else, and records
 * every request it receives. A route can be made to hang until {@link #close()}, for timeouts.
 * It checks nothing itself (no token): tests assert on {@link #requests()}.
 */
final class FakeAdminServer implements AutoCloseable {
    /** One received request: the raw path and query as sent, selected headers, the body. */
    record Request(
            String method, String target, String authorization, String contentType, String body) {}

    private record Answer(int status, String body) {}

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool();
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    private final Set<String> hanging = ConcurrentHashMap.newKeySet();
    private final List<Request> requests = new CopyOnWriteArrayList<>();
    private final CountDownLatch closing = new CountDownLatch(1);

    FakeAdminServer() throws IOException {
        this(InetAddress.getLoopbackAddress());
    }

    /** Listens on {@code address} (and a free port) instead of loopback; {@link #url()} still names loopback. */
    FakeAdminServer(InetAddress address) throws IOException {
        server = HttpServer.create(new InetSocketAddress(address, 0), 0);
        server.createContext("/", this::handle);
        // Handlers on their own threads: a hanging one must not hold the dispatcher (close() joins
        // it).
        server.setExecutor(executor);
        server.start();
    }

    /** @return the base URL, {@code http://127.0.0.1:PORT} */
    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /**
     * Runs cadastrectl in-process against this server ({@code --server} its URL), with an empty
     * environment and no default token file ({@link Fixtures#run(Map, String...)}).
     */
    Fixtures.Run ctl(String... args) {
        String[] withServer = new String[args.length + 2];
        withServer[0] = "--server";
        withServer[1] = url();
        System.arraycopy(args, 0, withServer, 2, args.length);
        return Fixtures.run(Map.of(), withServer);
    }

    /** @return the server's port */
    int port() {
        return server.getAddress().getPort();
    }

    /** Answers {@code method target} with {@code status} and the JSON {@code body}. */
    FakeAdminServer answer(String method, String target, int status, String body) {
        answers.put(method + " " + target, new Answer(status, body));
        return this;
    }

    /** Answers {@code GET target} with 200 and {@code body}. */
    FakeAdminServer get(String target, String body) {
        return answer("GET", target, 200, body);
    }

    /** Makes {@code method target} receive the request and never answer (until {@link #close()}). */
    FakeAdminServer hang(String method, String target) {
        hanging.add(method + " " + target);
        return this;
    }

    List<Request> requests() {
        return List.copyOf(requests);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String body;
            try (InputStream in = exchange.getRequestBody()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            String target =
                    exchange.getRequestURI().getRawPath()
                            + (exchange.getRequestURI().getRawQuery() == null
                                    ? ""
                                    : "?" + exchange.getRequestURI().getRawQuery());
            String key = exchange.getRequestMethod() + " " + target;
            requests.add(
                    new Request(
                            exchange.getRequestMethod(),
                            target,
                            exchange.getRequestHeaders().getFirst("Authorization"),
                            exchange.getRequestHeaders().getFirst("Content-Type"),
                            body));
            if (hanging.contains(key)) {
                awaitClose();
                return;
            }
            Answer answer =
                    answers.getOrDefault(
                            key, new Answer(404, "{\"error\":\"fake: no route for " + key + "\"}"));
            byte[] bytes = answer.body().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(answer.status(), bytes.length == 0 ? -1 : bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    private void awaitClose() {
        try {
            closing.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closing.countDown();
        server.stop(0);
        executor.shutdownNow();
    }
}
