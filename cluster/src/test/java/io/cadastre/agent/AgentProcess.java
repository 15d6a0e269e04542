package io.cadastre.agent;

import io.cadastre.testsupport.AgentExec;
import io.cadastre.testsupport.LogFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real cadastre-agent as a child process ({@link AgentExec}: the same main and class path the launcher uses), on
 * the embedded journal in a directory of the test's. Stopped by PID: SIGTERM, or SIGKILL for crash
 * tests; {@link #close()} makes sure it is gone.
 */
final class AgentProcess implements AutoCloseable {
    /** Test pools: the benchmarking range and ULA only. */
    static final String TEST_POOLS =
            """
            cadastre.pools = [
              { name = "test-ipv4", cidr = "198.18.0.0/20", block-size = 26 }
              { name = "test-ipv6", cidr = "fd00:198:1::/112", block-size = 122 }
              { name = "tiny-ipv4", cidr = "198.19.0.0/26", block-size = 26, strict-affinity = true }
            ]
            cadastre.default-pools = ["test-ipv4", "test-ipv6"]
            """;

    private final Path dir;
    private final String nodeName;
    private final String config;

    /** The network namespace the agent runs in ({@code ip netns exec}), or null for the test's own. */
    private String netns;

    /** Variables added to the test's environment for the agent (a DaemonSet's {@code env}, say). */
    private final Map<String, String> environment = new LinkedHashMap<>();

    /** JVM flags after the tests' own ({@link AgentExec#commandWith}). */
    private final List<String> jvmFlags = new ArrayList<>();

    private Process process;

    /** The log's length when this run of the agent started. */
    private long logStart;

    AgentProcess(Path dir, String nodeName, String config) {
        this.dir = dir;
        this.nodeName = nodeName;
        this.config = config;
    }

    /** Runs the agent in the named network namespace (which must have {@code lo} up). */
    AgentProcess inNetns(String name) {
        this.netns = name;
        return this;
    }

    /**
     * Adds variables to the agent's environment (the test's own, inherited, plus these), as a
     * DaemonSet's {@code env} gives them; the configuration file still wins over the variables that
     * application.conf reads ({@code ${?CADASTRE_...}}) for the keys it sets.
     */
    AgentProcess withEnvironment(Map<String, String> variables) {
        environment.putAll(variables);
        return this;
    }

    /** Adds JVM flags after the tests' own, which they override. */
    AgentProcess withJvmFlags(String... flags) {
        jvmFlags.addAll(List.of(flags));
        return this;
    }

    Path socket() {
        return dir.resolve("cni.sock");
    }

    Path log() {
        return dir.resolve("agent.log");
    }

    /** @return the agent's data directory ({@code cadastre.data-dir}) */
    Path dataDir() {
        return dir.resolve("data");
    }

    /** @return the admin API's token file the agent generates in its data directory (root's only) */
    Path adminTokenFile() {
        return dataDir().resolve("admin.token");
    }

    long pid() {
        return process.pid();
    }

    /** Starts the agent and waits until its CNI socket accepts calls (or fails with its log). */
    AgentProcess start() throws IOException {
        Path conf = dir.resolve("agent.conf");
        // The test's own namespace is the machine's (other tests, other engineers): no routing
        // there unless a test asks for it.
        String routing =
                config.contains("cadastre.routing.mode") ? "" : "cadastre.routing.mode = none\n";
        // Any free port, unless the test chose one (other members must then know it in advance).
        String clusterPort =
                config.contains("cadastre.cluster.port")
                                || environment.containsKey("CADASTRE_CLUSTER_PORT")
                        ? ""
                        : "cadastre.cluster.port = 0\n";
        Files.writeString(
                conf,
                routing
                        + config
                        + "\ncadastre.node-name = \""
                        + nodeName
                        + "\"\n"
                        + "cadastre.data-dir = \""
                        + dataDir()
                        + "\"\n"
                        + "cadastre.cni-socket = \""
                        + socket()
                        + "\"\n"
                        + clusterPort
                        + "cadastre.admin.bind = \"127.0.0.1:0\"\n");
        List<String> command =
                new ArrayList<>(netns == null ? List.of() : List.of("ip", "netns", "exec", netns));
        command.addAll(AgentExec.commandWith(jvmFlags, "--config", conf.toString()));
        // A killed agent leaves its socket file behind: readiness is the new one appearing.
        Files.deleteIfExists(socket());
        logStart = Files.exists(log()) ? Files.size(log()) : 0;
        ProcessBuilder builder =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()));
        builder.environment().putAll(environment);
        process = builder.start();
        AgentExec.awaitSocket(process, socket(), Duration.ofSeconds(90), "agent", log());
        return this;
    }

    /**
     * Waits for the admin API, which the agent binds after its CNI socket, on the port it chose
     * ({@code cadastre.admin.bind} is {@code 127.0.0.1:0}): the "admin API on URL" line this
     * run of the agent logs (the log is appended to across restarts).
     *
     * @return the admin API's base URL, {@code http://127.0.0.1:PORT}
     * @throws IllegalStateException when the agent exits or does not log the line within 60 s
     */
    String adminUrl() throws IOException {
        // Up to the line's end: a line being written could end mid-port.
        Pattern line = Pattern.compile("admin API on (http://\\S+)\\R");
        AgentExec.awaitCondition(
                process,
                () -> line.matcher(logOfThisRunOrEmpty()).find(),
                Duration.ofSeconds(60),
                "agent",
                "start its admin API",
                log());
        Matcher m = line.matcher(logOfThisRun());
        if (!m.find()) {
            throw new IllegalStateException("the agent's admin API line is gone from its log");
        }
        return m.group(1);
    }

    /** SIGKILL, as a crash: no shutdown hook runs. */
    void kill() throws InterruptedException {
        AgentExec.kill(process);
    }

    /** SIGTERM, and waits for the clean exit. @return the exit code */
    int stop() throws InterruptedException {
        if (!AgentExec.terminate(process, Duration.ofSeconds(60))) {
            throw new IllegalStateException("agent did not stop on SIGTERM within 60 s");
        }
        return process.exitValue();
    }

    /** @return what this run of the agent has logged so far (the log is appended to across restarts) */
    String logOfThisRun() throws IOException {
        byte[] log = Files.readAllBytes(log());
        int from = (int) Math.min(logStart, log.length);
        return new String(log, from, log.length - from, StandardCharsets.UTF_8);
    }

    private String logOfThisRunOrEmpty() {
        try {
            return logOfThisRun();
        } catch (IOException notYet) {
            return "";
        }
    }

    String tail() {
        return LogFile.tail(log());
    }

    @Override
    public void close() throws InterruptedException {
        if (process != null && process.isAlive()) {
            AgentExec.kill(process);
        }
    }
}
