package io.cadastre.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Execs the real plugin as a runtime does (clean environment, netconf on stdin). */
public final class Cni {
    public static final ObjectMapper JSON = new ObjectMapper();
    public static final Path PLUGIN = Path.of(System.getProperty("cadastre.plugin", "../cni-bridge/target/cadastre"));

    public record Result(int exit, String stdout, JsonNode json) {
        public int code() {
            return json == null ? -1 : json.path("code").asInt(-1);
        }

        /** @return the first address of the result without prefix, or null */
        public String firstAddress() {
            JsonNode ips = json == null ? null : json.path("ips");
            return ips == null || ips.isEmpty() ? null : ips.get(0).path("address").asText().split("/")[0];
        }

        @Override
        public String toString() {
            return "exit " + exit + ": " + stdout;
        }
    }

    private Cni() {}

    /** An IPAM-only network on the member's socket (no interface: fast, for volume). */
    public static String ipamOnly(Member member) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"chaos\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\"" + member.socket() + "\"}}";
    }

    /** The full plugin on the member's socket. */
    public static String full(Member member) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"chaos\",\"type\":\"cadastre\",\"agentSocket\":\"" + member.socket() + "\"}";
    }

    public static Result run(String command, String containerId, String netns, String stdin) throws IOException, InterruptedException {
        Map<String, String> env = new HashMap<>();
        env.put("CNI_COMMAND", command);
        if (containerId != null) {
            env.put("CNI_CONTAINERID", containerId);
            env.put("CNI_IFNAME", "eth0");
        }
        if (netns != null) {
            env.put("CNI_NETNS", netns);
        }
        ProcessBuilder builder = new ProcessBuilder(PLUGIN.toString());
        builder.environment().clear();
        builder.environment().putAll(env);
        Process p = builder.start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(330, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("plugin did not exit");
        }
        String stdout = new String(out, StandardCharsets.UTF_8);
        return new Result(p.exitValue(), stdout, stdout.isBlank() ? null : JSON.readTree(stdout));
    }
}
