package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Asks that are sent again after each attempt's timeout, against a sharded entity that loses the
 * first messages it gets (as messages to a crashed member are lost).
 */
class EntityAsksTest {
    /** Loses the first {@code lose} messages, then answers; {@code refuse} answers with an error. */
    private record Ping(int lose, boolean refuse, ActorRef<StatusReply<Integer>> replyTo) {}

    private static final EntityTypeKey<Ping> KEY = EntityTypeKey.create(Ping.class, "Flaky");
    private static final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
    private static ActorTestKit testKit;
    private static ClusterSharding sharding;
    private static final AtomicInteger ids = new AtomicInteger();

    @BeforeAll
    static void startCluster() {
        testKit =
                ActorTestKit.create(
                        "EntityAsksTest",
                        ConfigFactory.parseString(
                                        """
                pekko.actor.provider = cluster
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                """)
                                .withFallback(ConfigFactory.load()));
        Cluster cluster = Cluster.get(testKit.system());
        cluster.manager().tell(Join.create(cluster.selfMember().address()));
        sharding = ClusterSharding.get(testKit.system());
        sharding.init(Entity.of(KEY, ctx -> flaky(ctx.getEntityId())));
        testKit.createTestProbe()
                .awaitAssert(
                        Duration.ofSeconds(20),
                        () -> {
                            assertEquals(MemberStatus.up(), cluster.selfMember().status());
                            return null;
                        });
        // The coordinator's first allocation can take longer than the short attempts below.
        asks(Duration.ofSeconds(20), Duration.ofSeconds(20))
                .askStatus(entity(), (ActorRef<StatusReply<Integer>> r) -> new Ping(0, false, r))
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
        return new EntityAsks(sharding, new AskTimeouts(total, perAttempt, Duration.ofSeconds(60)));
    }

    @Test
    void lostMessagesAreSentAgainUntilOneIsAnswered() {
        EntityRef<Ping> ref = entity();
        int answeredAttempt =
                asks(Duration.ofSeconds(20), Duration.ofMillis(300))
                        .askStatus(ref, (ActorRef<StatusReply<Integer>> r) -> new Ping(2, false, r))
                        .toCompletableFuture()
                        .join();
        assertEquals(3, answeredAttempt);
    }

    @Test
    void noAnswerWithinTheTotalIsUnavailable() {
        EntityRef<Ping> ref = entity();
        CompletionException e =
                assertThrows(
                        CompletionException.class,
                        () ->
                                asks(Duration.ofMillis(900), Duration.ofMillis(200))
                                        .askStatus(
                                                ref,
                                                (ActorRef<StatusReply<Integer>> r) ->
                                                        new Ping(Integer.MAX_VALUE, false, r))
                                        .toCompletableFuture()
                                        .join());
        assertEquals(
                IpamException.Reason.UNAVAILABLE,
                assertInstanceOf(IpamException.class, e.getCause()).reason());
        int sent = received.get(ref.getEntityId()).get();
        assertTrue(sent >= 3 && sent <= 5, "attempts of 200 ms within 900 ms: " + sent);
    }

    @Test
    void aCommandAskedOnceIsNotRepeated() {
        EntityRef<Ping> ref = entity();
        CompletionException e =
                assertThrows(
                        CompletionException.class,
                        () ->
                                asks(Duration.ofMillis(900), Duration.ofMillis(200))
                                        .askStatusOnce(
                                                ref,
                                                (ActorRef<StatusReply<Integer>> r) ->
                                                        new Ping(1, false, r))
                                        .toCompletableFuture()
                                        .join());
        assertEquals(
                IpamException.Reason.UNAVAILABLE,
                assertInstanceOf(IpamException.class, e.getCause()).reason());
        assertEquals(1, received.get(ref.getEntityId()).get());
    }

    @Test
    void aRefusalIsNotRetried() {
        EntityRef<Ping> ref = entity();
        CompletionException e =
                assertThrows(
                        CompletionException.class,
                        () ->
                                asks(Duration.ofSeconds(10), Duration.ofSeconds(5))
                                        .askStatus(
                                                ref,
                                                (ActorRef<StatusReply<Integer>> r) ->
                                                        new Ping(0, true, r))
                                        .toCompletableFuture()
                                        .join());
        IpamException refused = assertInstanceOf(IpamException.class, e.getCause());
        assertEquals(
                IpamException.Reason.BLOCK_RELEASING,
                refused.reason(),
                "the refusal keeps its reason");
        assertEquals("block 198.18.0.0/26 is being released", refused.getMessage());
        assertEquals(1, received.get(ref.getEntityId()).get());
    }
}
