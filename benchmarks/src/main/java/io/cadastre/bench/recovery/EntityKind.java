package io.cadastre.bench.recovery;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.MemberFence;
import io.cadastre.shards.NodeEntity;
import java.math.BigInteger;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.ToIntFunction;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;

/**
 * What the probe needs of one kind of entity: the ids of the probe's entities, their histories,
 * the real entity and its read command. Entity {@code i} of either kind belongs together: block
 * {@code i} is affine to node {@code i}, whose attachments hold addresses of block {@code i}.
 *
 * <p>The ids stay clear of every agent's: blocks are /26s of 100.64.0.0/10 (RFC 6598 shared
 * address space, which no pool of the suite or the tests uses; the agents' default pool is
 * 198.18.0.0/16), nodes are {@code bench-node-<i>} (agents' nodes are named after their hosts).
 *
 * @param <C> the entity's command type
 * @param <E> its event type
 * @param <V> its reply to a read
 */
final class EntityKind<C, E, V> {
    private static final Cidr BLOCKS = Cidr.parse("100.64.0.0/10");
    private static final int BLOCK_PREFIX = 26;

    /** Blocks hold half their 64 addresses; one event (the claim) comes before. */
    static final EntityKind<BlockEntity.Command, BlockEntity.Event, BlockEntity.BlockView> BLOCK =
            new EntityKind<>(
                    "block",
                    32,
                    1,
                    index -> block(index).entityId(),
                    BlockEntity::eventModel,
                    (index, held) ->
                            new BlockHistory(block(index).entityId(), nodeName(index), held, index),
                    (id, recovery) -> BlockEntity.create(id, MemberFence.NEVER_CLOSED, recovery),
                    BlockEntity.GetBlock::new,
                    view -> view.allocations().size());

    /**
     * Nodes hold 30 attachments (a busy node, well under Kubernetes' default of 110 pods); two events
     * (registered, its block noted) come before.
     */
    static final EntityKind<NodeEntity.Command, NodeEntity.Event, NodeEntity.NodeView> NODE =
            new EntityKind<>(
                    "node",
                    30,
                    2,
                    EntityKind::nodeName,
                    NodeEntity::eventModel,
                    (index, held) -> new NodeHistory(nodeName(index), block(index), held, index),
                    (id, recovery) -> NodeEntity.create(id, MemberFence.NEVER_CLOSED, recovery),
                    NodeEntity.GetNode::new,
                    view -> view.attachments().size());

    /** {@code block} or {@code node}. */
    final String name;

    /** How many allocations (block) or attachments (node) an entity holds once its history has filled it. */
    final int held;

    /** How many events of its history fill an entity: those before the first allocation or attachment, and {@link #held}. */
    final int eventsToFill;

    private final IntFunction<String> entityId;
    private final Function<String, EventSourcedBehavior<?, E, ?>> model;
    private final BiFunction<Integer, Integer, History<E, ?, V>> history;
    private final BiFunction<String, CadastreMetrics.Recovery, Behavior<C>> live;
    private final Function<ActorRef<V>, C> read;
    private final ToIntFunction<V> heldIn;

    private EntityKind(
            String name,
            int held,
            int preamble,
            IntFunction<String> entityId,
            Function<String, EventSourcedBehavior<?, E, ?>> model,
            BiFunction<Integer, Integer, History<E, ?, V>> history,
            BiFunction<String, CadastreMetrics.Recovery, Behavior<C>> live,
            Function<ActorRef<V>, C> read,
            ToIntFunction<V> heldIn) {
        this.name = name;
        this.held = held;
        this.eventsToFill = preamble + held;
        this.entityId = entityId;
        this.model = model;
        this.history = history;
        this.live = live;
        this.read = read;
        this.heldIn = heldIn;
    }

    private static Cidr block(int index) {
        return BLOCKS.subnet(BLOCK_PREFIX, BigInteger.valueOf(index));
    }

    private static String nodeName(int index) {
        return "bench-node-" + index;
    }

    /** @return the entity id of the probe's entity {@code index} of this kind */
    String entityId(int index) {
        return entityId.apply(index);
    }

    /** @return an incarnation that is never started, lending its handlers to {@link JournalSeeder} */
    EventSourcedBehavior<?, E, ?> model(String entityId) {
        return model.apply(entityId);
    }

    /** @return the events of entity {@code index}'s life (its index is its seed too) */
    History<E, ?, V> history(int index) {
        return history.apply(index, held);
    }

    /** @return the real entity, as sharding starts it, telling {@code recovery} how long it took */
    Behavior<C> live(String entityId, CadastreMetrics.Recovery recovery) {
        return live.apply(entityId, recovery);
    }

    /** @return the read command (GetBlock, GetNode) */
    C read(ActorRef<V> replyTo) {
        return read.apply(replyTo);
    }

    /** @return how many allocations or attachments the reply shows */
    int held(V view) {
        return heldIn.applyAsInt(view);
    }

    @Override
    public String toString() {
        return name;
    }
}
