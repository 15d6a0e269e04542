package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/** A shutdown that ran all its phases yet never terminates is told apart from one that terminates. */
class TerminationWatchTest {
    private static final Config LOCAL =
            ConfigFactory.parseString(
                            """
            pekko.actor.provider = local
            pekko.loglevel = WARNING
            pekko.coordinated-shutdown.exit-jvm = off
            pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
            pekko.coordinated-shutdown.phases.actor-system-terminate.timeout = 1s
            """)
                    .withFallback(ConfigFactory.defaultReference());

    /** An actor that, told anything, blocks its thread until {@code release}. */
    private static Behavior<String> blocking(CountDownLatch entered, CountDownLatch release) {
        return Behaviors.receiveMessage(
                message -> {
                    entered.countDown();
                    release.await();
                    return Behaviors.same();
                });
    }

    @Test
    void anActorBlockedOnItsThreadKeepsTheSystemFromTerminatingAndThatIsSaid() throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ActorSystem<String> system = ActorSystem.create(blocking(entered, release), "stuck", LOCAL);
        try {
            system.tell("block");
            assertTrue(entered.await(10, TimeUnit.SECONDS));
            system.terminate();
            assertFalse(TerminationWatch.await(system, Duration.ofMillis(500)));
            assertFalse(system.getWhenTerminated().toCompletableFuture().isDone());
            String alive = ThreadDump.actorTree(system);
            assertTrue(
                    alive.contains("⌊-> user ") && alive.contains("ActorAdapter status="), alive);
        } finally {
            release.countDown();
            system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aSystemThatStopsLaterIsWaitedForAndTerminates() throws Exception {
        ActorSystem<String> system = ActorSystem.create(Behaviors.ignore(), "healthy", LOCAL);
        CompletableFuture<Boolean> watched =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return TerminationWatch.await(system, Duration.ofSeconds(10));
                            } catch (InterruptedException e) {
                                throw new IllegalStateException(e);
                            }
                        });
        system.terminate();
        assertTrue(watched.get(30, TimeUnit.SECONDS));
        assertTrue(system.getWhenTerminated().toCompletableFuture().isDone());
    }
}
