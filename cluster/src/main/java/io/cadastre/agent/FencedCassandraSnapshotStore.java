package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.shards.MemberFence;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.persistence.SnapshotMetadata;
import org.apache.pekko.persistence.SnapshotSelectionCriteria;
import org.apache.pekko.persistence.cassandra.snapshot.CassandraSnapshotStore;
import scala.concurrent.Future;
import scala.runtime.BoxedUnit;

/**
 * pekko-persistence-cassandra's snapshot store, refusing saves and deletions while this member's
 * {@link MemberFence} is closed (see {@link FencedCassandraJournal}): a stale incarnation's
 * snapshot would replace the live one's at the same sequence number, and its retention would
 * delete the live incarnation's snapshots.
 *
 * <p>Configured as {@code pekko.persistence.cassandra.snapshot.class}.
 */
public final class FencedCassandraSnapshotStore extends CassandraSnapshotStore {
    private final MemberFence fence;

    public FencedCassandraSnapshotStore(Config config, String configPath) {
        super(config, configPath);
        this.fence = MemberFence.get(Adapter.toTyped(context().system()));
    }

    @Override
    public Future<BoxedUnit> saveAsync(SnapshotMetadata metadata, Object snapshot) {
        return FencedCassandraJournal.unlessFenced(
                fence, () -> super.saveAsync(metadata, snapshot));
    }

    @Override
    public Future<BoxedUnit> deleteAsync(SnapshotMetadata metadata) {
        return FencedCassandraJournal.unlessFenced(fence, () -> super.deleteAsync(metadata));
    }

    @Override
    public Future<BoxedUnit> deleteAsync(String persistenceId, SnapshotSelectionCriteria criteria) {
        return FencedCassandraJournal.unlessFenced(
                fence, () -> super.deleteAsync(persistenceId, criteria));
    }
}
