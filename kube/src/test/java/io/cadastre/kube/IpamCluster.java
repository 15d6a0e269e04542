package io.cadastre.kube;

import static io.cadastre.shards.TestCluster.await;

import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AskTimeouts;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolCatalog;
import io.cadastre.shards.Pools;
import io.cadastre.shards.ShardedIpam;
import io.cadastre.shards.TestCluster;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;

/**
 * The IPAM of these tests: a one-member cluster with the real sharded entities (shards'
 * {@link TestCluster}), the given pools defined, and an {@link Ipam} per node.
 */
final class IpamCluster implements AutoCloseable {
    static final AskTimeouts TIMEOUTS =
            AskTimeouts.single(Duration.ofSeconds(10), Duration.ofSeconds(2));

    private final ActorTestKit testKit;
    final Pools pools;

    IpamCluster(String name, List<PoolSpec> specs) {
        this(name, specs, "");
    }

    /** @param overrides HOCON over TestCluster's ({@code pekko.actor.serialize-messages = off} for a local node agent) */
    IpamCluster(String name, List<PoolSpec> specs, String overrides) {
        testKit = TestCluster.start(name, overrides + "\npekko.loglevel = WARNING");
        pools =
                new Pools(
                        system(),
                        TIMEOUTS,
                        new PoolCatalog(system(), TIMEOUTS, Duration.ofMillis(100)));
        await(pools.defineConfigured(specs));
    }

    ActorSystem<?> system() {
        return testKit.system();
    }

    ActorTestKit testKit() {
        return testKit;
    }

    /** @return the IPAM of a node with these labels and default pools */
    Ipam ipam(String node, Map<String, String> labels, List<String> defaultPools) {
        return new ShardedIpam(
                system(), node, labels, pools.catalog(), defaultPools, TIMEOUTS, Clock.systemUTC());
    }

    /** @return the node's entity as it is now */
    NodeEntity.NodeView nodeView(String node) {
        return await(
                ClusterSharding.get(system())
                        .entityRefFor(NodeEntity.ENTITY_TYPE_KEY, node)
                        .ask(NodeEntity.GetNode::new, Duration.ofSeconds(10)));
    }

    @Override
    public void close() {
        testKit.shutdownTestKit();
    }
}
