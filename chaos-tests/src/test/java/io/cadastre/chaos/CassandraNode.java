package io.cadastre.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Cassandra in the topology's db namespace, run by {@code scripts/cassandra.sh} (the same
 * script a person uses). Started, stopped, killed and restarted by its PID file only.
 */
public final class CassandraNode implements AutoCloseable {
    private final Topology topology;
    private final Path dir;

    private CassandraNode(Topology topology, Path dir) {
        this.topology = topology;
        this.dir = dir;
    }

    public static Path script() {
        return Topology.script().getParent().resolve("cassandra.sh");
    }

    /** Starts Cassandra listening on the db address and waits until CQL accepts connections. */
    public static CassandraNode start(Topology topology, Path dir) throws IOException, InterruptedException {
        CassandraNode node = new CassandraNode(topology, dir);
        node.run("start", dir.toString(), topology.db().address());
        return node;
    }

    public String contactPoint() {
        return topology.db().address() + ":9042";
    }

    public void restart() throws IOException, InterruptedException {
        run("stop", dir.toString());
        run("start", dir.toString(), topology.db().address());
    }

    public void kill() throws IOException, InterruptedException {
        run("kill", dir.toString());
    }

    private void run(String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of(script().toString()));
        command.addAll(List.of(args));
        Process p = topology.exec(topology.db(), command, pb -> pb.redirectErrorStream(true));
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(180, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("cassandra.sh " + String.join(" ", args) + " failed:\n" + out);
        }
    }

    @Override
    public void close() throws IOException, InterruptedException {
        run("stop", dir.toString());
    }
}
