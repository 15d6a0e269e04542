package io.cadastre.journal;

import io.cadastre.shards.FollowedBySyncedWrite;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.dispatch.Futures;
import org.apache.pekko.persistence.AtomicWrite;
import org.apache.pekko.persistence.PersistentRepr;
import org.apache.pekko.persistence.journal.Tagged;
import org.apache.pekko.persistence.journal.japi.AsyncWriteJournal;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import scala.concurrent.Future;
import scala.jdk.javaapi.CollectionConverters;
import scala.jdk.javaapi.FutureConverters;

/**
 * Pekko journal plugin over the {@link EmbeddedStore}'s {@link RocksJournalStore}: a write
 * completes once synced (group commit), except one whose every event is {@link
 * FollowedBySyncedWrite}, which completes once in the log and is made durable by the synced write
 * its flow always makes next (an ADD's block assignment, then the node's record; a DEL's forget on
 * the node, then the blocks' release: one sync per call). Events are stored with their serializer
 * id and manifest (tags and event metadata are not kept: nothing in Cadastre reads them). A write
 * the store refuses as stale ({@link RocksJournalStore.StaleWriteException}: its sequence number
 * is taken) is rejected, so the entity that sent it stops without replying, and the journal goes
 * on.
 * Configure as {@code class = "io.cadastre.journal.EmbeddedJournal"}.
 */
public final class EmbeddedJournal extends AsyncWriteJournal {
    private final RocksJournalStore store = EmbeddedStore.ID.get(context().system()).store();
    private final Serialization serialization = SerializationExtension.get(context().system());

    @Override
    public Future<Iterable<Optional<Exception>>> doAsyncWriteMessages(
            Iterable<AtomicWrite> messages) {
        List<CompletableFuture<Optional<Exception>>> results = new ArrayList<>();
        for (AtomicWrite write : messages) {
            List<RocksJournalStore.Event> events = new ArrayList<>();
            boolean sync = false;
            try {
                for (PersistentRepr repr : CollectionConverters.asJava(write.payload())) {
                    Object payload =
                            repr.payload() instanceof Tagged tagged
                                    ? tagged.payload()
                                    : repr.payload();
                    sync |=
                            !(payload instanceof FollowedBySyncedWrite followed
                                    && followed.followedBySyncedWrite());
                    Serializer serializer = serialization.findSerializerFor(payload);
                    events.add(
                            new RocksJournalStore.Event(
                                    repr.sequenceNr(),
                                    repr.writerUuid(),
                                    repr.manifest(),
                                    repr.timestamp(),
                                    serializer.identifier(),
                                    Serializers.manifestFor(serializer, payload),
                                    serializer.toBinary(payload)));
                }
            } catch (Exception e) {
                // Rejected (not written): the entity is told, the journal goes on.
                results.add(CompletableFuture.completedFuture(Optional.of(e)));
                continue;
            }
            results.add(
                    store.appendEvents(write.persistenceId(), events, sync)
                            .handle(
                                    (done, failure) -> {
                                        Throwable cause =
                                                failure instanceof CompletionException
                                                        ? failure.getCause()
                                                        : failure;
                                        if (cause == null) {
                                            return Optional.<Exception>empty();
                                        }
                                        if (cause
                                                instanceof
                                                RocksJournalStore.StaleWriteException stale) {
                                            return Optional.<Exception>of(stale);
                                        }
                                        // An I/O failure fails the whole call: Pekko stops the
                                        // writers.
                                        throw new CompletionException(cause);
                                    }));
        }
        // Completes when every write is synced or refused.
        return FutureConverters.asScala(
                CompletableFuture.allOf(results.toArray(CompletableFuture[]::new))
                        .thenApply(
                                done ->
                                        (Iterable<Optional<Exception>>)
                                                results.stream()
                                                        .map(CompletableFuture::join)
                                                        .toList()));
    }

    @Override
    public Future<Void> doAsyncDeleteMessagesTo(String persistenceId, long toSequenceNr) {
        return FutureConverters.asScala(store.deleteEventsTo(persistenceId, toSequenceNr));
    }

    @Override
    public Future<Void> doAsyncReplayMessages(
            String persistenceId,
            long fromSequenceNr,
            long toSequenceNr,
            long max,
            Consumer<PersistentRepr> replayCallback) {
        try {
            store.replay(
                    persistenceId,
                    fromSequenceNr,
                    toSequenceNr,
                    max,
                    event -> {
                        Object payload =
                                serialization
                                        .deserialize(
                                                event.payload(),
                                                event.serializerId(),
                                                event.serializerManifest())
                                        .get();
                        replayCallback.accept(
                                PersistentRepr.apply(
                                                payload,
                                                event.seqNr(),
                                                persistenceId,
                                                event.adapterManifest(),
                                                false,
                                                ActorRef.noSender(),
                                                event.writerUuid())
                                        .withTimestamp(event.timestamp()));
                    });
            return Futures.successful(null);
        } catch (Exception e) {
            return Futures.failed(e);
        }
    }

    @Override
    public Future<Long> doAsyncReadHighestSequenceNr(String persistenceId, long fromSequenceNr) {
        try {
            return Futures.successful(store.highestSeqNr(persistenceId));
        } catch (Exception e) {
            return Futures.failed(e);
        }
    }
}
