package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import io.cadastre.admin.AdminServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The exit code tells a supervisor why the agent stopped; the configuration the member starts with. */
class AgentMainTest {
    @TempDir
    Path dir;

    @Test
    void exitCodeSaysWhyTheAgentStopped() {
        assertEquals(1, AgentMain.exitCode(Optional.of(Guardian.StartFailure.INSTANCE)), "start-up failed");
        assertEquals(3, AgentMain.exitCode(Optional.of(CoordinatedShutdown.clusterDowningReason())), "downed by the cluster");
        assertEquals(0, AgentMain.exitCode(Optional.of(CoordinatedShutdown.jvmExitReason())), "SIGTERM");
        assertEquals(0, AgentMain.exitCode(Optional.empty()), "no reason recorded");
    }

    @Test
    void theMemberCarriesItsNodeRole() {
        Config config = AgentMain.withNodeRole(AgentMain.loadConfig(null), "node-a");
        assertEquals(java.util.List.of("cadastre-node:node-a"), config.getStringList("pekko.cluster.roles"));
    }

    @Test
    void theAdminApiDefaultsToLoopbackWithoutAToken() {
        AdminServer.Settings admin = AdminConfig.from(AgentMain.loadConfig(null));
        assertEquals("127.0.0.1", admin.host());
        assertEquals(9467, admin.port());
        assertEquals(false, admin.requiresToken());
        assertEquals(Duration.ofSeconds(10), admin.metricsRefresh());
    }

    @Test
    void theMetricsRefreshIsConfigurableAndNotNegative() throws Exception {
        Path conf = Files.writeString(dir.resolve("refresh.conf"), "cadastre.admin.metrics-refresh = 30s\n");
        assertEquals(Duration.ofSeconds(30), AdminConfig.from(AgentMain.loadConfig(conf.toFile())).metricsRefresh());
        Path negative = Files.writeString(dir.resolve("negative.conf"), "cadastre.admin.metrics-refresh = -1s\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AdminConfig.from(AgentMain.loadConfig(negative.toFile())));
        assertTrue(e.getMessage().startsWith("cadastre.admin.metrics-refresh"), e.getMessage());
    }

    @Test
    void anAdminApiBeyondLoopbackWithoutATokenFileIsAConfigurationError() throws Exception {
        Path conf = Files.writeString(dir.resolve("agent.conf"), """
                cadastre.node-name = "node-a"
                cadastre.admin.bind = "0.0.0.0:9467"
                """);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AdminConfig.from(AgentMain.loadConfig(conf.toFile())));
        assertTrue(e.getMessage().startsWith("cadastre.admin"), e.getMessage());
        AgentMain main = new AgentMain();
        main.configFile = conf.toFile();
        // Refused before any actor system starts: exit 2, as for any configuration error.
        assertEquals(2, assertTimeoutPreemptively(Duration.ofSeconds(30), main::call));

        Path token = Files.writeString(dir.resolve("token"), "t0ken\n");
        Path withToken = Files.writeString(dir.resolve("with-token.conf"), """
                cadastre.admin.bind = "0.0.0.0:9467"
                cadastre.admin.token-file = "%s"
                """.formatted(token));
        AdminServer.Settings admin = AdminConfig.from(AgentMain.loadConfig(withToken.toFile()));
        assertTrue(admin.requiresToken());
        assertEquals(Optional.of("t0ken"), admin.token());
    }
}
