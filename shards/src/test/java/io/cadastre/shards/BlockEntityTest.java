package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.AddressRange;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.RangeSet;
import io.cadastre.shards.BlockEntity.AssignOutcome;
import io.cadastre.shards.BlockEntity.AssignStatus;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class BlockEntityTest {
    @RegisterExtension static final EntityKits entities = new EntityKits();

    private EventSourcedBehaviorTestKit<BlockEntity.Command, BlockEntity.Event, BlockEntity.State>
            kit;

    @BeforeEach
    void clear() {
        kit = entities.kit(BlockEntity.create("198.18.0.64-26"));
    }

    private static Allocation alloc(String handle, String node) {
        return new Allocation(handle, "eth0", "default", "pod", node, 1L);
    }

    private AssignOutcome autoAssign(String handle, String node, boolean borrow) {
        return kit.<AssignOutcome>runCommand(
                        r -> new BlockEntity.AutoAssign(alloc(handle, node), borrow, null, r))
                .reply();
    }

    @Test
    void allocatesOnlyToItsAffineNodeUnlessBorrowing() {
        assertEquals(AssignStatus.NOT_AFFINE, autoAssign("net.c1", "node-a", false).status());
        var claim =
                kit.<StatusReply<Done>>runCommand(
                        r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        assertTrue(claim.reply().isSuccess());
        assertEquals(new BlockEntity.AffinityClaimed("node-a", List.of()), claim.event());

        AssignOutcome first = autoAssign("net.c1", "node-a", false);
        assertEquals(new AssignOutcome(AssignStatus.ASSIGNED, "198.18.0.64", null), first);
        assertEquals(AssignStatus.NOT_AFFINE, autoAssign("net.c2", "node-b", false).status());
        assertEquals("198.18.0.65", autoAssign("net.c2", "node-b", true).address());
    }

    @Test
    void assignWithinRangesSkipsTheSubnetsNetworkAndGatewayAndSaysWhenNoneIsLeft() {
        kit.<StatusReply<Done>>runCommand(
                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        RangeSet within =
                RangeSet.of(
                        new AddressRange(
                                Cidr.parse("198.18.0.64/26"), null, "198.18.0.67", "198.18.0.65"));
        java.util.function.Function<String, AssignOutcome> assign =
                handle ->
                        kit.<AssignOutcome>runCommand(
                                        r ->
                                                new BlockEntity.AutoAssign(
                                                        alloc(handle, "node-a"), false, within, r))
                                .reply();
        assertEquals(
                "198.18.0.66",
                assign.apply("net.c1").address(),
                "not .64 (network), not .65 (gateway)");
        assertEquals("198.18.0.67", assign.apply("net.c2").address());
        var none =
                kit.<AssignOutcome>runCommand(
                        r ->
                                new BlockEntity.AutoAssign(
                                        alloc("net.c3", "node-a"), false, within, r));
        assertEquals(
                AssignStatus.NONE_IN_RANGE,
                none.reply().status(),
                "not FULL: 62 addresses are free for others");
        assertTrue(none.events().isEmpty());
        assertEquals(
                "198.18.0.64",
                autoAssign("net.c4", "node-a", false).address(),
                "a routed pod may take .64");
        assertEquals(
                "198.18.0.66",
                assign.apply("net.c1").address(),
                "a repeated request keeps its address");
    }

    @Test
    void repeatedAssignReturnsTheSameAddressWithoutPersisting() {
        kit.<StatusReply<Done>>runCommand(
                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        autoAssign("net.c1", "node-a", false);
        var again =
                kit.<AssignOutcome>runCommand(
                        r -> new BlockEntity.AutoAssign(alloc("net.c1", "node-a"), false, null, r));
        assertEquals("198.18.0.64", again.reply().address());
        assertTrue(again.events().isEmpty());
    }

    @Test
    void specificAddressTakenByAnotherIsRefusedAndChangesNothing() {
        kit.<StatusReply<Done>>runCommand(
                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        var ok =
                kit.<AssignOutcome>runCommand(
                        r ->
                                new BlockEntity.AssignSpecific(
                                        "198.18.0.100", alloc("net.c1", "node-a"), false, r));
        assertEquals(AssignStatus.ASSIGNED, ok.reply().status());
        var taken =
                kit.<AssignOutcome>runCommand(
                        r ->
                                new BlockEntity.AssignSpecific(
                                        "198.18.0.100", alloc("net.c2", "node-a"), false, r));
        assertEquals(AssignStatus.TAKEN, taken.reply().status());
        assertTrue(taken.reply().detail().contains("net.c1"));
        assertTrue(taken.events().isEmpty());
    }

    @Test
    void fullBlockSaysSo() {
        kit.<StatusReply<Done>>runCommand(
                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        for (int i = 0; i < 64; i++) {
            assertEquals(AssignStatus.ASSIGNED, autoAssign("net.c" + i, "node-a", false).status());
        }
        assertEquals(AssignStatus.FULL, autoAssign("net.extra", "node-a", false).status());
    }

    @Test
    void recoversEveryAllocationAfterRestartAcrossSnapshots() {
        kit.<StatusReply<Done>>runCommand(
                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        // 250 events: recovery goes through a snapshot (every 100) and replays the tail.
        for (int i = 0; i < 125; i++) {
            String handle = "net.c" + i;
            autoAssign(handle, "node-a", false);
            var released =
                    kit.<BlockEntity.Released>runCommand(
                                    r -> new BlockEntity.Release(handle, "eth0", false, r))
                            .reply();
            assertEquals(1, released.addresses().size());
        }
        autoAssign("net.keep", "node-a", false);
        BlockEntity.BlockView before =
                kit.<BlockEntity.BlockView>runCommand(BlockEntity.GetBlock::new).reply();
        List<Integer> freeOrderBefore = kit.getState().block().freeOrder();

        kit.restart();

        BlockEntity.BlockView after =
                kit.<BlockEntity.BlockView>runCommand(BlockEntity.GetBlock::new).reply();
        assertEquals(before, after);
        assertEquals(freeOrderBefore, kit.getState().block().freeOrder());
        assertEquals(63, after.free());
    }

    @Test
    void releaseOfUnknownAttachmentSucceedsWithoutEvent() {
        var result =
                kit.<BlockEntity.Released>runCommand(
                        r -> new BlockEntity.Release("net.none", "eth0", false, r));
        assertEquals(List.of(), result.reply().addresses());
        assertTrue(result.events().isEmpty());
    }

    @Test
    void aReleaseAfterAnUnsyncedForgetWritesEvenWhenNothingIsHeld() {
        kit.<StatusReply<Done>>runCommand(
                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r));
        autoAssign("net.keep", "node-a", false);
        BlockEntity.BlockView before =
                kit.<BlockEntity.BlockView>runCommand(BlockEntity.GetBlock::new).reply();
        var result =
                kit.<BlockEntity.Released>runCommand(
                        r -> new BlockEntity.Release("net.none", "eth0", true, r));
        assertEquals(List.of(), result.reply().addresses());
        assertEquals(
                List.of(new BlockEntity.AddressesReleased(List.of())),
                result.events(),
                "an empty release, whose sync makes the node's forget durable");
        assertEquals(
                before, kit.<BlockEntity.BlockView>runCommand(BlockEntity.GetBlock::new).reply());
    }

    @Test
    void aClosedFenceDropsCommandsWithoutReplyOrEvent() {
        var reach = new java.util.concurrent.atomic.AtomicReference<>(new MemberFence.Reach(3, 1));
        MemberFence fence =
                new MemberFence(
                        reach::get,
                        java.time.Duration.ofSeconds(1),
                        java.time.Duration.ofSeconds(3),
                        System::nanoTime,
                        false);
        var fenced =
                entities.<BlockEntity.Command, BlockEntity.Event, BlockEntity.State>kit(
                        BlockEntity.create("198.18.1.0-26", fence, CadastreMetrics.Recovery.NONE));
        var probe = entities.testKit().<StatusReply<Done>>createTestProbe();
        var dropped =
                fenced.runCommand(
                        new BlockEntity.ClaimAffinity("node-a", List.of(), probe.getRef()));
        assertTrue(dropped.events().isEmpty(), "no event while this member sees no majority");
        probe.expectNoMessage(java.time.Duration.ofMillis(200));

        reach.set(new MemberFence.Reach(3, 2));
        var served =
                fenced.runCommand(
                        new BlockEntity.ClaimAffinity("node-a", List.of(), probe.getRef()));
        assertEquals(
                List.of(new BlockEntity.AffinityClaimed("node-a", List.of())), served.events());
        assertTrue(probe.receiveMessage().isSuccess());
    }

    /**
     * Calls that meet in a block while a write is in flight share its next write, and each gets an
     * address of its own: the affinity's write is held until five ADDs and a repeat of the first
     * are queued behind it.
     */
    @Test
    void callsThatMeetInTheBlockShareOneWriteAndEachGetsItsOwnAddress() {
        try (EntityKits.Writes writes = new EntityKits.Writes(kit.persistenceTestKit())) {
            ActorRef<BlockEntity.Command> block =
                    entities.testKit().spawn(BlockEntity.create("198.18.3.0-26"));
            TestProbe<StatusReply<Done>> claimed = entities.testKit().createTestProbe();
            TestProbe<AssignOutcome> assigned = entities.testKit().createTestProbe();
            block.tell(new BlockEntity.ClaimAffinity("node-a", List.of(), claimed.getRef()));
            for (int i = 0; i < 5; i++) {
                block.tell(
                        new BlockEntity.AutoAssign(
                                alloc("net.c" + i, "node-a"), false, null, assigned.getRef()));
            }
            block.tell(
                    new BlockEntity.AutoAssign(
                            alloc("net.c0", "node-a"), false, null, assigned.getRef()));
            writes.release();
            assertTrue(claimed.receiveMessage().isSuccess());
            List<String> addresses = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                AssignOutcome outcome = assigned.receiveMessage();
                assertEquals(AssignStatus.ASSIGNED, outcome.status(), outcome.toString());
                addresses.add(outcome.address());
            }
            assertEquals(
                    List.of(
                            "198.18.3.0",
                            "198.18.3.1",
                            "198.18.3.2",
                            "198.18.3.3",
                            "198.18.3.4",
                            "198.18.3.0"),
                    addresses,
                    "the repeat waits for the write and gets the first one's address");
            assertEquals(
                    List.of(1, 5), writes.sizes(), "the affinity, then the five ADDs together");
        }
    }

    @Test
    void reportsEveryRecoveryWithItsDuration() {
        List<java.time.Duration> recoveries = new java.util.concurrent.CopyOnWriteArrayList<>();
        var timed =
                EventSourcedBehaviorTestKit
                        .<BlockEntity.Command, BlockEntity.Event, BlockEntity.State>create(
                                entities.testKit().system(),
                                BlockEntity.create(
                                        "198.18.2.0-26",
                                        MemberFence.NEVER_CLOSED,
                                        recoveries::add));
        // no clear(): it restarts the entity, racing with its first recovery
        // a reply means the recovery has completed: commands wait for it
        assertTrue(
                timed.<StatusReply<Done>>runCommand(
                                r -> new BlockEntity.ClaimAffinity("node-a", List.of(), r))
                        .reply()
                        .isSuccess());
        assertEquals(1, recoveries.size(), recoveries.toString());
        timed.restart();
        assertEquals(2, recoveries.size(), recoveries.toString());
        assertTrue(
                recoveries.stream().noneMatch(java.time.Duration::isNegative),
                recoveries.toString());
    }
}
