package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.shards.MemberFence;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.dispatch.Futures;
import org.apache.pekko.japi.pf.ReceiveBuilder;
import org.apache.pekko.persistence.AtomicWrite;
import org.apache.pekko.persistence.cassandra.KeyspaceAndTableStatements;
import org.apache.pekko.persistence.cassandra.PluginSettings;
import org.apache.pekko.persistence.cassandra.journal.CassandraJournal;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSessionRegistry;
import scala.PartialFunction;
import scala.collection.immutable.Seq;
import scala.concurrent.Future;
import scala.concurrent.Promise;
import scala.jdk.javaapi.FutureConverters;
import scala.runtime.BoxedUnit;
import scala.util.Try;

/**
 * pekko-persistence-cassandra's journal with two fences against writes from an entity incarnation
 * that is no longer the entity's owner (a member paused or cut off past failover, whose entities
 * the cluster has already started elsewhere):
 *
 * <ul>
 *   <li><b>In the store</b> ({@link CassandraJournalHeads}): every write first moves the entity's
 *       journal head from the sequence number before its events to the last of them, a
 *       compare-and-set in Cassandra. A stale incarnation's head is behind the stored one, its
 *       claim is refused and its events are never written, so no sequence number is written twice;
 *       recovery takes the stored head as the highest sequence number.
 *   <li><b>In the member</b> ({@link MemberFence}): while the fence is closed (just after a pause,
 *       no majority in sight) writes are refused before they reach Cassandra at all.
 * </ul>
 *
 * <p>A refused write fails the entity's persist ({@link StaleWriteException} or
 * {@link FencedException}): the entity stops without replying, and its caller asks again, which
 * reaches the live incarnation.
 *
 * <p>The plugin's write path keeps state of the journal actor, so the events are handed to it on
 * the actor's thread once the claim is granted ({@link Claimed}).
 *
 * <p>Configured as {@code pekko.persistence.cassandra.journal.class}; the constructor is the one
 * Pekko calls for journal plugins.
 */
public final class FencedCassandraJournal extends CassandraJournal {
    /** The plugin's configuration path, shared by its journal and its session. */
    static final String PLUGIN_PATH = "pekko.persistence.cassandra";

    private final MemberFence fence;
    private final CassandraJournalHeads heads;

    /** A claim's answer, back on the journal actor. */
    private record Claimed(
            Seq<AtomicWrite> messages,
            CassandraJournalHeads.Claim claim,
            Throwable failure,
            Promise<Seq<Try<BoxedUnit>>> written) {}

    public FencedCassandraJournal(Config config, String configPath) {
        super(config, configPath);
        var system = Adapter.toTyped(context().system());
        this.fence = MemberFence.get(system);
        Config plugin = context().system().settings().config().getConfig(PLUGIN_PATH);
        Config journal = plugin.getConfig("journal");
        String keyspaceStatement =
                new KeyspaceAndTableStatements(
                                context().system(),
                                PLUGIN_PATH,
                                PluginSettings.apply(context().system()))
                        .createJournalKeyspaceStatement();
        this.heads =
                new CassandraJournalHeads(
                        CassandraSessionRegistry.get(system).sessionFor(PLUGIN_PATH).underlying(),
                        journal.getString("keyspace"),
                        journal.getBoolean("tables-autocreate"),
                        keyspaceStatement,
                        plugin.getString("write-profile"));
    }

    /**
     * Claims the batch's sequence numbers ({@link CassandraJournalHeads#claim}), then writes it.
     * All writes of one call are of one persistent actor (Pekko sends one actor's batch per call).
     */
    @Override
    public Future<Seq<Try<BoxedUnit>>> asyncWriteMessages(Seq<AtomicWrite> messages) {
        return unlessFenced(fence, () -> claimThenWrite(messages));
    }

    private Future<Seq<Try<BoxedUnit>>> claimThenWrite(Seq<AtomicWrite> messages) {
        AtomicWrite first = messages.head();
        long to = messages.last().highestSequenceNr();
        Promise<Seq<Try<BoxedUnit>>> written = Futures.promise();
        ActorRef journal = self();
        heads.claim(first.persistenceId(), first.lowestSequenceNr(), to)
                .whenComplete(
                        (claim, failure) ->
                                journal.tell(
                                        new Claimed(messages, claim, failure, written),
                                        ActorRef.noSender()));
        return written.future();
    }

    private void onClaimed(Claimed claimed) {
        if (claimed.failure() != null) {
            claimed.written().failure(claimed.failure());
        } else if (claimed.claim() instanceof CassandraJournalHeads.Claim.Refused refused) {
            AtomicWrite first = claimed.messages().head();
            claimed.written()
                    .failure(
                            new StaleWriteException(
                                    first.persistenceId(),
                                    first.lowestSequenceNr(),
                                    refused.head()));
        } else {
            claimed.written().completeWith(super.asyncWriteMessages(claimed.messages()));
        }
    }

    @Override
    public PartialFunction<Object, BoxedUnit> receivePluginInternal() {
        return ReceiveBuilder.create()
                .match(Claimed.class, this::onClaimed)
                .build()
                .onMessage()
                .orElse(super.receivePluginInternal());
    }

    /** The higher of the events' highest sequence number and the stored head (see {@link CassandraJournalHeads}). */
    @Override
    public Future<Object> asyncReadHighestSequenceNr(String persistenceId, long fromSequenceNr) {
        var stored =
                FutureConverters.asJava(
                        super.asyncReadHighestSequenceNr(persistenceId, fromSequenceNr));
        return FutureConverters.asScala(
                stored.thenCombine(
                        heads.head(persistenceId),
                        (events, head) -> (Object) Math.max((Long) events, head)));
    }

    @Override
    public Future<BoxedUnit> asyncDeleteMessagesTo(String persistenceId, long toSequenceNr) {
        return unlessFenced(fence, () -> super.asyncDeleteMessagesTo(persistenceId, toSequenceNr));
    }

    /** @return the write's future, or a failed one ({@link FencedException}) while the fence is closed */
    static <T> Future<T> unlessFenced(MemberFence fence, Supplier<Future<T>> write) {
        Optional<String> refusal = fence.refusal();
        return refusal.isPresent()
                ? Futures.failed(new FencedException(refusal.get()))
                : write.get();
    }

    /** A journal or snapshot write refused because the member's fence is closed. */
    static final class FencedException extends IllegalStateException {
        FencedException(String why) {
            super("write refused: " + why);
        }
    }

    /** A write refused by the store: another incarnation has moved the entity's journal head. */
    public static final class StaleWriteException extends IllegalStateException {
        StaleWriteException(String persistenceId, long from, long head) {
            super(
                    "write of "
                            + persistenceId
                            + " from sequence number "
                            + from
                            + " refused: the journal's head is at "
                            + head
                            + ", written by another incarnation of the entity");
        }
    }
}
