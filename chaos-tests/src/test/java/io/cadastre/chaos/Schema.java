package io.cadastre.chaos;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Creates Cadastre's keyspaces and tables ahead, as production does: {@code cadastre-agent schema --execute}. */
public final class Schema {
    private Schema() {}

    public static void create(Topology topology, CassandraNode cassandra) throws Exception {
        Process p = topology.exec(topology.host(1), List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "io.cadastre.agent.AgentMain", "schema", "--execute"),
                pb -> {
                    pb.environment().putAll(cassandra.clientEnvironment());
                    pb.redirectErrorStream(true);
                });
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("cadastre-agent schema --execute failed:\n" + out);
        }
    }
}
