package io.cadastre.admin;

import static io.cadastre.admin.AdminCluster.texts;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.admin.AdminCluster.Env;
import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolEntity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * DELETE /v1/nodes/{name} over the real entities: refused for a member, unknown node and bad
 * parameter; without releaseAddresses only the empty blocks go and the rest is reported (by the
 * answer and by the check); with it everything held for the node goes, orphans and borrowed
 * addresses included, then all its blocks; released blocks are claimable by another node; the
 * node shows as removed until its agent registers again.
 */
class AdminNodesTest {
    private static final Duration ASK = Duration.ofSeconds(10);
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    private static List<String> addresses(AttachmentRecord... records) {
        return Stream.of(records)
                .flatMap(r -> r.addresses().stream())
                .map(HeldAddress::address)
                .sorted()
                .toList();
    }

    private static List<String> blocksOf(AttachmentRecord record) {
        return record.addresses().stream().map(h -> h.block().toString()).sorted().toList();
    }

    private static Map<Cidr, String> claims(String pool) {
        return AdminCluster.await(
                        cluster.ref(PoolEntity.ENTITY_TYPE_KEY, pool)
                                .ask(PoolEntity.GetPool::new, ASK))
                .claims();
    }

    private static BlockEntity.BlockView block(Cidr cidr) {
        return AdminCluster.await(
                cluster.ref(BlockEntity.ENTITY_TYPE_KEY, cidr.entityId())
                        .ask(BlockEntity.GetBlock::new, ASK));
    }

    /** A block the pool gives the node, its affinity told to the block, with nothing allocated in it. */
    private static Cidr claimEmptyBlock(String pool, String node) {
        PoolEntity.ClaimOutcome claim =
                AdminCluster.await(
                        cluster.ref(PoolEntity.ENTITY_TYPE_KEY, pool)
                                .askWithStatus(
                                        (ActorRef<StatusReply<PoolEntity.ClaimOutcome>> r) ->
                                                new PoolEntity.ClaimBlock(node, null, r),
                                        ASK));
        assertEquals(PoolEntity.ClaimStatus.CLAIMED, claim.status(), claim.toString());
        AdminCluster.await(
                cluster.ref(BlockEntity.ENTITY_TYPE_KEY, claim.block().entityId())
                        .askWithStatus(
                                (ActorRef<StatusReply<Done>> r) ->
                                        new BlockEntity.ClaimAffinity(node, List.of(), r),
                                ASK));
        return claim.block();
    }

    @Test
    void aMemberAnUnknownNodeAndABadParameterAreRefusedAndChangeNothing() {
        try (Env env = cluster.env()) {
            assertEquals(
                    "node "
                            + AdminCluster.MEMBER_NODE
                            + " is a cluster member (up); stop its agent first",
                    env.delete("/v1/nodes/" + AdminCluster.MEMBER_NODE).error(409));
            assertFalse(
                    env.get("/v1/nodes/" + AdminCluster.MEMBER_NODE)
                            .ok()
                            .get("removed")
                            .asBoolean());

            assertEquals(
                    "unknown node nobody-" + env.n,
                    env.delete("/v1/nodes/nobody-" + env.n).error(404));

            env.add("c1");
            for (String bad : List.of("yes", "TRUE", "1", "")) {
                assertTrue(
                        env.delete("/v1/nodes/" + env.node + "?releaseAddresses=" + bad)
                                .error(400)
                                .contains("releaseAddresses must be true or false"),
                        bad);
            }
            JsonNode node = env.get("/v1/nodes/" + env.node).ok();
            assertFalse(node.get("removed").asBoolean(), "refused before anything was asked");
            assertEquals(1, node.get("attachments").asInt());
        }
    }

    @Test
    void withoutReleaseAddressesOnlyTheEmptyBlocksAreReleasedAndTheRestIsReported() {
        try (Env env = cluster.env()) {
            String gone = "t" + env.n + "-gone";
            Ipam goneIpam = env.ipam(gone, List.of(env.v4.name(), env.v6.name()));
            AttachmentRecord held = env.add(goneIpam, "g1");
            Cidr empty = claimEmptyBlock(env.v4.name(), gone);

            JsonNode removed = env.delete("/v1/nodes/" + gone).ok();
            OpenApi.assertShape("NodeRemoved", removed);
            assertEquals(gone, removed.get("node").asText());
            assertEquals(List.of(empty.toString()), texts(removed.get("releasedBlocks")));
            assertEquals(blocksOf(held), texts(removed.get("remainingBlocks")));
            assertEquals(List.of(), texts(removed.get("releasedAddresses")));
            assertEquals(2, removed.get("remainingAllocations").asLong());
            assertFalse(
                    claims(env.v4.name()).containsKey(empty),
                    "the empty block went back to its pool");
            assertEquals(gone, claims(env.v4.name()).get(held.addresses().get(0).block()));

            JsonNode node = env.get("/v1/nodes/" + gone).ok();
            assertTrue(node.get("removed").asBoolean());
            assertEquals(
                    1, node.get("attachments").asInt(), "the node still records its attachment");

            // The check reports the removed node's allocations apart, and its blocks as
            // reclaimable.
            JsonNode report = env.get("/v1/check").ok();
            OpenApi.assertShape("Report", report);
            assertFalse(report.get("clean").asBoolean());
            assertEquals(0, report.get("allocationsWithoutAttachment").size(), report.toString());
            List<String> ofRemoved = new ArrayList<>();
            report.get("allocationsOfRemovedNodes")
                    .forEach(
                            f -> {
                                assertEquals(gone, f.get("allocation").get("node").asText());
                                ofRemoved.add(f.get("address").asText());
                            });
            assertEquals(addresses(held), ofRemoved.stream().sorted().toList());
            List<String> unknownBlocks = new ArrayList<>();
            report.get("blocksAffineToUnknownNodes")
                    .forEach(f -> unknownBlocks.add(f.get("block").asText()));
            assertEquals(blocksOf(held), unknownBlocks.stream().sorted().toList());

            // Removing again releases nothing more and reports the same.
            JsonNode again = env.delete("/v1/nodes/" + gone).ok();
            assertEquals(List.of(), texts(again.get("releasedBlocks")));
            assertEquals(2, again.get("remainingAllocations").asLong());

            // The released block is claimable by another node.
            Ipam other = env.ipam("t" + env.n + "-other", List.of(env.v4.name(), env.v6.name()));
            AttachmentRecord o1 = env.add(other, "o1");
            assertEquals(
                    empty,
                    o1.addresses().get(0).block(),
                    "the lowest unclaimed block is the released one");
            assertEquals("t" + env.n + "-other", block(empty).affinity());

            // The node's agent starting again (NodeEntity.Register) un-removes it.
            AdminCluster.await(goneIpam.registerNode());
            assertFalse(env.get("/v1/nodes/" + gone).ok().get("removed").asBoolean());
        }
    }

    @Test
    void withReleaseAddressesEverythingHeldForTheNodeAndThenAllItsBlocksAreReleased() {
        try (Env env = cluster.env()) {
            AttachmentRecord mine = env.add("e1");
            String gone = "t" + env.n + "-gone";
            Ipam goneIpam = env.ipam(gone, List.of(env.v4.name(), env.v6.name()));
            AttachmentRecord g1 = env.add(goneIpam, "g1");
            AttachmentRecord g2 = env.add(goneIpam, "g2");
            Cidr goneV4 = g1.addresses().get(0).block();
            // An ADD that crashed between the block and the node: an orphan in the node's own
            // block.
            String orphan =
                    cluster.assignWithoutRecord(goneV4, gone, "net.crashed", false).address();
            // And one borrowed from this env's node's block, listed by the node as borrowed from.
            Cidr envV4 = mine.addresses().get(0).block();
            AdminCluster.await(
                    cluster.ref(NodeEntity.ENTITY_TYPE_KEY, gone)
                            .askWithStatus(
                                    (ActorRef<StatusReply<Done>> r) ->
                                            new NodeEntity.NoteBorrowedBlock(
                                                    env.v4.name(), envV4, r),
                                    ASK));
            String borrowed =
                    cluster.assignWithoutRecord(envV4, gone, "net.borrowed", true).address();

            JsonNode removed = env.delete("/v1/nodes/" + gone + "?releaseAddresses=true").ok();
            OpenApi.assertShape("NodeRemoved", removed);
            List<String> expected = new ArrayList<>(addresses(g1, g2));
            expected.add(orphan);
            expected.add(borrowed);
            assertEquals(
                    expected.stream().sorted().toList(),
                    texts(removed.get("releasedAddresses")).stream().sorted().toList());
            assertEquals(
                    blocksOf(g1),
                    texts(removed.get("releasedBlocks")),
                    "the node's v4 and v6 blocks");
            assertEquals(List.of(), texts(removed.get("remainingBlocks")));
            assertEquals(0, removed.get("remainingAllocations").asLong());

            assertFalse(claims(env.v4.name()).containsValue(gone));
            assertFalse(claims(env.v6.name()).containsValue(gone));
            assertFalse(
                    block(envV4).allocations().containsKey(borrowed),
                    "the borrowed address is free");
            assertEquals(Map.of(), block(goneV4).allocations());
            assertEquals(
                    List.of(),
                    AdminCluster.await(goneIpam.attachments()),
                    "the node forgot its attachments");
            assertEquals(
                    addresses(mine).size(),
                    env.get("/v1/check").ok().get("checkedAllocations").asInt());
            assertTrue(
                    env.get("/v1/check").ok().get("clean").asBoolean(),
                    "this env's node is untouched");

            // Both released blocks are claimable by another node.
            Ipam other = env.ipam("t" + env.n + "-other", List.of(env.v4.name(), env.v6.name()));
            assertEquals(blocksOf(g1), blocksOf(env.add(other, "o1")));
        }
    }
}
