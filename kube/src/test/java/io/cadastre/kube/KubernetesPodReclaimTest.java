package io.cadastre.kube;

import static io.cadastre.shards.TestCluster.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.NetlinkDataplane;
import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.node.AttachmentId;
import io.cadastre.node.NetnsPresence;
import io.cadastre.node.NodeAgent;
import io.cadastre.node.PodRequest;
import io.cadastre.node.Reclaimer;
import io.cadastre.node.Wired;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.Ipam;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Pods gone from the API, and the API gone: the real {@link NodeAgent} and {@link Reclaimer} with
 * the production {@link ApiPodPresence} and {@link AnnotatedIpamChoice} over fabric8's mock API
 * server, the real IPAM and the real netlink dataplane (the attachments are IPAM-only, without a
 * netns: a release removes no link, since there is none). The reclaim grace runs on a clock the
 * test moves; rounds are started by {@link NodeAgent.Reconcile}.
 */
class KubernetesPodReclaimTest {
    private static final Duration GRACE = Duration.ofMinutes(5);
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final PoolSpec POOL =
            new PoolSpec("reclaim-pods", Cidr.parse("198.18.90.0/24"), 28, false, true, 0);
    private static final PoolSpec CHOSEN =
            new PoolSpec("reclaim-chosen", Cidr.parse("198.18.91.0/24"), 28, false, true, 0);
    private static final AtomicInteger counter = new AtomicInteger();
    private static IpamCluster cluster;

    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final ExecutorService dataplaneThreads = Executors.newFixedThreadPool(2);
    private String node;
    private MockApi mock;
    private KubeApi api;
    private Ipam ipam;
    private ActorRef<NodeAgent.Command> agent;
    private PodIpamChoice choice;

    @BeforeAll
    static void startCluster() {
        // The node agent's messages are local, never serialized.
        cluster =
                new IpamCluster(
                        "kube-pod-reclaim",
                        List.of(POOL, CHOSEN),
                        "pekko.actor.serialize-messages = off");
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    @BeforeEach
    void startAgent() {
        node = "kube-reclaim-node-" + counter.incrementAndGet();
        mock = new MockApi();
        api = mock.agentApi(node, Duration.ofSeconds(1));
        api.start(n -> {});
        ipam = cluster.ipam(node, Map.of(), List.of(POOL.name()));
        Reclaimer reclaimer =
                new Reclaimer(
                        Duration.ofHours(1),
                        GRACE,
                        NetnsPresence.FILES,
                        new ApiPodPresence(api),
                        nanos::get);
        agent =
                cluster.testKit()
                        .spawn(
                                NodeAgent.create(
                                        ipam, new NetlinkDataplane(), dataplaneThreads, reclaimer));
        choice = new AnnotatedIpamChoice(api);
    }

    @AfterEach
    void stopAgent() {
        cluster.testKit().stop(agent);
        dataplaneThreads.shutdownNow();
        api.close();
        mock.close();
    }

    @Test
    void anAttachmentWhosePodIsGoneIsReleasedAfterTheGrace() {
        mock.pod("default", "leaves", node, Map.of());
        mock.pod("default", "stays", node, Map.of());
        Waits.until(
                WAIT,
                () -> api.podsSynced() && api.cachedPod("default", "stays").isPresent(),
                () -> "the pod cache synced");
        AttachmentRecord leaves = add("default", "leaves");
        AttachmentRecord stays = add("default", "stays");
        assertEquals(List.of(), reconcile());

        mock.deletePod("default", "leaves");
        Waits.until(
                WAIT,
                () -> api.cachedPod("default", "leaves").isEmpty(),
                () -> "the cache saw the deletion");
        assertEquals(List.of(), reconcile(), "seen gone: the grace starts");
        nanos.addAndGet(GRACE.minusSeconds(1).toNanos());
        assertEquals(List.of(), reconcile(), "within the grace");
        nanos.addAndGet(Duration.ofSeconds(1).toNanos());
        assertEquals(List.of(leaves.key()), reconcile());
        assertTrue(await(ipam.lookup(leaves.handle(), leaves.ifname())).isEmpty());
        assertEquals(stays, await(ipam.lookup(stays.handle(), stays.ifname())).orElseThrow());
        nanos.addAndGet(GRACE.toNanos());
        assertEquals(List.of(), reconcile(), "released once");
    }

    @Test
    void withTheApiDownAddsAreServedAndNothingIsReleased() {
        mock.pod(
                "default",
                "cached",
                node,
                Map.of(IpamAnnotations.IPV4_POOLS, "[\"reclaim-chosen\"]"));
        mock.pod("default", "deleted", node, Map.of());
        Waits.until(
                WAIT,
                () -> api.podsSynced() && api.cachedPod("default", "cached").isPresent(),
                () -> "the pod cache synced");
        AttachmentRecord deleted = add("default", "deleted");
        mock.deletePod("default", "deleted");
        Waits.until(
                WAIT,
                () -> api.cachedPod("default", "deleted").isEmpty(),
                () -> "the cache saw the deletion");

        mock.stop();
        // The cached pod's annotation still chooses its pool; a pod the cache never saw gets the
        // netconf's.
        long start = System.nanoTime();
        AttachmentRecord cached = add("default", "cached");
        assertTrue(CHOSEN.cidr().contains(cached.addresses().get(0).address()), cached.toString());
        AttachmentRecord unknown = add("default", "never-cached");
        assertTrue(POOL.cidr().contains(unknown.addresses().get(0).address()), unknown.toString());
        assertTrue(Duration.ofNanos(System.nanoTime() - start).compareTo(WAIT) < 0);

        // The deleted pod's absence is not believed without the API: nothing is released, however
        // long.
        for (int round = 0; round < 3; round++) {
            assertEquals(List.of(), reconcile());
            nanos.addAndGet(GRACE.multipliedBy(2).toNanos());
        }
        for (AttachmentRecord held : List.of(deleted, cached, unknown)) {
            assertEquals(held, await(ipam.lookup(held.handle(), held.ifname())).orElseThrow());
        }
    }

    /** An IPAM-only ADD of the pod, as the agent's CNI backend makes it. */
    private AttachmentRecord add(String namespace, String pod) {
        String container = namespace + "-" + pod + "-" + counter.incrementAndGet();
        AttachmentId id = new AttachmentId("kube-net", container, "eth0");
        PodIpamChoice.Choice chosen = await(choice.choose(namespace, pod));
        AssignRequest request =
                new AssignRequest(
                        id.handle(),
                        id.ifname(),
                        id.network(),
                        container,
                        null,
                        namespace,
                        pod,
                        List.of(),
                        chosen.requestedIps(List.of()),
                        AddressRules.ROUTED,
                        chosen.poolsByFamily());
        TestProbe<StatusReply<Wired>> probe = cluster.testKit().createTestProbe();
        agent.tell(new NodeAgent.Attach(id, new PodRequest(request, null, true, 0), probe.ref()));
        StatusReply<Wired> outcome = probe.receiveMessage(WAIT);
        assertTrue(outcome.isSuccess(), () -> "ADD " + container + ": " + outcome);
        return outcome.getValue().attachment();
    }

    /** @return the keys of the attachments one reconciliation round released */
    private List<String> reconcile() {
        TestProbe<StatusReply<List<String>>> probe = cluster.testKit().createTestProbe();
        agent.tell(new NodeAgent.Reconcile(probe.ref()));
        StatusReply<List<String>> outcome = probe.receiveMessage(WAIT);
        assertTrue(outcome.isSuccess());
        return outcome.getValue();
    }
}
