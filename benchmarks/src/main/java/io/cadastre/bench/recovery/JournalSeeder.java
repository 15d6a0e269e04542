package io.cadastre.bench.recovery;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.EventAdapter;
import org.apache.pekko.persistence.typed.SnapshotAdapter;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * Writes an entity's journal fast: persists the entity's own events in batches under the entity's
 * persistence id, through the entity's own empty state, event handler, event and snapshot adapters
 * and retention. The journal and snapshot rows are then those the entity writes one command at a
 * time (~2 ms per event on Cassandra, minutes for 100,000), at a fraction of the cost. Pekko takes
 * a batch's snapshot after its last event when any event of the batch reaches the snapshot
 * interval, so every batch ends on a multiple of the interval (or before one): the snapshots fall
 * on the same sequence numbers as the entity's.
 *
 * @param <E> the entity's event type
 * @param <S> the entity's state type
 */
final class JournalSeeder<E, S> extends EventSourcedBehavior<JournalSeeder.Append, E, S> {
    /** BlockEntity and NodeEntity snapshot every this many events ({@code snapshotEvery(100, 2)}). */
    static final int SNAPSHOT_EVERY = 100;

    private static final RetentionCriteria ENTITY_RETENTION =
            RetentionCriteria.snapshotEvery(SNAPSHOT_EVERY, 2);

    /** Persists {@code events} in one write; answers the last sequence number after it. */
    record Append(List<?> events, ActorRef<Long> replyTo) {}

    private final EventSourcedBehavior<?, E, S> entity;
    private final ActorContext<Append> context;

    private JournalSeeder(ActorContext<Append> context, EventSourcedBehavior<?, E, S> entity) {
        super(entity.persistenceId());
        this.entity = entity;
        this.context = context;
    }

    /**
     * Appends {@code count} events of {@code history} to the entity's journal in a seeder started
     * for the purpose and stopped after.
     *
     * @param entity an incarnation of the entity that is never started: its persistence id,
     *     handlers, adapters and retention are used
     * @param seqNr the journal's last sequence number now (0 for a new entity)
     * @return the journal's last sequence number after, {@code seqNr + count}
     * @throws IllegalStateException when the entity's retention is no longer the one the batches are
     *     aligned to, when the journal's sequence numbers are not those expected (it held events
     *     already: persistence ids must be fresh), or when a write fails or times out
     */
    static <E, S> long append(
            ActorSystem<Nursery.Command> system,
            EventSourcedBehavior<?, E, S> entity,
            Iterator<? extends E> history,
            long seqNr,
            long count,
            Duration timeout) {
        if (!ENTITY_RETENTION.equals(entity.retentionCriteria())) {
            throw new IllegalStateException(
                    entity.persistenceId()
                            + " no longer snapshots every "
                            + SNAPSHOT_EVERY
                            + " events: align the seeder's batches with its retention");
        }
        String name = "seeder-" + entity.persistenceId().id().replaceAll("[^A-Za-z0-9-]", "_");
        ActorRef<Append> seeder =
                Nursery.spawn(
                        system,
                        () -> Behaviors.setup(context -> new JournalSeeder<>(context, entity)),
                        name,
                        timeout);
        try {
            long end = seqNr + count;
            while (seqNr < end) {
                int size = (int) Math.min(end - seqNr, SNAPSHOT_EVERY - seqNr % SNAPSHOT_EVERY);
                List<E> batch = new ArrayList<>(size);
                for (int i = 0; i < size; i++) {
                    batch.add(history.next());
                }
                long written =
                        Nursery.await(
                                AskPattern.ask(
                                        seeder,
                                        (ActorRef<Long> replyTo) -> new Append(batch, replyTo),
                                        timeout,
                                        system.scheduler()),
                                timeout,
                                "appending to " + entity.persistenceId());
                if (written != seqNr + size) {
                    throw new IllegalStateException(
                            entity.persistenceId()
                                    + " is at sequence number "
                                    + written
                                    + " after appending "
                                    + size
                                    + " events, expected "
                                    + (seqNr + size)
                                    + ": its journal held events already");
                }
                seqNr = written;
            }
            return seqNr;
        } finally {
            Nursery.stop(system, seeder, timeout);
        }
    }

    @Override
    public S emptyState() {
        return entity.emptyState();
    }

    @Override
    @SuppressWarnings("unchecked")
    public CommandHandler<Append, E, S> commandHandler() {
        return newCommandHandlerBuilder()
                .forAnyState()
                .onCommand(
                        Append.class,
                        (state, append) ->
                                Effect()
                                        .persist((List<E>) append.events())
                                        .thenRun(
                                                after ->
                                                        append.replyTo()
                                                                .tell(lastSequenceNumber(context))))
                .build();
    }

    @Override
    public EventHandler<S, E> eventHandler() {
        return entity.eventHandler();
    }

    @Override
    public RetentionCriteria retentionCriteria() {
        return entity.retentionCriteria();
    }

    @Override
    public boolean shouldSnapshot(S state, E event, long sequenceNr) {
        return entity.shouldSnapshot(state, event, sequenceNr);
    }

    @Override
    public SnapshotAdapter<S> snapshotAdapter() {
        return entity.snapshotAdapter();
    }

    @Override
    public EventAdapter<E, ?> eventAdapter() {
        return entity.eventAdapter();
    }

    @Override
    public Set<String> tagsFor(E event) {
        return entity.tagsFor(event);
    }

    @Override
    public String journalPluginId() {
        return entity.journalPluginId();
    }

    @Override
    public String snapshotPluginId() {
        return entity.snapshotPluginId();
    }
}
