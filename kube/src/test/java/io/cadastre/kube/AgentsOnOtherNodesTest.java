package io.cadastre.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;

/**
 * The embedded journal's guard against a second node: which agents' pods count as another node's
 * agent, and, over fabric8's mock API server, the refusal following the pods as they come and go,
 * and standing while the API is away.
 */
class AgentsOnOtherNodesTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String AGENTS = "app.kubernetes.io/name=cadastre";

    @Test
    void anAgentPodOfAnotherNodeCountsUnlessItEndedOrIsBeingDeleted() {
        List<Pod> pods =
                List.of(
                        pod("own", "node-a", "Running", false),
                        pod("b", "node-b", "Running", false),
                        pod("c", "node-c", "Pending", false),
                        pod("d", "node-d", "Succeeded", false),
                        pod("e", "node-e", "Failed", false),
                        pod("f", "node-f", "Running", true),
                        pod("unscheduled", null, "Pending", false));
        assertEquals(Set.of("node-b", "node-c"), AgentsOnOtherNodes.otherNodes(pods, "node-a"));
        assertEquals(
                Set.of(),
                AgentsOnOtherNodes.otherNodes(
                        List.of(pod("own", "node-a", "Running", false)), "node-a"));
    }

    @Test
    void addressesAreRefusedWhileAnotherNodeRunsAnAgentAndWhileTheApiIsAwayAfterwards()
            throws Exception {
        ActorTestKit kit = ActorTestKit.create();
        MockApi mock = new MockApi();
        KubeApi api = mock.agentApi("node-a", Duration.ofMillis(300));
        mock.agentPod("agent-a", "node-a", "127.0.0.1", 2552);
        // Another application's pod on another node, in the agents' namespace: no agent.
        mock.pod(MockApi.AGENTS, "other-app", "node-c", Map.of());
        mock.agentPod("agent-b", "node-b", "127.0.0.2", 2552);
        AgentsOnOtherNodes check =
                AgentsOnOtherNodes.start(
                        api,
                        AGENTS,
                        Duration.ofMillis(100),
                        kit.system().scheduler(),
                        kit.system().executionContext());
        try {
            Waits.until(WAIT, () -> check.refusal().isPresent(), () -> "nothing refused");
            String refusal = check.refusal().orElseThrow();
            assertTrue(
                    refusal.contains("node node-b:")
                            && !refusal.contains("node-c")
                            && refusal.contains("Cassandra"),
                    refusal);

            // The other node's agent deleted: its own pod and the other application's remain,
            // and addresses are handed out again.
            mock.deleteAgentPod("agent-b");
            Waits.until(WAIT, () -> check.refusal().isEmpty(), () -> "refused: " + check.refusal());

            mock.agentPod("agent-b", "node-b", "127.0.0.2", 2552);
            Waits.until(WAIT, () -> check.refusal().isPresent(), () -> "nothing refused");

            // The API away: lists fail, and the last answer stands.
            mock.stop();
            long before = check.answered();
            Waits.until(
                    WAIT,
                    () -> check.answered() >= before + 2,
                    () -> "no list answered since the API went away");
            assertEquals(Optional.of(refusal), check.refusal());
        } finally {
            check.close();
            api.close();
            mock.close();
            kit.shutdownTestKit();
        }
    }

    @Test
    void anEmptySelectorIsRefused() {
        assertThrows(
                IllegalArgumentException.class,
                () -> AgentsOnOtherNodes.start(null, " ", Duration.ofSeconds(1), null, null));
    }

    private static Pod pod(String name, String node, String phase, boolean deleting) {
        return new PodBuilder()
                .withNewMetadata()
                .withName(name)
                .withDeletionTimestamp(deleting ? "2026-11-27T10:00:00Z" : null)
                .endMetadata()
                .withNewSpec()
                .withNodeName(node)
                .endSpec()
                .withNewStatus()
                .withPhase(phase)
                .endStatus()
                .build();
    }
}
