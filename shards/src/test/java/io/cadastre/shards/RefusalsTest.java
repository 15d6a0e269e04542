package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.IpamException.Reason;
import io.cadastre.shards.PoolEntity.ClaimOutcome;
import io.cadastre.shards.PoolEntity.ClaimStatus;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every refusal an entity gives carries its typed reason ({@link Refusal}), and keeps it when the
 * reply crosses members (Pekko's serialization with the real configuration).
 */
class RefusalsTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    @RegisterExtension static final EntityKits entities = new EntityKits();

    private static ActorTestKit cluster;

    @BeforeAll
    static void start() {
        cluster = TestCluster.start("RefusalsTest");
    }

    @AfterAll
    static void stop() {
        cluster.shutdownTestKit();
    }

    private static <C, E, S, R> void succeeds(
            EventSourcedBehaviorTestKit<C, E, S> kit,
            Function<ActorRef<StatusReply<R>>, C> command) {
        StatusReply<R> reply = kit.<StatusReply<R>>runCommand(command::apply).reply();
        assertTrue(reply.isSuccess(), reply::toString);
    }

    /** Asserts the command is refused with the reason; @return the refusal's message */
    private static <C, E, S, R> String refused(
            Reason reason,
            EventSourcedBehaviorTestKit<C, E, S> kit,
            Function<ActorRef<StatusReply<R>>, C> command) {
        StatusReply<R> reply = kit.<StatusReply<R>>runCommand(command::apply).reply();
        assertTrue(reply.isError(), reply::toString);
        Refusal refusal = assertInstanceOf(Refusal.class, reply.getError());
        assertEquals(reason, refusal.reason(), refusal::getMessage);
        return refusal.getMessage();
    }

    private static PoolSpec spec(String name, int maxBlocksPerNode) {
        return new PoolSpec(
                name,
                Cidr.parse("198.18.200.0/24"),
                26,
                false,
                true,
                maxBlocksPerNode,
                "",
                List.of(Cidr.parse("198.18.200.192/26")));
    }

    @Test
    void thePoolsRefusalsSayWhy() {
        EventSourcedBehaviorTestKit<PoolEntity.Command, PoolEntity.Event, PoolEntity.State> pool =
                entities.kit(PoolEntity.create("refusing"));
        Cidr first = Cidr.parse("198.18.200.0/26");
        Cidr second = Cidr.parse("198.18.200.64/26");
        String unknown =
                refused(
                        Reason.UNKNOWN_POOL,
                        pool,
                        (ActorRef<StatusReply<ClaimOutcome>> r) ->
                                new PoolEntity.ClaimBlock("node-a", null, r));
        assertEquals("unknown pool refusing", unknown);
        refused(
                Reason.UNKNOWN_POOL,
                pool,
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimSpecificBlock(first, "node-a", r));
        refused(
                Reason.UNKNOWN_POOL,
                pool,
                (ActorRef<StatusReply<Done>> r) -> new PoolEntity.SetDisabled(true, r));
        refused(
                Reason.INVALID_REQUEST,
                pool,
                (ActorRef<StatusReply<Done>> r) -> new PoolEntity.DefinePool(spec("other", 1), r));

        succeeds(
                pool,
                (ActorRef<StatusReply<Done>> r) ->
                        new PoolEntity.DefinePool(spec("refusing", 1), r));
        refused(
                Reason.CONFLICT,
                pool,
                (ActorRef<StatusReply<Done>> r) ->
                        new PoolEntity.DefinePool(
                                new PoolSpec(
                                        "refusing",
                                        Cidr.parse("198.18.200.0/24"),
                                        27,
                                        false,
                                        true,
                                        1),
                                r));
        refused(
                Reason.INVALID_REQUEST,
                pool,
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimSpecificBlock(
                                Cidr.parse("198.18.201.0/26"), "node-a", r));
        refused(
                Reason.ADDRESS_NOT_IN_POOL,
                pool,
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimSpecificBlock(
                                Cidr.parse("198.18.200.192/26"), "node-a", r));

        ClaimOutcome claimed =
                pool.<StatusReply<ClaimOutcome>>runCommand(
                                r -> new PoolEntity.ClaimSpecificBlock(first, "node-a", r))
                        .reply()
                        .getValue();
        assertEquals(ClaimStatus.CLAIMED, claimed.status());
        // maxBlocksPerNode 1: a specific block is refused, while "any block" is an outcome to go on
        // from (borrowing).
        refused(
                Reason.NODE_BLOCK_LIMIT,
                pool,
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimSpecificBlock(second, "node-a", r));
        assertEquals(
                ClaimStatus.LIMIT_REACHED,
                pool.<StatusReply<ClaimOutcome>>runCommand(
                                r -> new PoolEntity.ClaimBlock("node-a", null, r))
                        .reply()
                        .getValue()
                        .status());
        refused(
                Reason.AFFINE_TO_OTHER_NODE,
                pool,
                (ActorRef<StatusReply<Done>> r) ->
                        new PoolEntity.BeginBlockRelease(first, "node-b", r));
        refused(
                Reason.CONFLICT,
                pool,
                (ActorRef<StatusReply<Done>> r) -> new PoolEntity.DeletePool(r));

        succeeds(
                pool,
                (ActorRef<StatusReply<Done>> r) ->
                        new PoolEntity.BeginBlockRelease(first, "node-a", r));
        refused(
                Reason.BLOCK_RELEASING,
                pool,
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimSpecificBlock(first, "node-a", r));

        succeeds(pool, (ActorRef<StatusReply<Done>> r) -> new PoolEntity.SetDisabled(true, r));
        refused(
                Reason.POOL_DISABLED,
                pool,
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimSpecificBlock(second, "node-b", r));
    }

    @Test
    void theBlocksRefusalsSayWhy() {
        EventSourcedBehaviorTestKit<BlockEntity.Command, BlockEntity.Event, BlockEntity.State>
                block = entities.kit(BlockEntity.create("198.18.200.0-26"));
        succeeds(
                block,
                (ActorRef<StatusReply<Done>> r) ->
                        new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        BlockEntity.AssignOutcome assigned =
                block.<BlockEntity.AssignOutcome>runCommand(
                                r ->
                                        new BlockEntity.AutoAssign(
                                                new Allocation(
                                                        "net.c1", "eth0", "default", "pod",
                                                        "node-a", 1L),
                                                false,
                                                null,
                                                r))
                        .reply();
        assertEquals(BlockEntity.AssignStatus.ASSIGNED, assigned.status());

        refused(
                Reason.AFFINE_TO_OTHER_NODE,
                block,
                (ActorRef<StatusReply<Done>> r) ->
                        new BlockEntity.ClaimAffinity("node-b", List.of(), r));
        refused(
                Reason.AFFINE_TO_OTHER_NODE,
                block,
                (ActorRef<StatusReply<Done>> r) -> new BlockEntity.ReleaseAffinity("node-b", r));
        String inUse =
                refused(
                        Reason.CONFLICT,
                        block,
                        (ActorRef<StatusReply<Done>> r) ->
                                new BlockEntity.ReleaseAffinity("node-a", r));
        assertEquals("block 198.18.200.0/26 holds 1 allocations", inUse);
    }

    @Test
    void theRegistryRefusesAnUnknownPool() {
        var registry = entities.kit(PoolRegistry.create());
        refused(
                Reason.UNKNOWN_POOL,
                registry,
                (ActorRef<StatusReply<Done>> r) ->
                        new PoolRegistry.SetDisabled("nowhere", true, r));
    }

    /** The reply as another member reads it: serialized with the binding Pekko chooses, then read back. */
    @Test
    void aRefusalKeepsItsReasonAcrossMembers() {
        Serialization serialization = SerializationExtension.get(cluster.system());
        Refusal refusal =
                new Refusal(
                        Reason.AFFINE_TO_OTHER_NODE,
                        "block 198.18.200.0/26 is affine to node-a, not node-b");
        Serializer forRefusal = serialization.findSerializerFor(refusal);
        assertInstanceOf(
                JacksonCborSerializer.class,
                forRefusal,
                "jackson-cbor, not the Java serializer bound to Throwable");

        StatusReply<Done> reply = StatusReply.error(refusal);
        Serializer forReply = serialization.findSerializerFor(reply);
        byte[] bytes = serialization.serialize(reply).get();
        Object read =
                serialization
                        .deserialize(
                                bytes,
                                forReply.identifier(),
                                Serializers.manifestFor(forReply, reply))
                        .get();
        StatusReply<?> back = assertInstanceOf(StatusReply.class, read);
        Refusal travelled = assertInstanceOf(Refusal.class, back.getError());
        assertEquals(refusal.reason(), travelled.reason());
        assertEquals(refusal.getMessage(), travelled.getMessage());
    }

    /**
     * A real entity's refusal sent to an actor (not an ask's temporary reference) in a cluster with
     * serialize-messages = on: the probe receives what the wire carried.
     */
    @Test
    void anEntitysRefusalArrivesTyped() {
        TestProbe<StatusReply<Done>> probe = cluster.createTestProbe();
        ClusterSharding.get(cluster.system())
                .entityRefFor(PoolEntity.ENTITY_TYPE_KEY, "refusals-undefined")
                .tell(new PoolEntity.SetDisabled(true, probe.getRef()));
        StatusReply<Done> reply = probe.receiveMessage(WAIT);
        Refusal refusal = assertInstanceOf(Refusal.class, reply.getError());
        assertEquals(Reason.UNKNOWN_POOL, refusal.reason());
        assertEquals("unknown pool refusals-undefined", refusal.getMessage());
    }
}
