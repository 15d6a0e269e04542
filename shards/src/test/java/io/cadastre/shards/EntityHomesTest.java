package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardCoordinator;
import org.apache.pekko.cluster.sharding.external.ExternalShardAllocation;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Map.Map1;
import scala.collection.immutable.Map.Map2;
import scala.collection.immutable.Vector$;
import scala.jdk.javaapi.CollectionConverters;
import scala.jdk.javaapi.FutureConverters;

/**
 * Two members in one JVM: a node's entity and its blocks' entities run on the member that
 * published itself as their home, wherever they are asked from, and follow a block to the member
 * of the node that claims it next. Each member has its own in-memory journal, so these tests
 * look only at where entities run ({@link LocalEntities}), not at their state. And the placement
 * survives a shard coordinator restarted on the same member.
 */
class EntityHomesTest {
    private static final String NAME = "EntityHomesTest";
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    private static final AskTimeouts TIMEOUTS =
            AskTimeouts.single(Duration.ofSeconds(3), Duration.ZERO);

    /** Rebalance rounds every half second, not Pekko's 10 s, so that moves home come soon. */
    private static final String FAST_REBALANCE =
            "pekko.cluster.sharding.rebalance-interval = 500ms";

    private static ActorTestKit a;
    private static ActorTestKit b;

    @BeforeAll
    static void start() {
        a = TestCluster.start(NAME, FAST_REBALANCE);
        b = TestCluster.start(NAME, FAST_REBALANCE, Cluster.get(a.system()).selfMember().address());
        a.createTestProbe()
                .awaitAssert(
                        DEADLINE,
                        () -> {
                            assertEquals(
                                    2,
                                    java.util.stream.StreamSupport.stream(
                                                    Cluster.get(a.system())
                                                            .state()
                                                            .getMembers()
                                                            .spliterator(),
                                                    false)
                                            .filter(m -> m.status() == MemberStatus.up())
                                            .count());
                            return null;
                        });
    }

    @AfterAll
    static void stop() {
        b.shutdownTestKit();
        a.shutdownTestKit();
    }

    private static EntityAsks asks(ActorSystem<?> system) {
        return new EntityAsks(system, TIMEOUTS);
    }

    /**
     * Asks the entity ({@code ask}) until, within the deadline, it runs on {@code home} and
     * not on {@code away}.
     */
    private static <C> void assertRunsOn(
            ActorTestKit home,
            ActorTestKit away,
            EntityTypeKey<C> type,
            String entityId,
            Supplier<CompletionStage<?>> ask) {
        home.createTestProbe()
                .awaitAssert(
                        DEADLINE,
                        Duration.ofMillis(200),
                        () -> {
                            TestCluster.await(ask.get());
                            assertTrue(
                                    LocalEntities.get(home.system())
                                            .find(type, entityId)
                                            .isPresent(),
                                    entityId + " not running at its home");
                            assertFalse(
                                    LocalEntities.get(away.system())
                                            .find(type, entityId)
                                            .isPresent(),
                                    entityId + " still running away from its home");
                            return null;
                        });
    }

    @Test
    void aNodesEntityRunsOnTheMemberOfItsAgentThoughAskedFromAnother() {
        String node = "node-b";
        new ShardedIpam(
                b.system(),
                node,
                Map.of(),
                new PoolCatalog(b.system(), TIMEOUTS, Duration.ofSeconds(1)),
                List.of(),
                TIMEOUTS,
                Clock.systemUTC());
        EntityAsks fromA = asks(a.system());
        assertRunsOn(b, a, NodeEntity.ENTITY_TYPE_KEY, node, () -> fromA.nodeView(node));
    }

    @Test
    void aBlockRunsOnItsClaimersMemberAndFollowsTheNextClaimer() {
        Cidr block = Cidr.parse("198.18.7.0/26");
        new EntityHomes(b.system()).claimed(block);
        assertRunsOn(
                b,
                a,
                BlockEntity.ENTITY_TYPE_KEY,
                block.entityId(),
                () -> asks(a.system()).blockView(block));

        // Released by b's node and claimed by a's: a's member publishes itself, the last write.
        new EntityHomes(a.system()).claimed(block);
        assertRunsOn(
                a,
                b,
                BlockEntity.ENTITY_TYPE_KEY,
                block.entityId(),
                () -> asks(b.system()).blockView(block));
    }

    @Test
    void aStrategyStartedAgainByARestartedCoordinatorStillAllocates() throws Exception {
        ShardCoordinator.StartableAllocationStrategy strategy =
                EntityHomes.strategy(a.system(), "StartedTwice");
        strategy.start();
        // A coordinator restarted on the same member starts its strategy again.
        strategy.start();

        ActorRef requester = Adapter.toClassic(a.createTestProbe().ref());
        IndexedSeq<String> none = Vector$.MODULE$.<String>empty();
        scala.concurrent.Future<ActorRef> allocated =
                strategy.allocateShard(requester, "no-home", new Map1<>(requester, none));
        assertEquals(
                requester,
                FutureConverters.asJava(allocated).toCompletableFuture().get(10, TimeUnit.SECONDS));
    }

    @Test
    void noShardMovesHomeWhileTheGuardSaysItIsNoTime() throws Exception {
        AtomicBoolean time = new AtomicBoolean(true);
        ShardCoordinator.StartableAllocationStrategy strategy =
                EntityHomes.strategy(a.system(), "Guarded", time::get);
        strategy.start();
        ExternalShardAllocation.get(a.system())
                .getClient("Guarded")
                .setShardLocation("away", Cluster.get(b.system()).selfMember().address())
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        IndexedSeq<String> awayOnly = CollectionConverters.asScala(List.of("away")).toIndexedSeq();
        // "away" runs at a region of member a; its home is b's member, which has a region too.
        ActorRef regionOnA = Adapter.toClassic(a.createTestProbe().ref());
        Address bAddress = Cluster.get(b.system()).selfMember().address();
        ActorRef regionOnB =
                ((ExtendedActorSystem) Adapter.toClassic(a.system()))
                        .provider()
                        .resolveActorRef(
                                Adapter.toClassic(b.createTestProbe().ref())
                                        .path()
                                        .toStringWithAddress(bAddress));
        var current =
                new Map2<ActorRef, IndexedSeq<String>>(
                        regionOnA, awayOnly, regionOnB, Vector$.MODULE$.<String>empty());
        scala.collection.immutable.Set<String> none =
                scala.collection.immutable.Set$.MODULE$.empty();

        // While it is time, the shard moves home once the strategy has read its home.
        a.createTestProbe()
                .awaitAssert(
                        DEADLINE,
                        () -> {
                            assertTrue(
                                    FutureConverters.asJava(strategy.rebalance(current, none))
                                            .toCompletableFuture()
                                            .get(10, TimeUnit.SECONDS)
                                            .contains("away"),
                                    "moved home while it is time");
                            return null;
                        });
        time.set(false);
        assertTrue(
                FutureConverters.asJava(strategy.rebalance(current, none))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS)
                        .isEmpty(),
                "no move while it is no time");
    }

    @Test
    void itIsTimeToRebalanceOnlyWhileEveryMemberIsReachable() {
        Iterable<Member> members = Cluster.get(a.system()).state().getMembers();
        assertTrue(EntityHomes.timeToRebalance(members, Set.of()), "both up, both reachable");
        Member other = Cluster.get(b.system()).selfMember();
        assertFalse(EntityHomes.timeToRebalance(members, Set.of(other)), "one unreachable");
    }
}
