package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cadastre.agent.FencedCassandraJournal.EpochFilter;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.persistence.PersistentRepr;
import org.junit.jupiter.api.Test;

/**
 * The Cassandra journal's replay rule over rows as the journal returns them (by sequence number,
 * then write time): per sequence number the row of the highest epoch, and nothing of an older
 * epoch after a newer one.
 */
class EpochFilterTest {
    private static PersistentRepr row(long sequenceNr, String writer, Long epoch) {
        PersistentRepr event =
                PersistentRepr.apply(
                        writer + "-" + sequenceNr,
                        sequenceNr,
                        "entity",
                        "",
                        false,
                        ActorRef.noSender(),
                        writer);
        return epoch == null ? event : event.withMetadata(epoch);
    }

    private static List<String> replay(PersistentRepr... rows) {
        List<String> replayed = new ArrayList<>();
        EpochFilter filter = new EpochFilter(e -> replayed.add((String) e.payload()));
        for (PersistentRepr row : rows) {
            filter.offer(row);
        }
        filter.flush();
        return replayed;
    }

    @Test
    void oneIncarnationAfterAnotherIsReplayedWhole() {
        assertEquals(
                List.of("A-1", "A-2", "B-3", "B-4"),
                replay(row(1, "A", 1L), row(2, "A", 1L), row(3, "B", 2L), row(4, "B", 2L)));
    }

    @Test
    void aStaleRowOfANumberTheLiveIncarnationWroteLosesWhateverItsWriteTime() {
        assertEquals(
                List.of("A-1", "B-2", "B-3"),
                replay(row(1, "A", 1L), row(2, "A", 1L), row(2, "B", 2L), row(3, "B", 2L)));
        assertEquals(
                List.of("A-1", "B-2", "B-3"),
                replay(row(1, "A", 1L), row(2, "B", 2L), row(2, "A", 1L), row(3, "B", 2L)));
    }

    @Test
    void staleRowsAfterANewerEpochAreNotReplayed() {
        assertEquals(
                List.of("A-1", "B-2", "B-5"),
                replay(
                        row(1, "A", 1L),
                        row(2, "B", 2L),
                        row(3, "A", 1L),
                        row(4, "A", 1L),
                        row(5, "B", 2L)));
    }

    @Test
    void aStaleRowTheNewerIncarnationReadBeforeItWroteIsKept() {
        // B recovered after A's row 2 landed: B's state holds it, and B wrote after it.
        assertEquals(
                List.of("A-1", "A-2", "B-3"),
                replay(row(1, "A", 1L), row(2, "A", 1L), row(3, "B", 2L)));
    }

    @Test
    void rowsWrittenBeforeEpochsCountAsEpochZero() {
        assertEquals(
                List.of("old-1", "old-2", "A-3"),
                replay(row(1, "old", null), row(2, "old", null), row(3, "A", 1L)));
        assertEquals(List.of("A-1"), replay(row(1, "A", 1L), row(2, "old", null)));
    }
}
