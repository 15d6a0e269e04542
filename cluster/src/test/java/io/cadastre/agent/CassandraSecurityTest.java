package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.auth.AuthProvider;
import com.datastax.oss.driver.api.core.auth.Authenticator;
import com.datastax.oss.driver.api.core.session.ProgrammaticArguments;
import com.datastax.oss.driver.api.core.ssl.SslEngineFactory;
import com.datastax.oss.driver.internal.core.context.DefaultDriverContext;
import com.datastax.oss.driver.internal.core.metadata.DefaultEndPoint;
import com.typesafe.config.Config;
import io.cadastre.testsupport.TestPki;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.stream.connectors.cassandra.DriverConfigLoaderFromConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cassandra credentials and TLS settings reach the Cassandra driver as its own auth provider and
 * SSL engine factory, built the way the journal's session builds them; inconsistent or unreadable
 * settings stop the agent at start, and no password appears in what is logged.
 */
class CassandraSecurityTest {
    @TempDir Path dir;

    private Config config(String hocon) throws Exception {
        return AgentMain.loadConfig(
                Files.writeString(
                                dir.resolve("agent-" + System.nanoTime() + ".conf"),
                                "cadastre.persistence = cassandra\n" + hocon)
                        .toFile());
    }

    /** @return the driver's context over the driver settings of {@code config}, as pekko-connectors-cassandra makes it */
    private static DefaultDriverContext driver(Config config) {
        return new DefaultDriverContext(
                DriverConfigLoaderFromConfig.fromConfig(config.getConfig("datastax-java-driver")),
                ProgrammaticArguments.builder().build());
    }

    @Test
    void byDefaultNeitherCredentialsNorTls() throws Exception {
        Config config = config("");
        assertFalse(config.hasPath("datastax-java-driver.advanced.auth-provider.class"));
        assertFalse(config.hasPath("datastax-java-driver.advanced.ssl-engine-factory.class"));
        DefaultDriverContext driver = driver(config);
        assertTrue(driver.getAuthProvider().isEmpty());
        assertTrue(driver.getSslEngineFactory().isEmpty());
    }

    @Test
    void credentialsReachTheDriversPlainTextAuthProvider() throws Exception {
        Path password = Files.writeString(dir.resolve("password"), "s3cret-Pa55\n");
        Config config =
                config(
                        """
                cadastre.cassandra.username = "cadastre"
                cadastre.cassandra.password-file = "%s"
                """
                                .formatted(password));
        AuthProvider auth = driver(config).getAuthProvider().orElseThrow();
        assertEquals(
                "com.datastax.oss.driver.internal.core.auth.PlainTextAuthProvider",
                auth.getClass().getName());
        Authenticator authenticator =
                auth.newAuthenticator(
                        new DefaultEndPoint(InetSocketAddress.createUnresolved("db", 9042)),
                        "org.apache.cassandra.auth.PasswordAuthenticator");
        ByteBuffer response =
                authenticator.initialResponse().toCompletableFuture().get(10, TimeUnit.SECONDS);
        byte[] bytes = new byte[response.remaining()];
        response.get(bytes);
        // SASL PLAIN: authorization id (empty), NUL, user, NUL, password; the file's newline
        // trimmed.
        assertEquals("\0cadastre\0s3cret-Pa55", new String(bytes, StandardCharsets.UTF_8));
        CassandraSecurity security = CassandraSecurity.from(config.getConfig("cadastre.cassandra"));
        assertFalse(
                security.summary().contains("s3cret") || security.toString().contains("s3cret"),
                security.toString());
        assertTrue(security.summary().startsWith("as cadastre, plain TCP"), security.summary());
    }

    @Test
    void tlsReachesTheDriversSslEngineFactoryWithHostnameValidation() throws Exception {
        TestPki ca = TestPki.authority("cassandra-ca");
        Path truststore =
                ca.writeTrustStore(dir.resolve("truststore.p12"), "trust-pw".toCharArray());
        Path truststorePassword =
                Files.writeString(dir.resolve("truststore-password"), "trust-pw\n");
        Path keystore =
                ca.writeKeyStore(
                        ca.member("agent", null),
                        dir.resolve("keystore.p12"),
                        "key-pw".toCharArray());
        Path keystorePassword = Files.writeString(dir.resolve("keystore-password"), "key-pw");
        Config config =
                config(
                        """
                cadastre.cassandra.tls.enabled = on
                cadastre.cassandra.tls.truststore-file = "%s"
                cadastre.cassandra.tls.truststore-password-file = "%s"
                cadastre.cassandra.tls.keystore-file = "%s"
                cadastre.cassandra.tls.keystore-password-file = "%s"
                """
                                .formatted(
                                        truststore,
                                        truststorePassword,
                                        keystore,
                                        keystorePassword));
        Config ssl = config.getConfig("datastax-java-driver.advanced.ssl-engine-factory");
        assertEquals("DefaultSslEngineFactory", ssl.getString("class"));
        assertEquals(truststore.toString(), ssl.getString("truststore-path"));
        assertEquals(keystore.toString(), ssl.getString("keystore-path"));
        assertTrue(ssl.getBoolean("hostname-validation"));
        try (SslEngineFactory factory = driver(config).getSslEngineFactory().orElseThrow()) {
            assertClientEngineValidatingTheHostname(factory);
        }
        CassandraSecurity security = CassandraSecurity.from(config.getConfig("cadastre.cassandra"));
        assertFalse(security.toString().contains("pw"), security.toString());
        assertFalse(security.tlsWithoutHostnameValidation());

        // Switched off on purpose: the driver is told so, and the start-up log warns.
        Config unchecked =
                config(
                        "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.hostname-validation = off\n");
        assertFalse(
                unchecked.getBoolean(
                        "datastax-java-driver.advanced.ssl-engine-factory.hostname-validation"));
        assertTrue(
                CassandraSecurity.from(unchecked.getConfig("cadastre.cassandra"))
                        .tlsWithoutHostnameValidation());
    }

    /**
     * The CA as PEM, as a Kubernetes Secret holds it: the driver gets this agent's engine factory,
     * which trusts exactly those certificates and validates the hostname as the driver's own does.
     */
    @Test
    void aPemCaFileReachesTheDriverAsTheTrustOfItsSslEngines() throws Exception {
        TestPki ca = TestPki.authority("cassandra-ca");
        TestPki other = TestPki.authority("other-ca");
        Path pem =
                Files.writeString(
                        dir.resolve("ca.crt"),
                        TestPki.pem("CERTIFICATE", ca.certificate().getEncoded())
                                + TestPki.pem("CERTIFICATE", other.certificate().getEncoded()));
        Config config =
                config(
                        "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.ca-file = \""
                                + pem
                                + "\"\n");
        Config ssl = config.getConfig("datastax-java-driver.advanced.ssl-engine-factory");
        assertEquals(PemSslEngineFactory.class.getName(), ssl.getString("class"));
        assertEquals(pem.toString(), ssl.getString("cadastre-ca-file"));
        assertFalse(ssl.hasPath("truststore-path"));
        KeyStore anchors = PemSslEngineFactory.trustStore(pem);
        assertEquals(2, anchors.size(), "both certificates of the file");
        assertTrue(anchors.getCertificateAlias(ca.certificate()) != null);
        try (SslEngineFactory factory = driver(config).getSslEngineFactory().orElseThrow()) {
            assertTrue(factory instanceof PemSslEngineFactory, factory.toString());
            assertClientEngineValidatingTheHostname(factory);
        }
        assertTrue(
                CassandraSecurity.from(config.getConfig("cadastre.cassandra"))
                        .summary()
                        .contains("trust " + pem + " (PEM)"));

        Path truststore =
                ca.writeTrustStore(dir.resolve("truststore.p12"), "trust-pw".toCharArray());
        assertRefused(
                "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.ca-file = \""
                        + pem
                        + "\"\ncadastre.cassandra.tls.truststore-file = \""
                        + truststore
                        + "\"",
                "cadastre.cassandra.tls.ca-file and tls.truststore-file are both set");
        Path notPem = Files.writeString(dir.resolve("not.crt"), "not a certificate\n");
        assertRefused(
                "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.ca-file = \""
                        + notPem
                        + "\"",
                "cadastre.cassandra.tls.ca-file "
                        + notPem
                        + " does not hold PEM X.509 certificates");
        assertRefused(
                "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.ca-file = \""
                        + dir.resolve("none.crt")
                        + "\"",
                "cadastre.cassandra.tls.ca-file " + dir.resolve("none.crt") + ": no such file");
        assertRefused(
                "cadastre.cassandra.tls.ca-file = \"" + pem + "\"",
                "cadastre.cassandra.tls: a CA file, trust or key store or client certificate set while");
    }

    /**
     * A client certificate as PEM, as a kubernetes.io/tls Secret holds it: the driver gets this
     * agent's engine factory, whose context presents the certificate to a server that requires
     * one (Cassandra's require_client_auth), here a JDK TLS server on loopback; without it the
     * same server refuses the handshake.
     */
    @Test
    void aPemClientCertificateIsPresentedToAServerThatRequiresOne() throws Exception {
        TestPki ca = TestPki.authority("cassandra-ca");
        TestPki.PemFiles client = ca.write(ca.member("agent-h1", null), dir.resolve("client"));
        Config config =
                config(
                        """
                cadastre.cassandra.tls.enabled = on
                cadastre.cassandra.tls.ca-file = "%s"
                cadastre.cassandra.tls.cert-file = "%s"
                cadastre.cassandra.tls.key-file = "%s"
                """
                                .formatted(client.ca(), client.cert(), client.key()));
        Config ssl = config.getConfig("datastax-java-driver.advanced.ssl-engine-factory");
        assertEquals(PemSslEngineFactory.class.getName(), ssl.getString("class"));
        assertEquals(client.cert().toString(), ssl.getString("cadastre-cert-file"));
        assertEquals(client.key().toString(), ssl.getString("cadastre-key-file"));
        assertFalse(ssl.hasPath("keystore-path"));
        DefaultDriverContext driver = driver(config);
        try (SslEngineFactory factory = driver.getSslEngineFactory().orElseThrow()) {
            assertTrue(factory instanceof PemSslEngineFactory, factory.toString());
            assertClientEngineValidatingTheHostname(factory);
        }
        assertTrue(
                CassandraSecurity.from(config.getConfig("cadastre.cassandra"))
                        .summary()
                        .endsWith("client certificate " + client.cert() + " (PEM))"));

        SSLContext withCertificate =
                new PemSslEngineFactory(driver)
                        .buildContext(driver.getConfig().getDefaultProfile());
        assertEquals("CN=agent-h1", clientSeenBy(ca, withCertificate));
        Config trustOnly =
                config(
                        "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.ca-file = \""
                                + client.ca()
                                + "\"\n");
        DefaultDriverContext anonymous = driver(trustOnly);
        SSLContext withoutCertificate =
                new PemSslEngineFactory(anonymous)
                        .buildContext(anonymous.getConfig().getDefaultProfile());
        assertThrows(IOException.class, () -> clientSeenBy(ca, withoutCertificate));
    }

    /** Keys as cert-manager and openssl write them: PKCS#8 RSA and EC, PKCS#1 RSA; and refusals. */
    @Test
    void clientKeysOfEachEncodingAreReadAndAKeyOfAnotherCertificateIsRefused() throws Exception {
        TestPki ca = TestPki.authority("cassandra-ca");
        TestPki.PemFiles rsa = ca.write(ca.member("rsa", null), dir.resolve("rsa"));
        TestPki.PemFiles ec =
                ca.write(
                        ca.issue(TestPki.Spec.member("ec", null).withKeyAlgorithm("EC")),
                        dir.resolve("ec"));
        for (TestPki.PemFiles files : List.of(rsa, ec)) {
            KeyStore store = PemSslEngineFactory.keyStore(files.cert(), files.key());
            assertTrue(store.isKeyEntry("client"), files.toString());
        }
        // PKCS#1: the RSAPrivateKey structure inside the PKCS#8 wrapping.
        byte[] pkcs8 =
                Base64.getMimeDecoder()
                        .decode(
                                Files.readString(rsa.key())
                                        .replaceAll("-----[A-Z ]+-----", "")
                                        .strip());
        byte[] pkcs1 =
                org.bouncycastle.asn1.pkcs.PrivateKeyInfo.getInstance(pkcs8)
                        .parsePrivateKey()
                        .toASN1Primitive()
                        .getEncoded();
        Path rsaPkcs1 =
                Files.writeString(dir.resolve("pkcs1.key"), TestPki.pem("RSA PRIVATE KEY", pkcs1));
        assertTrue(PemSslEngineFactory.keyStore(rsa.cert(), rsaPkcs1).isKeyEntry("client"));

        String tls = "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.";
        assertRefused(
                tls + "cert-file = \"" + rsa.cert() + "\"\n",
                "cadastre.cassandra.tls.cert-file and tls.key-file go together");
        assertRefused(
                tls
                        + "cert-file = \""
                        + rsa.cert()
                        + "\"\ncadastre.cassandra.tls.key-file = \""
                        + ec.key()
                        + "\"\n",
                "cadastre.cassandra.tls.key-file "
                        + ec.key()
                        + ": it is not the private key of the first certificate");
        Path sec1 =
                Files.writeString(
                        dir.resolve("sec1.key"), TestPki.pem("EC PRIVATE KEY", new byte[16]));
        assertRefused(
                tls
                        + "cert-file = \""
                        + ec.cert()
                        + "\"\ncadastre.cassandra.tls.key-file = \""
                        + sec1
                        + "\"\n",
                "cadastre.cassandra.tls.key-file " + sec1 + ": PEM block \"EC PRIVATE KEY\"");
        assertRefused(
                tls
                        + "cert-file = \""
                        + rsa.key()
                        + "\"\ncadastre.cassandra.tls.key-file = \""
                        + rsa.key()
                        + "\"\n",
                "cadastre.cassandra.tls.cert-file " + rsa.key() + " does not hold PEM X.509");
        assertRefused(
                tls
                        + "cert-file = \""
                        + rsa.cert()
                        + "\"\ncadastre.cassandra.tls.key-file = \""
                        + dir.resolve("none.key")
                        + "\"\n",
                "cadastre.cassandra.tls.key-file " + dir.resolve("none.key") + ": no such file");
        Path keystore =
                ca.writeKeyStore(
                        ca.member("agent", null), dir.resolve("keystore.p12"), "pw".toCharArray());
        Path keystorePassword = Files.writeString(dir.resolve("keystore-password"), "pw");
        assertRefused(
                tls
                        + "cert-file = \""
                        + rsa.cert()
                        + "\"\ncadastre.cassandra.tls.key-file = \""
                        + rsa.key()
                        + "\"\ncadastre.cassandra.tls.keystore-file = \""
                        + keystore
                        + "\"\ncadastre.cassandra.tls.keystore-password-file = \""
                        + keystorePassword
                        + "\"\n",
                "cadastre.cassandra.tls.cert-file and tls.keystore-file are both set");
        assertRefused(
                "cadastre.cassandra.tls.cert-file = \"" + rsa.cert() + "\"\n",
                "cadastre.cassandra.tls: a CA file, trust or key store or client certificate set");
    }

    /**
     * A TLS server on loopback with a certificate from {@code ca}, requiring a client certificate
     * from it: @return the subject of the client certificate {@code client} presented
     * @throws IOException when the handshake fails
     */
    private String clientSeenBy(TestPki ca, SSLContext client) throws Exception {
        Path serverStore =
                ca.writeKeyStore(
                        ca.member("cassandra", "127.0.0.1"),
                        dir.resolve("server-" + System.nanoTime() + ".p12"),
                        "pw".toCharArray());
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(serverStore)) {
            keys.load(in, "pw".toCharArray());
        }
        KeyManagerFactory kmf =
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, "pw".toCharArray());
        TrustManagerFactory tmf =
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        KeyStore anchors = KeyStore.getInstance("PKCS12");
        anchors.load(null, null);
        anchors.setCertificateEntry("ca", ca.certificate());
        tmf.init(anchors);
        SSLContext server = SSLContext.getInstance("TLS");
        server.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        try (SSLServerSocket listener =
                (SSLServerSocket)
                        server.getServerSocketFactory()
                                .createServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            listener.setNeedClientAuth(true);
            CompletableFuture<String> seen =
                    CompletableFuture.supplyAsync(
                            () -> {
                                try (SSLSocket accepted = (SSLSocket) listener.accept()) {
                                    accepted.setSoTimeout(10_000);
                                    accepted.startHandshake();
                                    String subject =
                                            ((java.security.cert.X509Certificate)
                                                            accepted.getSession()
                                                                    .getPeerCertificates()[0])
                                                    .getSubjectX500Principal()
                                                    .getName();
                                    accepted.getOutputStream().write(1);
                                    return subject;
                                } catch (IOException e) {
                                    return "refused: " + e;
                                }
                            });
            try (SSLSocket socket =
                    (SSLSocket)
                            client.getSocketFactory()
                                    .createSocket(
                                            InetAddress.getLoopbackAddress(),
                                            listener.getLocalPort())) {
                socket.setSoTimeout(10_000);
                socket.startHandshake();
                // TLS 1.3 reports the server's refusal of the client's certificate on first read.
                if (socket.getInputStream().read() != 1) {
                    throw new IOException("the server closed the connection");
                }
            }
            return seen.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void inconsistentOrUnreadableSettingsAreRefusedNamingTheSetting() throws Exception {
        TestPki ca = TestPki.authority("cassandra-ca");
        Path truststore =
                ca.writeTrustStore(dir.resolve("truststore.p12"), "trust-pw".toCharArray());
        Path wrongPassword = Files.writeString(dir.resolve("wrong"), "not-it");
        Path empty = Files.writeString(dir.resolve("empty"), "\n");
        assertRefused(
                "cadastre.cassandra.username = \"cadastre\"",
                "cadastre.cassandra.username and cadastre.cassandra.password-file go together");
        assertRefused(
                "cadastre.cassandra.username = \"cadastre\"\ncadastre.cassandra.password-file = \""
                        + dir.resolve("none")
                        + "\"",
                "cadastre.cassandra.password-file " + dir.resolve("none") + ": no such file");
        assertRefused(
                "cadastre.cassandra.username = \"cadastre\"\ncadastre.cassandra.password-file = \""
                        + empty
                        + "\"",
                "cadastre.cassandra.password-file " + empty + " is empty");
        assertRefused(
                "cadastre.cassandra.tls.truststore-file = \"" + truststore + "\"",
                "cadastre.cassandra.tls: a CA file, trust or key store or client certificate set while cadastre.cassandra.tls.enabled is off");
        assertRefused(
                "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.truststore-file = \""
                        + truststore
                        + "\"\ncadastre.cassandra.tls.truststore-password-file = \""
                        + wrongPassword
                        + "\"",
                "cadastre.cassandra.tls.truststore-file " + truststore + " does not open");
        assertRefused(
                "cadastre.cassandra.tls.enabled = on\ncadastre.cassandra.tls.keystore-file = \""
                        + truststore
                        + "\"",
                "cadastre.cassandra.tls.keystore-file and tls.keystore-password-file go together");
    }

    /** The factory's engine for a Cassandra node is a client's that checks the node's name. */
    private static void assertClientEngineValidatingTheHostname(SslEngineFactory factory) {
        SSLEngine engine =
                factory.newSslEngine(
                        new DefaultEndPoint(
                                InetSocketAddress.createUnresolved("cassandra-0.db", 9042)));
        assertTrue(engine.getUseClientMode());
        assertEquals(
                "HTTPS",
                engine.getSSLParameters().getEndpointIdentificationAlgorithm(),
                "hostname validation");
        assertEquals("cassandra-0.db", engine.getPeerHost());
    }

    private void assertRefused(String hocon, String expected) throws Exception {
        Path conf =
                Files.writeString(
                        dir.resolve("refused-" + System.nanoTime() + ".conf"),
                        "cadastre.persistence = cassandra\n" + hocon);
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class, () -> AgentMain.loadConfig(conf.toFile()));
        assertTrue(
                e.getMessage().startsWith(expected),
                "expected «" + expected + "», got «" + e.getMessage() + "»");
        assertFalse(e.getMessage().contains("not-it"), e.getMessage());
    }
}
