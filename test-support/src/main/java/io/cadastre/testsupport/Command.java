package io.cadastre.testsupport;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a short command of the tests (iproute2, {@code bridge}, {@code ip netns exec ... ping}) to
 * its end, with a deadline. Its stdin is closed at once; stdout and stderr are read on threads of
 * their own, so a command that hangs with its pipes open is still killed at the deadline. Test
 * code only: product code never starts a process.
 */
public final class Command {
    /** How long a command may take before it is killed. */
    public static final Duration DEADLINE = Duration.ofSeconds(30);

    /**
     * A finished command.
     *
     * @param exit its exit code
     * @param out its standard output
     * @param err its standard error
     */
    public record Result(int exit, String out, String err) {}

    private Command() {}

    /**
     * Runs {@code command} and waits for it, {@link #DEADLINE} at most.
     *
     * @throws IOException when it cannot start, or runs over the deadline (then it is killed and
     *     waited for)
     */
    public static Result run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).start();
        p.getOutputStream().close();
        CompletableFuture<String> out = Streams.readAll(p.getInputStream());
        CompletableFuture<String> err = Streams.readAll(p.getErrorStream());
        if (!p.waitFor(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IOException(
                    String.join(" ", command)
                            + " did not finish in "
                            + DEADLINE.toSeconds()
                            + " s; killed");
        }
        try {
            return new Result(
                    p.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("cannot read the output of " + String.join(" ", command), e);
        }
    }
}
