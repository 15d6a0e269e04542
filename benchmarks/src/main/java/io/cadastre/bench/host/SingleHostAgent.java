package io.cadastre.bench.host;

import io.cadastre.agent.AgentJvm;
import io.cadastre.bench.BenchContext;
import io.cadastre.testsupport.AgentExec;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.LogFile;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A cadastre-agent on this host as the quick start runs it: the real main in its own JVM, the
 * embedded journal (RocksDB) in a directory of its own, its CNI socket there too, wiring pods in the
 * root network namespace. Started and stopped (SIGTERM) by its PID only.
 */
public final class SingleHostAgent implements AutoCloseable {
    /** The agent's JVM flags: its defaults ({@link AgentJvm}), what {@code bin/cadastre-agent} starts it with. */
    public static final List<String> JVM_FLAGS = AgentJvm.defaultOptions();

    /** IPAM-only ADD/DEL cycles that warm a fresh agent up before a scenario measures it. */
    public static final int WARM_UP_CYCLES = 500;

    /** The IPv4 pool of the agent (RFC 2544 range): 198.18.0.0/20 in /26 blocks. */
    public static final String IPV4_POOL = "bench-ipv4";

    /** The IPv6 pool of the agent: fd00:198:5::/112 in /122 blocks. */
    public static final String IPV6_POOL = "bench-ipv6";

    private final Path dir;
    private final Process process;
    private final long launchedNanos;

    private SingleHostAgent(Path dir, Process process, long launchedNanos) {
        this.dir = dir;
        this.process = process;
        this.launchedNanos = launchedNanos;
    }

    /**
     * Starts the agent and waits until its CNI socket is open.
     *
     * @param dir an empty directory for its journal, socket, configuration and log
     * @param cdsArchive the class data archive to map, or to write at exit when it does not exist
     *     yet ({@link #launch(Path, Path)}); null for none
     * @throws IOException when it exits or does not open its socket within 120 s (it is stopped then)
     */
    public static SingleHostAgent start(Path dir, Path cdsArchive)
            throws IOException, InterruptedException {
        SingleHostAgent agent = launch(dir, cdsArchive);
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!Files.exists(agent.socket())) {
            if (!agent.process.isAlive() || System.nanoTime() > deadline) {
                agent.close();
                throw new IOException("the agent did not open its socket:\n" + agent.tail());
            }
            Thread.sleep(50);
        }
        return agent;
    }

    /**
     * Starts the agent in the scenario's work directory ({@code <scenario>/agent}), mapping the
     * suite's class data archive ({@link #classDataArchive}) as a node's agent maps its own, and
     * warms it up ({@link #warmUpCycles}).
     *
     * @throws IOException when it does not start or a warm-up call fails (it is stopped then)
     */
    public static SingleHostAgent startWarm(BenchContext context, String scenario)
            throws IOException, InterruptedException {
        SingleHostAgent agent =
                start(context.workDir(scenario + "/agent"), classDataArchive(context));
        try {
            agent.warmUp(context.plugin(), context.ipamNetns(), warmUpCycles(context));
        } catch (Exception e) {
            agent.close();
            throw e;
        }
        return agent;
    }

    /**
     * The class data archive the suite's warm agents map. {@code bin/cadastre-agent} and the image
     * write theirs when the agent's first run on a node ends and map it on every later start, so a
     * node's agent in its steady state runs from one. Here one recording agent writes it, once per
     * suite run, on first use: started without one, warmed up as {@link #startWarm} warms (IPAM
     * calls through the plugin), stopped with SIGTERM; the archive is kept only when the JVM ended
     * by itself, as the launchers keep theirs.
     *
     * @return the archive, or null when the recording wrote none (the JVM archives classes from jars
     *     only: a class path of directories, a test's, runs every agent without one)
     * @throws IOException when the recording agent does not start or a warm-up call fails
     */
    public static synchronized Path classDataArchive(BenchContext context)
            throws IOException, InterruptedException {
        Path dir = context.workDir("agent-cds");
        Path archive = dir.resolve("cadastre-agent.jsa");
        Path recorded = dir.resolve("recorded");
        if (!Files.exists(recorded)) {
            Path partial = dir.resolve("cadastre-agent.jsa.partial");
            int exit;
            try (SingleHostAgent recording = start(context.workDir("agent-cds/agent"), partial)) {
                recording.warmUp(context.plugin(), context.ipamNetns(), warmUpCycles(context));
                recording.close();
                exit = recording.process.exitValue();
            }
            // 143: the JVM's exit after SIGTERM, its shutdown hooks run and the archive written.
            if ((exit == 0 || exit == 143) && Files.exists(partial) && Files.size(partial) > 0) {
                Files.move(partial, archive);
            }
            Files.deleteIfExists(partial);
            Files.createFile(recorded);
        }
        return Files.exists(archive) ? archive : null;
    }

    /** @return the warm-up's ADD/DEL cycles: {@link #WARM_UP_CYCLES}, or 5 in a quick run */
    public static int warmUpCycles(BenchContext context) {
        return context.quick() ? 5 : WARM_UP_CYCLES;
    }

    /**
     * Starts the agent and returns at once, for a caller that times its start ({@link
     * #launchedNanos()}), with class data sharing as {@code bin/cadastre-agent} does it: the archive
     * mapped when it exists, else written when this agent exits.
     *
     * @param dir an empty directory for its journal, socket, configuration and log
     * @param cdsArchive the archive's path, or null for none
     */
    public static SingleHostAgent launch(Path dir, Path cdsArchive) throws IOException {
        Path conf = dir.resolve("agent.conf");
        Files.writeString(
                conf,
                """
                cadastre.pools = [
                  { name = "%s", cidr = "198.18.0.0/20", block-size = 26 }
                  { name = "%s", cidr = "fd00:198:5::/112", block-size = 122 }
                ]
                cadastre.node-name = "bench"
                cadastre.data-dir = "%s"
                cadastre.cni-socket = "%s"
                cadastre.admin.bind = "127.0.0.1:%d"
                cadastre.cluster.port = 0
                # The machine's own namespace: the agent must not route (forwarding, routes, devices).
                cadastre.routing.mode = none
                """
                        .formatted(
                                IPV4_POOL,
                                IPV6_POOL,
                                dir.resolve("data"),
                                dir.resolve("cni.sock"),
                                freePort()));
        List<String> flags = new ArrayList<>(JVM_FLAGS);
        if (cdsArchive != null) {
            // -Xshare:auto: a class path with directories (a test's) cannot be archived; the agent
            // runs without.
            flags.add(
                    (Files.exists(cdsArchive)
                                    ? "-XX:SharedArchiveFile="
                                    : "-XX:ArchiveClassesAtExit=")
                            + cdsArchive);
        }
        // Experiments with other flags or settings (-Dpekko..., -Xmx...), after the defaults so
        // that they win.
        String extra = System.getProperty("cadastre.bench.agent-flags", "").strip();
        if (!extra.isEmpty()) {
            flags.addAll(List.of(extra.split("\\s+")));
        }
        List<String> command = AgentExec.command(flags, "--config", conf.toString());
        ProcessBuilder builder =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(
                                ProcessBuilder.Redirect.appendTo(
                                        dir.resolve("agent.log").toFile()));
        builder.environment().put("CADASTRE_PERSISTENCE", "embedded");
        long launched = System.nanoTime();
        return new SingleHostAgent(dir, builder.start(), launched);
    }

    /**
     * Warms the agent up as a running node's agent is warm: {@code cycles} IPAM-only ADD and DEL
     * through the real plugin (no interface), from the given IPv4 pool, in the network namespace
     * {@code netns} ({@code CNI_NETNS}).
     *
     * @throws IOException when one of them fails
     */
    public void warmUp(Path plugin, String netns, int cycles)
            throws IOException, InterruptedException {
        String netconf =
                """
                {"cniVersion":"1.0.0","name":"bench-warm-up","type":"bridge","ipam":{"type":"cadastre-ipam",\
                "agentSocket":"%s","pools":["%s"]}}"""
                        .formatted(socket(), IPV4_POOL);
        for (int i = 0; i < cycles; i++) {
            for (String command : List.of("ADD", "DEL")) {
                CniExec.Result run =
                        CniExec.run(
                                plugin,
                                command,
                                "warm-up-" + i,
                                netns,
                                Path.of("/usr/lib/cni"),
                                netconf,
                                null);
                if (run.exit() != 0) {
                    throw new IOException("warm-up " + command + " failed: " + run.stdout());
                }
            }
        }
    }

    /** @return the CNI socket, for the netconf's {@code agentSocket} */
    public Path socket() {
        return dir.resolve("cni.sock");
    }

    public long pid() {
        return process.pid();
    }

    /** @return {@link System#nanoTime()} just before its process was started */
    public long launchedNanos() {
        return launchedNanos;
    }

    /** @return whether its process still runs */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** @return the agent's data directory (its journal among it) */
    public Path dataDir() {
        return dir.resolve("data");
    }

    /** @return the last lines of its log, for a failure message */
    public String tail() {
        return LogFile.tail(dir.resolve("agent.log"));
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** SIGTERM, then SIGKILL after 30 s. */
    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            AgentExec.terminate(process, Duration.ofSeconds(30));
        }
    }
}
