package io.cadastre.shards;

import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
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
}
