package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cadastre.agent.FencedCassandraJournal.EpochFilter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.persistence.PersistentRepr;
import org.junit.jupiter.api.Test;

/**
 * The Cassandra journal's replay rule over rows as the journal returns them (by sequence number,
 * then write time): per sequence number the row of the highest epoch, nothing of an older epoch
 * after a newer one, and nothing of an epoch past a later epoch's cut.
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
        return replay(JournalCuts.NONE, rows);
    }

    private static List<String> replay(JournalCuts cuts, PersistentRepr... rows) {
        List<String> replayed = new ArrayList<>();
        offered(replayed, cuts, rows);
        return replayed;
    }

    /** @return the filter, once every row is offered and it is flushed into {@code replayed} */
    private static EpochFilter offered(
            List<String> replayed, JournalCuts cuts, PersistentRepr... rows) {
        EpochFilter filter = new EpochFilter(e -> replayed.add((String) e.payload()), cuts);
        for (PersistentRepr row : rows) {
            filter.offer(row);
        }
        filter.flush();
        return filter;
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

    @Test
    void aStaleRowThatLandedAfterTheNextRecoveryIsNotReplayedThoughNothingFollowsIt() {
        // A acknowledged 1; its write of 2 was refused and landed only after B (epoch 2) had
        // recovered with 1 and recorded that cut; B wrote nothing. The chaos run of seed
        // 4399636892607039522 found such a row replayed: an attachment without its allocation.
        JournalCuts cuts = JournalCuts.of(Map.of(1L, 0L, 2L, 1L));
        assertEquals(List.of("A-1"), replay(cuts, row(1, "A", 1L), row(2, "A", 1L)));
        assertEquals(
                List.of("A-1", "C-3"),
                replay(cuts.with(3L, 2L), row(1, "A", 1L), row(2, "A", 1L), row(3, "C", 3L)));
    }

    @Test
    void aStaleRowBelowTheRawHighestIsCutWhereTheRecoveryDidNotAdoptIt() {
        // A (1) acknowledged 1, its batch 2..4 landed late; B (2) adopted 1 and wrote 2, its write
        // of 3 landed only after C (3) had recovered; C adopted 1..2 though the highest was 4.
        JournalCuts cuts = JournalCuts.of(Map.of(2L, 1L, 3L, 2L));
        assertEquals(
                List.of("A-1", "B-2", "C-5"),
                replay(
                        cuts,
                        row(1, "A", 1L),
                        row(2, "A", 1L),
                        row(2, "B", 2L),
                        row(3, "A", 1L),
                        row(3, "B", 2L),
                        row(4, "A", 1L),
                        row(5, "C", 3L)));
    }

    @Test
    void theLastReplayedNumberIsWhatTheRecoveryAdopted() {
        List<String> replayed = new ArrayList<>();
        EpochFilter filter =
                offered(
                        replayed,
                        JournalCuts.of(Map.of(2L, 1L)),
                        row(1, "A", 1L),
                        row(2, "A", 1L),
                        row(3, "A", 1L));
        assertEquals(List.of("A-1"), replayed);
        assertEquals(1, filter.lastReplayed());
    }

    @Test
    void cutsKeepOnlyWhatBoundsARow() {
        JournalCuts cuts = JournalCuts.of(Map.of(2L, 5L, 3L, 5L, 4L, 9L));
        assertEquals(Map.of(3L, 5L, 4L, 9L), cuts.asMap());
        assertEquals(5, cuts.limitFor(1));
        assertEquals(5, cuts.limitFor(2));
        assertEquals(9, cuts.limitFor(3));
        assertEquals(Long.MAX_VALUE, cuts.limitFor(4));
        assertEquals(Map.of(3L, 5L, 5L, 9L), cuts.with(5L, 9L).asMap());
        assertEquals(Map.of(3L, 5L, 4L, 9L, 5L, 12L), cuts.with(5L, 12L).asMap());
    }
}
