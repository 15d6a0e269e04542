package io.cadastre.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
import org.junit.jupiter.api.Test;

/**
 * Cluster bootstrap from the API: three agents (actor systems in this JVM on loopback, each with
 * the production {@link KubeApi} and {@link ClusterBootstrap} over fabric8's mock API server) find
 * each other through the pod list of their DaemonSet and form one cluster; the member that formed
 * it, restarted alone on its address, joins the running cluster instead of forming a second one.
 */
class KubernetesBootstrapTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final KubeSettings.Bootstrap SETTINGS = new KubeSettings.Bootstrap(true,
            "app.kubernetes.io/name=cadastre", "cluster", 3, Duration.ofSeconds(1), Duration.ofMillis(200));

    private record Agent(String node, int port, ActorTestKit member, KubeApi api) {}

    @Test
    void threeAgentsFormOneClusterAndARestartedOneJoinsIt() throws Exception {
        List<Agent> agents = new ArrayList<>();
        try (MockApi mock = new MockApi()) {
            // A pod of another app in the namespace is no contact point.
            mock.admin().pods().inNamespace(MockApi.AGENTS).resource(new io.fabric8.kubernetes.api.model.PodBuilder()
                    .withNewMetadata().withName("other").addToLabels("app.kubernetes.io/name", "other").endMetadata()
                    .withNewStatus().withPhase("Running").withPodIP("127.0.0.1").endStatus().build()).create();
            for (String node : List.of("boot-a", "boot-b", "boot-c")) {
                int port = freePort();
                mock.agentPod("agent-" + node, node, "127.0.0.1", port);
                agents.add(new Agent(node, port, null, null));
            }
            for (int i = 0; i < agents.size(); i++) {
                agents.set(i, start(mock, agents.get(i)));
            }
            Set<String> all = agents.stream().map(a -> "pekko://kube-boot@127.0.0.1:" + a.port()).collect(Collectors.toCollection(TreeSet::new));
            for (Agent agent : agents) {
                awaitMembers(agent.member().system(), all);
            }

            // The lowest-addressed formed the cluster; restarted alone, it joins the other two.
            Agent lowest = agents.stream().min(java.util.Comparator.comparingInt(Agent::port)).orElseThrow();
            stop(lowest);
            agents.remove(lowest);
            Set<String> others = agents.stream().map(a -> "pekko://kube-boot@127.0.0.1:" + a.port())
                    .collect(Collectors.toCollection(TreeSet::new));
            for (Agent agent : agents) {
                awaitMembers(agent.member().system(), others);
            }
            Agent restarted = start(mock, lowest);
            agents.add(restarted);
            for (Agent agent : agents) {
                awaitMembers(agent.member().system(), all);
            }
        } finally {
            agents.forEach(KubernetesBootstrapTest::stop);
        }
    }

    private static Agent start(MockApi mock, Agent agent) {
        ActorTestKit member = TestMembers.member("kube-boot", agent.node(), agent.port());
        KubeApi api = mock.agentApi(agent.node(), Duration.ofSeconds(1));
        member.spawn(ClusterBootstrap.responder(), ClusterBootstrap.PROBE_NAME);
        member.spawn(ClusterBootstrap.create(api, SETTINGS, System::nanoTime), "cluster-bootstrap");
        return new Agent(agent.node(), agent.port(), member, api);
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
        Waits.until(WAIT, () -> cluster.selfMember().status() == MemberStatus.up() && upMembers(cluster).equals(addresses),
                () -> system.address() + " is " + cluster.selfMember().status() + " and sees " + upMembers(cluster));
        assertEquals(addresses, upMembers(cluster));
    }

    private static Set<String> upMembers(Cluster cluster) {
        return StreamSupport.stream(cluster.state().getMembers().spliterator(), false)
                .filter(m -> m.status() == MemberStatus.up()).map(Member::address).map(Object::toString)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
