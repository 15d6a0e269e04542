package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.BlockReclaimer.Pass;
import io.cadastre.shards.BlockReclaimer.Reason;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The block reclaimer over real sharded entities in a one-member cluster, with a clock and a
 * membership the test sets: passes are run by hand, so no timing depends on sleeps. Each test has
 * its own pool (deleted at its end: a pass walks every pool of the catalogue) and nodes.
 */
class BlockReclaimerTest {
    private static final Duration INTERVAL = Duration.ofMinutes(1);
    private static final Duration GRACE = Duration.ofMinutes(10);
    private static final Duration ASK = Duration.ofSeconds(10);
    private static final AskTimeouts TIMEOUTS = AskTimeouts.single(ASK, Duration.ofSeconds(2));
    private static final AtomicInteger counter = new AtomicInteger();
    private static ActorTestKit testKit;

    @BeforeAll
    static void startCluster() {
        testKit = TestCluster.start("BlockReclaimerTest");
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    /**
     * One test's pool ({@code 198.18.<100+n>.0/24} in /28 blocks), the reclaimer with its clock and
     * the nodes the test says are present.
     */
    private static final class World implements AutoCloseable {
        final String prefix;
        final PoolSpec pool;
        final PoolCatalog catalog =
                new PoolCatalog(testKit.system(), TIMEOUTS, Duration.ofMillis(100));
        final Pools pools = new Pools(testKit.system(), TIMEOUTS, catalog);
        final AtomicLong nanos = new AtomicLong();
        final Set<String> present = ConcurrentHashMap.newKeySet();
        final BlockReclaimer reclaimer;

        World() {
            int n = counter.incrementAndGet();
            prefix = "r" + n;
            pool =
                    new PoolSpec(
                            "reclaim-" + n,
                            Cidr.parse("198.18." + (100 + n) + ".0/24"),
                            28,
                            false,
                            true,
                            0);
            await(pools.defineConfigured(List.of(pool)));
            reclaimer =
                    new BlockReclaimer(
                            new EntityAsks(testKit.system(), TIMEOUTS),
                            MeshHints.get(testKit.system()),
                            catalog,
                            INTERVAL,
                            GRACE,
                            () -> Set.copyOf(present),
                            nanos::get,
                            reason -> {});
        }

        Cidr block(int index) {
            return Cidr.parse(
                    "198.18."
                            + pool.cidr().toString().split("\\.")[2]
                            + "."
                            + (16 * index)
                            + "/28");
        }

        Ipam ipam(String node) {
            return new ShardedIpam(
                    testKit.system(),
                    node,
                    Map.of(),
                    catalog,
                    List.of(pool.name()),
                    TIMEOUTS,
                    Clock.systemUTC());
        }

        void at(Duration sinceStart) {
            nanos.set(sinceStart.toNanos());
        }

        PoolEntity.PoolView view() {
            return await(
                    ref(PoolEntity.ENTITY_TYPE_KEY, pool.name()).ask(PoolEntity.GetPool::new, ASK));
        }

        /** A block the pool gives the node, its affinity told to the block, nothing allocated in it. */
        Cidr claimEmpty(String node) {
            PoolEntity.ClaimOutcome claim =
                    await(
                            ref(PoolEntity.ENTITY_TYPE_KEY, pool.name())
                                    .askWithStatus(
                                            (ActorRef<StatusReply<PoolEntity.ClaimOutcome>> r) ->
                                                    new PoolEntity.ClaimBlock(node, null, r),
                                            ASK));
            assertEquals(PoolEntity.ClaimStatus.CLAIMED, claim.status(), claim.toString());
            await(
                    ref(BlockEntity.ENTITY_TYPE_KEY, claim.block().entityId())
                            .askWithStatus(
                                    (ActorRef<StatusReply<Done>> r) ->
                                            new BlockEntity.ClaimAffinity(node, List.of(), r),
                                    ASK));
            return claim.block();
        }

        /** Frees every allocation of the pool's blocks, then deletes the pool. */
        @Override
        public void close() {
            TestCluster.removePool(testKit.system(), pools, pool.name());
        }
    }

    private static <M> EntityRef<M> ref(
            org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey<M> key, String id) {
        return ClusterSharding.get(testKit.system()).entityRefFor(key, id);
    }

    private static AttachmentRecord add(Ipam ipam, String container) {
        return await(ipam.assign(AssignRequests.plain("net", container, "ns", container)));
    }

    private static <T> T await(CompletionStage<T> stage) {
        return TestCluster.await(stage);
    }

    @Test
    void anAbsentNodeKeepsItsBlocksForTheGraceThenOnlyItsEmptyOnesAreReleased() {
        try (World w = new World()) {
            String gone = w.prefix + "-gone";
            String live = w.prefix + "-live";
            w.present.add(live);
            Ipam goneIpam = w.ipam(gone);
            AttachmentRecord held = add(goneIpam, "g1");
            assertEquals(w.block(0), held.addresses().get(0).block());
            Cidr empty = w.claimEmpty(gone);
            add(w.ipam(live), "l1");
            Cidr liveEmpty = w.claimEmpty(live);
            BlockReclaimer.Incarnation incarnation = w.reclaimer.incarnation();

            w.at(Duration.ZERO);
            Pass first = await(incarnation.pass());
            assertEquals(List.of(w.block(0), empty), first.candidates());
            assertEquals(2, w.reclaimer.candidates());
            w.at(GRACE.minusNanos(1));
            assertEquals(
                    List.of(),
                    await(incarnation.pass()).released().get(Reason.NODE_GONE),
                    "not yet");
            assertEquals(
                    Map.of(w.block(0), gone, empty, gone, w.block(2), live, liveEmpty, live),
                    w.view().claims());

            w.at(GRACE);
            Pass past = await(incarnation.pass());
            assertEquals(List.of(empty), past.released().get(Reason.NODE_GONE));
            assertEquals(List.of(w.block(0)), past.kept(), "the block holding an allocation stays");
            assertEquals(List.of(), past.candidates());
            assertEquals(1, w.reclaimer.released(Reason.NODE_GONE));
            assertEquals(1, w.reclaimer.kept());
            assertEquals(
                    Map.of(w.block(0), gone, w.block(2), live, liveEmpty, live),
                    w.view().claims(),
                    "a present node's empty block is kept");
            assertTrue(w.view().releasing().isEmpty());

            // The released block is claimable by another node.
            AttachmentRecord other = add(w.ipam(w.prefix + "-other"), "o1");
            assertEquals(empty, other.addresses().get(0).block());

            // Once the gone node's address is released, its last block goes at the next pass.
            await(goneIpam.release("net.g1", "eth0"));
            w.at(GRACE.plus(INTERVAL));
            assertEquals(
                    List.of(w.block(0)),
                    await(incarnation.pass()).released().get(Reason.NODE_GONE));
            assertFalse(w.view().claims().containsValue(gone));
            assertEquals(2, w.reclaimer.released(Reason.NODE_GONE));
            assertEquals(0, w.reclaimer.kept());
        }
    }

    @Test
    void aNodeThatComesBackBeforeTheGraceKeepsEverythingAndItsClockStartsOver() {
        try (World w = new World()) {
            String node = w.prefix + "-flaky";
            Cidr empty = w.claimEmpty(node);
            BlockReclaimer.Incarnation incarnation = w.reclaimer.incarnation();

            w.at(Duration.ZERO);
            assertEquals(List.of(empty), await(incarnation.pass()).candidates());
            w.present.add(node);
            w.at(GRACE.dividedBy(2));
            assertEquals(
                    List.of(),
                    await(incarnation.pass()).candidates(),
                    "back: no longer a candidate");
            w.present.remove(node);
            w.at(GRACE.plusNanos(1));
            Pass again = await(incarnation.pass());
            assertEquals(List.of(empty), again.candidates(), "gone again: its clock starts now");
            assertEquals(List.of(), again.released().get(Reason.NODE_GONE));
            w.at(GRACE.multipliedBy(2));
            assertEquals(List.of(), await(incarnation.pass()).released().get(Reason.NODE_GONE));
            assertEquals(Map.of(empty, node), w.view().claims());

            // A new incarnation (the singleton moved) counts the grace from when it first sees the
            // node.
            BlockReclaimer.Incarnation moved = w.reclaimer.incarnation();
            w.at(GRACE.multipliedBy(3));
            assertEquals(List.of(empty), await(moved.pass()).candidates());
            w.at(GRACE.multipliedBy(4));
            assertEquals(List.of(empty), await(moved.pass()).released().get(Reason.NODE_GONE));
        }
    }

    @Test
    void aBlockLeftReleasingIsCompletedWhenEmptyAndGivenUpWhenNot() {
        try (World w = new World()) {
            String node = w.prefix + "-live";
            w.present.add(node);
            AttachmentRecord held = add(w.ipam(node), "c1");
            Cidr full = held.addresses().get(0).block();
            Cidr empty = w.claimEmpty(node);
            // A release that crashed after its first step, for each block.
            for (Cidr block : List.of(full, empty)) {
                await(
                        ref(PoolEntity.ENTITY_TYPE_KEY, w.pool.name())
                                .askWithStatus(
                                        (ActorRef<StatusReply<Done>> r) ->
                                                new PoolEntity.BeginBlockRelease(block, node, r),
                                        ASK));
            }
            assertEquals(Set.of(full, empty), w.view().releasing());
            BlockReclaimer.Incarnation incarnation = w.reclaimer.incarnation();

            Pass first = await(incarnation.pass());
            assertEquals(
                    List.of(),
                    first.released().get(Reason.UNFINISHED_RELEASE),
                    "it may be under way elsewhere: wait a pass");
            assertEquals(Set.of(full, empty), w.view().releasing());

            w.at(INTERVAL);
            Pass second = await(incarnation.pass());
            assertEquals(List.of(empty), second.released().get(Reason.UNFINISHED_RELEASE));
            assertEquals(1, w.reclaimer.released(Reason.UNFINISHED_RELEASE));
            assertEquals(
                    Map.of(full, node),
                    w.view().claims(),
                    "the block holding an allocation stays the node's");
            assertTrue(w.view().releasing().isEmpty(), "and its release is given up");
            assertEquals(0, w.reclaimer.released(Reason.NODE_GONE));
        }
    }

    @Test
    void theSingletonBehaviourRunsAPassEveryIntervalAndClearsItsGaugesWhenItStops() {
        try (World w = new World()) {
            String gone = w.prefix + "-gone";
            Cidr empty = w.claimEmpty(gone);
            BlockReclaimer fast =
                    new BlockReclaimer(
                            new EntityAsks(testKit.system(), TIMEOUTS),
                            MeshHints.get(testKit.system()),
                            w.catalog,
                            Duration.ofMillis(50),
                            GRACE,
                            () -> Set.copyOf(w.present),
                            w.nanos::get,
                            reason -> {});
            ActorRef<PeriodicSingleton.Command> singleton = testKit.spawn(fast.behavior());
            try {
                testKit.createTestProbe()
                        .awaitAssert(
                                Duration.ofSeconds(20),
                                () -> {
                                    assertEquals(1, fast.candidates());
                                    return null;
                                });
                w.at(GRACE);
                testKit.createTestProbe()
                        .awaitAssert(
                                Duration.ofSeconds(20),
                                () -> {
                                    assertEquals(1, fast.released(Reason.NODE_GONE));
                                    return null;
                                });
                assertFalse(w.view().claims().containsKey(empty));
                w.claimEmpty(gone);
                testKit.createTestProbe()
                        .awaitAssert(
                                Duration.ofSeconds(20),
                                () -> {
                                    assertEquals(
                                            1,
                                            fast.candidates(),
                                            "a new block of the node: absent for less than the grace");
                                    return null;
                                });
            } finally {
                testKit.stop(singleton);
            }
            testKit.createTestProbe()
                    .awaitAssert(
                            Duration.ofSeconds(20),
                            () -> {
                                assertEquals(0, fast.candidates());
                                return null;
                            });
        }
    }
}
