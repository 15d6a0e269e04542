package io.cadastre.deploy;

import com.datastax.oss.driver.api.core.CqlSession;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Streams;
import io.cadastre.testsupport.Topology;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Creates the agents' Cassandra role as an operator does before the first install (README,
 * "Install on Kubernetes": {@code CREATE ROLE cadastre WITH PASSWORD = '...' AND LOGIN = true}),
 * logged in as the superuser. Runs as a process of its own in a topology host's namespace, where
 * Cassandra is reachable ({@link #create}).
 */
final class CassandraRole {
    private CassandraRole() {}

    /**
     * Creates {@code role} with the password in {@code passwordFile} (hexadecimal: it is written
     * into the statement), through host 1.
     *
     * @throws IllegalStateException with the process's output when it fails
     */
    static void create(Topology topology, CassandraNode cassandra, String role, Path passwordFile)
            throws Exception {
        if (!role.matches("[a-z][a-z0-9_]*")) {
            throw new IllegalArgumentException("role " + role);
        }
        Process p =
                topology.exec(
                        topology.host(1),
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                CassandraRole.class.getName(),
                                cassandra.contactPoint(),
                                cassandra.clientEnvironment().get("CADASTRE_CASSANDRA_USERNAME"),
                                cassandra
                                        .clientEnvironment()
                                        .get("CADASTRE_CASSANDRA_PASSWORD_FILE"),
                                role,
                                passwordFile.toString()),
                        pb -> pb.redirectErrorStream(true));
        var output = Streams.readAll(p.getInputStream());
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new IllegalStateException("creating the role did not finish in 120 s");
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException(
                    "creating the role failed:\n" + output.get(10, TimeUnit.SECONDS));
        }
    }

    /** Arguments: {@code HOST:PORT SUPERUSER SUPERUSER_PASSWORD_FILE ROLE ROLE_PASSWORD_FILE}. */
    public static void main(String[] args) throws Exception {
        String[] hostPort = args[0].split(":");
        String password = read(args[4]);
        if (!password.matches("[0-9a-f]+")) {
            throw new IllegalArgumentException("the role's password must be hexadecimal");
        }
        try (CqlSession session =
                CqlSession.builder()
                        .addContactPoint(
                                new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])))
                        .withLocalDatacenter("datacenter1")
                        .withAuthCredentials(args[1], read(args[2]))
                        .build()) {
            session.execute(
                    "CREATE ROLE IF NOT EXISTS "
                            + args[3]
                            + " WITH PASSWORD = '"
                            + password
                            + "' AND LOGIN = true");
        }
    }

    private static String read(String file) throws java.io.IOException {
        return Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
    }
}
