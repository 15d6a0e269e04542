package io.cadastre.testsupport;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real Cassandra in the topology's db namespace, run by {@code scripts/cassandra.sh} (the same
 * script a person uses). Started, stopped, killed and restarted by its PID file only. Open (no
 * login, plain TCP) by default; {@link #startSecured} makes it require a login and TLS, as a
 * production Cassandra should, and gives its clients the settings to reach it
 * ({@link #clientEnvironment()}).
 */
public final class CassandraNode implements AutoCloseable {
    /** Cassandra's default superuser and its password, created by PasswordAuthenticator on a fresh node. */
    static final String SUPERUSER = "cassandra";

    private static final String SUPERUSER_PASSWORD = "cassandra";

    private final Topology topology;
    private final Path dir;
    private final Map<String, String> serverEnvironment;
    private final Map<String, String> clientEnvironment;
    private TestPki.PemFiles clientCertificate;

    private CassandraNode(
            Topology topology,
            Path dir,
            Map<String, String> serverEnvironment,
            Map<String, String> clientEnvironment) {
        this.topology = topology;
        this.dir = dir;
        this.serverEnvironment = Map.copyOf(serverEnvironment);
        this.clientEnvironment = Map.copyOf(clientEnvironment);
    }

    public static Path script() {
        return Topology.script().getParent().resolve("cassandra.sh");
    }

    /** Starts Cassandra listening on the db address and waits until CQL accepts connections. */
    public static CassandraNode start(Topology topology, Path dir)
            throws IOException, InterruptedException {
        CassandraNode node =
                new CassandraNode(
                        topology,
                        dir,
                        Map.of(),
                        Map.of("CADASTRE_CASSANDRA_CONTACT_POINTS", contactPoint(topology)));
        node.run("start", dir.toString(), topology.db().address());
        return node;
    }

    /**
     * Starts Cassandra requiring a login ({@code PasswordAuthenticator}; its default superuser)
     * and TLS from CQL clients, with a server certificate from {@code ca} that names the db
     * address (an IP subject alternative name, for the driver's hostname validation), and waits
     * until CQL accepts connections. The clients' password file and trust store (PKCS12 with
     * {@code ca}) are written under {@code dir/client}, mode 0600.
     */
    public static CassandraNode startSecured(Topology topology, Path dir, TestPki ca)
            throws IOException, InterruptedException {
        return startSecured(topology, dir, ca, false);
    }

    /**
     * As {@link #startSecured(Topology, Path, TestPki)}; with {@code clientCertificates}, CQL
     * clients must also present a certificate from {@code ca} ({@code require_client_auth}), and
     * the clients' environment names one as PEM ({@code client/tls.crt}, {@code client/tls.key},
     * CN {@code cassandra-client}; {@link #clientCertificate()}).
     */
    public static CassandraNode startSecured(
            Topology topology, Path dir, TestPki ca, boolean clientCertificates)
            throws IOException, InterruptedException {
        Path client = dir.resolve("client");
        String storePassword = randomPassword();
        Path keystore =
                ca.writeKeyStore(
                        ca.issue(
                                TestPki.Spec.member("cassandra", topology.db().address())
                                        .withDnsNames(List.of())),
                        dir.resolve("server-keystore.p12"),
                        storePassword.toCharArray());
        String trustPassword = randomPassword();
        Path truststore =
                ca.writeTrustStore(client.resolve("truststore.p12"), trustPassword.toCharArray());
        Path trustPasswordFile = client.resolve("truststore-password");
        TestPki.writePrivate(trustPasswordFile, trustPassword + "\n");
        Path passwordFile = client.resolve("password");
        TestPki.writePrivate(passwordFile, SUPERUSER_PASSWORD + "\n");
        Map<String, String> server = new HashMap<>();
        server.put("CASSANDRA_AUTHENTICATOR", "PasswordAuthenticator");
        server.put("CASSANDRA_CLIENT_KEYSTORE", keystore.toString());
        server.put("CASSANDRA_CLIENT_KEYSTORE_PASSWORD", storePassword);
        Map<String, String> clients = new HashMap<>();
        clients.put("CADASTRE_CASSANDRA_CONTACT_POINTS", contactPoint(topology));
        clients.put("CADASTRE_CASSANDRA_USERNAME", SUPERUSER);
        clients.put("CADASTRE_CASSANDRA_PASSWORD_FILE", passwordFile.toString());
        clients.put("CADASTRE_CASSANDRA_TLS_ENABLED", "on");
        clients.put("CADASTRE_CASSANDRA_TLS_TRUSTSTORE_FILE", truststore.toString());
        clients.put(
                "CADASTRE_CASSANDRA_TLS_TRUSTSTORE_PASSWORD_FILE", trustPasswordFile.toString());
        TestPki.PemFiles certificate = null;
        if (clientCertificates) {
            server.put(
                    "CASSANDRA_CLIENT_TRUSTSTORE",
                    ca.writeTrustStore(
                                    dir.resolve("server-truststore.p12"),
                                    storePassword.toCharArray())
                            .toString());
            server.put("CASSANDRA_CLIENT_TRUSTSTORE_PASSWORD", storePassword);
            certificate = ca.write(ca.member("cassandra-client", null), client);
            clients.put("CADASTRE_CASSANDRA_TLS_CERT_FILE", certificate.cert().toString());
            clients.put("CADASTRE_CASSANDRA_TLS_KEY_FILE", certificate.key().toString());
        }
        CassandraNode node = new CassandraNode(topology, dir, server, clients);
        node.clientCertificate = certificate;
        node.run("start", dir.toString(), topology.db().address());
        return node;
    }

    public String contactPoint() {
        return contactPoint(topology);
    }

    /** @return the clients' certificate when Cassandra requires one, else null */
    public TestPki.PemFiles clientCertificate() {
        return clientCertificate;
    }

    private static String contactPoint(Topology topology) {
        return topology.db().address() + ":9042";
    }

    /**
     * @return the environment with which an agent (or {@code cadastre-agent schema}) reaches this
     *     Cassandra: its contact point and, when secured, the credentials and TLS settings (files,
     *     no password in the environment)
     */
    public Map<String, String> clientEnvironment() {
        return clientEnvironment;
    }

    public void restart() throws IOException, InterruptedException {
        run("stop", dir.toString());
        run("start", dir.toString(), topology.db().address());
    }

    public void kill() throws IOException, InterruptedException {
        run("kill", dir.toString());
    }

    private void run(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(script().toString()));
        command.addAll(List.of(args));
        Process p =
                topology.exec(
                        topology.db(),
                        command,
                        pb -> {
                            pb.environment().putAll(serverEnvironment);
                            pb.redirectErrorStream(true);
                        });
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(180, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("cassandra.sh " + String.join(" ", args) + " failed:\n" + out);
        }
    }

    private static String randomPassword() {
        byte[] bytes = new byte[12];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    @Override
    public void close() throws IOException, InterruptedException {
        run("stop", dir.toString());
    }
}
