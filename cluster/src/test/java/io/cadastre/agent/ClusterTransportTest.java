package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.typesafe.config.Config;
import io.cadastre.testsupport.TestPki;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import javax.net.ssl.SSLEngine;
import org.apache.pekko.event.NoMarkerLogging$;
import org.apache.pekko.remote.artery.tcp.ssl.RotatingKeysSSLEngineProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/**
 * The cluster port's security, decided before the actor system starts: plaintext only on loopback
 * or by the explicitly named insecure switch, otherwise mutual TLS with PEM files checked the way
 * Pekko reads them; every refusal names the settings and makes the agent exit 2.
 */
class ClusterTransportTest {
    private static TestPki ca;
    private static TestPki otherCa;

    @TempDir Path dir;

    @BeforeAll
    static void authorities() {
        ca = TestPki.authority("cluster-ca");
        otherCa = TestPki.authority("cluster-ca"); // the same name, another key: a stranger's CA
    }

    private Config config(String hocon) throws Exception {
        return AgentMain.loadConfig(
                Files.writeString(dir.resolve("agent-" + System.nanoTime() + ".conf"), hocon)
                        .toFile());
    }

    private static String tls(TestPki.PemFiles files) {
        return """
                cadastre.cluster.tls.cert-file = "%s"
                cadastre.cluster.tls.key-file = "%s"
                cadastre.cluster.tls.ca-file = "%s"
                """
                .formatted(files.cert(), files.key(), files.ca());
    }

    private static ClusterTransport transport(Config config) {
        return ClusterTransport.from(config, Instant.now());
    }

    @Test
    void theDefaultLoopbackPortIsPlainTcp() throws Exception {
        ClusterTransport transport = transport(config(""));
        assertEquals(ClusterTransport.Mode.LOOPBACK_PLAINTEXT, transport.mode());
        assertEquals(
                "tcp", transport.applyTo(config("")).getString("pekko.remote.artery.transport"));
    }

    @Test
    void aPortBeyondLoopbackWithoutTlsIsRefusedNamingTheSettings() throws Exception {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> transport(config("cadastre.cluster.hostname = \"198.19.0.7\"")));
        for (String named :
                List.of(
                        "cadastre.cluster.hostname \"198.19.0.7\"",
                        "cadastre.cluster.tls.cert-file",
                        "CADASTRE_CLUSTER_TLS_CERT_FILE",
                        "CADASTRE_CLUSTER_TLS_KEY_FILE",
                        "CADASTRE_CLUSTER_TLS_CA_FILE",
                        "cadastre.cluster.insecure-plaintext",
                        "CADASTRE_CLUSTER_INSECURE_PLAINTEXT")) {
            assertTrue(e.getMessage().contains(named), named + " in: " + e.getMessage());
        }
        // Bound to every address but advertised on loopback: still reachable from elsewhere.
        IllegalArgumentException bound =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> transport(config("pekko.remote.artery.bind.hostname = \"0.0.0.0\"")));
        assertTrue(
                bound.getMessage().startsWith("pekko.remote.artery.bind.hostname \"0.0.0.0\""),
                bound.getMessage());
    }

    @Test
    void theAgentExitsWith2AndSaysWhyBeforeAnyActorSystemStarts() throws Exception {
        Path conf =
                Files.writeString(
                        dir.resolve("exposed.conf"),
                        """
                cadastre.node-name = "node-a"
                cadastre.cluster.hostname = "198.19.0.7"
                """);
        String stderr = stderrOf(conf);
        assertTrue(
                stderr.contains("cadastre-agent: configuration error: cadastre.cluster.hostname"),
                stderr);

        TestPki.PemFiles mismatched = ca.write(ca.member("node-a", null), dir.resolve("a"));
        Files.copy(
                ca.write(ca.member("node-b", null), dir.resolve("b")).key(),
                mismatched.key(),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Path wrongKey =
                Files.writeString(
                        dir.resolve("wrong-key.conf"),
                        "cadastre.node-name = \"node-a\"\n" + tls(mismatched));
        String refused = stderrOf(wrongKey);
        assertTrue(
                refused.contains(
                        "cadastre.cluster.tls.key-file "
                                + mismatched.key()
                                + " is not the private key of the certificate"),
                refused);
    }

    /** @return what {@code cadastre-agent --config conf} wrote to stderr; asserts exit code 2 */
    private static String stderrOf(Path conf) {
        AgentMain main = new AgentMain();
        main.configFile = conf.toFile();
        PrintStream saved = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            assertEquals(2, assertTimeoutPreemptively(Duration.ofSeconds(30), main::call));
        } finally {
            System.setErr(saved);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void theInsecureSwitchAllowsPlainTcpAndIsLoggedAsAWarning() throws Exception {
        Config config =
                config(
                        """
                cadastre.cluster.hostname = "198.19.0.7"
                cadastre.cluster.insecure-plaintext = on
                """);
        ClusterTransport transport = transport(config);
        assertEquals(ClusterTransport.Mode.INSECURE_PLAINTEXT, transport.mode());
        assertEquals("tcp", transport.applyTo(config).getString("pekko.remote.artery.transport"));
        List<ILoggingEvent> events = logged(transport);
        assertEquals(1, events.size());
        assertEquals(Level.WARN, events.get(0).getLevel());
        assertTrue(
                events.get(0)
                        .getFormattedMessage()
                        .contains(
                                "198.19.0.7:2552: plain TCP WITHOUT AUTHENTICATION"
                                        + " (cadastre.cluster.insecure-plaintext = on)"),
                events.get(0).getFormattedMessage());
    }

    private static List<ILoggingEvent> logged(ClusterTransport transport) {
        ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger)
                        LoggerFactory.getLogger("transport-test-" + System.nanoTime());
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        logger.setLevel(Level.INFO);
        transport.log(logger);
        return appender.list;
    }

    @Test
    void tlsFilesSelectPekkosRotatingKeysProviderWhichReadsThem() throws Exception {
        TestPki.PemFiles files = ca.write(ca.member("node-a", "198.19.0.7"), dir.resolve("tls"));
        Config config =
                config(
                        "cadastre.cluster.hostname = \"198.19.0.7\"\ncadastre.cluster.tls.reload-interval = 90s\n"
                                + tls(files));
        ClusterTransport transport = transport(config);
        assertEquals(ClusterTransport.Mode.TLS, transport.mode());
        assertEquals(
                Set.of("node-a", TestPki.CLUSTER_NAME),
                transport.tls().orElseThrow().subjectNames());
        Config applied = transport.applyTo(config);
        assertEquals("tls-tcp", applied.getString("pekko.remote.artery.transport"));
        assertEquals(
                ClusterTransport.PROVIDER,
                applied.getString("pekko.remote.artery.ssl.ssl-engine-provider"));
        Config engine = applied.getConfig("pekko.remote.artery.ssl.rotating-keys-engine");
        assertEquals(files.cert().toString(), engine.getString("cert-file"));
        assertEquals(files.key().toString(), engine.getString("key-file"));
        assertEquals(files.ca().toString(), engine.getString("ca-cert-file"));
        assertEquals(Duration.ofSeconds(90), engine.getDuration("ssl-context-cache-ttl"));
        // Pekko's own provider reads the files we checked, and asks the peer for its certificate.
        RotatingKeysSSLEngineProvider provider =
                new RotatingKeysSSLEngineProvider(engine, NoMarkerLogging$.MODULE$);
        SSLEngine server = provider.createServerSSLEngine("198.19.0.7", 2552);
        assertTrue(server.getNeedClientAuth(), "mutual authentication");
        assertEquals(List.of("TLSv1.3"), List.of(server.getEnabledProtocols()));

        List<ILoggingEvent> events = logged(transport);
        assertEquals(Level.INFO, events.get(0).getLevel());
        String line = events.get(0).getFormattedMessage();
        assertTrue(line.contains("mutual TLS") && line.contains(files.cert().toString()), line);
        assertFalse(line.contains("PRIVATE"), line);
    }

    @Test
    void tlsFilesWorkOnLoopbackToo() throws Exception {
        TestPki.PemFiles files = ca.write(ca.member("node-a", "127.0.0.1"), dir.resolve("tls"));
        assertEquals(ClusterTransport.Mode.TLS, transport(config(tls(files))).mode());
    }

    @Test
    void theThreeFilesGoTogetherAndExcludeTheInsecureSwitch() throws Exception {
        TestPki.PemFiles files = ca.write(ca.member("node-a", null), dir.resolve("tls"));
        IllegalArgumentException partial =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                transport(
                                        config(
                                                "cadastre.cluster.tls.cert-file = \""
                                                        + files.cert()
                                                        + "\"")));
        assertEquals(
                "cadastre.cluster.tls: cert-file, key-file and ca-file go together; missing "
                        + "[key-file (CADASTRE_CLUSTER_TLS_KEY_FILE), ca-file (CADASTRE_CLUSTER_TLS_CA_FILE)]",
                partial.getMessage());
        IllegalArgumentException both =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                transport(
                                        config(
                                                tls(files)
                                                        + "cadastre.cluster.insecure-plaintext = on")));
        assertTrue(
                both.getMessage()
                        .startsWith(
                                "cadastre.cluster.insecure-plaintext is on and cadastre.cluster.tls"),
                both.getMessage());
    }

    @Test
    void badFilesAreRefusedNamingTheSettingAndTheFile() throws Exception {
        TestPki.PemFiles good = ca.write(ca.member("node-a", null), dir.resolve("good"));
        TestPki.PemFiles foreign =
                otherCa.write(otherCa.member("node-a", null), dir.resolve("foreign"));
        Instant now = Instant.now();
        TestPki.PemFiles expired =
                ca.write(
                        ca.issue(
                                TestPki.Spec.member("node-a", null)
                                        .withValidity(
                                                now.minus(Duration.ofDays(3)),
                                                now.minus(Duration.ofDays(1)))),
                        dir.resolve("expired"));
        TestPki.PemFiles early =
                ca.write(
                        ca.issue(
                                TestPki.Spec.member("node-a", null)
                                        .withValidity(
                                                now.plus(Duration.ofDays(1)),
                                                now.plus(Duration.ofDays(3)))),
                        dir.resolve("early"));
        TestPki.PemFiles ec =
                ca.write(
                        ca.issue(TestPki.Spec.member("node-a", null).withKeyAlgorithm("EC")),
                        dir.resolve("ec"));
        TestPki.PemFiles nameless =
                ca.write(
                        ca.issue(TestPki.Spec.member(null, "198.19.0.7").withDnsNames(List.of())),
                        dir.resolve("nameless"));
        Path garbage = Files.writeString(dir.resolve("garbage.pem"), "not a certificate\n");
        Path encryptedKey =
                Files.writeString(
                        dir.resolve("encrypted.key"),
                        TestPki.pem("ENCRYPTED PRIVATE KEY", new byte[] {48, 3, 2, 1, 0}));
        Path missing = dir.resolve("missing.pem");

        assertRefused(
                new TestPki.PemFiles(good.cert(), good.key(), foreign.ca()),
                "cadastre.cluster.tls.cert-file "
                        + good.cert()
                        + " (issuer CN=cluster-ca) is not signed by the CA in "
                        + "cadastre.cluster.tls.ca-file "
                        + foreign.ca());
        assertRefused(
                new TestPki.PemFiles(good.cert(), foreign.key(), good.ca()),
                "cadastre.cluster.tls.key-file "
                        + foreign.key()
                        + " is not the private key of the certificate");
        assertRefused(
                expired,
                "cadastre.cluster.tls.cert-file "
                        + expired.cert()
                        + ": the certificate expired at");
        assertRefused(
                early,
                "cadastre.cluster.tls.cert-file "
                        + early.cert()
                        + ": the certificate is not valid before");
        assertRefused(
                ec,
                "cadastre.cluster.tls.key-file "
                        + ec.key()
                        + " is not an unencrypted RSA private key");
        assertRefused(
                nameless,
                "cadastre.cluster.tls.cert-file " + nameless.cert() + " has no subject name");
        assertRefused(
                new TestPki.PemFiles(garbage, good.key(), good.ca()),
                "cadastre.cluster.tls.cert-file " + garbage + " is not a PEM X.509 certificate");
        assertRefused(
                new TestPki.PemFiles(good.cert(), good.key(), garbage),
                "cadastre.cluster.tls.ca-file " + garbage + " is not a PEM X.509 certificate");
        assertRefused(
                new TestPki.PemFiles(good.cert(), encryptedKey, good.ca()),
                "cadastre.cluster.tls.key-file "
                        + encryptedKey
                        + " is not an unencrypted RSA private key");
        assertRefused(
                new TestPki.PemFiles(good.cert(), missing, good.ca()),
                "cadastre.cluster.tls.key-file " + missing + ": no such file");
        assertRefused(
                new TestPki.PemFiles(missing, good.key(), good.ca()),
                "cadastre.cluster.tls.cert-file " + missing + ": no such file");
    }

    private void assertRefused(TestPki.PemFiles files, String expected) throws Exception {
        Config config = config("cadastre.cluster.hostname = \"198.19.0.7\"\n" + tls(files));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> transport(config), expected);
        assertTrue(
                e.getMessage().startsWith(expected),
                "expected «" + expected + "», got «" + e.getMessage() + "»");
    }

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"})
    void loopbackAddresses(String hostname) {
        assertTrue(ClusterTransport.isLoopback(hostname), hostname);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "198.19.0.7",
                "0.0.0.0",
                "::",
                "fd00:198::1",
                "",
                "<getHostAddress>",
                "no-such-host.invalid"
            })
    void notLoopback(String hostname) {
        assertFalse(ClusterTransport.isLoopback(hostname), hostname);
    }
}
