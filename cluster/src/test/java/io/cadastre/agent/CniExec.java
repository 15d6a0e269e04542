package io.cadastre.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Execs a CNI plugin exactly as a container runtime does: a clean environment holding only the
 * CNI variables, the network configuration on stdin, the result or error object on stdout.
 */
final class CniExec {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Path PLUGIN = Path.of(System.getProperty("cadastre.plugin", "../cni-bridge/target/cadastre"));

    /** @param stdout the plugin's stdout; {@code json} it parsed, or null when empty */
    record Result(int exit, String stdout, JsonNode json) {
        int code() {
            return json == null ? -1 : json.path("code").asInt(-1);
        }

        @Override
        public String toString() {
            return "exit " + exit + ": " + stdout;
        }
    }

    private CniExec() {}

    static Map<String, String> env(String command, String containerId, String netns, String ifname) {
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

    static Result run(Path plugin, Map<String, String> env, String stdin) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(plugin.toString());
        builder.environment().clear();
        builder.environment().putAll(env);
        Process p = builder.start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("plugin did not exit in 120 s");
        }
        String stdout = new String(out, StandardCharsets.UTF_8);
        JsonNode json = stdout.isBlank() ? null : JSON.readTree(stdout);
        return new Result(p.exitValue(), stdout, json);
    }

    static Result run(Map<String, String> env, String stdin) throws IOException, InterruptedException {
        return run(PLUGIN, env, stdin);
    }
}
