package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Optional;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.junit.jupiter.api.Test;

/** The exit code tells a supervisor why the agent stopped. */
class AgentMainTest {
    @Test
    void exitCodeSaysWhyTheAgentStopped() {
        assertEquals(1, AgentMain.exitCode(Optional.of(Guardian.StartFailure.INSTANCE)), "start-up failed");
        assertEquals(3, AgentMain.exitCode(Optional.of(CoordinatedShutdown.clusterDowningReason())), "downed by the cluster");
        assertEquals(0, AgentMain.exitCode(Optional.of(CoordinatedShutdown.jvmExitReason())), "SIGTERM");
        assertEquals(0, AgentMain.exitCode(Optional.empty()), "no reason recorded");
    }
}
