package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import io.cadastre.admin.AdminToken;
import io.cadastre.journal.EmbeddedStore;
import io.cadastre.journal.RocksJournalStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Optional;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The exit code tells a supervisor why the agent stopped; the configuration the member starts with. */
class AgentMainTest {
    @TempDir Path dir;

    @Test
    void exitCodeSaysWhyTheAgentStopped() {
        assertEquals(
                1,
                AgentMain.exitCode(Optional.of(Guardian.StartFailure.INSTANCE)),
                "start-up failed");
        assertEquals(
                3,
                AgentMain.exitCode(Optional.of(CoordinatedShutdown.clusterDowningReason())),
                "downed by the cluster");
        assertEquals(
                0, AgentMain.exitCode(Optional.of(CoordinatedShutdown.jvmExitReason())), "SIGTERM");
        assertEquals(0, AgentMain.exitCode(Optional.empty()), "no reason recorded");
    }

    @Test
    void theMemberCarriesItsNodeRole() {
        Config config = AgentMain.withNodeRole(AgentMain.loadConfig(null), "node-a");
        assertEquals(
                java.util.List.of("cadastre-node:node-a"),
                config.getStringList("pekko.cluster.roles"));
    }

    @Test
    void theAdminApiDefaultsToLoopbackWithATokenGeneratedInTheDataDirectory() throws Exception {
        AdminConfig.Resolved admin = AdminConfig.from(AgentMain.loadConfig(null), dir);
        assertEquals("127.0.0.1", admin.settings().host());
        assertEquals(9467, admin.settings().port());
        assertEquals(Duration.ofSeconds(10), admin.settings().metricsRefresh());
        assertEquals(dir.resolve("admin.token"), admin.tokenFile());
        assertEquals(AdminToken.Origin.GENERATED, admin.kept().origin());
        assertEquals(Files.readString(admin.tokenFile()).strip(), admin.settings().token());
        assertEquals(
                AdminToken.Origin.REUSED,
                AdminConfig.from(AgentMain.loadConfig(null), dir).kept().origin());
    }

    @Test
    void theMetricsRefreshIsConfigurableAndNotNegative() throws Exception {
        Path conf =
                Files.writeString(
                        dir.resolve("refresh.conf"), "cadastre.admin.metrics-refresh = 30s\n");
        assertEquals(
                Duration.ofSeconds(30),
                AdminConfig.from(AgentMain.loadConfig(conf.toFile()), dir)
                        .settings()
                        .metricsRefresh());
        Path negative =
                Files.writeString(
                        dir.resolve("negative.conf"), "cadastre.admin.metrics-refresh = -1s\n");
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> AdminConfig.from(AgentMain.loadConfig(negative.toFile()), dir));
        assertTrue(e.getMessage().startsWith("cadastre.admin.metrics-refresh"), e.getMessage());
    }

    @Test
    void aTokenFileOthersMayReadIsAConfigurationErrorExitTwo() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "t0ken\n");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r--r--"));
        Path conf =
                Files.writeString(
                        dir.resolve("agent.conf"),
                        """
                cadastre.node-name = "node-a"
                cadastre.data-dir = "%s"
                cadastre.admin.bind = "0.0.0.0:9467"
                cadastre.admin.token-file = "%s"
                """
                                .formatted(dir.resolve("data"), token));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> AdminConfig.from(AgentMain.loadConfig(conf.toFile()), dir));
        assertTrue(
                e.getMessage()
                        .startsWith(
                                "cadastre.admin.token-file: the admin token file "
                                        + token
                                        + " has mode rw-r--r--"),
                e.getMessage());
        AgentMain main = new AgentMain();
        main.configFile = conf.toFile();
        // Refused before any actor system starts: exit 2, as for any configuration error.
        assertEquals(2, assertTimeoutPreemptively(Duration.ofSeconds(30), main::call));

        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        AdminConfig.Resolved admin = AdminConfig.from(AgentMain.loadConfig(conf.toFile()), dir);
        assertEquals("t0ken", admin.settings().token());
        assertEquals("0.0.0.0", admin.settings().host());
        assertEquals(token, admin.tokenFile());
        assertEquals(null, admin.kept(), "the agent keeps no token of its own then");
        assertFalse(Files.exists(dir.resolve("admin.token")));
    }

    @Test
    void theEmbeddedJournalsSizesDefaultAsDocumentedAndASmallOneIsAConfigurationErrorExitTwo()
            throws Exception {
        assertEquals(
                RocksJournalStore.Settings.DEFAULT,
                EmbeddedStore.settings(AgentMain.loadConfig(null)));
        Path conf =
                Files.writeString(
                        dir.resolve("agent.conf"),
                        """
                cadastre.node-name = "node-a"
                cadastre.data-dir = "%s"
                cadastre.embedded-journal.write-buffer-size = 4KiB
                """
                                .formatted(dir.resolve("data")));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> EmbeddedStore.settings(AgentMain.loadConfig(conf.toFile())));
        assertTrue(
                e.getMessage()
                        .startsWith(
                                "cadastre.embedded-journal: embedded journal sizes must be at least 64 KiB, not 4096"),
                e.getMessage());
        AgentMain main = new AgentMain();
        main.configFile = conf.toFile();
        assertEquals(2, assertTimeoutPreemptively(Duration.ofSeconds(30), main::call));
        assertFalse(Files.exists(dir.resolve("data")), "refused before anything is created");
    }

    @Test
    void aDataDirectoryThatIsAFileIsAConfigurationErrorExitTwo() throws Exception {
        Path file = Files.writeString(dir.resolve("not-a-dir"), "");
        Path conf =
                Files.writeString(
                        dir.resolve("agent.conf"),
                        """
                cadastre.node-name = "node-a"
                cadastre.data-dir = "%s"
                """
                                .formatted(file));
        AgentMain main = new AgentMain();
        main.configFile = conf.toFile();
        assertEquals(2, assertTimeoutPreemptively(Duration.ofSeconds(30), main::call));
    }
}
