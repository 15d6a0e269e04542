package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.shards.MemberFence;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.dispatch.Futures;
import org.apache.pekko.japi.pf.ReceiveBuilder;
import org.apache.pekko.persistence.AtomicWrite;
import org.apache.pekko.persistence.PersistentRepr;
import org.apache.pekko.persistence.cassandra.KeyspaceAndTableStatements;
import org.apache.pekko.persistence.cassandra.PluginSettings;
import org.apache.pekko.persistence.cassandra.journal.CassandraJournal;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSessionRegistry;
import scala.Function1;
import scala.PartialFunction;
import scala.collection.immutable.Seq;
import scala.concurrent.ExecutionContext;
import scala.concurrent.Future;
import scala.concurrent.Promise;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;
import scala.util.Try;

/**
 * pekko-persistence-cassandra's journal with two fences against writes from an entity incarnation
 * that is no longer the entity's owner (a member paused or cut off past failover, whose entities
 * the cluster has already started elsewhere):
 *
 * <ul>
 *   <li><b>In the store</b> ({@link CassandraJournalEpochs}): every recovery first raises the
 *       entity's epoch by compare-and-set; every event is stamped with its incarnation's epoch (the
 *       event's metadata, a {@code Long}); a write is acknowledged only if the stored epoch is
 *       still the incarnation's once the events are written. A stale incarnation's write fails, so
 *       its entity never replies, and replay skips its rows ({@link #asyncReplayMessages}). Every
 *       recovery records its cut, the highest sequence number it adopted, before its entity may
 *       write ({@link JournalCuts}): a stale row that lands later is never replayed.
 *   <li><b>In the member</b> ({@link MemberFence}): while the fence is closed (just after a pause,
 *       no majority in sight) writes are refused before they reach Cassandra at all.
 * </ul>
 *
 * <p>A refused write fails the entity's persist ({@link StaleWriteException} or
 * {@link FencedException}): the entity stops without replying, and its caller asks again, which
 * reaches the live incarnation.
 *
 * <p>The plugin's recovery path reads state of the journal actor, so it is resumed on the actor's
 * thread once the epoch is claimed ({@link Claimed}).
 *
 * <p>Configured as {@code pekko.persistence.cassandra.journal.class}; the constructor is the one
 * Pekko calls for journal plugins.
 */
public final class FencedCassandraJournal extends CassandraJournal {
    /** The plugin's configuration path, shared by its journal and its session. */
    static final String PLUGIN_PATH = "pekko.persistence.cassandra";

    private final MemberFence fence;
    private final CassandraJournalEpochs epochs;

    /** The actor's dispatcher, taken once: the futures below run off the actor's thread. */
    private final ExecutionContext dispatcher;

    /**
     * The epoch this member's incarnation of each entity claimed when it recovered, once that
     * recovery's cut is recorded: only then may the incarnation write.
     */
    private final Map<String, Long> claimed = new ConcurrentHashMap<>();

    /** The claims of recoveries whose replay comes next, by persistence id. */
    private final Map<String, CassandraJournalEpochs.Claim> replayNext = new ConcurrentHashMap<>();

    /** An epoch claim's answer, back on the journal actor to read the highest sequence number. */
    private record Claimed(
            String persistenceId,
            long fromSequenceNr,
            CassandraJournalEpochs.Claim claim,
            Throwable failure,
            Promise<Object> highest) {}

    public FencedCassandraJournal(Config config, String configPath) {
        super(config, configPath);
        var system = Adapter.toTyped(context().system());
        this.fence = MemberFence.get(system);
        this.dispatcher = context().dispatcher();
        Config plugin = context().system().settings().config().getConfig(PLUGIN_PATH);
        Config journal = plugin.getConfig("journal");
        String keyspaceStatement =
                new KeyspaceAndTableStatements(
                                context().system(),
                                PLUGIN_PATH,
                                PluginSettings.apply(context().system()))
                        .createJournalKeyspaceStatement();
        this.epochs =
                new CassandraJournalEpochs(
                        CassandraSessionRegistry.get(system).sessionFor(PLUGIN_PATH).underlying(),
                        journal.getString("keyspace"),
                        journal.getBoolean("tables-autocreate"),
                        keyspaceStatement,
                        plugin.getString("write-profile"));
    }

    /**
     * Claims a new epoch for the recovering incarnation ({@link CassandraJournalEpochs#claim}),
     * then reads the highest sequence number: the claim comes first, so that every write a stale
     * incarnation has acknowledged is already in the journal when the events are read. Pekko calls
     * this at the start of every recovery, before the replay; when there is nothing to replay
     * (the highest is {@code fromSequenceNr}, the snapshot's), the recovery's cut is recorded here.
     */
    @Override
    public Future<Object> asyncReadHighestSequenceNr(String persistenceId, long fromSequenceNr) {
        Promise<Object> highest = Futures.promise();
        ActorRef journal = self();
        epochs.claim(persistenceId)
                .whenComplete(
                        (claim, failure) ->
                                journal.tell(
                                        new Claimed(
                                                persistenceId,
                                                fromSequenceNr,
                                                claim,
                                                failure,
                                                highest),
                                        ActorRef.noSender()));
        return highest.future();
    }

    private void onClaimed(Claimed c) {
        if (c.failure() != null) {
            c.highest().failure(unwrapped(c.failure()));
            return;
        }
        c.highest()
                .completeWith(
                        super.asyncReadHighestSequenceNr(c.persistenceId(), c.fromSequenceNr())
                                .flatMap(
                                        found -> {
                                            if ((Long) found > c.fromSequenceNr()) {
                                                replayNext.put(c.persistenceId(), c.claim());
                                                return Futures.successful(found);
                                            }
                                            // Nothing past the snapshot: all of it is adopted.
                                            return recordCut(
                                                            c.persistenceId(),
                                                            c.claim(),
                                                            c.fromSequenceNr())
                                                    .map(recorded -> found, dispatcher);
                                        },
                                        dispatcher));
    }

    /**
     * Records the cut of a recovery that adopted the events up to {@code highestAdopted}; then, and
     * only then, its incarnation may write.
     *
     * @return a future that fails with {@link StaleWriteException} when a newer incarnation has
     *     claimed the entity meanwhile, or with the driver's exception
     */
    private Future<BoxedUnit> recordCut(
            String persistenceId, CassandraJournalEpochs.Claim claim, long highestAdopted) {
        Promise<BoxedUnit> recorded = Futures.promise();
        CompletionStage<OptionalLong> write =
                epochs.recordCut(
                        persistenceId,
                        claim.epoch(),
                        claim.cuts().with(claim.epoch(), highestAdopted));
        write.whenComplete(
                (newer, failure) -> {
                    if (failure != null) {
                        recorded.failure(unwrapped(failure));
                    } else if (newer.isPresent()) {
                        recorded.failure(
                                StaleWriteException.ofRecovery(persistenceId, newer.getAsLong()));
                    } else {
                        claimed.put(persistenceId, claim.epoch());
                        recorded.success(BoxedUnit.UNIT);
                    }
                });
        return recorded.future();
    }

    private static Throwable unwrapped(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause()
                : failure;
    }

    /**
     * Writes the events stamped with this incarnation's epoch, then acknowledges them only if the
     * stored epoch is still that one. All writes of one call are of one persistent actor (Pekko
     * sends one actor's batch per call).
     */
    @Override
    public Future<Seq<Try<BoxedUnit>>> asyncWriteMessages(Seq<AtomicWrite> messages) {
        return unlessFenced(fence, () -> writeInEpoch(messages));
    }

    private Future<Seq<Try<BoxedUnit>>> writeInEpoch(Seq<AtomicWrite> messages) {
        String persistenceId = messages.head().persistenceId();
        Long epoch = claimed.get(persistenceId);
        if (epoch == null) {
            // Only a recovery through this journal claims an epoch: the incarnation must recover
            // again (this journal actor was restarted under it).
            return Futures.failed(
                    new StaleWriteException(persistenceId, messages.head().lowestSequenceNr(), -1));
        }
        List<AtomicWrite> stamped = new ArrayList<>(messages.size());
        for (AtomicWrite write : CollectionConverters.asJava(messages)) {
            List<PersistentRepr> events = new ArrayList<>(write.size());
            for (PersistentRepr event : CollectionConverters.asJava(write.payload())) {
                events.add(event.withMetadata(epoch));
            }
            stamped.add(AtomicWrite.apply(CollectionConverters.asScala(events).toList()));
        }
        long from = messages.head().lowestSequenceNr();
        return super.asyncWriteMessages(CollectionConverters.asScala(stamped).toList())
                .flatMap(
                        results ->
                                results.exists(Try::isFailure)
                                        ? Futures.successful(results)
                                        : ifEpochStillCurrent(persistenceId, from, epoch, results),
                        dispatcher);
    }

    /**
     * @return {@code results} once the stored epoch of {@code persistenceId} is read back as
     *     {@code epoch}; a {@link StaleWriteException} when a newer incarnation has claimed the
     *     entity, or the driver's exception when the read fails
     */
    private <T> Future<T> ifEpochStillCurrent(
            String persistenceId, long from, long epoch, T results) {
        Promise<T> acknowledged = Futures.promise();
        epochs.current(persistenceId)
                .whenComplete(
                        (stored, failure) -> {
                            if (failure != null) {
                                acknowledged.failure(unwrapped(failure));
                            } else if (stored != epoch) {
                                acknowledged.failure(
                                        new StaleWriteException(persistenceId, from, stored));
                            } else {
                                acknowledged.success(results);
                            }
                        });
        return acknowledged.future();
    }

    /**
     * Replays the events, each sequence number once: of the rows of one sequence number, the one
     * of the highest epoch; no event of a lower epoch than one replayed before it; and no event of
     * an epoch past the cut of a later one (a stale incarnation's rows, written or landed after a
     * newer incarnation had claimed the entity; their writes were never acknowledged). Events
     * written before epochs existed count as epoch 0. Then records this recovery's cut.
     *
     * @return a future that fails with an {@link IllegalStateException} when no claim of this
     *     recovery precedes the replay, or as {@link #recordCut} does
     */
    @Override
    public Future<BoxedUnit> asyncReplayMessages(
            String persistenceId,
            long fromSequenceNr,
            long toSequenceNr,
            long max,
            Function1<PersistentRepr, BoxedUnit> replay) {
        CassandraJournalEpochs.Claim claim = replayNext.remove(persistenceId);
        if (claim == null) {
            return Futures.failed(
                    new IllegalStateException(
                            "replay of "
                                    + persistenceId
                                    + " without an epoch claimed by its recovery (another"
                                    + " recovery of it on this member took the claim)"));
        }
        EpochFilter filter = new EpochFilter(replay::apply, claim.cuts());
        // The plugin's read ends at the first row of toSequenceNr: a second row of that number (the
        // live incarnation's, written after a stale row whose timestamp is older) would never
        // reach the filter. So read one number further, and stop at toSequenceNr here.
        long readTo = toSequenceNr == Long.MAX_VALUE ? toSequenceNr : toSequenceNr + 1;
        return super.asyncReplayMessages(
                        persistenceId,
                        fromSequenceNr,
                        readTo,
                        max,
                        event ->
                                event.sequenceNr() > toSequenceNr
                                        ? BoxedUnit.UNIT
                                        : filter.offer(event))
                .flatMap(
                        done -> {
                            filter.flush();
                            return recordCut(
                                    persistenceId,
                                    claim,
                                    Math.max(fromSequenceNr - 1, filter.lastReplayed()));
                        },
                        dispatcher);
    }

    @Override
    public PartialFunction<Object, BoxedUnit> receivePluginInternal() {
        return ReceiveBuilder.create()
                .match(Claimed.class, this::onClaimed)
                .build()
                .onMessage()
                .orElse(super.receivePluginInternal());
    }

    @Override
    public Future<BoxedUnit> asyncDeleteMessagesTo(String persistenceId, long toSequenceNr) {
        return unlessFenced(fence, () -> super.asyncDeleteMessagesTo(persistenceId, toSequenceNr));
    }

    /**
     * @return the write's future, or a failed one ({@link FencedException}) while the fence is
     *     closed
     */
    static <T> Future<T> unlessFenced(MemberFence fence, Supplier<Future<T>> write) {
        Optional<String> refusal = fence.refusal();
        return refusal.isPresent()
                ? Futures.failed(new FencedException(refusal.get()))
                : write.get();
    }

    /**
     * The replay rule of {@link #asyncReplayMessages}, over events in the journal's order (by
     * sequence number, then write time). Not thread-safe: one replay's events arrive one at a time.
     */
    static final class EpochFilter {
        private final Consumer<PersistentRepr> replay;
        private final JournalCuts cuts;
        private PersistentRepr pending;
        private long highestReplayedEpoch;
        private long lastReplayed;

        /**
         * @param replay receives the events replayed
         * @param cuts the cuts recorded by the entity's earlier recoveries
         */
        EpochFilter(Consumer<PersistentRepr> replay, JournalCuts cuts) {
            this.replay = replay;
            this.cuts = cuts;
        }

        /** @return the sequence number of the last event replayed, 0 before any */
        long lastReplayed() {
            return lastReplayed;
        }

        /** @return nothing; the Scala callback's shape */
        BoxedUnit offer(PersistentRepr event) {
            if (pending != null && event.sequenceNr() == pending.sequenceNr()) {
                if (epochOf(event) > epochOf(pending)) {
                    pending = event;
                }
                return BoxedUnit.UNIT;
            }
            flush();
            pending = event;
            return BoxedUnit.UNIT;
        }

        /**
         * Replays the last event held back, if no newer epoch came before it and no later epoch's
         * cut lies before it. (Of the rows of one sequence number, the one of the highest epoch is
         * held back: where it is past a cut, so are the others, whose limits are lower.)
         */
        void flush() {
            if (pending == null) {
                return;
            }
            long epoch = epochOf(pending);
            if (epoch >= highestReplayedEpoch && pending.sequenceNr() <= cuts.limitFor(epoch)) {
                highestReplayedEpoch = epoch;
                lastReplayed = pending.sequenceNr();
                replay.accept(pending);
            }
            pending = null;
        }

        /** @return the epoch an event was stamped with, 0 for one written before epochs existed */
        static long epochOf(PersistentRepr event) {
            return event.metadata().isDefined() && event.metadata().get() instanceof Long epoch
                    ? epoch
                    : 0L;
        }
    }

    /** A journal or snapshot write refused because the member's fence is closed. */
    static final class FencedException extends IllegalStateException {
        FencedException(String why) {
            super("write refused: " + why);
        }
    }

    /**
     * A write or a recovery refused by the store: another incarnation of the entity has claimed a
     * newer epoch.
     */
    public static final class StaleWriteException extends IllegalStateException {
        StaleWriteException(String persistenceId, long from, long storedEpoch) {
            this("write of " + persistenceId + " from sequence number " + from, storedEpoch);
        }

        private StaleWriteException(String what, long storedEpoch) {
            super(
                    what
                            + " refused: "
                            + (storedEpoch < 0
                                    ? "this member's incarnation of the entity has claimed no epoch"
                                    : "the entity's epoch is "
                                            + storedEpoch
                                            + ", claimed by a newer incarnation"));
        }

        /** @return the refusal of a recovery's cut: {@code storedEpoch} is newer than its claim */
        static StaleWriteException ofRecovery(String persistenceId, long storedEpoch) {
            return new StaleWriteException("recovery of " + persistenceId, storedEpoch);
        }
    }
}
