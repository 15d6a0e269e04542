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
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolEntity;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Release, GC and the consistency check over the real entities, through the server: what each
 * changes (and that bad input changes nothing), and the check finding the states a crash between
 * two steps of ADD or DEL can leave, built here with the entities' commands directly.
 */
class AdminRepairTest {
    private static final Duration ASK = Duration.ofSeconds(10);
    @RegisterExtension static final AdminCluster cluster = new AdminCluster();

    private static List<String> addresses(AttachmentRecord record) {
        return record.addresses().stream().map(HeldAddress::address).toList();
    }

    private static BlockEntity.BlockView block(Cidr cidr) {
        return AdminCluster.await(
                cluster.ref(BlockEntity.ENTITY_TYPE_KEY, cidr.entityId())
                        .ask(BlockEntity.GetBlock::new, ASK));
    }

    private static Optional<AttachmentRecord> recorded(Env env, String container) {
        return AdminCluster.await(env.ipam.lookup("net." + container, "eth0"));
    }

    // ---- release ----

    @Test
    void releaseByAddressFreesTheWholeAttachmentNodeFirst() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            AttachmentRecord c2 = env.add("c2");
            JsonNode released =
                    env.post(
                                    "/v1/release",
                                    "{\"address\":\"" + c1.addresses().get(0).address() + "\"}")
                            .ok();
            assertEquals(
                    addresses(c1),
                    texts(released.get("released")),
                    "both families of the attachment");

            assertEquals(Optional.empty(), recorded(env, "c1"), "the node forgot the attachment");
            assertEquals(Optional.of(c2), recorded(env, "c2"), "the other attachment is untouched");
            for (HeldAddress held : c1.addresses()) {
                assertFalse(
                        block(held.block()).allocations().containsKey(held.address()),
                        held.address() + " is free");
            }
            assertTrue(
                    env.get("/v1/addresses/" + c1.addresses().get(0).address())
                            .ok()
                            .get("allocation")
                            .isNull());
            assertEquals(1, env.get("/v1/nodes/" + env.node).ok().get("attachments").asInt());

            assertEquals(
                    List.of(),
                    texts(
                            env.post(
                                            "/v1/release",
                                            "{\"address\":\""
                                                    + c1.addresses().get(0).address()
                                                    + "\"}")
                                    .ok()
                                    .get("released")),
                    "again: nothing held, nothing released");
            assertTrue(env.get("/v1/check").ok().get("clean").asBoolean());
        }
    }

    @Test
    void releaseByHandleFreesTheAttachmentAndTheNodeForgetsIt() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            String body =
                    "{\"node\":\"" + env.node + "\",\"handle\":\"net.c1\",\"ifname\":\"eth0\"}";
            assertEquals(addresses(c1), texts(env.post("/v1/release", body).ok().get("released")));
            assertEquals(Optional.empty(), recorded(env, "c1"));
            assertEquals(0, env.get("/v1/nodes/" + env.node).ok().get("attachmentList").size());
            for (HeldAddress held : c1.addresses()) {
                assertFalse(block(held.block()).allocations().containsKey(held.address()));
            }
            assertEquals(
                    List.of(),
                    texts(env.post("/v1/release", body).ok().get("released")),
                    "idempotent");
        }
    }

    @Test
    void releaseByHandleSweepsTheNodesBlocksForAnAttachmentItDoesNotRecord() {
        try (Env env = cluster.env()) {
            env.add("c1");
            Cidr block = Cidr.parse("198.18." + env.n + ".0/26");
            BlockEntity.AssignOutcome orphan =
                    cluster.assignWithoutRecord(block, env.node, "net.lost", false);
            // ifname defaults to eth0, as in cadastrectl.
            JsonNode released =
                    env.post(
                                    "/v1/release",
                                    "{\"node\":\"" + env.node + "\",\"handle\":\"net.lost\"}")
                            .ok();
            assertEquals(List.of(orphan.address()), texts(released.get("released")));
            assertFalse(block(block).allocations().containsKey(orphan.address()));
        }
    }

    @Test
    void badReleaseRequestsAreRefusedAndChangeNothing() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            String v4 = c1.addresses().get(0).address();
            assertTrue(
                    env.post("/v1/release", "{\"address\": ")
                            .error(400)
                            .startsWith("malformed JSON"));
            assertEquals(
                    "the body must be a JSON object",
                    env.post("/v1/release", "[\"" + v4 + "\"]").error(400));
            assertEquals("the body must be a JSON object", env.post("/v1/release", "").error(400));
            assertTrue(
                    env.post(
                                    "/v1/release",
                                    "{\"address\":\""
                                            + v4
                                            + "\",\"node\":\""
                                            + env.node
                                            + "\",\"handle\":\"net.c1\"}")
                            .error(400)
                            .contains("not both"));
            assertTrue(env.post("/v1/release", "{}").error(400).contains("none was given"));
            assertTrue(
                    env.post("/v1/release", "{\"adress\":\"" + v4 + "\"}")
                            .error(400)
                            .contains("unknown field adress"));
            assertEquals(
                    "\"handle\" is required",
                    env.post("/v1/release", "{\"node\":\"" + env.node + "\"}").error(400));
            assertEquals(
                    "\"address\" must be a non-empty string",
                    env.post("/v1/release", "{\"address\":42}").error(400));
            assertTrue(
                    env.post("/v1/release", "{\"address\":\"198.18." + env.n + "\"}")
                            .error(400)
                            .contains("198.18." + env.n));
            assertTrue(
                    env.post("/v1/release", "{\"address\":\"192.0.2.7\"}")
                            .error(404)
                            .contains("in none of the pools"));

            assertEquals(Optional.of(c1), recorded(env, "c1"), "the attachment is still recorded");
            for (HeldAddress held : c1.addresses()) {
                assertTrue(
                        block(held.block())
                                .allocations()
                                .get(held.address())
                                .isFor("net.c1", "eth0"));
            }
        }
    }

    // ---- GC ----

    @Test
    void gcReleasesWhatIsNotValidOnThisAgentsNode() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            AttachmentRecord c2 = env.add("c2");
            String body =
                    "{\"node\":\""
                            + env.node
                            + "\",\"network\":\"net\",\"validAttachments\":[{\"containerId\":\"c1\",\"ifname\":\"eth0\"}]}";
            assertEquals(
                    List.of("net.c2/eth0"), texts(env.post("/v1/gc", body).ok().get("released")));
            assertEquals(Optional.of(c1), recorded(env, "c1"));
            assertEquals(Optional.empty(), recorded(env, "c2"));
            for (HeldAddress held : c2.addresses()) {
                assertFalse(block(held.block()).allocations().containsKey(held.address()));
            }
            assertEquals(
                    List.of(),
                    texts(env.post("/v1/gc", body).ok().get("released")),
                    "again: nothing left to release");
        }
    }

    @Test
    void badGcRequestsAreRefusedAndChangeNothing() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            assertTrue(
                    env.post(
                                    "/v1/gc",
                                    "{\"node\":\"elsewhere\",\"network\":\"net\",\"validAttachments\":[]}")
                            .error(400)
                            .startsWith("GC runs on the node's own agent"));
            assertTrue(
                    env.post("/v1/gc", "{\"node\":\"" + env.node + "\",\"network\":\"net\"}")
                            .error(400)
                            .contains("validAttachments"));
            assertTrue(
                    env.post(
                                    "/v1/gc",
                                    "{\"node\":\""
                                            + env.node
                                            + "\",\"network\":\"net\",\"validAttachments\":[{\"containerId\":\"c1\"}]}")
                            .error(400)
                            .contains("ifname"));
            assertTrue(
                    env.post(
                                    "/v1/gc",
                                    "{\"node\":\""
                                            + env.node
                                            + "\",\"network\":\"net\",\"validAttachments\":[\"c1\"]}")
                            .error(400)
                            .contains("must be an object"));
            assertTrue(env.post("/v1/gc", "{\"node\":").error(400).startsWith("malformed JSON"));
            assertEquals(Optional.of(c1), recorded(env, "c1"));
        }
    }

    // ---- the check ----

    @Test
    void theCheckIsCleanAfterNormalAdds() {
        try (Env env = cluster.env()) {
            env.add("c1");
            env.add("c2");
            JsonNode report = env.get("/v1/check").ok();
            OpenApi.assertShape("Report", report);
            assertTrue(report.get("clean").asBoolean(), report.toString());
            assertEquals(4, report.get("checkedAllocations").asLong());
            assertEquals(2, report.get("checkedAttachments").asLong());
            assertTrue(report.get("tookMillis").asLong() >= 0);
            assertEquals(0, report.get("allocationsWithoutAttachment").size());
            assertEquals(0, report.get("attachmentsWithoutAllocation").size());
            assertEquals(0, report.get("blocksAffineToUnknownNodes").size());
        }
    }

    @Test
    void theCheckFindsAnOrphanAllocationAndReleasingItCleansUp() {
        try (Env env = cluster.env()) {
            env.add("c1");
            // An ADD that crashed after the block allocated and before the node recorded.
            Cidr block = Cidr.parse("198.18." + env.n + ".0/26");
            BlockEntity.AssignOutcome orphan =
                    cluster.assignWithoutRecord(block, env.node, "net.crashed", false);

            JsonNode report = env.get("/v1/check").ok();
            OpenApi.assertShape("Report", report);
            assertFalse(report.get("clean").asBoolean());
            JsonNode found = report.get("allocationsWithoutAttachment");
            assertEquals(1, found.size(), report.toString());
            assertEquals(orphan.address(), found.get(0).get("address").asText());
            assertEquals(block.toString(), found.get(0).get("block").asText());
            assertEquals("net.crashed", found.get(0).get("allocation").get("handle").asText());
            assertEquals(env.node, found.get(0).get("allocation").get("node").asText());
            assertEquals(0, report.get("attachmentsWithoutAllocation").size());

            assertEquals(
                    List.of(orphan.address()),
                    texts(
                            env.post("/v1/release", "{\"address\":\"" + orphan.address() + "\"}")
                                    .ok()
                                    .get("released")));
            assertTrue(env.get("/v1/check").ok().get("clean").asBoolean());
        }
    }

    @Test
    void theCheckFindsAnAttachmentWhoseAllocationIsMissing() {
        try (Env env = cluster.env()) {
            AttachmentRecord c1 = env.add("c1");
            // A record naming an address its block does not hold for it (what the ADD/DEL order
            // rules out).
            HeldAddress ghost =
                    new HeldAddress(
                            "198.18." + env.n + ".9",
                            env.v4.name(),
                            Cidr.parse("198.18." + env.n + ".0/26"));
            AttachmentRecord record =
                    new AttachmentRecord(
                            "net.ghost",
                            "eth0",
                            "net",
                            "ghost",
                            null,
                            "ns",
                            "pod-ghost",
                            List.of(ghost),
                            1_000L);
            AdminCluster.await(
                    cluster.ref(NodeEntity.ENTITY_TYPE_KEY, env.node)
                            .askWithStatus(
                                    (ActorRef<StatusReply<Done>> r) ->
                                            new NodeEntity.RecordAttachment(record, r),
                                    ASK));

            JsonNode report = env.get("/v1/check").ok();
            assertFalse(report.get("clean").asBoolean());
            assertEquals(0, report.get("allocationsWithoutAttachment").size(), report.toString());
            JsonNode found = report.get("attachmentsWithoutAllocation");
            assertEquals(1, found.size(), report.toString());
            assertEquals(env.node, found.get(0).get("node").asText());
            assertEquals("net.ghost", found.get(0).get("attachment").get("handle").asText());
            assertEquals(List.of("198.18." + env.n + ".9"), texts(found.get(0).get("missing")));
            assertEquals(2, report.get("checkedAttachments").asLong());
            assertEquals(addresses(c1).size(), report.get("checkedAllocations").asLong());
        }
    }

    @Test
    void theCheckFindsABlockAffineToAnUnknownNode() {
        try (Env env = cluster.env()) {
            env.add("c1");
            String ghost = "t" + env.n + "-gone";
            PoolEntity.ClaimOutcome claim =
                    AdminCluster.await(
                            cluster.ref(PoolEntity.ENTITY_TYPE_KEY, env.v4.name())
                                    .askWithStatus(
                                            (ActorRef<StatusReply<PoolEntity.ClaimOutcome>> r) ->
                                                    new PoolEntity.ClaimBlock(ghost, null, r),
                                            ASK));

            JsonNode report = env.get("/v1/check").ok();
            assertFalse(report.get("clean").asBoolean());
            JsonNode found = report.get("blocksAffineToUnknownNodes");
            assertEquals(1, found.size(), report.toString());
            assertEquals(claim.block().toString(), found.get(0).get("block").asText());
            assertEquals(env.v4.name(), found.get(0).get("pool").asText());
            assertEquals(ghost, found.get(0).get("affinity").asText());
            assertEquals(0, report.get("allocationsWithoutAttachment").size());
        }
    }
}
