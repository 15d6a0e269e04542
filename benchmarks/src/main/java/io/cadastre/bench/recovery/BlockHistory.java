package io.cadastre.bench.recovery;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Block;
import io.cadastre.shards.BlockEntity;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * A block's life on a busy node: claimed by the node, then filled with pods up to {@code held}
 * allocations, then one pod deleted (its address released) and one created (the next address
 * assigned, as {@link BlockEntity}'s AutoAssign picks it) in turn, so that the block stays about
 * {@code held} full however many events it has seen.
 */
final class BlockHistory
        extends History<BlockEntity.Event, BlockEntity.State, BlockEntity.BlockView> {
    private final String entityId;
    private final String node;
    private final int held;
    private final ArrayDeque<String> oldestFirst = new ArrayDeque<>();

    /**
     * @param entityId the block's entity id ({@code 100.64.0.0-26})
     * @param node the node it is affine to, and its pods' node
     * @param held how many allocations it holds once filled
     * @throws IllegalArgumentException when {@code held} is not below the block's size
     */
    BlockHistory(String entityId, String node, int held, long seed) {
        super(BlockEntity.eventModel(entityId), seed);
        int capacity = state().block().capacity();
        if (held < 1 || held >= capacity) {
            throw new IllegalArgumentException(
                    "held must be in 1.." + (capacity - 1) + ", not " + held);
        }
        this.entityId = entityId;
        this.node = node;
        this.held = held;
    }

    @Override
    String entityId() {
        return entityId;
    }

    @Override
    BlockEntity.Event nextEvent(BlockEntity.State state, long events) {
        Block block = state.block();
        OptionalInt free = block.nextFreeOrdinal();
        if (events == 0) {
            return new BlockEntity.AffinityClaimed(node, List.of());
        }
        if (block.allocatedCount() < held && free.isPresent()) {
            String address = block.addressAt(free.getAsInt());
            oldestFirst.add(address);
            return new BlockEntity.AddressAssigned(
                    address,
                    new Allocation(
                            "bench-net." + containerId(),
                            "eth0",
                            "bench",
                            podName(),
                            node,
                            EPOCH_MILLIS + events * 1_000));
        }
        return new BlockEntity.AddressesReleased(List.of(oldestFirst.remove()));
    }

    @Override
    void verify(BlockEntity.BlockView view) {
        Block block = state().block();
        Map<String, Allocation> expected = new LinkedHashMap<>();
        block.allocations()
                .forEach(
                        (ordinal, allocation) ->
                                expected.put(block.addressAt(ordinal), allocation));
        if (!Objects.equals(view.affinity(), block.affinity())
                || !view.allocations().equals(expected)) {
            throw new IllegalStateException(
                    "block "
                            + view.cidr()
                            + " recovered affine to "
                            + view.affinity()
                            + " with "
                            + view.allocations().size()
                            + " allocations; its journal says "
                            + describe());
        }
    }

    @Override
    String describe() {
        Block block = state().block();
        return "affine to "
                + block.affinity()
                + ", "
                + block.allocatedCount()
                + " of "
                + block.capacity()
                + " addresses allocated";
    }
}
