package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
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
        return start(name, overrides, null);
    }

    /**
     * @param overrides HOCON laid over the defaults (roles, serialize-messages = off, log level)
     * @param seed a member to join (its system must have the same name), or null to form a new
     *     cluster; each member has a journal of its own, in memory
     * @return the test kit of a member that is Up; shut it down after the tests
     */
    public static ActorTestKit start(String name, String overrides, Address seed) {
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
        cluster.manager().tell(Join.create(seed != null ? seed : cluster.selfMember().address()));
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

    /**
     * Frees every allocation in the pool's claimed blocks, then deletes the pool (which checks that
     * nothing is left): how a test leaves the cluster's pools as it found them. Each ask waits up
     * to 10 s.
     */
    public static void removePool(ActorSystem<?> system, Pools pools, String pool) {
        Duration ask = Duration.ofSeconds(10);
        ClusterSharding sharding = ClusterSharding.get(system);
        PoolEntity.PoolView view =
                await(
                        sharding.entityRefFor(PoolEntity.ENTITY_TYPE_KEY, pool)
                                .ask(PoolEntity.GetPool::new, ask));
        for (Cidr block : view.claims().keySet()) {
            EntityRef<BlockEntity.Command> blockRef =
                    sharding.entityRefFor(BlockEntity.ENTITY_TYPE_KEY, block.entityId());
            for (Allocation a :
                    await(blockRef.ask(BlockEntity.GetBlock::new, ask)).allocations().values()) {
                await(
                        blockRef.ask(
                                (ActorRef<BlockEntity.Released> r) ->
                                        new BlockEntity.Release(a.handle(), a.ifname(), false, r),
                                ask));
            }
        }
        await(pools.delete(pool));
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
