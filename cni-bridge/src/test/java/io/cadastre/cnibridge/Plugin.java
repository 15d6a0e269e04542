package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Runs the plugin executable the way a container runtime does: a clean environment holding only
 * the CNI variables (plus the sanitizer options), the netconf on a stdin pipe, stdout and stderr
 * captured. Every run is bounded by a deadline and its process is killed if it outlives it.
 */
final class Plugin {

    /** The sanitizer build (target/cadastre-asan), which all behaviour tests run. */
    static final Path ASAN =
            Path.of(System.getProperty("cadastre.plugin.asan", "target/cadastre-asan"));

    /** The release build (target/cadastre). */
    static final Path RELEASE =
            Path.of(System.getProperty("cadastre.plugin.release", "target/cadastre"));

    /** The static build on musl (target/static/cadastre), which the image installs on hosts. */
    static final Path STATIC =
            Path.of(System.getProperty("cadastre.plugin.static", "target/static/cadastre"));

    /**
     * @param build {@code asan}, {@code release} or {@code static}
     * @return that build's executable
     */
    static Path build(String build) {
        return switch (build) {
            case "asan" -> ASAN;
            case "release" -> RELEASE;
            case "static" -> STATIC;
            default -> throw new IllegalArgumentException("no build named " + build);
        };
    }

    static final ObjectMapper JSON = new ObjectMapper();

    private static final long DEADLINE_SECONDS = 30;

    /** Three pipes per run, so a cached pool: a fixed pool smaller than that could deadlock. */
    private static final ExecutorService IO =
            Executors.newCachedThreadPool(
                    r -> {
                        Thread t = new Thread(r, "plugin-io");
                        t.setDaemon(true);
                        return t;
                    });

    private Plugin() {}

    /** What the runtime sees: the exit status and both output streams. */
    record Result(int exit, byte[] stdout, String stderr) {
        String out() {
            return new String(stdout, StandardCharsets.UTF_8);
        }

        /** stdout parsed as JSON; fails if it is not one well-formed (UTF-8) JSON value. */
        JsonNode json() {
            try {
                return JSON.readTree(stdout);
            } catch (IOException e) {
                throw new AssertionError("stdout is not JSON: " + out(), e);
            }
        }
    }

    /** The usual CNI variables for {@code command}; tests add, change or remove entries. */
    static Map<String, String> cniEnv(String command) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("CNI_COMMAND", command);
        env.put("CNI_CONTAINERID", "0123456789abcdef");
        env.put("CNI_NETNS", "/var/run/netns/cni-test");
        env.put("CNI_IFNAME", "eth0");
        env.put("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0");
        env.put("CNI_PATH", "/opt/cni/bin");
        return env;
    }

    /** {@link #cniEnv(String)} with {@code CADASTRE_AGENT_SOCKET} naming {@code agentSocket}. */
    static Map<String, String> cniEnv(String command, Path agentSocket) {
        Map<String, String> env = cniEnv(command);
        env.put("CADASTRE_AGENT_SOCKET", agentSocket.toString());
        return env;
    }

    static Result run(Map<String, String> env, String stdin) throws Exception {
        return run(ASAN, env, stdin.getBytes(StandardCharsets.UTF_8));
    }

    static Result run(Map<String, String> env, byte[] stdin) throws Exception {
        return run(ASAN, env, stdin);
    }

    /**
     * Runs {@code binary} and waits for it. Also asserts that stderr is empty: the plugin writes
     * nothing there itself, so anything on it is a sanitizer report (or a stray log line).
     */
    static Result run(Path binary, Map<String, String> env, byte[] stdin) throws Exception {
        assertTrue(Files.isExecutable(binary), binary + " was not built");
        ProcessBuilder pb = new ProcessBuilder(binary.toString());
        pb.environment().clear();
        pb.environment().putAll(env);
        pb.environment().put("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0");
        pb.environment().put("UBSAN_OPTIONS", "print_stacktrace=1");
        Process p = pb.start();
        try {
            Future<?> in = IO.submit(() -> feed(p.getOutputStream(), stdin));
            Future<byte[]> out = IO.submit(() -> p.getInputStream().readAllBytes());
            Future<byte[]> err = IO.submit(() -> p.getErrorStream().readAllBytes());
            if (!p.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
                fail(binary + " did not exit within " + DEADLINE_SECONDS + " s");
            }
            in.get(DEADLINE_SECONDS, TimeUnit.SECONDS);
            Result r =
                    new Result(
                            p.exitValue(),
                            out.get(DEADLINE_SECONDS, TimeUnit.SECONDS),
                            new String(
                                    err.get(DEADLINE_SECONDS, TimeUnit.SECONDS),
                                    StandardCharsets.UTF_8));
            assertEquals("", r.stderr(), "stderr (sanitizer report?)");
            return r;
        } finally {
            p.destroyForcibly();
            p.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS);
        }
    }

    /** Writes stdin and closes it; a plugin that stops reading early (stdin over 1 MiB) is fine. */
    private static void feed(OutputStream stdin, byte[] bytes) {
        try (stdin) {
            stdin.write(bytes);
        } catch (IOException broken_pipe) {
            // the plugin closed its end: it is judged by its output, not by how much it read
        }
    }

    /** Asserts a CNI error object with exactly the spec's four keys, and exit status 1. */
    static JsonNode assertError(Result r, int code, String cniVersion) {
        assertEquals(1, r.exit(), "exit status; stdout: " + r.out());
        JsonNode e = r.json();
        assertEquals(List.of("cniVersion", "code", "msg", "details"), fieldNames(e), r.out());
        assertEquals(cniVersion, e.get("cniVersion").textValue(), r.out());
        assertEquals(code, e.get("code").intValue(), r.out());
        assertTrue(e.get("msg").isTextual() && !e.get("msg").textValue().isEmpty(), r.out());
        assertTrue(e.get("details").isTextual(), r.out());
        return e;
    }

    static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
