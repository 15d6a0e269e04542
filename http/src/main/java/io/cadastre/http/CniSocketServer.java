package io.cadastre.http;

import io.cadastre.cni.CniHandler;
import java.io.IOException;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.IOResult;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.TLSProtocol.SessionBytes;
import org.apache.pekko.stream.TLSProtocol.SslTlsInbound;
import org.apache.pekko.stream.TLSProtocol.SslTlsOutbound;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.StreamConverters;
import org.apache.pekko.stream.javadsl.TLSPlacebo;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the CNI endpoint ({@link CniRoutes}: {@code POST /v1/cni}) on a Unix domain socket, with
 * Pekko HTTP's server layer doing the HTTP/1.1.
 *
 * <p>Pekko has no Unix-socket transport, so the JDK provides it: a dedicated platform thread
 * accepts from a {@link ServerSocketChannel} ({@link StandardProtocolFamily#UNIX}); each connection
 * runs {@code Http.serverLayer()} atop a plain-text TLS placebo and an idle timeout, joined to a
 * byte flow over the channel and to the route. The byte flow:
 *
 * <ul>
 *   <li>inbound: a reader thread of this server reads the channel and writes into
 *       {@link StreamConverters#asOutputStream}, which back-pressures it;
 *   <li>outbound: {@link StreamConverters#fromOutputStream} writing to the channel (blocking writes
 *       on Pekko's blocking-I/O dispatcher, a thread held only while writing).
 * </ul>
 *
 * Not {@code StreamConverters.fromInputStream} over {@code Channels.newInputStream}: on JDK 17 that
 * stream holds the channel's blocking lock during a read, so the reply could not be written while
 * the reader waits for more request bytes, and each idle reader would pin a thread of the shared,
 * bounded blocking-I/O pool that the writers need too.
 *
 * <p>A connection ends when the reply has been written and the route asks to close (the C plugin
 * sends {@code Connection: close} and reads to EOF), on an I/O error, or after the idle timeout
 * (request timeout + 30 s). A client may half-close after its request and still get the reply. At most {@link Settings#maxConnections()} at once; further clients
 * wait in the listen backlog.
 *
 * <p>Socket file: the parent directory is created (mode 0700) if missing; a stale socket at the
 * path is removed, but start fails if the path is another kind of file or a live server answers
 * on it. The socket is bound under a temporary name, given mode 0600 and renamed into place, so
 * it is never reachable with a wider mode. {@link #stop} removes it (if it is still ours).
 *
 * <p>Lifecycle: {@link #start()} once, {@link #stop()} once (further calls return the same stage);
 * stop fits {@code CoordinatedShutdown}:
 *
 * <pre>{@code
 * CoordinatedShutdown.get(system).addTask(
 *     CoordinatedShutdown.PhaseServiceUnbind(), "cni-socket", server::stop);
 * }</pre>
 */
public final class CniSocketServer {
    private static final Logger log = LoggerFactory.getLogger(CniSocketServer.class);

    /** The largest request body accepted; larger gets 413. */
    public static final long MAX_REQUEST_BYTES = 4L * 1024 * 1024;
    /** Where the C plugin looks by default (cni-bridge/DESIGN.md, "Socket"). */
    public static final Path DEFAULT_SOCKET = Path.of("/run/cadastre/cni.sock");
    /** sun_path holds 108 bytes including the terminating NUL. */
    private static final int MAX_SUN_PATH_BYTES = 107;

    private static final int READ_BUFFER_BYTES = 64 * 1024;
    private static final Duration BODY_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration INBOUND_WRITE_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration DEFAULT_STOP_GRACE = Duration.ofSeconds(3);

    /**
     * @param socketPath the socket file; its path, plus one byte for the temporary name, must fit
     *     sun_path (at most 106 bytes)
     * @param requestTimeout how long a request may take before it is answered with code 11
     * @param maxConnections connections served at once
     */
    public record Settings(Path socketPath, Duration requestTimeout, int maxConnections) {
        public Settings {
            Objects.requireNonNull(socketPath, "socketPath");
            if (requestTimeout.isNegative() || requestTimeout.isZero()) {
                throw new IllegalArgumentException("requestTimeout must be positive");
            }
            if (maxConnections < 1) {
                throw new IllegalArgumentException("maxConnections must be at least 1");
            }
        }

        /** 240 s per request (the C plugin gives up after 300 s), 128 connections. */
        public static Settings defaults(Path socketPath) {
            return new Settings(socketPath, Duration.ofSeconds(240), 128);
        }
    }

    private enum State { NEW, RUNNING, STOPPING, STOPPED }

    private final ActorSystem<?> system;
    private final Settings settings;
    private final Duration idleTimeout;
    private final Path socketPath;
    private final Materializer materializer;
    private final ServerSettings serverSettings;
    private final Flow<HttpRequest, HttpResponse, NotUsed> routeFlow;
    private final SharedKillSwitch killSwitch = KillSwitches.shared("cadastre-cni-socket");
    private final Semaphore permits;
    private final Map<SocketChannel, CompletableFuture<Void>> connections = new ConcurrentHashMap<>();
    private final CompletableFuture<Done> stopped = new CompletableFuture<>();
    private final AtomicInteger threadCount = new AtomicInteger();
    private final Object lock = new Object();

    private State state = State.NEW; // guarded by lock
    private ServerSocketChannel listener;
    private Thread acceptThread;
    private ExecutorService readers;
    private Object socketFileKey;

    public CniSocketServer(ActorSystem<?> system, CniHandler handler, Settings settings) {
        this.system = system;
        this.settings = settings;
        this.socketPath = settings.socketPath().toAbsolutePath();
        this.materializer = Materializer.matFromSystem(system);
        this.permits = new Semaphore(settings.maxConnections());
        this.idleTimeout = settings.requestTimeout().plusSeconds(30);
        ServerSettings base = ServerSettings.create(system.classicSystem());
        // Pekko's own request timeout only backs up CniRoutes' (which answers with a CNI error object).
        this.serverSettings = base
                .withTimeouts(base.getTimeouts()
                        .withRequestTimeout(scala(settings.requestTimeout().plusSeconds(5)))
                        .withIdleTimeout(scala(idleTimeout)))
                .withParserSettings(base.getParserSettings().withMaxHeaderValueLength(64 * 1024))
                .withMaxConnections(settings.maxConnections());
        this.routeFlow = new CniRoutes(handler, materializer, settings.requestTimeout(), BODY_TIMEOUT)
                .route()
                .flow(system);
    }

    /** @return the socket file, absolute */
    public Path socketPath() {
        return socketPath;
    }

    /**
     * Creates the socket file and starts accepting.
     *
     * @throws IOException when the socket cannot be created: the path is too long, exists as
     *     something other than a socket, is served by a live process, or the directory is not
     *     writable
     * @throws IllegalStateException when called twice
     */
    public void start() throws IOException {
        synchronized (lock) {
            if (state != State.NEW) {
                throw new IllegalStateException("already started");
            }
            Path dir = socketPath.getParent();
            Path tmp = dir.resolve("." + socketPath.getFileName());
            if (tmp.toString().getBytes(StandardCharsets.UTF_8).length > MAX_SUN_PATH_BYTES) {
                throw new IOException("socket path " + socketPath + " is too long: at most "
                        + (MAX_SUN_PATH_BYTES - 1) + " bytes");
            }
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")));
            }
            removeStale(socketPath);
            Files.deleteIfExists(tmp);
            ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                channel.bind(UnixDomainSocketAddress.of(tmp), settings.maxConnections());
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
                Files.move(tmp, socketPath, StandardCopyOption.ATOMIC_MOVE);
                socketFileKey = Files.readAttributes(socketPath, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
                        .fileKey();
            } catch (IOException | RuntimeException e) {
                channel.close();
                Files.deleteIfExists(tmp);
                throw e;
            }
            listener = channel;
            readers = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "cadastre-cni-conn-" + threadCount.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            acceptThread = new Thread(this::acceptLoop, "cadastre-cni-accept");
            acceptThread.setDaemon(true);
            state = State.RUNNING;
            acceptThread.start();
        }
        log.info("CNI endpoint listening on {}", socketPath);
    }

    /** {@link #stop(Duration)} with 3 s for requests in flight. */
    public CompletionStage<Done> stop() {
        return stop(DEFAULT_STOP_GRACE);
    }

    /**
     * Stops accepting and removes the socket file at once, lets requests in flight finish within
     * {@code grace}, then aborts the rest. Idempotent; never fails.
     *
     * @return completes when every connection is closed
     */
    public CompletionStage<Done> stop(Duration grace) {
        List<CompletableFuture<Void>> inFlight;
        synchronized (lock) {
            if (state == State.STOPPING || state == State.STOPPED) {
                return stopped.minimalCompletionStage();
            }
            if (state == State.NEW) {
                state = State.STOPPED;
                stopped.complete(Done.getInstance());
                return stopped.minimalCompletionStage();
            }
            state = State.STOPPING;
            inFlight = new ArrayList<>(connections.values());
        }
        closeQuietly(listener);
        acceptThread.interrupt();
        deleteSocketFile();
        CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new))
                .completeOnTimeout(null, grace.toMillis(), TimeUnit.MILLISECONDS)
                .thenCompose(v -> {
                    List<CompletableFuture<Void>> rest = new ArrayList<>(connections.values());
                    if (!rest.isEmpty()) {
                        log.warn("CNI endpoint stopping: aborting {} connection(s) still open", rest.size());
                        killSwitch.abort(new IOException("CNI endpoint stopped"));
                        connections.keySet().forEach(CniSocketServer::closeQuietly);
                    }
                    return CompletableFuture.allOf(rest.toArray(CompletableFuture[]::new))
                            .completeOnTimeout(null, 5, TimeUnit.SECONDS);
                })
                .whenComplete((v, e) -> {
                    readers.shutdownNow();
                    synchronized (lock) {
                        state = State.STOPPED;
                    }
                    log.info("CNI endpoint on {} stopped", socketPath);
                    stopped.complete(Done.getInstance());
                });
        return stopped.minimalCompletionStage();
    }

    private void acceptLoop() {
        while (true) {
            try {
                permits.acquire();
            } catch (InterruptedException e) {
                return; // stop()
            }
            SocketChannel channel;
            try {
                channel = listener.accept();
            } catch (ClosedChannelException e) { // stop(): closed, or interrupted
                permits.release();
                return;
            } catch (IOException e) {
                permits.release();
                log.warn("CNI endpoint: accept failed", e);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100)); // e.g. out of file descriptors
                continue;
            }
            try {
                serve(channel);
            } catch (RuntimeException e) { // e.g. the ActorSystem is terminating
                log.error("CNI endpoint: could not serve a connection", e);
            }
        }
    }

    /** Runs the HTTP stack for one connection; the permit is released when it ends. */
    private void serve(SocketChannel channel) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        synchronized (lock) {
            if (state != State.RUNNING) {
                closeQuietly(channel);
                permits.release();
                return;
            }
            connections.put(channel, done);
        }
        var outbound = StreamConverters.fromOutputStream(() -> new ChannelOutputStream(channel), true);
        var inbound = StreamConverters.asOutputStream(INBOUND_WRITE_TIMEOUT).via(killSwitch.flow());
        Flow<ByteString, ByteString, Pair<CompletionStage<IOResult>, OutputStream>> transport =
                Flow.fromSinkAndSourceCoupledMat(outbound, inbound, Keep.both());
        Pair<CompletionStage<IOResult>, OutputStream> mat;
        try {
            mat = httpStack().join(transport, Keep.right()).join(routeFlow).run(materializer);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            connections.remove(channel);
            permits.release();
            done.complete(null);
            throw e;
        }
        mat.first().whenComplete((result, failure) -> {
            closeQuietly(channel);
            closeQuietly(mat.second());
            if (connections.remove(channel) != null) {
                permits.release();
            }
            done.complete(null);
        });
        readers.execute(() -> pump(channel, mat.second()));
    }

    /**
     * Copies request bytes from the channel into the stream until EOF, a read error (the
     * connection is dropped), or the stream wanting no more input (the HTTP layer is answering and
     * closing; the writer closes the channel once the reply is out). EOF before any byte completes
     * the stream's input: there is nothing to answer. EOF after a request (a client that
     * half-closes) leaves the input open, because Pekko HTTP would close the connection without a
     * reply when its input completes; the reply, an error, or the idle timeout then ends the
     * connection.
     */
    private static void pump(SocketChannel channel, OutputStream into) {
        ByteBuffer buffer = ByteBuffer.allocate(READ_BUFFER_BYTES);
        long total = 0;
        while (true) {
            buffer.clear();
            int n;
            try {
                n = channel.read(buffer);
            } catch (IOException e) { // closed after the reply or on stop, or reset by the client
                closeQuietly(channel);
                closeQuietly(into);
                return;
            }
            if (n < 0) {
                if (total == 0) {
                    closeQuietly(into);
                }
                return;
            }
            total += n;
            try {
                into.write(buffer.array(), 0, n);
            } catch (IOException e) { // the HTTP layer takes no more input
                return;
            }
        }
    }

    private BidiFlow<HttpResponse, ByteString, ByteString, HttpRequest, NotUsed> httpStack() {
        BidiFlow<HttpResponse, SslTlsOutbound, SslTlsInbound, HttpRequest, NotUsed> http =
                Http.get(system).serverLayer(serverSettings);
        BidiFlow<SslTlsOutbound, SslTlsOutbound, SessionBytes, SslTlsInbound, NotUsed> widen = BidiFlow.fromFlows(
                Flow.<SslTlsOutbound>create(), Flow.<SessionBytes>create().map(bytes -> (SslTlsInbound) bytes));
        BidiFlow<SslTlsOutbound, ByteString, ByteString, SslTlsInbound, NotUsed> plainText =
                widen.atop(TLSPlacebo.getInstance());
        return http.atop(plainText).atop(BidiFlow.<ByteString, ByteString>bidirectionalIdleTimeout(idleTimeout));
    }

    private static void removeStale(Path path) throws IOException {
        if (!Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
        if ((mode & 0170000) != 0140000) {
            throw new IOException(path + " exists and is not a socket");
        }
        boolean alive;
        try {
            SocketChannel.open(UnixDomainSocketAddress.of(path)).close();
            alive = true;
        } catch (IOException e) { // refused: nobody listens
            alive = false;
        }
        if (alive) {
            throw new IOException(path + " is served by another process");
        }
        Files.deleteIfExists(path);
        log.info("removed stale socket {}", path);
    }

    private void deleteSocketFile() {
        try {
            Object key = Files.readAttributes(socketPath, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
                    .fileKey();
            if (Objects.equals(key, socketFileKey)) {
                Files.deleteIfExists(socketPath);
            }
        } catch (IOException e) {
            // gone already, or replaced by someone else's: leave it
        }
    }

    private static scala.concurrent.duration.FiniteDuration scala(Duration d) {
        return scala.concurrent.duration.FiniteDuration.create(d.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            // nothing left to do
        }
    }

    /** Writes to the channel; closing it closes the connection (the reply is complete). */
    private static final class ChannelOutputStream extends OutputStream {
        private final SocketChannel channel;

        ChannelOutputStream(SocketChannel channel) {
            this.channel = channel;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            ByteBuffer buffer = ByteBuffer.wrap(b, off, len);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
