package io.cadastre.kube;

import static io.cadastre.shards.TestCluster.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.admin.Inventory;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolCatalog;
import io.cadastre.shards.Pools;
import io.cadastre.shards.ShardedIpam;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.junit.jupiter.api.Test;

/**
 * A Node deleted from Kubernetes: two members each watching through the production
 * {@link KubeApi}, each with its {@link DeletedNodeReleaser} started as the cluster singleton, the
 * admin API's node removal over the real entities. The node's addresses are released after the
 * grace (a clock the test moves), exactly once; with the API gone nothing is released.
 */
class KubernetesNodeReleaseTest {
    private static final Duration GRACE = Duration.ofHours(1);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final PoolSpec POOL =
            new PoolSpec("release-v4", Cidr.parse("198.18.96.0/24"), 28, false, true, 0);

    @Test
    void aDeletedNodeIsReleasedOnceAndNothingWithoutTheApi() {
        AtomicLong nanos = new AtomicLong(1_000_000_000L);
        List<ActorTestKit> members = new ArrayList<>();
        List<KubeApi> apis = new ArrayList<>();
        List<DeletedNodeReleaser> releasers = new ArrayList<>();
        try (MockApi mock = new MockApi()) {
            mock.node("member-a", Map.of());
            mock.node("member-b", Map.of());
            mock.node("gone-node", Map.of());
            for (String node : List.of("member-a", "member-b")) {
                members.add(TestMembers.member("kube-release", node, 0));
            }
            ActorSystem<?> first = members.get(0).system();
            for (ActorTestKit member : members) {
                Cluster.get(member.system())
                        .manager()
                        .tell(Join.create(Cluster.get(first).selfMember().address()));
            }
            for (ActorTestKit member : members) {
                TestMembers.awaitUp(member.system(), WAIT);
            }
            Pools pools = pools(first);
            await(pools.defineConfigured(List.of(POOL)));
            Ipam gone =
                    new ShardedIpam(
                            first,
                            "gone-node",
                            Map.of(),
                            pools.catalog(),
                            List.of(POOL.name()),
                            IpamCluster.TIMEOUTS,
                            Clock.systemUTC());
            List<AttachmentRecord> held = List.of(assign(gone, "c1"), assign(gone, "c2"));

            for (int i = 0; i < members.size(); i++) {
                ActorSystem<?> system = members.get(i).system();
                KubeApi api =
                        mock.agentApi(i == 0 ? "member-a" : "member-b", Duration.ofSeconds(1));
                apis.add(api);
                DeletedNodeReleaser releaser =
                        new DeletedNodeReleaser(
                                DeletedNodeReleaser.adminNodes(
                                        new Inventory(system, pools(system), IpamCluster.TIMEOUTS)),
                                DeletedNodeReleaser.nodeObjects(api),
                                GRACE,
                                Duration.ofMillis(200),
                                nanos::get);
                releasers.add(releaser);
                DeletedNodeReleaser.startSingleton(system, releaser);
            }
            awaitPasses(releasers, 2);
            assertEquals(0, candidates(releasers), "every Cadastre node has its Node");

            mock.deleteNode("gone-node");
            Waits.until(
                    WAIT,
                    () -> candidates(releasers) == 1,
                    () -> "gone-node seen without its Node");
            awaitPasses(releasers, 2);
            assertEquals(0, released(releasers), "not before the grace");
            for (AttachmentRecord a : held) {
                assertEquals(a, await(gone.lookup(a.handle(), a.ifname())).orElseThrow());
            }

            nanos.addAndGet(GRACE.toNanos());
            Waits.until(
                    WAIT, () -> released(releasers) == 1, () -> "released " + released(releasers));
            for (AttachmentRecord a : held) {
                assertTrue(
                        await(gone.lookup(a.handle(), a.ifname())).isEmpty(),
                        a.key() + " released");
            }
            assertTrue(nodeView(first, "gone-node").removed(), "the node is marked removed");
            nanos.addAndGet(GRACE.toNanos());
            awaitPasses(releasers, 3);
            assertEquals(1, released(releasers), "released once, by one member");
            assertTrue(
                    releasers.stream().anyMatch(r -> r.released() == 0),
                    "the other member released nothing");

            // Without the API, a Cadastre node without a Node is not taken for a deleted one.
            mock.stop();
            Ipam orphan =
                    new ShardedIpam(
                            first,
                            "orphan-node",
                            Map.of(),
                            pools.catalog(),
                            List.of(POOL.name()),
                            IpamCluster.TIMEOUTS,
                            Clock.systemUTC());
            AttachmentRecord kept = assign(orphan, "o1");
            for (int round = 0; round < 3; round++) {
                nanos.addAndGet(GRACE.multipliedBy(2).toNanos());
                awaitPasses(releasers, 1);
            }
            assertEquals(1, released(releasers));
            assertEquals(kept, await(orphan.lookup(kept.handle(), kept.ifname())).orElseThrow());
        } finally {
            apis.forEach(KubeApi::close);
            members.forEach(TestMembers::stop);
        }
    }

    private static Pools pools(ActorSystem<?> system) {
        return new Pools(
                system,
                IpamCluster.TIMEOUTS,
                new PoolCatalog(system, IpamCluster.TIMEOUTS, Duration.ofMillis(100)));
    }

    private static AttachmentRecord assign(Ipam ipam, String container) {
        return await(
                ipam.assign(
                        new AssignRequest(
                                "release." + container,
                                "eth0",
                                "release",
                                container,
                                null,
                                "default",
                                container,
                                List.of(),
                                List.of())));
    }

    private static NodeEntity.NodeView nodeView(ActorSystem<?> system, String node) {
        return await(
                ClusterSharding.get(system)
                        .entityRefFor(NodeEntity.ENTITY_TYPE_KEY, node)
                        .ask(NodeEntity.GetNode::new, Duration.ofSeconds(10)));
    }

    private static long released(List<DeletedNodeReleaser> releasers) {
        return releasers.stream().mapToLong(DeletedNodeReleaser::released).sum();
    }

    private static int candidates(List<DeletedNodeReleaser> releasers) {
        return releasers.stream().mapToInt(DeletedNodeReleaser::candidates).sum();
    }

    /** Waits until the singleton, wherever it runs, has finished {@code more} passes more. */
    private static void awaitPasses(List<DeletedNodeReleaser> releasers, int more) {
        long target = releasers.stream().mapToLong(DeletedNodeReleaser::passes).sum() + more;
        Waits.until(
                WAIT,
                () -> releasers.stream().mapToLong(DeletedNodeReleaser::passes).sum() >= target,
                () -> "passes");
    }
}
