package io.cadastre.admin;

import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.Ipam;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;

/**
 * The admin API's HTTP server (pekko-http on TCP): {@code /healthz}, {@code /readyz},
 * {@code /openapi.yaml}, {@code /metrics} (the actor system's {@link CadastreMetrics}, see
 * {@link MetricsEndpoint}) and the {@code /v1} routes of {@link AdminRoutes}, which need the
 * bearer token of the settings wherever the server is bound.
 *
 * <p>Lifecycle: {@link #start()} once, then {@link #stop()} once (it fits {@code
 * CoordinatedShutdown}'s service-unbind phase); both return stages. Requests in flight when stop is
 * called get {@link #STOP_GRACE} to finish.
 */
public final class AdminServer {
    /** How long requests in flight may take to finish once {@link #stop()} is called. */
    public static final Duration STOP_GRACE = Duration.ofSeconds(3);

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

    private final ActorSystem<?> system;
    private final Settings settings;
    private final AdminRoutes routes;
    private final Object lock = new Object();
    private CompletableFuture<ServerBinding> binding; // guarded by lock
    private CompletionStage<Done> stopped; // guarded by lock

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
        this.system = system;
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
            if (binding != null) {
                throw new IllegalStateException("the admin server was started already");
            }
            binding =
                    Http.get(system)
                            .newServerAt(settings.host(), settings.port())
                            .bind(routes.route())
                            .toCompletableFuture();
            return binding.thenApply(ServerBinding::localAddress);
        }
    }

    /** Unbinds, lets requests in flight finish for {@link #STOP_GRACE}; done also when never started. */
    public CompletionStage<Done> stop() {
        synchronized (lock) {
            if (stopped == null) {
                stopped =
                        binding == null
                                ? CompletableFuture.completedFuture(Done.getInstance())
                                : binding.thenCompose(b -> b.terminate(STOP_GRACE))
                                        .handle((t, e) -> Done.getInstance());
            }
            return stopped;
        }
    }
}
