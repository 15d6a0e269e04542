package io.cadastre.journal;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.dispatch.Futures;
import org.apache.pekko.persistence.SelectedSnapshot;
import org.apache.pekko.persistence.SnapshotMetadata;
import org.apache.pekko.persistence.SnapshotSelectionCriteria;
import org.apache.pekko.persistence.snapshot.japi.SnapshotStore;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import scala.concurrent.Future;
import scala.jdk.javaapi.FutureConverters;

/**
 * Pekko snapshot store plugin over the {@link EmbeddedStore}'s {@link RocksJournalStore}:
 * snapshots are in the same database as the events (their own column family; one write-ahead
 * log, one sync path, one recovery), synced before a save completes. Configure as
 * {@code class = "io.cadastre.journal.EmbeddedSnapshotStore"}.
 */
public final class EmbeddedSnapshotStore extends SnapshotStore {
    private final RocksJournalStore store = EmbeddedStore.ID.get(context().system()).store();
    private final Serialization serialization = SerializationExtension.get(context().system());

    @Override
    public Future<Optional<SelectedSnapshot>> doLoadAsync(
            String persistenceId, SnapshotSelectionCriteria criteria) {
        try {
            Optional<SelectedSnapshot> selected =
                    store.latestSnapshot(
                                    persistenceId,
                                    criteria.minSequenceNr(),
                                    criteria.maxSequenceNr(),
                                    criteria.minTimestamp(),
                                    criteria.maxTimestamp())
                            .map(
                                    s ->
                                            SelectedSnapshot.create(
                                                    SnapshotMetadata.apply(
                                                            persistenceId,
                                                            s.seqNr(),
                                                            s.timestamp()),
                                                    serialization
                                                            .deserialize(
                                                                    s.payload(),
                                                                    s.serializerId(),
                                                                    s.serializerManifest())
                                                            .get()));
            return Futures.successful(selected);
        } catch (Exception e) {
            return Futures.failed(e);
        }
    }

    @Override
    public Future<Void> doSaveAsync(SnapshotMetadata metadata, Object snapshot) {
        try {
            Serializer serializer = serialization.findSerializerFor(snapshot);
            return FutureConverters.asScala(
                    store.saveSnapshot(
                            new RocksJournalStore.Snapshot(
                                    metadata.persistenceId(),
                                    metadata.sequenceNr(),
                                    metadata.timestamp(),
                                    serializer.identifier(),
                                    Serializers.manifestFor(serializer, snapshot),
                                    serializer.toBinary(snapshot))));
        } catch (Exception e) {
            return Futures.failed(e);
        }
    }

    @Override
    public Future<Void> doDeleteAsync(SnapshotMetadata metadata) {
        // Timestamp 0: any snapshot of that sequence number (Pekko's convention).
        long min = metadata.timestamp() == 0 ? 0 : metadata.timestamp();
        long max = metadata.timestamp() == 0 ? Long.MAX_VALUE : metadata.timestamp();
        return FutureConverters.asScala(
                store.deleteSnapshots(
                        metadata.persistenceId(),
                        metadata.sequenceNr(),
                        metadata.sequenceNr(),
                        min,
                        max));
    }

    /**
     * Deletes the matching snapshots, and with them the events up to the highest sequence number
     * deleted when a newer snapshot remains: Pekko's retention ({@code snapshotEvery(n, keep)})
     * deletes the snapshots older than the ones it keeps, so recovery never reads those events
     * again. Doing it here keeps the entities' retention unchanged for Cassandra, whose journal the
     * chaos tests audit event by event.
     */
    @Override
    public Future<Void> doDeleteAsync(String persistenceId, SnapshotSelectionCriteria criteria) {
        try {
            long coveredTo = Math.min(criteria.maxSequenceNr(), store.highestSeqNr(persistenceId));
            boolean newerKept = store.hasSnapshotAfter(persistenceId, coveredTo);
            return FutureConverters.asScala(
                    store.deleteSnapshots(
                                    persistenceId,
                                    criteria.minSequenceNr(),
                                    criteria.maxSequenceNr(),
                                    criteria.minTimestamp(),
                                    criteria.maxTimestamp())
                            .thenCompose(
                                    done ->
                                            newerKept
                                                    ? store.deleteEventsTo(persistenceId, coveredTo)
                                                    : CompletableFuture.<Void>completedFuture(
                                                            null)));
        } catch (Exception e) {
            return Futures.failed(e);
        }
    }
}
