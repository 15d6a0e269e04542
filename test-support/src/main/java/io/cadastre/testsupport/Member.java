package io.cadastre.testsupport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * One cadastre-agent, the real main on the caller's class path ({@link AgentExec}), running
 * inside a host namespace of the topology as a cluster member on Cassandra. Its node name is the
 * host's name; it joins through the seed nodes given. Members authenticate each other with mutual TLS, as by default in
 * production: each has a certificate from the run's CA ({@link TestPki#member}: CN
 * {@code cadastre-<host>}, the cluster's shared DNS name, its address), written with its key and
 * the CA into {@code <dir>/tls}, mode 0600. Killed (SIGKILL), paused (SIGSTOP/SIGCONT), stopped
 * (SIGTERM) by PID only.
 */
public final class Member implements AutoCloseable {
    public static final int PORT = 2552;

    private final Topology topology;
    public final Topology.Host host;
    private final Path dir;
    private final CassandraNode cassandra;
    private final TestPki.PemFiles tls;
    private volatile List<String> seeds;
    private volatile boolean insecurePlaintext;
    private final String extraConfig;

    /** More environment for the next starts, e.g. {@code CADASTRE_ROUTING_MODE}. */
    private final Map<String, String> environment = new ConcurrentHashMap<>();

    private volatile Process process;

    /**
     * @param cassandra the journal, reached with its {@link CassandraNode#clientEnvironment()}
     * @param ca the cluster's CA, which issues this member's certificate now
     * @param extraConfig HOCON laid over the agent's application.conf
     */
    public Member(
            Topology topology,
            Topology.Host host,
            Path dir,
            CassandraNode cassandra,
            TestPki ca,
            List<String> seeds,
            String extraConfig) {
        this.topology = topology;
        this.host = host;
        this.dir = dir;
        this.cassandra = cassandra;
        this.tls =
                ca.write(ca.member("cadastre-" + host.name(), host.address()), dir.resolve("tls"));
        this.seeds = seeds;
        this.extraConfig = extraConfig;
    }

    public static String address(Topology.Host host) {
        return "pekko://cadastre@" + host.address() + ":" + PORT;
    }

    public String name() {
        return host.name();
    }

    public Path socket() {
        return dir.resolve("cni.sock");
    }

    public Path log() {
        return dir.resolve("agent.log");
    }

    /**
     * @return each member's name → the path of its agent log, in the members' order (what {@link
     *     AgentLogs} reads)
     */
    public static Map<String, Path> logs(List<Member> members) {
        Map<String, Path> logs = new LinkedHashMap<>();
        members.forEach(m -> logs.put(m.name(), m.log()));
        return logs;
    }

    /** @return the member's data directory ({@code cadastre.data-dir}) */
    public Path dataDir() {
        return dir.resolve("data");
    }

    /**
     * @return the admin API's bearer token file, which the member generates in its data directory
     *     at its first start (mode 0600) and keeps across restarts; its admin API listens on
     *     loopback inside the host's namespace
     */
    public Path adminTokenFile() {
        return dataDir().resolve("admin.token");
    }

    public long pid() {
        return process.pid();
    }

    /**
     * Replaces the seed nodes used by the next {@link #start()}. A restarted member should not
     * list itself first: a first seed node that reaches no other seed forms a cluster of its own.
     */
    public Member seeds(List<String> seeds) {
        this.seeds = List.copyOf(seeds);
        return this;
    }

    /**
     * Makes the next {@link #start()} run the cluster port on plain TCP without authentication
     * ({@code cadastre.cluster.insecure-plaintext}) instead of TLS, e.g. to price TLS; every
     * member of a cluster must run the same way.
     */
    public Member insecurePlaintext(boolean on) {
        this.insecurePlaintext = on;
        return this;
    }

    /**
     * Sets (or, with null, removes) an environment variable of the agent for the next
     * {@link #start()}s, e.g. {@code CADASTRE_ROUTING_MODE=vxlan}.
     */
    public Member env(String name, String value) {
        if (value == null) {
            environment.remove(name);
        } else {
            environment.put(name, value);
        }
        return this;
    }

    /** @return the exit code of the last process, if it has exited */
    public OptionalInt exitValue() {
        Process p = process;
        return p == null || p.isAlive() ? OptionalInt.empty() : OptionalInt.of(p.exitValue());
    }

    public boolean alive() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /** Starts the member and waits until its CNI socket is open (it has joined and defined its pools). */
    public Member start() throws IOException {
        Files.createDirectories(dir);
        Files.deleteIfExists(socket());
        Path conf = dir.resolve("agent.conf");
        Files.writeString(
                conf,
                extraConfig
                        + "\n"
                        + "cadastre.node-name = \""
                        + host.name()
                        + "\"\n"
                        + "cadastre.cni-socket = \""
                        + socket()
                        + "\"\n"
                        + "cadastre.data-dir = \""
                        + dataDir()
                        + "\"\n");
        Process started = startIn(AgentExec.command("--config", conf.toString()));
        process = started;
        AgentExec.awaitSocket(started, socket(), Duration.ofSeconds(120), name(), log());
        return this;
    }

    /**
     * Starts a cluster's members: the first, which forms the cluster (or that the others reach
     * first), then the others at once on {@code executor}, each with the seeds it was given.
     *
     * @throws IllegalStateException when a member does not start (the others may be running)
     */
    public static void startTogether(List<Member> members, Executor executor) throws IOException {
        members.get(0).start();
        List<CompletableFuture<Void>> rest =
                members.subList(1, members.size()).stream()
                        .map(
                                m ->
                                        CompletableFuture.runAsync(
                                                () -> {
                                                    try {
                                                        m.start();
                                                    } catch (IOException e) {
                                                        throw new IllegalStateException(e);
                                                    }
                                                },
                                                executor))
                        .toList();
        rest.forEach(CompletableFuture::join);
    }

    private Process startIn(List<String> command) {
        return topology.exec(
                host,
                command,
                pb -> {
                    pb.environment().put("CADASTRE_PERSISTENCE", "cassandra");
                    pb.environment().putAll(cassandra.clientEnvironment());
                    if (insecurePlaintext) {
                        pb.environment().put("CADASTRE_CLUSTER_INSECURE_PLAINTEXT", "on");
                    } else {
                        pb.environment()
                                .put("CADASTRE_CLUSTER_TLS_CERT_FILE", tls.cert().toString());
                        pb.environment().put("CADASTRE_CLUSTER_TLS_KEY_FILE", tls.key().toString());
                        pb.environment().put("CADASTRE_CLUSTER_TLS_CA_FILE", tls.ca().toString());
                    }
                    pb.environment().put("CADASTRE_CLUSTER_HOSTNAME", host.address());
                    pb.environment().put("CADASTRE_CLUSTER_PORT", Integer.toString(PORT));
                    pb.environment().put("CADASTRE_SEED_NODES", String.join(",", seeds));
                    pb.environment().putAll(environment);
                    pb.redirectErrorStream(true)
                            .redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
                });
    }

    /** SIGKILL: a crash, no shutdown hook runs. */
    public void kill() throws InterruptedException {
        AgentExec.kill(process);
    }

    /** @return the log's lines stamped at or after {@code from} (this machine's local time, HH:mm:ss.SSS), for diagnostics */
    public List<String> logLines(LocalTime from) {
        try {
            return Files.readAllLines(log()).stream()
                    .filter(
                            l -> {
                                try {
                                    return l.length() >= 12
                                            && !LocalTime.parse(l.substring(0, 12)).isBefore(from);
                                } catch (DateTimeParseException e) {
                                    return false;
                                }
                            })
                    .toList();
        } catch (IOException e) {
            return List.of("(no log: " + e + ")");
        }
    }

    /** @return the last 40 lines of the member's log */
    public String tail() {
        return LogFile.tail(log());
    }

    @Override
    public void close() throws InterruptedException {
        Process p = process;
        if (p != null && p.isAlive()) {
            AgentExec.terminate(p, Duration.ofSeconds(30));
        }
    }
}
