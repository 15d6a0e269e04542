package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A stand-in for the cadastre agent's CNI endpoint: a Unix domain socket in a fresh temp dir that
 * accepts connections one at a time, records each raw HTTP request, answers every one with the
 * same canned bytes (a whole, partial or malformed HTTP response) and closes the connection.
 *
 * <p>Start it with {@link #start(byte[])} in try-with-resources; {@link #close()} stops the
 * accept thread and deletes the socket and its directory. A request that cannot be read fails the
 * test there; errors writing the reply are ignored, since the plugin may stop reading on purpose
 * (a reply over its limit). {@link #answeringEarly(String)} makes one that answers as soon as the
 * request line is in, as the agent does when a limit refuses a request, and closes with the rest
 * unread.
 */
final class FakeAgent implements AutoCloseable {

    /** One request as received: the request line parts, headers in order, and the raw body. */
    record Request(
            String method,
            String target,
            String version,
            List<Map.Entry<String, String>> headers,
            byte[] body) {

        /** The value of the only header with this name (case-insensitive), if any; fails on duplicates. */
        Optional<String> header(String name) {
            List<String> values =
                    headers.stream()
                            .filter(h -> h.getKey().equalsIgnoreCase(name))
                            .map(Map.Entry::getValue)
                            .toList();
            if (values.size() > 1) {
                fail("header " + name + " sent " + values.size() + " times");
            }
            return values.stream().findFirst();
        }

        List<String> headerNames() {
            return headers.stream().map(Map.Entry::getKey).toList();
        }
    }

    private final Path dir;
    private final Path socket;
    private final ServerSocketChannel server;
    private final byte[] response;
    private final boolean early;
    private final AtomicInteger connections = new AtomicInteger();
    private final BlockingQueue<Request> requests = new LinkedBlockingQueue<>();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final AtomicReference<SocketChannel> current = new AtomicReference<>();
    private final Thread thread;

    private FakeAgent(byte[] response, boolean early) throws IOException {
        this.dir = Files.createTempDirectory("cadastre-agent");
        this.socket = dir.resolve("cni.sock");
        this.response = response.clone();
        this.early = early;
        this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        this.thread = new Thread(this::serve, "fake-agent");
        thread.setDaemon(true);
        thread.start();
    }

    /** Starts an agent that answers every request with {@code response}, verbatim. */
    static FakeAgent start(byte[] response) throws IOException {
        return new FakeAgent(response, false);
    }

    static FakeAgent start(String response) throws IOException {
        return start(response.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Starts an agent that reads only the request line, then answers with {@code response} and
     * closes with the rest of the request unread (the plugin's send fails, its read is reset after
     * the reply). It records no requests.
     */
    static FakeAgent answeringEarly(String response) throws IOException {
        return new FakeAgent(response.getBytes(StandardCharsets.UTF_8), true);
    }

    Path socket() {
        return socket;
    }

    /** Connections accepted so far: once the plugin has exited, every one it made is counted. */
    int connections() {
        return connections.get();
    }

    /** The next recorded request; fails the test if none arrives within 10 s. */
    Request awaitRequest() throws InterruptedException {
        Request r = requests.poll(10, TimeUnit.SECONDS);
        assertNotNull(r, "the fake agent received no request");
        return r;
    }

    private void serve() {
        try {
            while (true) {
                try (SocketChannel c = server.accept()) {
                    current.set(c);
                    connections.incrementAndGet();
                    if (early) {
                        readLine(Channels.newInputStream(c));
                    } else {
                        requests.add(readRequest(Channels.newInputStream(c)));
                    }
                    try {
                        c.write(ByteBuffer.wrap(response));
                    } catch (IOException plugin_stopped_reading) {
                        // expected when the reply is over the plugin's limit
                    }
                }
            }
        } catch (ClosedChannelException stopped) {
            // close() was called
        } catch (Throwable t) {
            failure.set(t);
        }
    }

    /** Reads one request: head up to the blank line, then exactly Content-Length body bytes. */
    private static Request readRequest(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!endsWithBlankLine(head)) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed inside the request head: " + head);
            }
            head.write(b);
        }
        String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
        String[] requestLine = lines[0].split(" ", -1);
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        for (String line : Arrays.asList(lines).subList(1, lines.length)) {
            int colon = line.indexOf(':');
            headers.add(Map.entry(line.substring(0, colon), line.substring(colon + 1).strip()));
        }
        Request withoutBody =
                new Request(requestLine[0], requestLine[1], requestLine[2], headers, new byte[0]);
        int length = Integer.parseInt(withoutBody.header("Content-Length").orElseThrow());
        byte[] body = in.readNBytes(length);
        if (body.length != length) {
            throw new IOException(
                    "connection closed inside the body after " + body.length + " bytes");
        }
        return new Request(requestLine[0], requestLine[1], requestLine[2], headers, body);
    }

    private static void readLine(InputStream in) throws IOException {
        int b;
        while ((b = in.read()) != '\n') {
            if (b < 0) {
                throw new IOException("connection closed inside the request line");
            }
        }
    }

    private static boolean endsWithBlankLine(ByteArrayOutputStream head) {
        byte[] b = head.toByteArray();
        int n = b.length;
        return n >= 4
                && b[n - 4] == '\r'
                && b[n - 3] == '\n'
                && b[n - 2] == '\r'
                && b[n - 1] == '\n';
    }

    @Override
    public void close() throws Exception {
        server.close();
        SocketChannel c = current.get();
        if (c != null) {
            c.close();
        }
        thread.join(TimeUnit.SECONDS.toMillis(10));
        Files.deleteIfExists(socket);
        Files.deleteIfExists(dir);
        if (thread.isAlive()) {
            fail("the fake agent's thread did not stop");
        }
        if (failure.get() != null) {
            throw new AssertionError("the fake agent failed", failure.get());
        }
    }
}
