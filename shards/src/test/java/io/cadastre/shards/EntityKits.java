package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * For the tests of one entity's behaviour without a cluster: an actor system with the persistence
 * test kit's in-memory journal, started before a test class's tests and shut down after them, as a
 * JUnit extension ({@code @RegisterExtension static final EntityKits entities = new
 * EntityKits();}).
 */
final class EntityKits implements BeforeAllCallback, AfterAllCallback {
    private ActorTestKit testKit;

    @Override
    public void beforeAll(ExtensionContext context) {
        testKit =
                ActorTestKit.create(
                        context.getRequiredTestClass().getSimpleName(),
                        EventSourcedBehaviorTestKit.config().withFallback(ConfigFactory.load()));
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (testKit != null) {
            testKit.shutdownTestKit();
        }
    }

    /** @return the actor system's test kit (probes, the system itself) */
    ActorTestKit testKit() {
        return testKit;
    }

    /** @return a kit running the entity's behaviour, its journal and snapshots cleared */
    <C, E, S> EventSourcedBehaviorTestKit<C, E, S> kit(Behavior<C> behavior) {
        EventSourcedBehaviorTestKit<C, E, S> kit =
                EventSourcedBehaviorTestKit.create(testKit.system(), behavior);
        kit.clear();
        return kit;
    }

    /**
     * Records how many events each atomic write of the test journal carries, holding the first
     * write until {@link #release}: commands sent meanwhile queue behind it, as calls do behind a
     * write in flight. Closing releases and removes the policy.
     */
    static final class Writes implements AutoCloseable {
        private final PersistenceTestKit journal;
        private final List<Integer> sizes = new CopyOnWriteArrayList<>();
        private final CountDownLatch released = new CountDownLatch(1);

        Writes(PersistenceTestKit journal) {
            this.journal = journal;
            journal.withPolicy(
                    (persistenceId, operation) -> {
                        if (operation instanceof WriteEvents write) {
                            sizes.add(write.getBatch().size());
                            if (sizes.size() == 1) {
                                awaitRelease();
                            }
                        }
                        return ProcessingSuccess$.MODULE$;
                    });
        }

        private void awaitRelease() {
            try {
                assertTrue(
                        released.await(10, TimeUnit.SECONDS), "the first write was not released");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        void release() {
            released.countDown();
        }

        /** @return the number of events of each write so far, in order */
        List<Integer> sizes() {
            return List.copyOf(sizes);
        }

        @Override
        public void close() {
            released.countDown();
            journal.resetPolicy();
        }
    }
}
