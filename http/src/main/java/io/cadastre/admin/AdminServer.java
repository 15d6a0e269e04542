package io.cadastre.admin;

import io.cadastre.http.ServerBuffers;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.Ipam;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocalThread;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API's HTTP server (HTTP/1.1 on TCP, Netty's codec): {@code /healthz}, {@code /readyz},
 * {@code /openapi.yaml}, {@code /metrics} (the actor system's {@link CadastreMetrics}, see
 * {@link MetricsEndpoint}) and the {@code /v1} routes of {@link AdminRoutes}, which need the
 * bearer token of the settings wherever the server is bound.
 *
 * <p>One event-loop thread ({@code cadastre-admin}) accepts and reads; the routes' stages complete
 * on actor threads, and the answer is written from there. Connections are kept alive between
 * requests (HTTP/1.1, or HTTP/1.0 asking for it), one request at a time each: requests that come
 * together wait, and the next is served once the answer to the last is written, so answers keep
 * the requests' order. HEAD is answered as GET, without the body. Limits: a request
 * line of 4 KiB, headers of 16 KiB (else 400), a body of {@link #MAX_BODY_BYTES} (else 413), at
 * most {@link #MAX_CONNECTIONS} connections (more are closed at once), a request unanswered after
 * {@link #REQUEST_TIMEOUT} gets 503, and a connection idle for {@link #IDLE_TIMEOUT} is closed. Every error answer is {@code {"error": ...}}.
 *
 * <p>Lifecycle: {@link #start()} once, then {@link #stop()} once (it fits {@code
 * CoordinatedShutdown}'s service-unbind phase); both return stages. Requests in flight when stop is
 * called get {@link #STOP_GRACE} to finish.
 */
public final class AdminServer {
    private static final Logger log = LoggerFactory.getLogger(AdminServer.class);

    /** How long requests in flight may take to finish once {@link #stop()} is called. */
    public static final Duration STOP_GRACE = Duration.ofSeconds(3);

    /** The largest request body taken, in bytes: a GC's list of a node's attachments fits many times. */
    public static final int MAX_BODY_BYTES = 4 * 1024 * 1024;

    /** The most connections open at once; one more is closed as soon as it is accepted. */
    public static final int MAX_CONNECTIONS = 128;

    /**
     * How long a request may take: then it is answered 503 and its connection closed. Above the
     * agent's ask timeouts (15 s in all), which answer 503 themselves.
     */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(20);

    /** A connection with nothing read or written for this long is closed. */
    public static final Duration IDLE_TIMEOUT = Duration.ofSeconds(60);

    private static final int MAX_REQUEST_LINE_BYTES = 4096;
    private static final int MAX_HEADER_BYTES = 16 * 1024;

    /**
     * Where and how the server listens.
     *
     * @param host the address to bind: a literal or a name that resolves
     * @param port the TCP port, 0 for any free one
     * @param token the bearer token every /v1 request must carry, on loopback too (any local user
     *     can connect there): one word ({@link AdminToken})
     * @param metricsRefresh how long {@code /metrics} reuses a reading of the cluster-wide IPAM
     *     usage ({@link MetricsEndpoint}); zero or more
     * @throws IllegalArgumentException for a port outside 0-65535, a host that does not resolve, a
     *     blank token, or a negative metrics refresh
     */
    public record Settings(String host, int port, String token, Duration metricsRefresh) {
        /** How long {@code /metrics} reuses a reading of the IPAM usage by default ({@code cadastre.admin.metrics-refresh}). */
        public static final Duration DEFAULT_METRICS_REFRESH = Duration.ofSeconds(10);

        public Settings {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(token, "token");
            Objects.requireNonNull(metricsRefresh, "metricsRefresh");
            if (port < 0 || port > 65_535) {
                throw new IllegalArgumentException("port " + port + " is outside 0-65535");
            }
            if (metricsRefresh.isNegative()) {
                throw new IllegalArgumentException(
                        "the metrics refresh " + metricsRefresh + " is negative");
            }
            if (token.isBlank()) {
                throw new IllegalArgumentException("the admin token is empty");
            }
            resolves(host);
        }

        /** The settings with the default metrics refresh. */
        public Settings(String host, int port, String token) {
            this(host, port, token, DEFAULT_METRICS_REFRESH);
        }

        /** @return these settings with another metrics refresh */
        public Settings withMetricsRefresh(Duration refresh) {
            return new Settings(host, port, token, refresh);
        }

        @Override
        public String toString() {
            // A record prints its components: never the token.
            return "Settings[host="
                    + host
                    + ", port="
                    + port
                    + ", metricsRefresh="
                    + metricsRefresh
                    + "]";
        }

        /**
         * Parses {@code host:port}: {@code 127.0.0.1:9467}, {@code [::1]:9467}, {@code 0.0.0.0:9467}.
         *
         * @param token the bearer token /v1 requests must carry ({@link AdminToken})
         * @throws IllegalArgumentException for a malformed bind address or a blank token
         */
        public static Settings parse(String bind, String token) {
            String text = bind.trim();
            int colon = text.lastIndexOf(':');
            if (colon <= 0 || colon == text.length() - 1) {
                throw new IllegalArgumentException("bind address '" + bind + "' is not host:port");
            }
            String host = text.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            } else if (host.contains(":")) {
                throw new IllegalArgumentException(
                        "bind address '"
                                + bind
                                + "': write an IPv6 address in brackets, [::1]:9467");
            }
            int port;
            try {
                port = Integer.parseInt(text.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "bind address '" + bind + "' has no numeric port");
            }
            return new Settings(host, port, token);
        }

        /** @throws IllegalArgumentException when the host does not resolve */
        private static void resolves(String host) {
            try {
                InetAddress.getByName(host);
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("bind address " + host + " does not resolve", e);
            }
        }
    }

    private final Settings settings;
    private final AdminRoutes routes;
    private final ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Object lock = new Object();
    private EventLoopGroup loop; // guarded by lock
    private CompletableFuture<InetSocketAddress> bound; // guarded by lock
    private CompletableFuture<Done> stopped; // guarded by lock

    /**
     * @param ipam this agent's IPAM, for GC of its own node
     * @param unreadiness why the agent is not ready (for {@code /readyz}), or empty when it is
     */
    public AdminServer(
            ActorSystem<?> system,
            Inventory inventory,
            Ipam ipam,
            Supplier<Optional<String>> unreadiness,
            Settings settings) {
        this(system, inventory, ipam, unreadiness, settings, HostRoutes.NONE);
    }

    /**
     * As {@link #AdminServer(ActorSystem, Inventory, Ipam, Supplier, Settings)}, with this host's
     * routing layer for the node views and the consistency check.
     */
    public AdminServer(
            ActorSystem<?> system,
            Inventory inventory,
            Ipam ipam,
            Supplier<Optional<String>> unreadiness,
            Settings settings,
            HostRoutes hostRoutes) {
        this.settings = settings;
        CadastreMetrics metrics = CadastreMetrics.get(system);
        MetricsEndpoint metricsEndpoint =
                new MetricsEndpoint(
                        metrics,
                        inventory::usage,
                        settings.metricsRefresh(),
                        MetricsEndpoint.WAIT,
                        System::nanoTime);
        this.routes =
                new AdminRoutes(
                        inventory,
                        ipam,
                        unreadiness,
                        settings.token(),
                        metricsEndpoint,
                        metrics,
                        hostRoutes);
    }

    /**
     * Binds the port.
     *
     * @return the address bound (the port chosen when the settings say 0); fails when the port
     *     cannot be bound
     * @throws IllegalStateException when called twice
     */
    public CompletionStage<InetSocketAddress> start() {
        synchronized (lock) {
            if (bound != null) {
                throw new IllegalStateException("the admin server was started already");
            }
            bound = new CompletableFuture<>();
            boolean epoll = Epoll.isAvailable();
            loop =
                    epoll
                            ? new EpollEventLoopGroup(1, threads())
                            : new NioEventLoopGroup(1, threads());
            ChannelFuture binding =
                    new ServerBootstrap()
                            .group(loop)
                            .channel(
                                    epoll
                                            ? EpollServerSocketChannel.class
                                            : NioServerSocketChannel.class)
                            .option(ChannelOption.ALLOCATOR, ServerBuffers.ALLOCATOR)
                            .childOption(ChannelOption.ALLOCATOR, ServerBuffers.ALLOCATOR)
                            .childHandler(
                                    new ChannelInitializer<SocketChannel>() {
                                        @Override
                                        protected void initChannel(SocketChannel ch) {
                                            accept(ch);
                                        }
                                    })
                            .bind(settings.host(), settings.port());
            CompletableFuture<InetSocketAddress> result = bound;
            binding.addListener(
                    (ChannelFuture f) -> {
                        if (f.isSuccess()) {
                            connections.add(f.channel());
                            result.complete((InetSocketAddress) f.channel().localAddress());
                        } else {
                            result.completeExceptionally(f.cause());
                            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
                        }
                    });
            return result;
        }
    }

    private void accept(SocketChannel ch) {
        // The listening channel is one of `connections`.
        if (connections.size() > MAX_CONNECTIONS) {
            ch.close();
            return;
        }
        connections.add(ch);
        ch.pipeline()
                .addLast(new IdleStateHandler(0, 0, IDLE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS))
                .addLast(new HttpServerCodec(MAX_REQUEST_LINE_BYTES, MAX_HEADER_BYTES, 8192))
                .addLast(new BodyAggregator())
                .addLast(new Exchange());
    }

    /** Unbinds, lets requests in flight finish for {@link #STOP_GRACE}; done also when never started. */
    public CompletionStage<Done> stop() {
        synchronized (lock) {
            if (stopped != null) {
                return stopped;
            }
            stopped = new CompletableFuture<>();
            if (bound == null) {
                stopped.complete(Done.getInstance());
                return stopped;
            }
            CompletableFuture<Done> result = stopped;
            EventLoopGroup group = loop;
            bound.handle((address, error) -> null)
                    .thenCompose(x -> closeListener())
                    .thenCompose(x -> drained(System.nanoTime() + STOP_GRACE.toNanos()))
                    .whenComplete(
                            (x, error) ->
                                    connections
                                            .close()
                                            .addListener(
                                                    closed ->
                                                            group.shutdownGracefully(
                                                                            0, 1, TimeUnit.SECONDS)
                                                                    .addListener(
                                                                            down ->
                                                                                    result.complete(
                                                                                            Done
                                                                                                    .getInstance()))));
            return result;
        }
    }

    private CompletableFuture<Void> closeListener() {
        CompletableFuture<Void> closed = new CompletableFuture<>();
        connections
                .close(ch -> ch instanceof ServerChannel)
                .addListener(f -> closed.complete(null));
        return closed;
    }

    /** Completes when no request is in flight, or at the deadline ({@link System#nanoTime()}). */
    private CompletableFuture<Void> drained(long deadline) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Runnable poll =
                new Runnable() {
                    @Override
                    public void run() {
                        if (inFlight.get() == 0 || System.nanoTime() - deadline >= 0) {
                            if (inFlight.get() > 0) {
                                log.warn(
                                        "admin API stopping: closing {} request(s) still in flight",
                                        inFlight.get());
                            }
                            done.complete(null);
                        } else {
                            loop.schedule(this, 10, TimeUnit.MILLISECONDS);
                        }
                    }
                };
        loop.execute(poll);
        return done;
    }

    /** Daemon threads: an agent that forgot stop() still exits. */
    private static ThreadFactory threads() {
        return r -> {
            Thread t = new FastThreadLocalThread(r, "cadastre-admin");
            t.setDaemon(true);
            return t;
        };
    }

    /** A body over {@link #MAX_BODY_BYTES}: 413 with {@code {"error": ...}}, then close. */
    private final class BodyAggregator extends HttpObjectAggregator {
        BodyAggregator() {
            super(MAX_BODY_BYTES);
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            write(
                    ctx,
                    routes.error(413, "the request body is over " + MAX_BODY_BYTES + " bytes"),
                    false,
                    false);
        }
    }

    /**
     * One request at a time per connection, on its event loop: requests that arrive together (one
     * read can hold several) wait in order, and reading pauses while one is served.
     */
    private final class Exchange extends ChannelInboundHandlerAdapter {
        private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();
        private boolean serving;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof FullHttpRequest request)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            waiting.add(request);
            if (!serving) {
                serveNext(ctx);
            }
        }

        private void serveNext(ChannelHandlerContext ctx) {
            FullHttpRequest request = waiting.poll();
            if (request == null || !ctx.channel().isActive()) {
                serving = false;
                ctx.channel().config().setAutoRead(true);
                return;
            }
            serving = true;
            ctx.channel().config().setAutoRead(false);
            boolean keepAlive = HttpUtil.isKeepAlive(request);
            boolean head = request.method().equals(HttpMethod.HEAD);
            AdminRoutes.Request parsed;
            try {
                // HEAD is answered as GET is, without the body.
                parsed = parse(request, head ? "GET" : request.method().name());
            } catch (IllegalArgumentException e) {
                answer(ctx, routes.error(400, e.getMessage()), false, false);
                return;
            } finally {
                request.release();
            }
            inFlight.incrementAndGet();
            AtomicBoolean answered = new AtomicBoolean();
            ScheduledFuture<?> timeout =
                    ctx.executor()
                            .schedule(
                                    () ->
                                            answerOnce(
                                                    ctx,
                                                    answered,
                                                    routes.error(
                                                            503,
                                                            "no answer within "
                                                                    + REQUEST_TIMEOUT.toSeconds()
                                                                    + " s"),
                                                    false,
                                                    head),
                                    REQUEST_TIMEOUT.toMillis(),
                                    TimeUnit.MILLISECONDS);
            routes.handle(parsed)
                    .whenComplete(
                            (response, error) -> {
                                timeout.cancel(false);
                                answerOnce(
                                        ctx,
                                        answered,
                                        error == null
                                                ? response
                                                : routes.error(500, "internal error: " + error),
                                        keepAlive,
                                        head);
                            });
        }

        /** The first of the routes' answer and the request timeout's is written; the other is dropped. */
        private void answerOnce(
                ChannelHandlerContext ctx,
                AtomicBoolean answered,
                AdminRoutes.Response response,
                boolean keepAlive,
                boolean head) {
            if (answered.compareAndSet(false, true)) {
                inFlight.decrementAndGet();
                answer(ctx, response, keepAlive, head);
            }
        }

        /** Writes the answer; then closes, or serves the next request on the event loop. */
        private void answer(
                ChannelHandlerContext ctx,
                AdminRoutes.Response response,
                boolean keepAlive,
                boolean head) {
            write(ctx, response, keepAlive, head)
                    .addListener(
                            (ChannelFuture f) -> {
                                if (keepAlive && f.isSuccess()) {
                                    ctx.executor().execute(() -> serveNext(ctx));
                                }
                            });
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            waiting.forEach(ReferenceCountUtil::release);
            waiting.clear();
            ctx.fireChannelInactive();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
            if (event instanceof IdleStateEvent) {
                ctx.close();
            } else {
                ctx.fireUserEventTriggered(event);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug(
                    "admin API connection from {}: {}",
                    ctx.channel().remoteAddress(),
                    cause.toString());
            ctx.close();
        }
    }

    /**
     * @param method the method to route by
     * @throws IllegalArgumentException, its message the error to answer with 400, for a request the
     *     codec could not read, or a target whose path is not absolute or has a malformed percent
     *     escape
     */
    private static AdminRoutes.Request parse(FullHttpRequest request, String method) {
        if (request.decoderResult().isFailure()) {
            throw new IllegalArgumentException(
                    "malformed HTTP request: " + request.decoderResult().cause());
        }
        QueryStringDecoder target = new QueryStringDecoder(request.uri(), StandardCharsets.UTF_8);
        String rawPath = target.rawPath();
        if (!rawPath.startsWith("/")) {
            throw new IllegalArgumentException(
                    "malformed request target: the path must start with /");
        }
        List<String> segments = new ArrayList<>();
        if (!rawPath.equals("/")) {
            for (String segment : rawPath.substring(1).split("/", -1)) {
                try {
                    // A plus sign is itself in a path (URLDecoder would make it a space).
                    segments.add(
                            URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(
                            "malformed request target: " + e.getMessage(), e);
                }
            }
        }
        byte[] body = new byte[request.content().readableBytes()];
        request.content().getBytes(request.content().readerIndex(), body);
        HttpHeaders headers = request.headers();
        return new AdminRoutes.Request(
                method,
                List.copyOf(segments),
                target.parameters(),
                headers::get,
                headers.get(HttpHeaderNames.CONTENT_TYPE),
                body,
                HttpUtil.getCharset(request, StandardCharsets.UTF_8));
    }

    /**
     * Writes the answer, and closes after it unless the connection is kept alive. For a HEAD
     * request: the headers of the GET's answer, its Content-Length too, and no body (RFC 9110 §9.3.2).
     */
    private static ChannelFuture write(
            ChannelHandlerContext ctx,
            AdminRoutes.Response response,
            boolean keepAlive,
            boolean head) {
        FullHttpResponse http =
                new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1,
                        HttpResponseStatus.valueOf(response.status()),
                        head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(response.body()));
        http.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, response.contentType())
                .setInt(HttpHeaderNames.CONTENT_LENGTH, response.body().length);
        response.headers().forEach(http.headers()::set);
        if (!keepAlive) {
            http.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        ChannelFuture written = ctx.writeAndFlush(http);
        if (!keepAlive) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
        return written;
    }
}
