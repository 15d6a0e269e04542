package io.cadastre.testsupport;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/** Creates Cadastre's keyspaces and tables ahead, as production does: {@code cadastre-agent schema --execute}. */
public final class Schema {
    private Schema() {}

    /** Exit code and output (stdout and stderr) of one {@code cadastre-agent schema} run. */
    public record Result(int exit, String output) {}

    public static void create(Topology topology, CassandraNode cassandra) throws Exception {
        Result result = execute(topology, cassandra.clientEnvironment(), 120);
        if (result.exit() != 0) {
            throw new IllegalStateException(
                    "cadastre-agent schema --execute failed:\n" + result.output());
        }
    }

    /**
     * Runs {@code cadastre-agent schema --execute --timeout-seconds T} in host 1's namespace with
     * {@code environment} (how it reaches Cassandra) and waits for it to exit.
     *
     * @param timeoutSeconds the command's own timeout per statement; the process gets twice as long
     */
    public static Result execute(
            Topology topology, Map<String, String> environment, int timeoutSeconds)
            throws Exception {
        List<String> command =
                AgentExec.command(
                        "schema",
                        "--execute",
                        "--timeout-seconds",
                        Integer.toString(timeoutSeconds));
        Process p =
                topology.exec(
                        topology.host(1),
                        command,
                        pb -> {
                            pb.environment().putAll(environment);
                            pb.redirectErrorStream(true);
                        });
        CompletableFuture<String> output = Streams.readAll(p.getInputStream());
        if (!p.waitFor(2L * timeoutSeconds + 60, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("cadastre-agent schema did not exit");
        }
        String out;
        try {
            out = output.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            out = "(output unreadable: " + e.getCause() + ")";
        }
        return new Result(p.exitValue(), out);
    }
}
