package io.cadastre.shards;

import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.SnapshotAdapter;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * The frame every Cadastre entity (pool, block, node, the pool registry) shares, so that each
 * entity's file holds only its commands, events and state:
 *
 * <ul>
 *   <li>the member fence: an incarnation on a member that must not serve drops every command
 *       unanswered, so that the sender's retry reaches the live one ({@link MemberFence}; root
 *       DESIGN.md, invariant 8);
 *   <li>recovery timing: {@code cadastre_entity_recovery_seconds} from the incarnation's start to
 *       its recovery, and a hook to log what was recovered;
 *   <li>retention: a snapshot every 100 events, two kept, so a recovery replays at most 100 events
 *       after the latest snapshot;
 *   <li>snapshots of a copy of the state ({@link CopyingSnapshotAdapter}, {@link
 *       MutableState#copy}): the event handlers change the state in place ({@link #inPlace});
 *   <li>the step most commands share: acknowledge a change already made (a retried command, root
 *       DESIGN.md, invariant 4), else persist its event, then acknowledge ({@link #ackOrPersist});
 *       and the refusal, an error reply with a {@link Refusal} ({@link #refuse});
 *   <li>an incarnation without a fence or a recovery metric for unit tests and benchmarks ({@link
 *       #unfenced}).
 * </ul>
 *
 * @param <C> the entity's commands
 * @param <E> its events
 * @param <S> its state
 */
abstract class CadastreEntity<C, E, S extends CadastreEntity.MutableState<S>>
        extends EventSourcedBehaviorWithEnforcedReplies<C, E, S> {
    private static final RetentionCriteria RETENTION = RetentionCriteria.snapshotEvery(100, 2);

    private final MemberFence fence;
    private final CadastreMetrics.Recovery recovery;

    /** When this incarnation started (sharding creates the behaviour when the entity starts). */
    private final long startedNanos = System.nanoTime();

    /**
     * @param type the entity's sharding key; its name is the persistence id's type
     * @param entityId the entity's id, as sharding gives it
     * @param fence closes this entity to commands while its member may have been replaced
     * @param recovery told how long the entity took from its start to {@code RecoveryCompleted}
     */
    CadastreEntity(
            EntityTypeKey<C> type,
            String entityId,
            MemberFence fence,
            CadastreMetrics.Recovery recovery) {
        super(PersistenceId.of(type.name(), entityId));
        this.fence = fence;
        this.recovery = recovery;
    }

    /**
     * An entity's state: changed in place by the event handlers, so the snapshot store is handed a
     * copy ({@link CopyingSnapshotAdapter}).
     *
     * @param <S> the state's own type
     */
    interface MutableState<S> {
        /**
         * @return a copy that shares nothing the event handlers change; it also turns the
         *     collections Jackson restores from a snapshot into the mutable ones they need
         */
        S copy();
    }

    /** An entity's behaviour from its id, its member's fence and its recovery reporter. */
    @FunctionalInterface
    interface Factory<C> {
        Behavior<C> create(String entityId, MemberFence fence, CadastreMetrics.Recovery recovery);
    }

    /**
     * @return an incarnation that no fence closes and that reports its recovery to nobody: for unit
     *     tests and benchmarks, which run an entity outside cluster sharding
     */
    static <C> Behavior<C> unfenced(Factory<C> factory, String entityId) {
        return factory.create(entityId, MemberFence.NEVER_CLOSED, CadastreMetrics.Recovery.NONE);
    }

    /**
     * Registers an entity type with cluster sharding on this member: every incarnation gets the
     * member's fence and the entity's recovery reporter ({@code cadastre_entity_recovery_seconds}
     * with {@code entity}), and is listed in the member's {@link LocalEntities} while it runs.
     *
     * @param entity the metrics' name of the entity ({@link CadastreMetrics#recovery})
     */
    static <C> void initSharding(
            ActorSystem<?> system, EntityTypeKey<C> key, String entity, Factory<C> factory) {
        initSharding(system, key, entity, factory, false);
    }

    /**
     * As {@link #initSharding(ActorSystem, EntityTypeKey, String, Factory)}; with {@code
     * homed}, each entity has a shard of its own, placed on the member that published itself as
     * the entity's home ({@link EntityHomes}).
     */
    static <C> void initSharding(
            ActorSystem<?> system,
            EntityTypeKey<C> key,
            String entity,
            Factory<C> factory,
            boolean homed) {
        MemberFence fence = MemberFence.get(system);
        CadastreMetrics.Recovery recovery = CadastreMetrics.get(system).recovery(entity);
        LocalEntities local = LocalEntities.get(system);
        Entity<C, ShardingEnvelope<C>> sharded =
                Entity.of(
                        key,
                        ctx ->
                                local.listed(
                                        key,
                                        ctx.getEntityId(),
                                        factory.create(ctx.getEntityId(), fence, recovery)));
        ClusterSharding.get(system).init(homed ? EntityHomes.homed(system, sharded) : sharded);
    }

    /** The entity's command handlers, behind the fence. */
    abstract CommandHandlerWithReply<C, E, S> handlers();

    /**
     * Called once the state is recovered, after the recovery time is reported: where and when an
     * entity came back is logged there (the chaos harness times failover from those lines).
     */
    void recovered(S state) {}

    @Override
    public final CommandHandlerWithReply<C, E, S> commandHandler() {
        return fence.fenced(persistenceId().id(), handlers(), () -> Effect().noReply());
    }

    @Override
    public final SignalHandler<S> signalHandler() {
        return newSignalHandlerBuilder()
                .onSignal(
                        RecoveryCompleted.instance(),
                        state -> {
                            recovery.completedSince(startedNanos);
                            recovered(state);
                        })
                .build();
    }

    @Override
    public final RetentionCriteria retentionCriteria() {
        return RETENTION;
    }

    @Override
    public final SnapshotAdapter<S> snapshotAdapter() {
        return new CopyingSnapshotAdapter<>(MutableState::copy);
    }

    /**
     * Acknowledges at once when {@code done} (the change is in the state already: a retried
     * command), else persists the event and acknowledges once it is persisted (root DESIGN.md,
     * invariant 2).
     */
    ReplyEffect<E, S> ackOrPersist(
            boolean done, ActorRef<StatusReply<Done>> replyTo, Supplier<? extends E> event) {
        return done ? ack(replyTo) : persistThenAck(event.get(), replyTo);
    }

    /** Acknowledges at once: nothing to change. */
    ReplyEffect<E, S> ack(ActorRef<StatusReply<Done>> replyTo) {
        return Effect().reply(replyTo, StatusReply.ack());
    }

    /** Persists the event, then acknowledges (root DESIGN.md, invariant 2). */
    ReplyEffect<E, S> persistThenAck(E event, ActorRef<StatusReply<Done>> replyTo) {
        return Effect().persist(event).thenReply(replyTo, s -> StatusReply.ack());
    }

    /**
     * Writes the pending events in one atomic write, then sends their answers and takes up the
     * commands stashed meanwhile; nothing when none is pending.
     */
    ReplyEffect<E, S> writePending(PendingWrites<E> pending) {
        if (pending.isEmpty()) {
            return Effect().noReply();
        }
        PendingWrites.Batch<E> batch = pending.drain();
        return Effect()
                .persist(batch.events())
                .thenRun(s -> batch.replies().forEach(Runnable::run))
                .thenNoReply()
                .thenUnstashAll();
    }

    /**
     * Refuses the command, changing nothing: an error reply carrying a {@link Refusal}, whose
     * reason reaches the caller as an {@link IpamException} of that reason ({@link EntityAsks}).
     *
     * @param message why, in words for an operator
     */
    <T> ReplyEffect<E, S> refuse(
            ActorRef<StatusReply<T>> replyTo, IpamException.Reason reason, String message) {
        return Effect().reply(replyTo, Refusal.reply(reason, message));
    }

    /**
     * An event handler that changes the state in place (the frame snapshots a copy) and keeps it as
     * the state.
     *
     * @param change what the event does to the state
     */
    static <S, V> BiFunction<S, V, S> inPlace(BiConsumer<S, V> change) {
        return (state, event) -> {
            change.accept(state, event);
            return state;
        };
    }
}
