package io.cadastre.testsupport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongConsumer;

/**
 * Execs a CNI plugin exactly as a container runtime does (CNI spec 1.1 §Parameters): a clean
 * environment holding only the {@code CNI_*} variables, the network configuration on stdin, the
 * result or error object on stdout and the exit code. Every run is bounded by a deadline: the
 * output is read on its own threads, so a plugin that hangs with its pipes open is still killed
 * when the deadline passes. The run's time is from the process start to its exit, stdin written
 * and stdout read in between (the benchmarks' figure).
 */
public final class CniExec {
    public static final ObjectMapper JSON = new ObjectMapper();

    /** Cadastre's plugin: the {@code cadastre.plugin} property Surefire sets, else the build's from a module directory. */
    public static final Path PLUGIN =
            Path.of(System.getProperty("cadastre.plugin", "../cni-bridge/target/cadastre"));

    /** The tests' deadline of one run. */
    public static final Duration DEADLINE = Duration.ofSeconds(120);

    /**
     * The chaos runs' deadline of one run: longer than the agent's own bound on an ADD that waits
     * for the cluster (a partitioned member answers within 300 s).
     */
    public static final Duration CHAOS_DEADLINE = Duration.ofSeconds(330);

    /** The benchmarks' deadline of one run. */
    public static final Duration BENCH_DEADLINE = Duration.ofSeconds(60);

    /**
     * A finished run.
     *
     * @param exit the plugin's exit code
     * @param stdout what it printed (a CNI result or error object, or nothing for a DEL)
     * @param json {@code stdout} parsed, or null when it is blank
     * @param stderr what it printed on stderr
     * @param nanos from process start to exit, in nanoseconds
     */
    public record Result(int exit, String stdout, JsonNode json, String stderr, long nanos) {
        /** @return the CNI error code of an error object (CNI spec 1.1 §Error), or -1 */
        public int code() {
            return json == null ? -1 : json.path("code").asInt(-1);
        }

        /** @return the result's addresses without prefix length, in order (none for an error) */
        public List<String> addresses() {
            List<String> out = new ArrayList<>();
            if (json != null) {
                json.path("ips").forEach(ip -> out.add(ip.path("address").asText().split("/")[0]));
            }
            return out;
        }

        /** @return the first address of the result without prefix length, or null */
        public String firstAddress() {
            List<String> addresses = addresses();
            return addresses.isEmpty() ? null : addresses.get(0);
        }

        @Override
        public String toString() {
            return "exit "
                    + exit
                    + ": "
                    + stdout
                    + (stderr.isBlank() ? "" : " (stderr: " + stderr.strip() + ")");
        }
    }

    private CniExec() {}

    /**
     * @return an IPAM-only network ({@code type} bridge delegating to {@code cadastre-ipam}) on the
     *     member's socket: no interface is made, fast, for volume
     */
    public static String ipamOnly(Member member) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"chaos\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + member.socket()
                + "\"}}";
    }

    /** @return the full plugin's network on the member's socket: veth, addresses and routes in the pod's netns */
    public static String full(Member member) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"chaos\",\"type\":\"cadastre\",\"agentSocket\":\""
                + member.socket()
                + "\"}";
    }

    /**
     * The variables of one call, in the runtime's order, each set only when given; {@code CNI_PATH}
     * is the plugin's directory.
     *
     * @param command {@code ADD}, {@code DEL}, {@code CHECK}, {@code GC}, {@code STATUS} or {@code VERSION}
     * @param netns the namespace's path ({@code /var/run/netns/NAME}), or null
     */
    public static Map<String, String> env(
            String command, String containerId, String netns, String ifname) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("CNI_COMMAND", command);
        if (containerId != null) {
            env.put("CNI_CONTAINERID", containerId);
        }
        if (netns != null) {
            env.put("CNI_NETNS", netns);
        }
        if (ifname != null) {
            env.put("CNI_IFNAME", ifname);
        }
        env.put("CNI_PATH", PLUGIN.getParent().toString());
        return env;
    }

    /** Runs Cadastre's plugin with {@code env} and {@code stdin}, within {@link #DEADLINE}. */
    public static Result run(Map<String, String> env, String stdin)
            throws IOException, InterruptedException {
        return run(PLUGIN, env, stdin);
    }

    /** Runs {@code plugin} with {@code env} and {@code stdin}, within {@link #DEADLINE}. */
    public static Result run(Path plugin, Map<String, String> env, String stdin)
            throws IOException, InterruptedException {
        return run(plugin, env, stdin, DEADLINE, null);
    }

    /**
     * Runs Cadastre's plugin for a chaos or fabric test: {@code eth0} in {@code netns} for
     * {@code containerId}, within {@link #CHAOS_DEADLINE}.
     *
     * @param containerId null for a call without one (then no {@code CNI_IFNAME} either)
     * @param netns the namespace's path, or null
     */
    public static Result run(String command, String containerId, String netns, String stdin)
            throws IOException, InterruptedException {
        return run(
                PLUGIN,
                env(command, containerId, netns, containerId == null ? null : "eth0"),
                stdin,
                CHAOS_DEADLINE,
                null);
    }

    /**
     * Runs {@code plugin} for a benchmark: {@code eth0} in {@code netns}, within
     * {@link #BENCH_DEADLINE}.
     *
     * @param cniPath the {@code CNI_PATH} (where delegated IPAM plugins are found)
     * @param started told the plugin's PID right after it started (memory sampling), may be null
     */
    public static Result run(
            Path plugin,
            String command,
            String containerId,
            String netns,
            Path cniPath,
            String netconf,
            LongConsumer started)
            throws IOException, InterruptedException {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("CNI_COMMAND", command);
        env.put("CNI_CONTAINERID", containerId);
        env.put("CNI_NETNS", netns);
        env.put("CNI_IFNAME", "eth0");
        env.put("CNI_PATH", cniPath.toString());
        return run(plugin, env, netconf, BENCH_DEADLINE, started);
    }

    /**
     * Runs {@code plugin} with exactly {@code env} as its environment and {@code stdin} on its
     * standard input.
     *
     * @param started told the plugin's PID right after it started, may be null
     * @throws IOException when it cannot start, runs over {@code deadline} (then it is killed and
     *     waited for) or prints something on stdout that is not JSON
     */
    public static Result run(
            Path plugin,
            Map<String, String> env,
            String stdin,
            Duration deadline,
            LongConsumer started)
            throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(plugin.toString());
        builder.environment().clear();
        builder.environment().putAll(env);
        long t0 = System.nanoTime();
        Process p = builder.start();
        if (started != null) {
            started.accept(p.pid());
        }
        CompletableFuture<String> out = Streams.readAll(p.getInputStream());
        CompletableFuture<String> err = Streams.readAll(p.getErrorStream());
        try (OutputStream in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        } catch (IOException closedEarly) {
            // The plugin may exit before reading all of stdin (a refused call): its answer still
            // counts.
        }
        if (!p.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IOException(
                    plugin.getFileName()
                            + " "
                            + env.get("CNI_COMMAND")
                            + " "
                            + env.getOrDefault("CNI_CONTAINERID", "")
                            + " did not exit in "
                            + deadline.toSeconds()
                            + " s; killed");
        }
        long nanos = System.nanoTime() - t0;
        String stdout = output(out);
        JsonNode json = stdout.isBlank() ? null : JSON.readTree(stdout);
        return new Result(p.exitValue(), stdout, json, output(err), nanos);
    }

    private static String output(CompletableFuture<String> stream)
            throws IOException, InterruptedException {
        try {
            return stream.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("cannot read the plugin's output", e);
        }
    }
}
