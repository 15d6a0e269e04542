package io.cadastre.agent;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import io.cadastre.admin.Members;
import io.cadastre.dataplane.NetlinkDataplane;
import io.cadastre.dataplane.NetlinkHostPolicy;
import io.cadastre.dataplane.NetlinkHostRouting;
import io.cadastre.ipam.IpFamily;
import io.cadastre.journal.EmbeddedStore;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cadastre-agent}: runs the agent (the default), or installs the CNI plugin and network
 * configuration ({@code install}). Before the actor system starts, it makes the data directory
 * private ({@link DataDir}), reads or generates the admin API's token ({@link AdminConfig}) and
 * decides how the cluster port authenticates its peers ({@link ClusterTransport}). Exit codes: 0
 * after a clean shutdown (SIGTERM), 1 when start-up failed (the data directory cannot be prepared,
 * among others), 2 for bad command-line or configuration (a token file that others may read, a
 * cluster port beyond loopback without TLS credentials or the insecure switch, TLS or Cassandra
 * credential files that are missing, unreadable or do not match: {@link ClusterTransport}, {@link
 * CassandraSecurity}), 3 when the cluster downed this member (after a crash-like pause or on the
 * minority side of a partition): its supervisor restarts it, and it joins again as a new
 * incarnation.
 */
@Command(
        name = "cadastre-agent",
        mixinStandardHelpOptions = true,
        version = "cadastre-agent 0.1.0",
        description = "Cadastre's per-host agent: cluster member, IPAM and CNI endpoint.",
        subcommands = {InstallCommand.class, SchemaCommand.class})
public final class AgentMain implements Callable<Integer> {
    private static final Logger log = LoggerFactory.getLogger(AgentMain.class);

    @Option(
            names = {"-c", "--config"},
            paramLabel = "FILE",
            description = "A HOCON file whose settings override the built-in application.conf.")
    File configFile;

    /**
     * Loads the configuration: system properties, then {@code --config}, then application.conf,
     * with the journal plugins that {@code cadastre.persistence} selects ({@link Persistence}).
     *
     * @throws IllegalArgumentException or a {@code ConfigException} for an invalid configuration
     */
    public static Config loadConfig(File overrides) {
        return loadConfig(overrides, ConfigFactory.empty());
    }

    /** As {@link #loadConfig(File)}, with {@code forced} settings above the file and application.conf. */
    public static Config loadConfig(File overrides, Config forced) {
        Config app = ConfigFactory.parseResourcesAnySyntax("application");
        Config base =
                forced.withFallback(
                        overrides == null
                                ? app
                                : ConfigFactory.parseFile(overrides).withFallback(app));
        Config resolved = ConfigFactory.load(base);
        Config selected = Persistence.of(resolved).selection(resolved);
        String seeds = resolved.getString("cadastre.cluster.seed-nodes-env");
        if (!seeds.isBlank()) {
            selected =
                    selected.withValue(
                            "cadastre.cluster.seed-nodes",
                            ConfigValueFactory.fromIterable(
                                    Arrays.stream(seeds.split(","))
                                            .map(String::trim)
                                            .filter(s -> !s.isEmpty())
                                            .toList()));
        }
        return ConfigFactory.load(selected.withFallback(base));
    }

    /**
     * @return the configuration with the role {@code cadastre-node:<node>} added to this member's
     *     {@code pekko.cluster.roles}: how the admin API of any member names the nodes of all
     *     ({@link Members})
     */
    static Config withNodeRole(Config config, String node) {
        List<String> roles = new ArrayList<>(config.getStringList("pekko.cluster.roles"));
        roles.add(Members.role(node));
        return config.withValue("pekko.cluster.roles", ConfigValueFactory.fromIterable(roles));
    }

    @Override
    public Integer call() {
        Config config;
        AgentSettings settings;
        AdminConfig.Resolved admin;
        HostPreflight.Outcome host;
        ClusterTransport transport;
        Optional<CassandraSecurity> cassandra;
        try {
            if (configFile != null && !configFile.isFile()) {
                throw new IllegalArgumentException(
                        "--config " + configFile + " is not a readable file");
            }
            config = loadConfig(configFile);
            settings = AgentSettings.from(config);
            // Before the actor system: a member that may not or cannot authenticate its peers
            // must not open the cluster port at all.
            transport = ClusterTransport.from(config, Instant.now());
            config = withNodeRole(transport.applyTo(config), settings.nodeName());
            cassandra =
                    settings.persistence() == Persistence.CASSANDRA
                            ? Optional.of(
                                    CassandraSecurity.from(config.getConfig("cadastre.cassandra")))
                            : Optional.empty();
            if (settings.persistence() == Persistence.EMBEDDED) {
                // Read now so that a bad size is exit 2, not a journal failing to open later.
                EmbeddedStore.settings(config);
            }
            List<String> tightened =
                    DataDir.prepare(
                            settings.dataDir(), settings.persistence() == Persistence.EMBEDDED);
            tightened.forEach(
                    change ->
                            log.warn(
                                    "{}: only the agent's user may read the journal and the admin token",
                                    change));
            DataDir.removeStaleClassArchives(
                            settings.dataDir(),
                            ManagementFactory.getRuntimeMXBean().getInputArguments())
                    .forEach(
                            archive ->
                                    log.info(
                                            "removed {}: the class data archive of another build",
                                            archive));
            admin = AdminConfig.from(config, settings.dataDir());
            // Before the actor system too: a host that cannot route pods never joins the cluster.
            host =
                    HostPreflight.check(
                            settings.routing(),
                            clusterAddress(config),
                            families(settings),
                            HostPreflight.Host.real(settings.procSys()));
        } catch (IOException | UncheckedIOException e) {
            System.err.println("cadastre-agent: cannot prepare the data directory: " + e);
            return 1;
        } catch (RuntimeException e) {
            System.err.println("cadastre-agent: configuration error: " + e.getMessage());
            return 2;
        }
        logToken(admin);
        JavaRuntimeCheck.forkJoinPoolWarning(Runtime.version()).ifPresent(log::warn);
        transport.log(log);
        cassandra.ifPresent(c -> c.log(log));
        host.changes().forEach(change -> log.info("host set for the pod network: {}", change));
        ActorSystem<Object> system =
                ActorSystem.create(
                        Guardian.create(
                                settings,
                                admin.settings(),
                                new NetlinkDataplane(settings.procSys()),
                                new NetlinkHostRouting(),
                                new NetlinkHostPolicy(),
                                host.underlay(),
                                host.podMtu()),
                        "cadastre",
                        config);
        // The journal's dispatcher too, when it has one of its own: a stall there stops every
        // persist, hence every ADD.
        DispatcherStallWatch.start(
                system,
                config.getDuration("cadastre.stall-report-after"),
                settings.persistence() == Persistence.CASSANDRA
                        ? List.of(
                                config.getString(
                                        "pekko.persistence.cassandra.journal.plugin-dispatcher"))
                        : List.of());
        boolean terminated;
        try {
            terminated = TerminationWatch.await(system, TERMINATION_GRACE);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            terminated = false;
        }
        int code = exitCode(CoordinatedShutdown.get(system).getShutdownReason());
        if (!terminated) {
            log.error(
                    "the actor system did not terminate {} s after its shutdown ran; ending the process with exit code {}"
                            + " so that it is restarted. All threads:\n{}Actors still alive:\n{}",
                    TERMINATION_GRACE.toSeconds(),
                    code,
                    ThreadDump.take(),
                    ThreadDump.actorTree(system));
            // Not System.exit: its shutdown hooks may wait on what is stuck.
            Runtime.getRuntime().halt(code);
        }
        return code;
    }

    /**
     * How long the actor system may take to terminate after its coordinated shutdown's last phase,
     * which itself waits for the termination ({@code
     * pekko.coordinated-shutdown.phases.actor-system-terminate.timeout}, 5 s).
     */
    static final Duration TERMINATION_GRACE = Duration.ofSeconds(1);

    /**
     * @return {@code cadastre.cluster.hostname} as an address (a literal, or the name resolved), or
     *     null when it cannot be resolved (the underlay is then found by the default route)
     */
    static InetAddress clusterAddress(Config config) {
        String host = config.getString("cadastre.cluster.hostname").trim();
        try {
            return InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    /** @return the families of the configured pools */
    static Set<IpFamily> families(AgentSettings settings) {
        Set<IpFamily> families = EnumSet.noneOf(IpFamily.class);
        settings.pools().forEach(p -> families.add(p.family()));
        return families;
    }

    /** Says where the admin API's token is, never what it is. */
    private static void logToken(AdminConfig.Resolved admin) {
        if (admin.kept() == null) {
            log.info("admin API token from cadastre.admin.token-file {}", admin.tokenFile());
            return;
        }
        switch (admin.kept().origin()) {
            case GENERATED ->
                    log.info(
                            "admin API token generated in {} (mode 0600: cadastrectl run as root reads it)",
                            admin.tokenFile());
            case REUSED -> log.info("admin API token in {}", admin.tokenFile());
            case REPLACED ->
                    log.warn(
                            "admin API token in {} replaced by a new one: {}",
                            admin.tokenFile(),
                            admin.kept().replacedBecause().orElse("unfit"));
        }
    }

    /** @return the process's exit code for the reason the actor system shut down (see the class comment) */
    static int exitCode(Optional<CoordinatedShutdown.Reason> reason) {
        if (reason.filter(r -> r instanceof Guardian.StartFailure).isPresent()) {
            return 1;
        }
        if (reason.filter(r -> r == CoordinatedShutdown.clusterDowningReason()).isPresent()) {
            return 3;
        }
        return 0;
    }

    /** The common pool's parallelism when the machine would give it less: see {@link #useCommonPoolForAsyncStages}. */
    static final int MIN_COMMON_POOL_PARALLELISM = 2;

    /**
     * Pekko's asks return Scala's {@code CompletionStage} adapter, which runs every dependent stage
     * ({@code thenApply}, {@code thenCompose}, ...) asynchronously on {@code CompletableFuture}'s
     * default executor. With fewer than 3 cores the JDK's common pool has a parallelism of 1, and
     * that default executor is then a new thread per stage: measured on 2 cores, about 4 threads
     * started per CNI ADD, 10 ms of CPU per ADD and 3× its latency. A parallelism of at least
     * {@value #MIN_COMMON_POOL_PARALLELISM} makes the stages run on the common pool. Must run
     * before anything initialises {@code ForkJoinPool} (the first statement of main); an explicit
     * {@code -Djava.util.concurrent.ForkJoinPool.common.parallelism} is kept.
     */
    static void useCommonPoolForAsyncStages() {
        String property = "java.util.concurrent.ForkJoinPool.common.parallelism";
        if (System.getProperty(property) == null
                && Runtime.getRuntime().availableProcessors() - 1 < MIN_COMMON_POOL_PARALLELISM) {
            System.setProperty(property, Integer.toString(MIN_COMMON_POOL_PARALLELISM));
        }
    }

    public static void main(String[] args) {
        useCommonPoolForAsyncStages();
        int code = new CommandLine(new AgentMain()).execute(args);
        System.exit(code);
    }
}
