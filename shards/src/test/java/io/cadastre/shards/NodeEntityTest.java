package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class NodeEntityTest {
    @RegisterExtension static final EntityKits entities = new EntityKits();

    private EventSourcedBehaviorTestKit<NodeEntity.Command, NodeEntity.Event, NodeEntity.State> kit;

    @BeforeEach
    void clear() {
        kit = entities.kit(NodeEntity.create("node-a"));
    }

    private static Cidr block(int i) {
        return Cidr.parse("198.18." + i + ".0/26");
    }

    private EventSourcedBehaviorTestKit.CommandResultWithReply<
                    NodeEntity.Command, NodeEntity.Event, NodeEntity.State, StatusReply<Done>>
            noteBorrowed(String pool, Cidr block) {
        return kit.runCommand(r -> new NodeEntity.NoteBorrowedBlock(pool, block, r));
    }

    private EventSourcedBehaviorTestKit.CommandResultWithReply<
                    NodeEntity.Command, NodeEntity.Event, NodeEntity.State, StatusReply<Done>>
            forgetBorrowed(Cidr block) {
        return kit.runCommand(r -> new NodeEntity.ForgetBorrowedBlock(block, r));
    }

    private Map<Cidr, String> borrowedBlocks() {
        return kit.<NodeEntity.BorrowedBlocks>runCommand(NodeEntity.GetBorrowedBlocks::new)
                .reply()
                .blocks();
    }

    @Test
    void notingABorrowedBlockAgainPersistsNothing() {
        var first = noteBorrowed("pool", block(1));
        assertTrue(first.reply().isSuccess());
        assertEquals(new NodeEntity.BorrowedBlockNoted("pool", block(1)), first.event());

        var again = noteBorrowed("pool", block(1));
        assertTrue(again.reply().isSuccess());
        assertTrue(again.events().isEmpty());
        assertEquals(Map.of(block(1), "pool"), borrowedBlocks());
        assertEquals(
                Map.of(block(1), "pool"),
                kit.<NodeEntity.NodeView>runCommand(NodeEntity.GetNode::new)
                        .reply()
                        .borrowedBlocks());
    }

    @Test
    void forgettingABorrowedBlockNotListedPersistsNothing() {
        noteBorrowed("pool", block(1));
        var forgotten = forgetBorrowed(block(1));
        assertTrue(forgotten.reply().isSuccess());
        assertEquals(new NodeEntity.BorrowedBlockForgotten(block(1)), forgotten.event());

        var again = forgetBorrowed(block(1));
        assertTrue(again.reply().isSuccess());
        assertTrue(again.events().isEmpty());
        assertEquals(Map.of(), borrowedBlocks());
    }

    @Test
    void borrowedBlocksSurviveARestartAcrossSnapshots() {
        // 201 events: recovery goes through a snapshot (every 100) and replays the tail.
        for (int i = 0; i < 100; i++) {
            noteBorrowed("pool", block(i));
            forgetBorrowed(block(i));
        }
        noteBorrowed("pool", block(200));
        Map<Cidr, String> before = borrowedBlocks();

        kit.restart();

        assertEquals(Map.of(block(200), "pool"), before);
        assertEquals(before, borrowedBlocks());
    }

    /** The state as it was snapshotted before borrowed blocks were recorded. */
    private record StateWithoutBorrowedBlocks(
            Map<String, AttachmentRecord> attachments, Map<Cidr, String> affineBlocks)
            implements CborSerializable {}

    @Test
    void aSnapshotFromBeforeBorrowedBlocksRecoversWithNone() {
        Serialization serialization = SerializationExtension.get(entities.testKit().system());
        Map<Cidr, String> affine = new TreeMap<>(Map.of(block(7), "pool"));
        StateWithoutBorrowedBlocks old = new StateWithoutBorrowedBlocks(Map.of(), affine);
        byte[] bytes = serialization.serialize(old).get();
        int serializerId = serialization.findSerializerFor(old).identifier();
        String manifest = Serializers.manifestFor(serialization.findSerializerFor(old), old);

        NodeEntity.State restored =
                (NodeEntity.State)
                        serialization
                                .deserialize(
                                        bytes,
                                        serializerId,
                                        manifest.replace(
                                                StateWithoutBorrowedBlocks.class.getName(),
                                                NodeEntity.State.class.getName()))
                                .get();

        assertEquals(affine, restored.affineBlocks());
        assertEquals(Map.of(), restored.borrowedBlocks());
        // The snapshot adapter's copy gives the event handler a mutable map to note into.
        NodeEntity.State copy = restored.copy();
        copy.borrowedBlocks().put(block(8), "pool");
        assertEquals(List.of(block(8)), List.copyOf(copy.borrowedBlocks().keySet()));
    }

    /** The forget event as written before {@code releaseFollows}. */
    private record ForgottenWithoutReleaseFollows(String handle, String ifname)
            implements CborSerializable {}

    @Test
    void aForgetFromBeforeReleaseFollowsReadsAsSynced() {
        Serialization serialization = SerializationExtension.get(entities.testKit().system());
        ForgottenWithoutReleaseFollows old = new ForgottenWithoutReleaseFollows("net.c3", "eth0");
        NodeEntity.AttachmentForgotten read =
                (NodeEntity.AttachmentForgotten)
                        serialization
                                .deserialize(
                                        serialization.serialize(old).get(),
                                        serialization.findSerializerFor(old).identifier(),
                                        Serializers.manifestFor(
                                                        serialization.findSerializerFor(old), old)
                                                .replace(
                                                        ForgottenWithoutReleaseFollows.class
                                                                .getName(),
                                                        NodeEntity.AttachmentForgotten.class
                                                                .getName()))
                                .get();
        assertEquals(new NodeEntity.AttachmentForgotten("net.c3", "eth0", false), read);
        assertFalse(read.followedBySyncedWrite());
    }

    /** An attachment as recorded before the netns path was. */
    private record AttachmentRecordBeforeNetns(
            String handle,
            String ifname,
            String network,
            String containerId,
            String podNamespace,
            String podName,
            List<HeldAddress> addresses,
            long createdAtMillis)
            implements CborSerializable {}

    private record AttachmentRecordedBeforeNetns(AttachmentRecordBeforeNetns attachment)
            implements CborSerializable {}

    private record StateBeforeNetns(
            Map<String, AttachmentRecordBeforeNetns> attachments,
            Map<Cidr, String> affineBlocks,
            Map<Cidr, String> borrowedBlocks)
            implements CborSerializable {}

    /** Serializes {@code old} as Pekko would have, and reads it back as {@code now} (the class that replaced it). */
    private static Object readAs(Object old, Class<?> now) {
        Serialization serialization = SerializationExtension.get(entities.testKit().system());
        byte[] bytes = serialization.serialize(old).get();
        int serializerId = serialization.findSerializerFor(old).identifier();
        String manifest = Serializers.manifestFor(serialization.findSerializerFor(old), old);
        return serialization
                .deserialize(
                        bytes,
                        serializerId,
                        manifest.replace(old.getClass().getName(), now.getName()))
                .get();
    }

    @Test
    void eventsAndSnapshotsFromBeforeNetnsPathsRecoverWithAnUnknownNetns() {
        List<HeldAddress> held = List.of(new HeldAddress("198.18.7.5", "pool", block(7)));
        AttachmentRecordBeforeNetns old =
                new AttachmentRecordBeforeNetns(
                        "net.c1", "eth0", "net", "c1", "default", "web", held, 1234L);
        AttachmentRecord expected =
                new AttachmentRecord(
                        "net.c1", "eth0", "net", "c1", null, "default", "web", held, 1234L);

        NodeEntity.AttachmentRecorded event =
                (NodeEntity.AttachmentRecorded)
                        readAs(
                                new AttachmentRecordedBeforeNetns(old),
                                NodeEntity.AttachmentRecorded.class);
        assertEquals(expected, event.attachment());
        assertNull(event.attachment().netnsPath());

        NodeEntity.State state =
                (NodeEntity.State)
                        readAs(
                                new StateBeforeNetns(
                                        Map.of(expected.key(), old),
                                        Map.of(block(7), "pool"),
                                        Map.of()),
                                NodeEntity.State.class);
        assertEquals(Map.of(expected.key(), expected), state.attachments());
    }

    @Test
    void theNetnsPathIsRecordedAndSurvivesARestart() {
        AttachmentRecord record =
                new AttachmentRecord(
                        "net.c2",
                        "eth0",
                        "net",
                        "c2",
                        "/var/run/netns/cni-1",
                        null,
                        null,
                        List.of(new HeldAddress("198.18.7.6", "pool", block(7))),
                        1L);
        assertTrue(
                kit.<StatusReply<Done>>runCommand(r -> new NodeEntity.RecordAttachment(record, r))
                        .reply()
                        .isSuccess());
        kit.restart();
        NodeEntity.AttachmentLookup found =
                kit.<NodeEntity.AttachmentLookup>runCommand(
                                r -> new NodeEntity.GetAttachment("net.c2", "eth0", r))
                        .reply();
        assertEquals("/var/run/netns/cni-1", found.attachment().netnsPath());
    }

    /**
     * Records that meet in the node while a write is in flight share its next write; a lookup of a
     * pending one waits for it and finds it.
     */
    @Test
    void recordsThatMeetInTheNodeShareOneWrite() {
        try (EntityKits.Writes writes = new EntityKits.Writes(kit.persistenceTestKit())) {
            ActorRef<NodeEntity.Command> node =
                    entities.testKit().spawn(NodeEntity.create("node-batch"));
            TestProbe<StatusReply<Done>> acks = entities.testKit().createTestProbe();
            TestProbe<NodeEntity.AttachmentLookup> found = entities.testKit().createTestProbe();
            node.tell(new NodeEntity.Register(Map.of("zone", "a"), acks.getRef()));
            List<AttachmentRecord> records = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                AttachmentRecord record =
                        new AttachmentRecord(
                                "net.b" + i,
                                "eth0",
                                "net",
                                "b" + i,
                                null,
                                null,
                                null,
                                List.of(new HeldAddress("198.18.7." + i, "pool", block(7))),
                                1L);
                records.add(record);
                node.tell(new NodeEntity.RecordAttachment(record, acks.getRef()));
            }
            node.tell(new NodeEntity.GetAttachment("net.b0", "eth0", found.getRef()));
            writes.release();
            for (int i = 0; i < 4; i++) {
                assertTrue(acks.receiveMessage().isSuccess());
            }
            assertEquals(records.get(0), found.receiveMessage().attachment());
            assertEquals(List.of(1, 3), writes.sizes(), "the registration, then the three records");
        }
    }

    @Test
    void forgettingAnAttachmentAnswersWhatWasForgottenOnce() {
        AttachmentRecord record =
                new AttachmentRecord(
                        "net.c3",
                        "eth0",
                        "net",
                        "c3",
                        null,
                        null,
                        null,
                        List.of(new HeldAddress("198.18.7.7", "pool", block(7))),
                        1L);
        kit.<StatusReply<Done>>runCommand(r -> new NodeEntity.RecordAttachment(record, r));

        var forgotten =
                kit.<StatusReply<NodeEntity.AttachmentLookup>>runCommand(
                        r -> new NodeEntity.ForgetAttachment("net.c3", "eth0", true, r));
        assertEquals(record, forgotten.reply().getValue().attachment());
        assertEquals(new NodeEntity.AttachmentForgotten("net.c3", "eth0", true), forgotten.event());
        assertTrue(
                ((NodeEntity.AttachmentForgotten) forgotten.event()).followedBySyncedWrite(),
                "a DEL's forget: the blocks' release syncs it");
        kit.<StatusReply<Done>>runCommand(r -> new NodeEntity.RecordAttachment(record, r));
        var byOperator =
                kit.<StatusReply<NodeEntity.AttachmentLookup>>runCommand(
                        r -> new NodeEntity.ForgetAttachment("net.c3", "eth0", false, r));
        assertFalse(
                ((NodeEntity.AttachmentForgotten) byOperator.event()).followedBySyncedWrite(),
                "a forget no release follows is synced itself");

        var again =
                kit.<StatusReply<NodeEntity.AttachmentLookup>>runCommand(
                        r -> new NodeEntity.ForgetAttachment("net.c3", "eth0", true, r));
        assertNull(again.reply().getValue().attachment(), "unknown now: success, nothing");
        assertTrue(again.events().isEmpty());
    }

    private static PeerInfo peer(String tunnel) {
        return new PeerInfo(
                "node-a",
                "cross-subnet",
                "eth0",
                "198.19.255.11/24",
                "fd00:19:255::11/64",
                "02:ca:da:01:02:03",
                tunnel,
                null,
                1500);
    }

    @Test
    void aPublishedPeerIsPersistedOnceAndSurvivesARestart() {
        var first =
                kit.<StatusReply<Done>>runCommand(r -> new NodeEntity.PublishPeer(peer(null), r));
        assertTrue(first.reply().isSuccess());
        assertEquals(new NodeEntity.PeerPublished(peer(null)), first.event());
        assertTrue(
                kit.<StatusReply<Done>>runCommand(r -> new NodeEntity.PublishPeer(peer(null), r))
                        .events()
                        .isEmpty(),
                "the same peer again persists nothing");
        var changed =
                kit.<StatusReply<Done>>runCommand(
                        r -> new NodeEntity.PublishPeer(peer("198.18.0.1"), r));
        assertEquals(new NodeEntity.PeerPublished(peer("198.18.0.1")), changed.event());

        kit.restart();

        assertEquals(
                peer("198.18.0.1"),
                kit.<NodeEntity.NodeView>runCommand(NodeEntity.GetNode::new).reply().peer());
        // An operator's removal keeps the record; the routing layer withdraws a removed node's
        // peer.
        kit.runCommand(NodeEntity.MarkRemoved::new);
        NodeEntity.NodeView removed =
                kit.<NodeEntity.NodeView>runCommand(NodeEntity.GetNode::new).reply();
        assertTrue(removed.removed());
        assertEquals(peer("198.18.0.1"), removed.peer());
    }

    @Test
    void aSnapshotFromBeforePeersRecoversWithoutOne() {
        NodeEntity.State state =
                (NodeEntity.State)
                        readAs(
                                new StateBeforeNetns(Map.of(), Map.of(block(7), "pool"), Map.of()),
                                NodeEntity.State.class);
        assertNull(state.peer());
        assertEquals(Map.of(block(7), "pool"), state.affineBlocks());
    }
}
