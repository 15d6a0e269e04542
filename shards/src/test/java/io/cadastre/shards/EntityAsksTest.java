package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Asks that are sent again after each attempt's timeout, against a sharded entity that loses the
 * first messages it gets (as messages to a crashed member are lost); and asks that go to a listed
 * local incarnation directly ({@link LocalEntities}).
 */
class EntityAsksTest {
    /** Loses the first {@code lose} messages, then answers; {@code refuse} answers with an error. */
    private record Ping(int lose, boolean refuse, ActorRef<StatusReply<Integer>> replyTo) {}

    private static final EntityTypeKey<Ping> KEY = EntityTypeKey.create(Ping.class, "Flaky");
    private static final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
    private static ActorTestKit testKit;
    private static ClusterSharding sharding;
    private static final LocalEntities local = LocalEntities.empty();
    private static final AtomicInteger ids = new AtomicInteger();

    @BeforeAll
    static void startCluster() {
        // Pings are local: they need no serializer.
        testKit = TestCluster.start("EntityAsksTest", "pekko.actor.serialize-messages = off");
        sharding = ClusterSharding.get(testKit.system());
        sharding.init(
                Entity.of(
                        KEY,
                        ctx -> local.listed(KEY, ctx.getEntityId(), flaky(ctx.getEntityId()))));
        // The coordinator's first allocation can take longer than the short attempts below.
        asks(Duration.ofSeconds(20), Duration.ofSeconds(20))
                .askStatus(entity(), ping(0, false))
                .toCompletableFuture()
                .join();
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    private static Behavior<Ping> flaky(String id) {
        AtomicInteger count = received.computeIfAbsent(id, i -> new AtomicInteger());
        return Behaviors.receiveMessage(
                ping -> {
                    int n = count.incrementAndGet();
                    if (ping.refuse()) {
                        ping.replyTo()
                                .tell(
                                        Refusal.reply(
                                                IpamException.Reason.BLOCK_RELEASING,
                                                "block 198.18.0.0/26 is being released"));
                    } else if (n > ping.lose()) {
                        ping.replyTo().tell(StatusReply.success(n));
                    }
                    return Behaviors.same();
                });
    }

    private static EntityRef<Ping> entity() {
        return sharding.entityRefFor(KEY, "e" + ids.incrementAndGet());
    }

    private static EntityAsks asks(Duration total, Duration perAttempt) {
        return new EntityAsks(
                sharding,
                local,
                testKit.system().scheduler(),
                new AskTimeouts(total, perAttempt, Duration.ofSeconds(60)));
    }

    /** @return the Ping losing the first {@code lose} messages, or refused */
    private static Function<ActorRef<StatusReply<Integer>>, Ping> ping(int lose, boolean refuse) {
        return r -> new Ping(lose, refuse, r);
    }

    /** @return what the ask failed with, asserting it is an {@link IpamException} */
    private static IpamException failure(CompletionStage<Integer> ask) {
        CompletionException e =
                assertThrows(CompletionException.class, () -> ask.toCompletableFuture().join());
        return assertInstanceOf(IpamException.class, e.getCause());
    }

    @Test
    void lostMessagesAreSentAgainUntilOneIsAnswered() {
        EntityRef<Ping> ref = entity();
        int answeredAttempt =
                asks(Duration.ofSeconds(20), Duration.ofMillis(300))
                        .askStatus(ref, ping(2, false))
                        .toCompletableFuture()
                        .join();
        assertEquals(3, answeredAttempt);
    }

    @Test
    void noAnswerWithinTheTotalIsUnavailable() {
        EntityRef<Ping> ref = entity();
        IpamException e =
                failure(
                        asks(Duration.ofMillis(900), Duration.ofMillis(200))
                                .askStatus(ref, ping(Integer.MAX_VALUE, false)));
        assertEquals(IpamException.Reason.UNAVAILABLE, e.reason());
        int sent = received.get(ref.getEntityId()).get();
        assertTrue(sent >= 3 && sent <= 5, "attempts of 200 ms within 900 ms: " + sent);
    }

    @Test
    void aRefusalIsNotRetried() {
        EntityRef<Ping> ref = entity();
        IpamException refused =
                failure(
                        asks(Duration.ofSeconds(10), Duration.ofSeconds(5))
                                .askStatus(ref, ping(0, true)));
        assertEquals(
                IpamException.Reason.BLOCK_RELEASING,
                refused.reason(),
                "the refusal keeps its reason");
        assertEquals("block 198.18.0.0/26 is being released", refused.getMessage());
        assertEquals(1, received.get(ref.getEntityId()).get());
    }

    /**
     * @return an incarnation sharding knows nothing of, listed under the entity's id, so that only
     *     a direct send reaches it; it answers -1, and stops after its first answer when told to.
     *     Returns once it is listed: a spawned actor runs its setup, which lists it, after spawn
     *     has returned.
     */
    private static ActorRef<Ping> listedImpostor(EntityRef<Ping> ref, boolean stopAfterAnswer) {
        ActorRef<Ping> impostor =
                testKit.spawn(
                        local.listed(
                                KEY,
                                ref.getEntityId(),
                                Behaviors.receiveMessage(
                                        ping -> {
                                            ping.replyTo().tell(StatusReply.success(-1));
                                            return stopAfterAnswer
                                                    ? Behaviors.stopped()
                                                    : Behaviors.same();
                                        })));
        testKit.createTestProbe()
                .awaitAssert(
                        Duration.ofSeconds(10),
                        () -> {
                            assertTrue(
                                    local.find(KEY, ref.getEntityId())
                                            .filter(impostor::equals)
                                            .isPresent(),
                                    "the impostor is listed");
                            return null;
                        });
        return impostor;
    }

    @Test
    void aRetriedAskGoesToTheListedIncarnationUntilItStops() {
        EntityRef<Ping> ref = entity();
        ActorRef<Ping> listed = listedImpostor(ref, true);
        EntityAsks asks = asks(Duration.ofSeconds(20), Duration.ofSeconds(20));
        assertEquals(-1, asks.askStatus(ref, ping(0, false)).toCompletableFuture().join());

        testKit.createTestProbe().expectTerminated(listed);
        assertTrue(local.find(KEY, ref.getEntityId()).isEmpty(), "unlisted once it stopped");
        assertEquals(
                1,
                asks.askStatus(ref, ping(0, false)).toCompletableFuture().join(),
                "through sharding again");
        assertTrue(local.find(KEY, ref.getEntityId()).isPresent(), "the sharded one is listed");
    }
}
