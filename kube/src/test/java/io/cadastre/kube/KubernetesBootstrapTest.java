package io.cadastre.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/**
 * Cluster bootstrap from the API: three agents (actor systems in this JVM on loopback, each with
 * the production {@link KubeApi} and {@link ClusterBootstrap} over fabric8's mock API server) find
 * each other through the pod list of their DaemonSet and form one cluster; the member that formed
 * it, restarted alone on its address, joins the running cluster instead of forming a second one.
 * IPv4 pod IPs here; IPv6 ones (Pekko writes an IPv6 host in brackets, the API without) in the
 * cluster module's {@code KubernetesBootstrapEndToEndTest}, with real agents, and so the same
 * formation and rejoin (until 2026-11-27 both families ran here too, 11 s more). A member whose
 * own pod is listed at another address than its own forms no cluster, and says why.
 */
class KubernetesBootstrapTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final KubeSettings.Bootstrap SETTINGS =
            new KubeSettings.Bootstrap(
                    true,
                    "app.kubernetes.io/name=cadastre",
                    "cluster",
                    3,
                    Duration.ofSeconds(1),
                    Duration.ofMillis(200));

    /** ClusterBootstrap's warnings during the test. */
    private final ListAppender<ILoggingEvent> warnings = new ListAppender<>();

    private record Agent(String node, String ip, int port, ActorTestKit member, KubeApi api) {
        /** @return the member's address as Pekko writes it (an IPv6 host in brackets) */
        String address() {
            return "pekko://kube-boot@" + (ip.contains(":") ? "[" + ip + "]" : ip) + ":" + port;
        }
    }

    @BeforeEach
    void captureWarnings() {
        warnings.start();
        bootstrapLogger().addAppender(warnings);
    }

    @AfterEach
    void releaseWarnings() {
        bootstrapLogger().detachAppender(warnings);
    }

    private static Logger bootstrapLogger() {
        return (Logger) LoggerFactory.getLogger(ClusterBootstrap.class);
    }

    private List<String> warned() {
        return warnings.list.stream()
                .filter(e -> e.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage)
                .toList();
    }

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1"})
    void threeAgentsFormOneClusterAndARestartedOneJoinsIt(String ip) throws Exception {
        List<Agent> agents = new ArrayList<>();
        try (MockApi mock = new MockApi()) {
            // A pod of another app in the namespace is no contact point.
            mock.admin()
                    .pods()
                    .inNamespace(MockApi.AGENTS)
                    .resource(
                            new io.fabric8.kubernetes.api.model.PodBuilder()
                                    .withNewMetadata()
                                    .withName("other")
                                    .addToLabels("app.kubernetes.io/name", "other")
                                    .endMetadata()
                                    .withNewStatus()
                                    .withPhase("Running")
                                    .withPodIP(ip)
                                    .endStatus()
                                    .build())
                    .create();
            for (String node : List.of("boot-a", "boot-b", "boot-c")) {
                int port = freePort(ip);
                mock.agentPod("agent-" + node, node, ip, port);
                agents.add(new Agent(node, ip, port, null, null));
            }
            for (int i = 0; i < agents.size(); i++) {
                agents.set(i, start(mock, agents.get(i)));
            }
            Set<String> all =
                    agents.stream()
                            .map(Agent::address)
                            .collect(Collectors.toCollection(TreeSet::new));
            for (Agent agent : agents) {
                awaitMembers(agent.member().system(), all);
            }

            // The lowest-addressed formed the cluster; restarted alone, it joins the other two.
            Agent lowest =
                    agents.stream()
                            .min(java.util.Comparator.comparingInt(Agent::port))
                            .orElseThrow();
            stop(lowest);
            agents.remove(lowest);
            Set<String> others =
                    agents.stream()
                            .map(Agent::address)
                            .collect(Collectors.toCollection(TreeSet::new));
            for (Agent agent : agents) {
                awaitMembers(agent.member().system(), others);
            }
            Agent restarted = start(mock, lowest);
            agents.add(restarted);
            for (Agent agent : agents) {
                awaitMembers(agent.member().system(), all);
            }
            assertEquals(List.of(), warned());
        } finally {
            agents.forEach(KubernetesBootstrapTest::stop);
        }
    }

    /**
     * The single-node settings put the cluster port on loopback; with bootstrap left on, the agent
     * found its own pod at the node's address, where it does not listen, and waited for ever. A
     * lone agent (one contact point needed) whose pod is listed at 127.0.0.2 while it listens on
     * 127.0.0.1 forms nothing and names both addresses and the settings to change.
     */
    @Test
    void aMemberWhosePodIsListedAtAnotherAddressFormsNoClusterAndSaysWhy() throws Exception {
        Agent agent = null;
        try (MockApi mock = new MockApi()) {
            int port = freePort("127.0.0.1");
            mock.agentPod("agent-boot-lone", "boot-lone", "127.0.0.2", port);
            agent =
                    start(
                            mock,
                            new Agent("boot-lone", "127.0.0.1", port, null, null),
                            new KubeSettings.Bootstrap(
                                    true,
                                    "app.kubernetes.io/name=cadastre",
                                    "cluster",
                                    1,
                                    Duration.ZERO,
                                    Duration.ofMillis(200)));
            Waits.until(WAIT, () -> !warned().isEmpty(), () -> "no warning");
            String warning = warned().get(0);
            assertTrue(
                    warning.contains("agent pod is at pekko://kube-boot@127.0.0.2:" + port)
                            && warning.contains("listens at " + agent.address())
                            && warning.contains("cadastre.cluster.hostname")
                            && warning.contains("cadastre.kubernetes.bootstrap.enabled"),
                    warning);
            // Warned before the round that could have formed: it did not.
            assertNotEquals(
                    MemberStatus.up(), Cluster.get(agent.member().system()).selfMember().status());
        } finally {
            if (agent != null) {
                stop(agent);
            }
        }
    }

    private static Agent start(MockApi mock, Agent agent) {
        return start(mock, agent, SETTINGS);
    }

    private static Agent start(MockApi mock, Agent agent, KubeSettings.Bootstrap settings) {
        ActorTestKit member =
                TestMembers.member("kube-boot", agent.node(), agent.ip(), agent.port());
        KubeApi api = mock.agentApi(agent.node(), Duration.ofSeconds(1));
        member.spawn(ClusterBootstrap.responder(), ClusterBootstrap.PROBE_NAME);
        member.spawn(ClusterBootstrap.create(api, settings, System::nanoTime), "cluster-bootstrap");
        return new Agent(agent.node(), agent.ip(), agent.port(), member, api);
    }

    private static void stop(Agent agent) {
        if (agent.member() != null) {
            TestMembers.stop(agent.member());
        }
        if (agent.api() != null) {
            agent.api().close();
        }
    }

    /** Waits until the member is Up and sees exactly these members Up. */
    private static void awaitMembers(ActorSystem<?> system, Set<String> addresses) {
        Cluster cluster = Cluster.get(system);
        Waits.until(
                WAIT,
                () ->
                        cluster.selfMember().status() == MemberStatus.up()
                                && upMembers(cluster).equals(addresses),
                () ->
                        system.address()
                                + " is "
                                + cluster.selfMember().status()
                                + " and sees "
                                + upMembers(cluster));
        assertEquals(addresses, upMembers(cluster));
    }

    private static Set<String> upMembers(Cluster cluster) {
        return StreamSupport.stream(cluster.state().getMembers().spliterator(), false)
                .filter(m -> m.status() == MemberStatus.up())
                .map(Member::address)
                .map(Object::toString)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static int freePort(String ip) throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(ip))) {
            return socket.getLocalPort();
        }
    }
}
