package io.cadastre.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.NodeRoles;
import io.cadastre.shards.PoolEntity;
import io.cadastre.shards.PoolRegistry;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;

/**
 * Cluster members in this JVM, as shards' TestCluster makes its one (loopback, in-memory journal
 * per member, the real sharded entities), each carrying its node's role ({@link NodeRoles}), for
 * the tests that need several: they join as the test says.
 */
final class TestMembers {
    private TestMembers() {}

    /** As {@link #member(String, String, String, int)} on 127.0.0.1. */
    static ActorTestKit member(String system, String node, int port) {
        return member(system, node, "127.0.0.1", port);
    }

    /**
     * @param system the cluster's name: members of one cluster share it
     * @param node the member's node (its role)
     * @param host the loopback address the member's cluster port is on: 127.0.0.1 or ::1
     * @param port the cluster port; 0 for any
     * @return the member, not joined; its entities registered
     */
    static ActorTestKit member(String system, String node, String host, int port) {
        Config config =
                ConfigFactory.parseString(
                                """
                pekko.actor.provider = cluster
                pekko.remote.artery.canonical.hostname = "%s"
                pekko.remote.artery.canonical.port = %d
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.cluster.sharding.passivation.strategy = none
                pekko.cluster.roles = ["%s"]
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.terminate-actor-system = on
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                """
                                        .formatted(host, port, NodeRoles.role(node)))
                        .withFallback(PersistenceTestKitPlugin.getInstance().config())
                        .withFallback(PersistenceTestKitSnapshotPlugin.config())
                        .withFallback(ConfigFactory.load());
        ActorTestKit kit = ActorTestKit.create(system, config);
        PoolRegistry.init(kit.system());
        PoolEntity.init(kit.system());
        BlockEntity.init(kit.system());
        NodeEntity.init(kit.system());
        return kit;
    }

    /** Stops the member (it leaves the cluster first), waiting up to 30 s. */
    static void stop(ActorTestKit member) {
        ActorTestKit.shutdown(member.system(), Duration.ofSeconds(30), false);
    }

    /** Waits until the member is Up. */
    static void awaitUp(ActorSystem<?> system, Duration deadline) {
        Waits.until(
                deadline,
                () -> Cluster.get(system).selfMember().status() == MemberStatus.up(),
                () -> system.name() + " member is " + Cluster.get(system).selfMember().status());
        assertEquals(MemberStatus.up(), Cluster.get(system).selfMember().status());
    }
}
