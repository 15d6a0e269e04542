package io.cadastre.shards;

import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
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
 *   <li>snapshots of a copy of the state ({@link CopyingSnapshotAdapter}): the event handlers
 *       change the state in place;
 *   <li>the step most commands share: acknowledge a change already made (a retried command, root
 *       DESIGN.md, invariant 4), else persist its event, then acknowledge ({@link #ackOrPersist}).
 * </ul>
 *
 * @param <C> the entity's commands
 * @param <E> its events
 * @param <S> its state
 */
abstract class CadastreEntity<C, E, S> extends EventSourcedBehaviorWithEnforcedReplies<C, E, S> {
    private static final RetentionCriteria RETENTION = RetentionCriteria.snapshotEvery(100, 2);

    private final MemberFence fence;
    private final CadastreMetrics.Recovery recovery;

    /** When this incarnation started (sharding creates the behaviour when the entity starts). */
    private final long startedNanos = System.nanoTime();

    CadastreEntity(PersistenceId id, MemberFence fence, CadastreMetrics.Recovery recovery) {
        super(id);
        this.fence = fence;
        this.recovery = recovery;
    }

    /** An entity's behaviour from its id, its member's fence and its recovery reporter. */
    @FunctionalInterface
    interface Factory<C> {
        Behavior<C> create(String entityId, MemberFence fence, CadastreMetrics.Recovery recovery);
    }

    /**
     * Registers an entity type with cluster sharding on this member: every incarnation gets the
     * member's fence and the entity's recovery reporter ({@code cadastre_entity_recovery_seconds}
     * with {@code entity}).
     *
     * @param entity the metrics' name of the entity ({@link CadastreMetrics#recovery})
     */
    static <C> void initSharding(
            ActorSystem<?> system, EntityTypeKey<C> key, String entity, Factory<C> factory) {
        MemberFence fence = MemberFence.get(system);
        CadastreMetrics.Recovery recovery = CadastreMetrics.get(system).recovery(entity);
        ClusterSharding.get(system)
                .init(Entity.of(key, ctx -> factory.create(ctx.getEntityId(), fence, recovery)));
    }

    /** The entity's command handlers, behind the fence. */
    abstract CommandHandlerWithReply<C, E, S> handlers();

    /** @return a copy of {@code state} that shares nothing the event handlers change */
    abstract S copy(S state);

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
        return new CopyingSnapshotAdapter<>(this::copy);
    }

    /**
     * Acknowledges at once when {@code done} (the change is in the state already: a retried
     * command), else persists the event and acknowledges once it is persisted (root DESIGN.md,
     * invariant 2).
     */
    ReplyEffect<E, S> ackOrPersist(
            boolean done, ActorRef<StatusReply<Done>> replyTo, Supplier<? extends E> event) {
        return done
                ? Effect().reply(replyTo, StatusReply.ack())
                : Effect().persist(event.get()).thenReply(replyTo, s -> StatusReply.ack());
    }
}
