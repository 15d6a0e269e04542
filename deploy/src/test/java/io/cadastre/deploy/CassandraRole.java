package io.cadastre.deploy;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Streams;
import io.cadastre.testsupport.Topology;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Creates the agents' Cassandra role as an operator does before the first install (README,
 * "Install on Kubernetes": {@code CREATE ROLE cadastre WITH PASSWORD = '...' AND LOGIN = true}),
 * logged in as the superuser, over TLS when Cassandra requires it. Runs as a process of its own in
 * a topology host's namespace, where Cassandra is reachable ({@link #create}).
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
        Map<String, String> client = cassandra.clientEnvironment();
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                CassandraRole.class.getName(),
                                cassandra.contactPoint(),
                                client.get("CADASTRE_CASSANDRA_USERNAME"),
                                client.get("CADASTRE_CASSANDRA_PASSWORD_FILE"),
                                role,
                                passwordFile.toString()));
        if (client.containsKey("CADASTRE_CASSANDRA_TLS_TRUSTSTORE_FILE")) {
            command.add(client.get("CADASTRE_CASSANDRA_TLS_TRUSTSTORE_FILE"));
            command.add(client.get("CADASTRE_CASSANDRA_TLS_TRUSTSTORE_PASSWORD_FILE"));
            if (client.containsKey("CADASTRE_CASSANDRA_TLS_CERT_FILE")) {
                command.add(client.get("CADASTRE_CASSANDRA_TLS_CERT_FILE"));
                command.add(client.get("CADASTRE_CASSANDRA_TLS_KEY_FILE"));
            }
        }
        Process p = topology.exec(topology.host(1), command, pb -> pb.redirectErrorStream(true));
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

    /**
     * Arguments: {@code HOST:PORT SUPERUSER SUPERUSER_PASSWORD_FILE ROLE ROLE_PASSWORD_FILE
     * [TRUSTSTORE TRUSTSTORE_PASSWORD_FILE [CERT KEY]]} (a PKCS#12 trust store: TLS; a client
     * certificate and its PKCS#8 key in PEM, when Cassandra requires one).
     */
    public static void main(String[] args) throws Exception {
        String[] hostPort = args[0].split(":");
        String password = read(args[4]);
        if (!password.matches("[0-9a-f]+")) {
            throw new IllegalArgumentException("the role's password must be hexadecimal");
        }
        CqlSessionBuilder builder =
                CqlSession.builder()
                        .addContactPoint(
                                new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])))
                        .withLocalDatacenter("datacenter1")
                        .withAuthCredentials(args[1], read(args[2]));
        if (args.length > 5) {
            char[] storePassword = read(args[6]).toCharArray();
            KeyStore store = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(Path.of(args[5]))) {
                store.load(in, storePassword);
            }
            TrustManagerFactory trust =
                    TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(store);
            KeyManager[] keys =
                    args.length > 7 ? clientKeys(Path.of(args[7]), Path.of(args[8])) : null;
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(keys, trust.getTrustManagers(), null);
            builder = builder.withSslContext(tls);
        }
        try (CqlSession session = builder.build()) {
            session.execute(
                    "CREATE ROLE IF NOT EXISTS "
                            + args[3]
                            + " WITH PASSWORD = '"
                            + password
                            + "' AND LOGIN = true");
        }
    }

    /** The client certificate (PEM) and its RSA key (PKCS#8 PEM, as TestPki writes it). */
    private static KeyManager[] clientKeys(Path certFile, Path keyFile) throws Exception {
        byte[] der =
                Base64.getMimeDecoder()
                        .decode(Files.readString(keyFile).replaceAll("-----[A-Z ]+-----", ""));
        Certificate[] chain;
        try (InputStream in = Files.newInputStream(certFile)) {
            chain =
                    CertificateFactory.getInstance("X.509")
                            .generateCertificates(in)
                            .toArray(Certificate[]::new);
        }
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry(
                "client",
                KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der)),
                new char[0],
                chain);
        KeyManagerFactory factory =
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        factory.init(store, new char[0]);
        return factory.getKeyManagers();
    }

    private static String read(String file) throws java.io.IOException {
        return Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
    }
}
