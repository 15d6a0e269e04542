package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;

/**
 * For the tests over real sharded entities: a one-member cluster with every entity registered, an
 * in-memory journal, and every message serialized (serialize-messages = on). Shared with other
 * modules' tests through the shards test-jar.
 */
public final class TestCluster {
    private TestCluster() {}

    /** @return the test kit of a cluster of one that is Up; shut it down after the tests */
    public static ActorTestKit start(String name) {
        return start(name, "");
    }

    /**
     * @param overrides HOCON laid over the defaults (roles, serialize-messages = off, log level)
     * @return the test kit of a cluster of one that is Up; shut it down after the tests
     */
    public static ActorTestKit start(String name, String overrides) {
        Config config =
                ConfigFactory.parseString(overrides)
                        .withFallback(
                                ConfigFactory.parseString(
                                        """
                pekko.actor.provider = cluster
                pekko.actor.serialize-messages = on
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.cluster.sharding.passivation.strategy = none
                """))
                        .withFallback(PersistenceTestKitPlugin.getInstance().config())
                        .withFallback(PersistenceTestKitSnapshotPlugin.config())
                        .withFallback(ConfigFactory.load());
        ActorTestKit testKit = ActorTestKit.create(name, config);
        ActorSystem<?> system = testKit.system();
        Cluster cluster = Cluster.get(system);
        cluster.manager().tell(Join.create(cluster.selfMember().address()));
        PoolRegistry.init(system);
        PoolEntity.init(system);
        BlockEntity.init(system);
        NodeEntity.init(system);
        testKit.createTestProbe()
                .awaitAssert(
                        Duration.ofSeconds(20),
                        () -> {
                            assertEquals(MemberStatus.up(), cluster.selfMember().status());
                            return null;
                        });
        return testKit;
    }

    /** @return the stage's value, waiting up to 30 s; its failure's cause wrapped in a CompletionException */
    public static <T> T await(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new CompletionException(e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
