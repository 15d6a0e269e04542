package io.cadastre.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.Dataplane;
import io.cadastre.dataplane.PodAttachment;
import io.cadastre.dataplane.WiredPod;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.Ipam;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Reconciliation in the node agent: the real {@link NodeAgent} over a fake {@link Ipam}
 * ({@link FakeIpam}: no cluster), with a fake dataplane, a fake netns check ({@link NetnsPresence}) and a
 * clock the test moves. Rounds are started by {@link NodeAgent.Reconcile} (the timer's interval is
 * an hour), so nothing depends on real time. Each test has its own node, pool and addresses.
 * Also DEL's two parts: the reply after the unplug and the release, the pair's deletion later.
 */
class ReclaimerTest {
    private static final Duration GRACE = Duration.ofMinutes(5);
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final AtomicInteger counter = new AtomicInteger();
    private static ActorTestKit testKit;

    /** netns paths the fake check reports gone. */
    private final Set<String> gone = ConcurrentHashMap.newKeySet();

    /** netns paths the fake check reports gone once more, then present. */
    private final Set<String> goneOnce = ConcurrentHashMap.newKeySet();

    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final FakeDataplane dataplane = new FakeDataplane();
    private final ExecutorService dataplaneThreads = Executors.newFixedThreadPool(2);
    private Reclaimer reclaimer;
    private Ipam ipam;
    private ActorRef<NodeAgent.Command> agent;

    @BeforeAll
    static void startActors() {
        testKit = ActorTestKit.create("ReclaimerTest");
    }

    @AfterAll
    static void stopActors() {
        testKit.shutdownTestKit();
    }

    @BeforeEach
    void startAgent() {
        int n = counter.incrementAndGet();
        ipam = new FakeIpam("reclaim-node-" + n, "reclaim-v4", "198.18." + n + ".0/24");
        reclaimer =
                new Reclaimer(
                        Duration.ofHours(1),
                        GRACE,
                        path -> gone.contains(path) || goneOnce.remove(path),
                        nanos::get);
        agent = testKit.spawn(NodeAgent.create(ipam, dataplane, dataplaneThreads, reclaimer));
    }

    @AfterEach
    void stopAgent() {
        testKit.stop(agent);
        dataplane.releaseAll();
        dataplaneThreads.shutdownNow();
    }

    // ---- helpers ----

    private static String netns(String container) {
        return "/var/run/netns/" + container;
    }

    private static AttachmentId id(String container) {
        return new AttachmentId("net", container, "eth0");
    }

    private void send(String container, boolean ipamOnly, ActorRef<StatusReply<Wired>> replyTo) {
        AttachmentId id = id(container);
        AssignRequest request =
                new AssignRequest(
                        id.handle(),
                        id.ifname(),
                        id.network(),
                        container,
                        netns(container),
                        "default",
                        container,
                        List.of(),
                        List.of());
        agent.tell(
                new NodeAgent.Attach(
                        id, new PodRequest(request, netns(container), ipamOnly, 0), replyTo));
    }

    private AttachmentRecord add(String container) {
        return add(container, false);
    }

    private AttachmentRecord add(String container, boolean ipamOnly) {
        TestProbe<StatusReply<Wired>> probe = testKit.createTestProbe();
        send(container, ipamOnly, probe.ref());
        StatusReply<Wired> outcome = probe.receiveMessage(WAIT);
        assertTrue(outcome.isSuccess(), () -> "ADD " + container + ": " + outcome);
        return outcome.getValue().attachment();
    }

    private void del(String container) {
        TestProbe<StatusReply<List<String>>> probe = testKit.createTestProbe();
        agent.tell(new NodeAgent.Detach(id(container), false, probe.ref()));
        assertTrue(probe.receiveMessage(WAIT).isSuccess());
    }

    /** Runs one reconciliation round. @return the keys of the attachments it released */
    private List<String> reconcile() {
        TestProbe<StatusReply<List<String>>> probe = testKit.createTestProbe();
        agent.tell(new NodeAgent.Reconcile(probe.ref()));
        StatusReply<List<String>> outcome = probe.receiveMessage(WAIT);
        assertTrue(outcome.isSuccess());
        return outcome.getValue();
    }

    /** @return {@code cadastre_ipam_allocations_gc_candidates} of this agent's node */
    private OptionalDouble candidatesMetric() {
        return CadastreMetrics.get(testKit.system())
                .sample("cadastre_ipam_allocations_gc_candidates", "node", ipam.node());
    }

    /** @return {@code cadastre_ipam_allocations_gc_reclamations_total} of this agent's node for the reason */
    private OptionalDouble reclamationsMetric(String reason) {
        return CadastreMetrics.get(testKit.system())
                .sample(
                        "cadastre_ipam_allocations_gc_reclamations_total",
                        "node",
                        ipam.node(),
                        "reason",
                        reason);
    }

    private void advance(Duration d) {
        nanos.addAndGet(d.toNanos());
    }

    private Optional<AttachmentRecord> lookup(String container) {
        return await(ipam.lookup(id(container).handle(), "eth0"));
    }

    private static <T> T await(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- the rules ----

    @Test
    void aVanishedNetnsIsReclaimedOnlyAfterTheGraceAndTheCountersCount() {
        AttachmentRecord a = add("a");
        AttachmentRecord b = add("b");
        AttachmentRecord c = add("c");
        assertEquals(netns("a"), a.netnsPath(), "CNI_NETNS is recorded at ADD");
        dataplane.detached.clear(); // each ADD unwires leftovers of an earlier attempt first
        gone.add(netns("a"));
        gone.add(netns("b"));

        assertEquals(OptionalDouble.of(0), candidatesMetric());
        assertEquals(OptionalDouble.of(0), reclamationsMetric(CadastreMetrics.GC_NETNS_GONE));
        assertEquals(List.of(), reconcile(), "first seen gone: the grace starts");
        assertEquals(2, reclaimer.candidates());
        assertEquals(OptionalDouble.of(2), candidatesMetric());
        advance(GRACE.minusNanos(1));
        assertEquals(List.of(), reconcile(), "not before the grace has passed");
        assertTrue(lookup("a").isPresent());
        assertEquals(0, reclaimer.reclaimed());

        advance(Duration.ofNanos(1));
        assertEquals(Set.of(a.key(), b.key()), Set.copyOf(reconcile()));
        assertEquals(2, reclaimer.reclaimed());
        assertEquals(0, reclaimer.candidates());
        assertEquals(OptionalDouble.of(2), reclamationsMetric(CadastreMetrics.GC_NETNS_GONE));
        assertEquals(OptionalDouble.of(0), candidatesMetric());
        assertEquals(OptionalDouble.of(0), reclamationsMetric(CadastreMetrics.GC_CNI));

        // Released as DEL releases: the host end unwired, the node forgot it, the blocks freed it.
        assertTrue(
                dataplane.detached.containsAll(
                        List.of(id("a").hostIfname(), id("b").hostIfname())));
        assertFalse(dataplane.detached.contains(id("c").hostIfname()));
        assertTrue(lookup("a").isEmpty());
        assertTrue(lookup("b").isEmpty());
        assertEquals(Optional.of(c), lookup("c"));
        assertEquals(
                List.of(c.key()),
                await(ipam.attachments()).stream().map(AttachmentRecord::key).toList());
        // The addresses are free again: a DEL now finds nothing more to release.
        assertEquals(List.of(), await(ipam.release(id("a").handle(), "eth0")));

        advance(GRACE);
        assertEquals(List.of(), reconcile(), "a later round finds nothing more");
        assertEquals(2, reclaimer.reclaimed());
    }

    @Test
    void aNetnsThatReappearsIsNotReclaimedAndItsGraceStartsOver() {
        AttachmentRecord a = add("a");
        gone.add(netns("a"));
        assertEquals(List.of(), reconcile());
        assertEquals(1, reclaimer.candidates());

        advance(Duration.ofMinutes(4));
        gone.remove(netns("a"));
        assertEquals(List.of(), reconcile());
        assertEquals(0, reclaimer.candidates(), "back: no longer a candidate");

        advance(Duration.ofMinutes(4));
        gone.add(netns("a"));
        assertEquals(
                List.of(), reconcile(), "gone again: a new grace, not the old one's remainder");
        advance(GRACE.minusSeconds(1));
        assertEquals(List.of(), reconcile());
        assertEquals(Optional.of(a), lookup("a"));
        assertEquals(0, reclaimer.reclaimed());

        advance(Duration.ofSeconds(1));
        assertEquals(List.of(a.key()), reconcile());
        assertEquals(1, reclaimer.reclaimed());
    }

    @Test
    void aNetnsThatReappearsBeforeTheReleaseRunsKeepsItsAttachment() {
        AttachmentRecord a = add("a");
        gone.add(netns("a"));
        reconcile();
        advance(GRACE);
        // The round's look still sees it gone, so it is due; the release looks once more, in the
        // attachment's slot, and finds it back.
        gone.remove(netns("a"));
        goneOnce.add(netns("a"));
        assertEquals(List.of(), reconcile());
        assertEquals(Optional.of(a), lookup("a"));
        assertEquals(0, reclaimer.reclaimed());
        assertEquals(List.of(), reconcile());
        assertEquals(0, reclaimer.candidates());
    }

    @Test
    void anAttachmentWithAnAddInFlightIsNotTouched() {
        dataplane.blockAttach(netns("a"));
        TestProbe<StatusReply<Wired>> addA = testKit.createTestProbe();
        send("a", false, addA.ref());
        // IPAM records the attachment before the dataplane wires it: the ADD is now in flight.
        testKit.createTestProbe()
                .awaitAssert(
                        WAIT,
                        () -> {
                            assertTrue(lookup("a").isPresent());
                            return null;
                        });
        gone.add(netns("a"));

        assertEquals(List.of(), reconcile());
        assertEquals(0, reclaimer.candidates(), "skipped, not even noted");
        advance(GRACE.multipliedBy(2));
        assertEquals(List.of(), reconcile());
        assertTrue(lookup("a").isPresent());

        dataplane.releaseAll();
        assertTrue(addA.receiveMessage(WAIT).isSuccess());
        assertEquals(
                List.of(id("a").hostIfname()),
                dataplane.detached,
                "only the ADD's own clean-up: nothing reclaimed");
        // Once the ADD is done the rule applies, with a grace of its own.
        assertEquals(List.of(), reconcile());
        assertEquals(1, reclaimer.candidates());
        advance(GRACE);
        assertEquals(List.of(id("a").key()), reconcile());
    }

    @Test
    void aDelWhileTheNetnsIsGoneEndsTheCandidacyAndIsNotCounted() {
        add("a");
        gone.add(netns("a"));
        reconcile();
        assertEquals(1, reclaimer.candidates());
        del("a");
        assertEquals(0, reclaimer.candidates());
        advance(GRACE);
        assertEquals(List.of(), reconcile());
        assertEquals(0, reclaimer.reclaimed());
    }

    @Test
    void anAttachmentWithoutAVisibleNetnsAtAddIsNeverReclaimedByThisRule() {
        // IPAM-only, from a runtime whose namespaces this agent cannot see: no path is recorded.
        gone.add(netns("a"));
        AttachmentRecord a = add("a", true);
        assertNull(a.netnsPath());
        assertEquals(List.of(), reconcile());
        advance(GRACE.multipliedBy(10));
        assertEquals(List.of(), reconcile());
        assertEquals(0, reclaimer.candidates());
        assertEquals(Optional.of(a), lookup("a"));
    }

    @Test
    void cniGcCountsTheAttachmentsItReleased() {
        AttachmentRecord a = add("a");
        AttachmentRecord b = add("b");
        add("c");
        TestProbe<StatusReply<List<String>>> probe = testKit.createTestProbe();
        agent.tell(new NodeAgent.CollectGarbage("net", Set.of(b.key()), false, probe.ref()));
        StatusReply<List<String>> outcome = probe.receiveMessage(WAIT);
        assertTrue(outcome.isSuccess());
        assertEquals(Set.of(a.key(), id("c").key()), Set.copyOf(outcome.getValue()));
        assertEquals(OptionalDouble.of(2), reclamationsMetric(CadastreMetrics.GC_CNI));

        agent.tell(new NodeAgent.CollectGarbage("net", Set.of(b.key()), false, probe.ref()));
        assertEquals(List.of(), probe.receiveMessage(WAIT).getValue());
        assertEquals(
                OptionalDouble.of(2),
                reclamationsMetric(CadastreMetrics.GC_CNI),
                "nothing more released, nothing more counted");
        assertEquals(OptionalDouble.of(0), reclamationsMetric(CadastreMetrics.GC_NETNS_GONE));
    }

    @Test
    void cniGcTakesWhatItReleasesOffTheNetworkBeforeIpamFreesItsAddresses() {
        AttachmentRecord a = add("a");
        AttachmentRecord b = add("b");
        Map<String, Boolean> heldWhenUnplugged = new ConcurrentHashMap<>();
        dataplane.onUnplug =
                hostIfname -> heldWhenUnplugged.put(hostIfname, lookup("a").isPresent());
        dataplane.detached.clear();
        TestProbe<StatusReply<List<String>>> probe = testKit.createTestProbe();

        agent.tell(new NodeAgent.CollectGarbage("net", Set.of(b.key()), false, probe.ref()));

        assertEquals(List.of(a.key()), probe.receiveMessage(WAIT).getValue());
        assertEquals(
                Map.of(id("a").hostIfname(), true),
                heldWhenUnplugged,
                "unplugged while IPAM still held it; b untouched");
        assertEquals(
                List.of(id("a").hostIfname()), dataplane.detached, "and its pair deleted after");
    }

    @Test
    void delRepliesOnceUnpluggedAndThePairIsDeletedLaterByItsIndex() {
        AttachmentRecord first = add("a");
        dataplane.blockDelete(id("a").hostIfname());

        TestProbe<StatusReply<List<String>>> delA = testKit.createTestProbe();
        agent.tell(new NodeAgent.Detach(id("a"), false, delA.ref()));
        StatusReply<List<String>> deleted = delA.receiveMessage(WAIT);

        assertTrue(deleted.isSuccess());
        assertEquals(first.addresses().stream().map(h -> h.address()).toList(), deleted.getValue());
        assertEquals(List.of(id("a").hostIfname()), dataplane.unplugged);
        assertTrue(lookup("a").isEmpty(), "released before the pair is deleted");
        assertEquals(
                List.of(),
                dataplane.deletedUnplugged,
                "the delete is held: the reply did not wait for it");
        dataplane.releaseAll();
        testKit.createTestProbe()
                .awaitAssert(
                        WAIT,
                        () -> {
                            assertEquals(
                                    List.of(
                                            id("a").hostIfname()
                                                    + "#"
                                                    + FakeDataplane.index(id("a").hostIfname())),
                                    dataplane.deletedUnplugged);
                            return null;
                        });
    }

    @Test
    void anAddOfTheAttachmentRightAfterItsDelDoesNotWaitForTheTeardown() {
        add("a");
        dataplane.blockDelete(id("a").hostIfname());
        del("a");
        dataplane.detached.clear();

        AttachmentRecord again = add("a");

        assertEquals(
                List.of(id("a").hostIfname()),
                dataplane.detached,
                "the ADD deletes the leftover of its host name itself");
        assertEquals(Optional.of(again), lookup("a"));
        assertEquals(List.of(), dataplane.deletedUnplugged, "the delayed delete still held");
    }

    @Test
    void anAddThatIpamRefusesDeletesThePairItPreparedBeforeItAnswers() {
        dataplane.preparing = true;
        AttachmentId id = id("p");
        AssignRequest outsideThePool =
                new AssignRequest(
                        id.handle(),
                        id.ifname(),
                        id.network(),
                        "p",
                        netns("p"),
                        "default",
                        "p",
                        List.of(),
                        List.of("198.19.250.1"));
        TestProbe<StatusReply<Wired>> probe = testKit.createTestProbe();

        agent.tell(
                new NodeAgent.Attach(
                        id, new PodRequest(outsideThePool, netns("p"), false, 0), probe.ref()));

        assertTrue(probe.receiveMessage(WAIT).isError());
        assertEquals(List.of(id.hostIfname()), dataplane.preparedPairs);
        assertEquals(
                List.of(id.hostIfname() + "#" + FakeDataplane.index(id.hostIfname())),
                dataplane.deletedUnplugged,
                "deleted before the answer");
        assertTrue(lookup("p").isEmpty());
    }

    @Test
    void aFreshAddConfiguresThePairItPreparedAndDeletesNoLeftover() {
        dataplane.preparing = true;
        dataplane.detached.clear();

        add("q");

        assertEquals(List.of(id("q").hostIfname()), dataplane.preparedPairs);
        assertEquals(
                List.of(id("q").hostIfname() + "#" + FakeDataplane.index(id("q").hostIfname())),
                dataplane.attachedPrepared);
        assertEquals(List.of(), dataplane.detached, "the prepared pair is not a leftover");
    }

    @Test
    void anotherAttachmentWithTheSameHandleIsRefusedAtAddAndItsDelReleasesNothing() {
        // network "net", container "x.y" and network "net.x", container "y": handle "net.x.y"
        AttachmentRecord first = add("x.y");
        AttachmentId other = new AttachmentId("net.x", "y", "eth0");
        assertEquals(id("x.y").key(), other.key());
        AssignRequest request =
                new AssignRequest(
                        other.handle(),
                        other.ifname(),
                        other.network(),
                        other.containerId(),
                        netns("x.y"),
                        "default",
                        "y",
                        List.of(),
                        List.of());
        TestProbe<StatusReply<Wired>> added = testKit.createTestProbe();

        agent.tell(
                new NodeAgent.Attach(
                        other, new PodRequest(request, netns("x.y"), true, 0), added.ref()));

        StatusReply<Wired> refusal = added.receiveMessage(WAIT);
        assertTrue(refusal.isError(), refusal::toString);
        assertTrue(
                refusal.getError().getMessage().contains("network net and container x.y"),
                refusal.getError().getMessage());
        TestProbe<StatusReply<List<String>>> deleted = testKit.createTestProbe();
        agent.tell(new NodeAgent.Detach(other, false, deleted.ref()));
        StatusReply<List<String>> del = deleted.receiveMessage(WAIT);
        assertTrue(del.isSuccess(), del::toString);
        assertEquals(List.of(), del.getValue(), "nothing released");
        assertEquals(Optional.of(first), lookup("x.y"), "the first attachment keeps its record");
        assertEquals(List.of(), dataplane.unplugged, "and its wiring");

        del("x.y");
        assertTrue(lookup("x.y").isEmpty(), "its own DEL still releases it");
    }

    @Test
    void durationsMustBePositive() {
        assertThrows(
                IllegalArgumentException.class,
                () -> new Reclaimer(Duration.ZERO, GRACE, p -> false, System::nanoTime));
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        new Reclaimer(
                                Duration.ofSeconds(1),
                                Duration.ofSeconds(-1),
                                p -> false,
                                System::nanoTime));
    }

    /**
     * Wires nothing; can hold an attach or the delete after an unplug until released, and records
     * what was detached, unplugged and deleted.
     */
    private static final class FakeDataplane implements Dataplane {
        final List<String> detached = new CopyOnWriteArrayList<>();
        final List<String> unplugged = new CopyOnWriteArrayList<>();

        /** {@code <host name>#<ifindex>} of each pair deleted after an unplug. */
        final List<String> deletedUnplugged = new CopyOnWriteArrayList<>();

        /** Whether {@link #prepare} makes pairs (a dataplane may prepare nothing: the default). */
        volatile boolean preparing;

        final List<String> preparedPairs = new CopyOnWriteArrayList<>();

        /** {@code <host name>#<ifindex>} of each prepared pair an attach configured. */
        final List<String> attachedPrepared = new CopyOnWriteArrayList<>();

        private final Map<String, CountDownLatch> held = new ConcurrentHashMap<>();

        /** Called by each unplug, with the host end's name. */
        volatile Consumer<String> onUnplug = hostIfname -> {};

        void blockAttach(String netnsPath) {
            held.put(netnsPath, new CountDownLatch(1));
        }

        void blockDelete(String hostIfname) {
            held.put("delete " + hostIfname, new CountDownLatch(1));
        }

        /** @return the ifindex the fake gives a host end */
        static int index(String hostIfname) {
            return hostIfname.hashCode() & 0x7fffffff;
        }

        private void awaitRelease(String key) {
            CountDownLatch latch = held.get(key);
            if (latch != null) {
                try {
                    latch.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        void releaseAll() {
            held.values().forEach(CountDownLatch::countDown);
        }

        @Override
        public void checkPodNetns(String netnsPath) {}

        @Override
        public WiredPod attach(PodAttachment a) {
            awaitRelease(a.netnsPath());
            return new WiredPod(
                    a.hostIfname(),
                    HOST_MAC,
                    a.podIfname(),
                    "02:00:00:00:00:01",
                    a.netnsPath(),
                    a.addresses(),
                    List.of());
        }

        @Override
        public void detach(String hostIfname) {
            detached.add(hostIfname);
        }

        @Override
        public OptionalInt prepare(String netnsPath, String hostIfname, String podIfname, int mtu) {
            if (!preparing) {
                return OptionalInt.empty();
            }
            preparedPairs.add(hostIfname);
            return OptionalInt.of(index(hostIfname));
        }

        @Override
        public WiredPod attach(PodAttachment a, OptionalInt prepared) {
            prepared.ifPresent(i -> attachedPrepared.add(a.hostIfname() + "#" + i));
            return attach(a);
        }

        @Override
        public OptionalInt unplug(String hostIfname) {
            onUnplug.accept(hostIfname);
            unplugged.add(hostIfname);
            return OptionalInt.of(index(hostIfname));
        }

        @Override
        public boolean deleteUnplugged(String hostIfname, int hostIndex) {
            awaitRelease("delete " + hostIfname);
            deletedUnplugged.add(hostIfname + "#" + hostIndex);
            return true;
        }

        @Override
        public List<String> check(PodAttachment attachment) {
            return List.of();
        }
    }
}
