package io.cadastre.bench.host;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * Runs a CNI plugin executable as a container runtime does: a clean environment with the
 * {@code CNI_*} variables, the network configuration on stdin, the result on stdout. The time of
 * a run is from the process start to its exit, stdin written and stdout read in between.
 */
public final class PluginExec {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * A finished run.
     *
     * @param exit the plugin's exit code
     * @param stdout what it printed (a CNI result or error object)
     * @param nanos from process start to exit, in nanoseconds
     */
    public record Run(int exit, String stdout, long nanos) {
        /** @return the stdout parsed, or an empty object when it is empty or not JSON */
        public JsonNode json() {
            try {
                return stdout.isBlank() ? JSON.createObjectNode() : JSON.readTree(stdout);
            } catch (IOException e) {
                return JSON.createObjectNode();
            }
        }

        /** @return the addresses of the result without prefix length, in order */
        public java.util.List<String> addresses() {
            java.util.List<String> out = new java.util.ArrayList<>();
            json().path("ips").forEach(ip -> out.add(ip.path("address").asText().split("/")[0]));
            return out;
        }
    }

    private PluginExec() {}

    /**
     * @param command {@code ADD} or {@code DEL}
     * @param netns the namespace's path ({@code CNI_NETNS})
     * @param cniPath the {@code CNI_PATH} (where delegated IPAM plugins are found)
     * @param started told the plugin's PID right after it started (memory sampling), may be {@code null}
     * @throws IOException when it cannot be started or runs over 60 s (then it is killed)
     */
    public static Run run(Path plugin, String command, String containerId, String netns, Path cniPath,
            String netconf, LongConsumer started) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(plugin.toString());
        Map<String, String> env = builder.environment();
        env.clear();
        env.put("CNI_COMMAND", command);
        env.put("CNI_CONTAINERID", containerId);
        env.put("CNI_NETNS", netns);
        env.put("CNI_IFNAME", "eth0");
        env.put("CNI_PATH", cniPath.toString());
        long t0 = System.nanoTime();
        Process p = builder.start();
        if (started != null) {
            started.accept(p.pid());
        }
        try (OutputStream in = p.getOutputStream()) {
            in.write(netconf.getBytes(StandardCharsets.UTF_8));
        }
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            throw new IOException(plugin.getFileName() + " " + command + " " + containerId + " ran over 60 s");
        }
        long nanos = System.nanoTime() - t0;
        return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8), nanos);
    }
}
