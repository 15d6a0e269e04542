package io.cadastre.http;

import io.cadastre.cni.CniCodes;
import io.cadastre.cni.CniException;
import io.cadastre.cni.CniHandler;
import io.cadastre.cni.CniResponse;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocalThread;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the CNI endpoint on a Unix domain socket: {@code POST /v1/cni}, the CNI variables in
 * {@code CNI-*} headers and stdin as the body (cni-bridge/DESIGN.md, "Request" and "Reply"),
 * answered by {@link CniHandler}.
 *
 * <p>Transport: Netty's native epoll Unix-domain-socket channels with its HTTP/1.1 codec. Every
 * CNI call is one short connection from the C plugin, so the per-connection cost is what matters:
 * one event-loop thread ({@code cadastre-cni}) accepts a connection and keeps it, reads and
 * decodes the request, calls the handler and, once its stage completes (usually on an actor
 * thread), writes the reply. A separate accept thread handing connections to I/O threads cost a
 * thread wake-up per call for nothing: the work per request is tens of microseconds, and a node's
 * runtime makes at most tens of calls per second. No thread is held per connection. The handler
 * is therefore called on that thread and must not block: {@link CniHandler} decodes and
 * validates, then hands the work to its backend asynchronously. The native library ships for
 * Linux x86_64 only and is unpacked to {@code java.io.tmpdir} (override: {@code
 * -Dio.netty.native.workdir}); where it cannot load, {@link #start()} fails with the reason.
 *
 * <p>Requests (one per connection; further bytes are ignored):
 *
 * <ul>
 *   <li>{@code POST /v1/cni}: {@link CniHandler#handle(java.util.function.Function, byte[])} with a
 *       case-insensitive header lookup and the body. Other paths get 404, other methods on this
 *       path 405 (with {@code Allow: POST}); both carry a CNI error object (code 4), as does a
 *       request the HTTP codec rejects (400; 414 for a request line over 4 KiB, 431 for headers
 *       over 256 KiB, however many), since the plugin prints any non-200 body as the CNI error.
 *       The plugin's own limits on the CNI variables keep its requests well inside these.
 *   <li>A body over {@link #MAX_REQUEST_BYTES} gets 413 with a CNI error object of code 5 (I/O
 *       failure, as the C plugin reports an oversize stdin), as soon as the declared length (or
 *       the bytes so far) exceed it; the rest of the body is not handled.
 *   <li>A reply sent before the whole request was read (400, 413, 414, 431) is followed by a
 *       half-close, and the server reads and drops the rest of the request (up to about 4.3 MiB,
 *       for up to 5 s) before closing: closing with request bytes unread would make the client's
 *       send fail and reset its connection, and a client that stops at a failed send never sees
 *       the reply.
 *   <li>A handler that does not answer within {@link Settings#requestTimeout()} gets 503 with code
 *       11 (try again later). The backend work is not cancelled (ADD and DEL are idempotent, the
 *       runtime retries).
 *   <li>The whole request must arrive within 30 s of the connection being accepted, else the
 *       connection is closed without a reply (a client that sends nothing, or stalls, must not
 *       hold one of the {@link Settings#maxConnections()} slots).
 * </ul>
 *
 * <p>The reply has a {@code Content-Length} and {@code Connection: close}; the connection is closed
 * once it is written (the C plugin reads to EOF). A client may half-close after its request and
 * still gets the reply. At most {@link Settings#maxConnections()} connections are open at once;
 * further clients wait in the listen backlog until one closes. Request bodies are never logged:
 * the netconf may carry credentials.
 *
 * <p>Socket file: the parent directory is created (mode 0700) if missing; a stale socket at the
 * path is removed, but start fails if the path is another kind of file or a live server answers
 * on it. The socket is bound under a temporary name, given mode 0600 and renamed into place, so
 * it is never reachable with a wider mode. {@link #stop} removes it (if it is still ours).
 *
 * <p>Lifecycle: {@link #start()} once, {@link #stop()} once (further calls return the same stage);
 * the threads exist from start to stop. Stop fits {@code CoordinatedShutdown}:
 *
 * <pre>{@code
 * CoordinatedShutdown.get(system).addTask(
 *     CoordinatedShutdown.PhaseServiceUnbind(), "cni-socket", server::stop);
 * }</pre>
 *
 * The server also stops (without grace) when the actor system terminates: the handler's backend
 * lives there.
 */
public final class CniSocketServer {
    private static final Logger log = LoggerFactory.getLogger(CniSocketServer.class);

    /** The largest request body accepted; larger gets 413. */
    public static final long MAX_REQUEST_BYTES = 4L * 1024 * 1024;

    /** Where the C plugin looks by default (cni-bridge/DESIGN.md, "Socket"). */
    public static final Path DEFAULT_SOCKET = Path.of("/run/cadastre/cni.sock");

    /** sun_path holds 108 bytes including the terminating NUL. */
    private static final int MAX_SUN_PATH_BYTES = 107;

    private static final String CNI_PATH = "/v1/cni";
    private static final int MAX_REQUEST_LINE_BYTES = 4 * 1024;

    /**
     * All header lines together, which also bounds how many there are. The plugin checks its CNI
     * variables first (cni-bridge/DESIGN.md, "Request": 20,813 bytes together, 62,439
     * percent-encoded, plus about 300 bytes of fixed head), so it never reaches this: four times
     * its longest head.
     */
    private static final int MAX_HEADER_BYTES = 256 * 1024;

    private static final int MAX_CHUNK_BYTES = 64 * 1024;
    static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);

    /** A reply is a few KiB and fits the socket buffer; this only bounds a client that never reads. */
    private static final Duration WRITE_TIMEOUT = Duration.ofSeconds(30);

    /**
     * After an early refusal, how much of the rest of the request is read and dropped, and for how
     * long, before the connection is closed anyway: anything a request within the limits could
     * still hold.
     */
    private static final long LINGER_BYTES =
            MAX_REQUEST_BYTES + MAX_HEADER_BYTES + MAX_REQUEST_LINE_BYTES;

    private static final Duration LINGER_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration DEFAULT_STOP_GRACE = Duration.ofSeconds(3);

    /** After the grace, how long closing the remaining connections may take before stop gives up waiting. */
    private static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

    private static final long THREAD_SHUTDOWN_TIMEOUT_MS = 5_000;

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

    private enum State {
        NEW,
        RUNNING,
        STOPPING,
        STOPPED
    }

    private final ActorSystem<?> system;
    private final CniHandler handler;
    private final Settings settings;
    private final Duration readTimeout;
    private final Path socketPath;

    /** Open connections; added on the accept thread as each is accepted, removed when it closes. */
    private final Set<Channel> connections = ConcurrentHashMap.newKeySet();

    private final CompletableFuture<Done> stopped = new CompletableFuture<>();

    /** What every stop() returns: callers can neither complete nor cancel it. */
    private final CompletionStage<Done> stoppedStage = stopped.minimalCompletionStage();

    private final Object lock = new Object();

    private State state = State.NEW; // guarded by lock

    // Set in start(), under lock, before state becomes RUNNING; read after that.
    private EventLoopGroup acceptGroup;
    private EventLoopGroup ioGroup;
    private Channel listener;
    private Object socketFileKey;

    public CniSocketServer(ActorSystem<?> system, CniHandler handler, Settings settings) {
        this(system, handler, settings, DEFAULT_READ_TIMEOUT);
    }

    /** @param readTimeout how long a client has to send its whole request (tests shorten it) */
    CniSocketServer(
            ActorSystem<?> system, CniHandler handler, Settings settings, Duration readTimeout) {
        this.system = Objects.requireNonNull(system, "system");
        this.handler = Objects.requireNonNull(handler, "handler");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.readTimeout = readTimeout;
        this.socketPath = settings.socketPath().toAbsolutePath();
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
     *     writable; or Netty's native epoll transport cannot be loaded
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
                throw new IOException(
                        "socket path "
                                + socketPath
                                + " is too long: at most "
                                + (MAX_SUN_PATH_BYTES - 1)
                                + " bytes");
            }
            if (!Epoll.isAvailable()) {
                throw new IOException(
                        "Netty's native epoll transport is not available",
                        Epoll.unavailabilityCause());
            }
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(
                        dir,
                        PosixFilePermissions.asFileAttribute(
                                PosixFilePermissions.fromString("rwx------")));
            }
            removeStale(socketPath);
            Files.deleteIfExists(tmp);
            // One thread accepts and serves (see the class comment); both roles name the same
            // group.
            EventLoopGroup accept = new EpollEventLoopGroup(1, threads("cadastre-cni"));
            EventLoopGroup io = accept;
            Channel channel = null;
            try {
                ServerBootstrap bootstrap =
                        new ServerBootstrap()
                                .group(accept, io)
                                .channel(EpollServerDomainSocketChannel.class)
                                // Clients beyond maxConnections wait here (the plugin's connect has
                                // a 30 s timeout).
                                .option(ChannelOption.SO_BACKLOG, settings.maxConnections())
                                .option(ChannelOption.ALLOCATOR, ServerBuffers.ALLOCATOR)
                                .childOption(ChannelOption.ALLOCATOR, ServerBuffers.ALLOCATOR)
                                .handler(new Admission())
                                // Without this Netty closes a connection as soon as it reads the
                                // client's EOF, so a client that shuts down its sending side after
                                // the request could lose the reply.
                                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                                .childHandler(
                                        new ChannelInitializer<Channel>() {
                                            @Override
                                            protected void initChannel(Channel ch) {
                                                ch.pipeline()
                                                        .addLast(
                                                                "http",
                                                                new HttpServerCodec(
                                                                        new HttpDecoderConfig()
                                                                                .setMaxInitialLineLength(
                                                                                        MAX_REQUEST_LINE_BYTES)
                                                                                .setMaxHeaderSize(
                                                                                        MAX_HEADER_BYTES)
                                                                                .setMaxChunkSize(
                                                                                        MAX_CHUNK_BYTES)))
                                                        .addLast("aggregate", new BodyAggregator())
                                                        .addLast("cni", new Exchange());
                                            }
                                        });
                // Netty deletes the bound path when the listener closes; that is the temporary
                // name, gone by then (renamed), so the socket file itself is left to
                // deleteSocketFile().
                ChannelFuture bound =
                        bootstrap
                                .bind(new DomainSocketAddress(tmp.toString()))
                                .awaitUninterruptibly();
                if (!bound.isSuccess()) {
                    Throwable cause = bound.cause();
                    throw cause instanceof IOException ioe
                            ? ioe
                            : new IOException("cannot bind " + tmp, cause);
                }
                channel = bound.channel();
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
                Files.move(tmp, socketPath, StandardCopyOption.ATOMIC_MOVE);
                socketFileKey =
                        Files.readAttributes(
                                        socketPath,
                                        BasicFileAttributes.class,
                                        LinkOption.NOFOLLOW_LINKS)
                                .fileKey();
            } catch (IOException | RuntimeException e) {
                if (channel != null) {
                    channel.close().awaitUninterruptibly();
                }
                Files.deleteIfExists(tmp);
                accept.shutdownGracefully(0, THREAD_SHUTDOWN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                io.shutdownGracefully(0, THREAD_SHUTDOWN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                throw e;
            }
            acceptGroup = accept;
            ioGroup = io;
            listener = channel;
            state = State.RUNNING;
        }
        // The backend answers through the actor system: once it is gone there is nothing to serve.
        system.getWhenTerminated().thenRun(() -> stop(Duration.ZERO));
        log.info("CNI endpoint listening on {}", socketPath);
    }

    /** {@link #stop(Duration)} with 3 s for requests in flight. */
    public CompletionStage<Done> stop() {
        return stop(DEFAULT_STOP_GRACE);
    }

    /**
     * Stops accepting and removes the socket file at once, lets requests in flight finish within
     * {@code grace}, then closes the remaining connections and stops the threads. Idempotent;
     * never fails.
     *
     * @return completes when every connection is closed and the threads have stopped
     */
    public CompletionStage<Done> stop(Duration grace) {
        synchronized (lock) {
            if (state == State.STOPPING || state == State.STOPPED) {
                return stoppedStage;
            }
            if (state == State.NEW) {
                state = State.STOPPED;
                stopped.complete(Done.getInstance());
                return stoppedStage;
            }
            state = State.STOPPING;
        }
        try {
            // Closing runs on the accept thread; once closed, `connections` holds every connection
            // that was accepted and is still open, and no more will come.
            listener.close().addListener(closed -> drain(grace));
            deleteSocketFile();
        } catch (RuntimeException e) { // e.g. the accept thread is gone already
            log.warn("CNI endpoint: stopping failed", e);
            terminateThreads();
        }
        return stoppedStage;
    }

    /** On the accept thread, the listener closed: waits for the connections, then stops the threads. */
    private void drain(Duration grace) {
        try {
            List<Channel> inFlight = List.copyOf(connections);
            if (inFlight.isEmpty()) {
                terminateThreads();
                return;
            }
            CompletableFuture<Void> allClosed = new CompletableFuture<>();
            AtomicInteger open = new AtomicInteger(inFlight.size());
            for (Channel ch : inFlight) {
                ch.closeFuture()
                        .addListener(
                                f -> {
                                    if (open.decrementAndGet() == 0) {
                                        allClosed.complete(null);
                                    }
                                });
            }
            var abort =
                    acceptGroup.schedule(
                            () -> {
                                if (!allClosed.isDone()) {
                                    log.warn(
                                            "CNI endpoint stopping: aborting {} connection(s) still open",
                                            open.get());
                                    inFlight.forEach(Channel::close);
                                }
                            },
                            grace.toNanos(),
                            TimeUnit.NANOSECONDS);
            // Backstop: a close that never completes must not keep stop() from completing.
            var giveUp =
                    acceptGroup.schedule(
                            () -> allClosed.complete(null),
                            grace.plus(CLOSE_WAIT).toNanos(),
                            TimeUnit.NANOSECONDS);
            allClosed.whenComplete(
                    (v, e) -> {
                        abort.cancel(false);
                        giveUp.cancel(false);
                        terminateThreads();
                    });
        } catch (RuntimeException e) {
            log.warn("CNI endpoint: stopping failed", e);
            terminateThreads();
        }
    }

    private void terminateThreads() {
        Future<?> accept =
                acceptGroup.shutdownGracefully(
                        0, THREAD_SHUTDOWN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        Future<?> io =
                ioGroup.shutdownGracefully(0, THREAD_SHUTDOWN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        accept.addListener(
                a ->
                        io.addListener(
                                i -> {
                                    synchronized (lock) {
                                        state = State.STOPPED;
                                    }
                                    log.info("CNI endpoint on {} stopped", socketPath);
                                    stopped.complete(Done.getInstance());
                                }));
    }

    /**
     * On the listening channel, ahead of Netty's acceptor: tracks the connections and enforces
     * {@link Settings#maxConnections()} by not accepting (auto-read off) while at the limit, so
     * further clients wait in the kernel's listen backlog instead of being accepted and dropped.
     * Only the accept thread switches auto-read, so a close racing an accept cannot leave it off.
     */
    private final class Admission extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel child = (Channel) msg;
            Channel server = ctx.channel();
            connections.add(child);
            child.closeFuture()
                    .addListener(
                            f -> {
                                connections.remove(child);
                                try {
                                    ctx.executor()
                                            .execute(
                                                    () -> {
                                                        if (connections.size()
                                                                        < settings.maxConnections()
                                                                && server.isOpen()) {
                                                            server.config().setAutoRead(true);
                                                        }
                                                    });
                                } catch (RejectedExecutionException e) {
                                    // stopping: nothing is accepted any more
                                }
                            });
            if (connections.size() >= settings.maxConnections()) {
                server.config().setAutoRead(false);
            }
            ctx.fireChannelRead(child);
        }
    }

    /** Hands an oversized request to {@link Exchange} instead of Netty's bare 413, for a CNI error object. */
    private static final class BodyAggregator extends HttpObjectAggregator {
        BodyAggregator() {
            super((int) MAX_REQUEST_BYTES, true);
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            ctx.fireChannelRead(
                    TooLarge.INSTANCE); // the aggregator releases `oversized` and skips the rest
        }
    }

    /** The request was over {@link #MAX_REQUEST_BYTES}. */
    private enum TooLarge {
        INSTANCE
    }

    /**
     * One connection's request and reply, all on its I/O thread (hence no synchronization): a
     * single timer covers the phase the connection is in (reading: close; handling: answer 503;
     * writing: close; lingering: close).
     */
    private final class Exchange extends ChannelInboundHandlerAdapter {
        private boolean requestSeen;
        private boolean answered;

        /** The reply is going out before the whole request was read: linger once it is written. */
        private boolean requestUnread;

        /** Half-closed after an early reply: reading and dropping the rest of the request. */
        private boolean lingering;

        private long dropped;
        private ScheduledFuture<?> timer;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            timer =
                    ctx.executor()
                            .schedule(
                                    () -> {
                                        if (!requestSeen) {
                                            log.debug(
                                                    "CNI connection closed: no whole request within {} ms",
                                                    readTimeout.toMillis());
                                            ctx.close();
                                        }
                                    },
                                    readTimeout.toNanos(),
                                    TimeUnit.NANOSECONDS);
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (lingering) {
                if (msg instanceof ByteBuf bytes) {
                    dropped += bytes.readableBytes();
                }
                ReferenceCountUtil.release(msg);
                if (dropped > LINGER_BYTES) {
                    ctx.close();
                }
                return;
            }
            if (requestSeen) { // one request per connection: the reply closes it
                ReferenceCountUtil.release(msg);
                return;
            }
            requestSeen = true;
            cancelTimer();
            // Nothing more is read until the reply is out (then only to linger after an early one).
            ctx.channel().config().setAutoRead(false);
            if (msg == TooLarge.INSTANCE) {
                requestUnread = true;
                CniResponse error =
                        CniHandler.errorResponse(
                                new byte[0],
                                new CniException(
                                        CniCodes.IO_FAILURE,
                                        "request body over " + MAX_REQUEST_BYTES + " bytes"));
                answer(ctx, new CniResponse(413, error.body()));
                return;
            }
            if (!(msg instanceof FullHttpRequest request)) {
                ReferenceCountUtil.release(msg);
                ctx.close();
                return;
            }
            try {
                serve(ctx, request);
            } finally {
                request.release();
            }
        }

        private void serve(ChannelHandlerContext ctx, FullHttpRequest request) {
            if (request.decoderResult().isFailure()) {
                requestUnread = true;
                Throwable cause = request.decoderResult().cause();
                log.debug("CNI request malformed: {}", cause.toString());
                int status =
                        cause instanceof TooLongHttpLineException
                                ? 414
                                : cause instanceof TooLongHttpHeaderException ? 431 : 400;
                String msg =
                        cause instanceof TooLongFrameException
                                ? "request line or headers too long (at most "
                                        + MAX_REQUEST_LINE_BYTES
                                        + " and "
                                        + MAX_HEADER_BYTES
                                        + " bytes)"
                                : "malformed HTTP request";
                answer(ctx, errorWithStatus(status, msg));
                return;
            }
            String path = new QueryStringDecoder(request.uri()).path();
            if (!CNI_PATH.equals(path)) {
                answer(
                        ctx,
                        errorWithStatus(
                                404,
                                "no such endpoint: "
                                        + path
                                        + " (the CNI endpoint is POST "
                                        + CNI_PATH
                                        + ")"));
                return;
            }
            if (!HttpMethod.POST.equals(request.method())) {
                answer(
                        ctx,
                        errorWithStatus(
                                405,
                                "method "
                                        + request.method()
                                        + " not allowed on "
                                        + CNI_PATH
                                        + ": use POST"));
                return;
            }
            HttpHeaders headers = request.headers();
            byte[] body = ByteBufUtil.getBytes(request.content());
            CompletionStage<CniResponse> stage;
            try {
                stage = handler.handle(name -> Optional.ofNullable(headers.get(name)), body);
            } catch (RuntimeException e) { // the handler answers failures itself; this is a bug
                stage = CompletableFuture.failedFuture(e);
            }
            stage.whenComplete(
                    (response, failure) -> {
                        CniResponse reply =
                                failure == null && response != null
                                        ? response
                                        : internalError(body, failure);
                        if (ctx.executor()
                                .inEventLoop()) { // answered at once, e.g. refused in validation
                            answer(ctx, reply);
                            return;
                        }
                        try {
                            ctx.executor().execute(() -> answer(ctx, reply));
                        } catch (RejectedExecutionException e) {
                            // stopped: the connection is closed already
                        }
                    });
            if (!answered) {
                timer =
                        ctx.executor()
                                .schedule(
                                        () ->
                                                answer(
                                                        ctx,
                                                        CniHandler.errorResponse(
                                                                body,
                                                                new CniException(
                                                                        CniCodes.TRY_AGAIN_LATER,
                                                                        "the agent did not answer within "
                                                                                + settings.requestTimeout()
                                                                                        .toMillis()
                                                                                + " ms"))),
                                        settings.requestTimeout().toNanos(),
                                        TimeUnit.NANOSECONDS);
            }
        }

        /** Writes the reply (only the first one: the handler's or the timeout's) and then closes. */
        private void answer(ChannelHandlerContext ctx, CniResponse reply) {
            if (answered) {
                return;
            }
            answered = true;
            cancelTimer();
            FullHttpResponse response =
                    new DefaultFullHttpResponse(
                            HttpVersion.HTTP_1_1,
                            HttpResponseStatus.valueOf(reply.httpStatus()),
                            Unpooled.wrappedBuffer(reply.body()));
            HttpHeaders h = response.headers();
            h.setInt(HttpHeaderNames.CONTENT_LENGTH, reply.body().length);
            if (reply.body().length > 0) {
                h.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
            }
            if (reply.httpStatus() == 405) {
                h.set(HttpHeaderNames.ALLOW, HttpMethod.POST.name());
            }
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            // The plugin reads to EOF: close once the reply is out (or could not be written).
            ChannelFuture written = ctx.writeAndFlush(response);
            if (requestUnread) {
                written.addListener(
                        f -> {
                            if (f.isSuccess()) {
                                linger(ctx);
                            } else {
                                ctx.close();
                            }
                        });
            } else {
                written.addListener(ChannelFutureListener.CLOSE);
            }
            if (!written.isDone()) {
                timer =
                        ctx.executor()
                                .schedule(
                                        () -> ctx.close(),
                                        WRITE_TIMEOUT.toNanos(),
                                        TimeUnit.NANOSECONDS);
            }
        }

        /**
         * After a reply sent before the whole request was read: half-closes, so the client reads the
         * reply and then EOF, and reads and drops what it still sends (raw bytes: the HTTP handlers
         * are removed) until it closes, {@link #LINGER_BYTES} have come or {@link #LINGER_TIMEOUT}
         * has passed. Closing at once, with request bytes unread, would fail the client's send.
         */
        private void linger(ChannelHandlerContext ctx) {
            cancelTimer();
            lingering = true; // before the removal, which hands on any bytes the codec held
            ChannelPipeline pipeline = ctx.pipeline();
            pipeline.remove("aggregate");
            pipeline.remove("http");
            ((DuplexChannel) ctx.channel())
                    .shutdownOutput()
                    .addListener(
                            f -> {
                                if (!f.isSuccess()) {
                                    ctx.close();
                                }
                            });
            timer =
                    ctx.executor()
                            .schedule(
                                    () -> ctx.close(),
                                    LINGER_TIMEOUT.toNanos(),
                                    TimeUnit.NANOSECONDS);
            ctx.channel().config().setAutoRead(true);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            // The client shut down its sending side. After a whole request (or a truncated header,
            // which the codec turned into a 400) the reply is still owed; before one, nothing
            // more can come; while lingering, the client has sent all it will.
            if (evt instanceof ChannelInputShutdownEvent && (!requestSeen || lingering)) {
                ctx.close();
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            answered = true; // a late handler answer has nowhere to go
            cancelTimer();
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // Typically the client went away (reset); nothing to answer.
            log.debug("CNI connection failed: {}", cause.toString());
            ctx.close();
        }

        private void cancelTimer() {
            if (timer != null) {
                timer.cancel(false);
                timer = null;
            }
        }
    }

    private static CniResponse errorWithStatus(int status, String msg) {
        CniResponse error =
                CniHandler.errorResponse(
                        new byte[0], new CniException(CniCodes.INVALID_ENVIRONMENT, msg));
        return new CniResponse(status, error.body());
    }

    private static CniResponse internalError(byte[] body, Throwable failure) {
        Throwable cause =
                failure instanceof CompletionException && failure.getCause() != null
                        ? failure.getCause()
                        : failure;
        log.error("CNI handler failed", cause);
        return CniHandler.errorResponse(
                body,
                new CniException(
                        CniCodes.TRY_AGAIN_LATER,
                        "internal error: " + (cause == null ? "no response" : cause.toString())));
    }

    /** Daemon threads, as the JDK's were: an agent that forgot stop() still exits. */
    private static ThreadFactory threads(String name) {
        return r -> {
            // FastThreadLocalThread: Netty's buffer pools use its fast thread-locals.
            Thread t = new FastThreadLocalThread(r, name);
            t.setDaemon(true);
            return t;
        };
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
            Object key =
                    Files.readAttributes(
                                    socketPath,
                                    BasicFileAttributes.class,
                                    LinkOption.NOFOLLOW_LINKS)
                            .fileKey();
            if (Objects.equals(key, socketFileKey)) {
                Files.deleteIfExists(socketPath);
            }
        } catch (IOException e) {
            // gone already, or replaced by someone else's: leave it
        }
    }
}
