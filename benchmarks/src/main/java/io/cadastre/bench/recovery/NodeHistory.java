package io.cadastre.bench.recovery;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.NodeEntity;
import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * A node's life: registered by its agent, one affine block noted, then pods' attachments recorded
 * up to {@code held}, then one forgotten (pod deleted) and one recorded (pod created) in turn, so
 * that the node holds about {@code held} attachments however many events it has seen. Each
 * attachment holds one IPv4 address of the block, with the fields ADD records (netns path, pod).
 */
final class NodeHistory extends History<NodeEntity.Event, NodeEntity.State, NodeEntity.NodeView> {
    private static final String POOL = "default-ipv4";

    private final String node;
    private final Cidr block;
    private final int held;
    private final ArrayDeque<String> oldestFirst = new ArrayDeque<>();
    private long nextAddress;

    /**
     * @param node the node's name, its entity id
     * @param block its affine block; its attachments' addresses come from there
     * @param held how many attachments it holds once filled
     * @throws IllegalArgumentException when {@code held} is not below the block's size
     */
    NodeHistory(String node, Cidr block, int held, long seed) {
        super(NodeEntity.eventModel(node), seed);
        if (held < 1 || block.size().compareTo(BigInteger.valueOf(held)) <= 0) {
            throw new IllegalArgumentException(
                    "held must be in 1..(size of " + block + ") - 1, not " + held);
        }
        this.node = node;
        this.block = block;
        this.held = held;
    }

    @Override
    String entityId() {
        return node;
    }

    @Override
    NodeEntity.Event nextEvent(NodeEntity.State state, long events) {
        if (events == 0) {
            return new NodeEntity.NodeRegistered(
                    new TreeMap<>(
                            Map.of(
                                    "kubernetes.io/hostname",
                                    node,
                                    "topology.kubernetes.io/zone",
                                    "zone-a")));
        }
        if (events == 1) {
            return new NodeEntity.AffineBlockNoted(POOL, block);
        }
        if (state.attachments().size() < held) {
            String containerId = containerId();
            // Oldest first out and fewer held than the block's size: the cursor never meets a held
            // address.
            String address = block.addressAt(nextAddress++ % block.size().longValueExact());
            AttachmentRecord attachment =
                    new AttachmentRecord(
                            "bench-net." + containerId,
                            "eth0",
                            "bench-net",
                            containerId,
                            "/var/run/netns/cni-" + new UUID(random.nextLong(), random.nextLong()),
                            "bench",
                            podName(),
                            List.of(new HeldAddress(address, POOL, block)),
                            EPOCH_MILLIS + events * 1_000);
            oldestFirst.add(attachment.handle());
            return new NodeEntity.AttachmentRecorded(attachment);
        }
        return new NodeEntity.AttachmentForgotten(oldestFirst.remove(), "eth0", true);
    }

    @Override
    void verify(NodeEntity.NodeView view) {
        NodeEntity.State state = state();
        if (!new HashSet<>(view.attachments()).equals(new HashSet<>(state.attachments().values()))
                || !view.affineBlocks().equals(state.affineBlocks())
                || !view.labels().equals(state.labels())) {
            throw new IllegalStateException(
                    "node "
                            + node
                            + " recovered with "
                            + view.attachments().size()
                            + " attachments and "
                            + view.affineBlocks().size()
                            + " affine blocks; its journal says "
                            + describe());
        }
    }

    @Override
    String describe() {
        NodeEntity.State state = state();
        return state.attachments().size()
                + " attachments (one IPv4 address each), "
                + state.affineBlocks().size()
                + " affine block, "
                + state.labels().size()
                + " labels";
    }
}
