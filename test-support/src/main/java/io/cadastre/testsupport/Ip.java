package io.cadastre.testsupport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs iproute2's {@code ip} for tests and the benchmarks: making namespaces and looking from the
 * outside at what the plugin and the agent did. Test code only: product code never starts a
 * process (it speaks netlink).
 */
public final class Ip {
    /** How long one {@code ip} run may take before it is killed, in seconds. */
    static final long DEADLINE_SECONDS = 30;

    private Ip() {}

    /**
     * Runs {@code ip args...} and waits for it, 30 s at most.
     *
     * @return its standard output (standard error merged in)
     * @throws IOException when it cannot start, exits non-zero (with its output in the message) or
     *     runs over 30 s (then it is killed)
     */
    public static String run(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IOException(String.join(" ", command) + " did not finish in " + DEADLINE_SECONDS + " s");
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out.strip());
        }
        return out;
    }
}
