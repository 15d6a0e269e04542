package io.cadastre.testsupport;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs iproute2's {@code ip} for tests and the benchmarks: making namespaces and looking from the
 * outside at what the plugin and the agent did. Test code only: product code never starts a
 * process (it speaks netlink).
 */
public final class Ip {
    private Ip() {}

    /**
     * Runs {@code ip args...} and waits for it, {@link Command#DEADLINE} at most.
     *
     * @return its standard output
     * @throws IOException when it cannot start, exits non-zero (with its stderr and stdout in the
     *     message) or runs over the deadline (then it is killed)
     */
    public static String run(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        Command.Result r = Command.run(command);
        if (r.exit() != 0) {
            throw new IOException(
                    String.join(" ", command) + " failed: " + (r.err() + r.out()).strip());
        }
        return r.out();
    }
}
