package io.cadastre.agent;

import java.util.Collections;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The cuts of one entity's journal: for each epoch whose incarnation completed a recovery, the
 * highest sequence number that recovery adopted (replayed, or covered by the snapshot it loaded).
 * Kept in {@code journal_epochs} ({@link CassandraJournalEpochs#recordCut}) and applied by every
 * replay ({@link FencedCassandraJournal.EpochFilter}).
 *
 * <p>The rule: a row of epoch {@code e} past the cut of any later epoch is never replayed. Such a
 * row was not in the journal when that later incarnation read it, so it was never acknowledged
 * (an acknowledged write lands before its epoch's read-back, hence before any later claim), and
 * that incarnation built its state and wrote without it. Without the cut, the row would surface
 * in a later replay whenever the later incarnation wrote nothing at or after its sequence number:
 * a partitioned member's last write, sent by its kernel after the heal, would reappear.
 *
 * <p>Immutable. Only cuts that bound something are kept: a cut whose value some later epoch's cut
 * does not exceed bounds no row the later one does not bound already, so after {@link #of} and
 * {@link #with} the values rise strictly with the epoch and an entity keeps one entry per
 * recovery that followed a write.
 */
public final class JournalCuts {
    /** No cuts: the entity has none recorded. */
    public static final JournalCuts NONE = new JournalCuts(new TreeMap<>());

    /** Epoch → highest sequence number adopted; values rising strictly with the key. */
    private final NavigableMap<Long, Long> cuts;

    private JournalCuts(NavigableMap<Long, Long> cuts) {
        this.cuts = cuts;
    }

    /** @param stored epoch → highest adopted sequence number, as stored (any order, redundant ones) */
    static JournalCuts of(Map<Long, Long> stored) {
        NavigableMap<Long, Long> kept = new TreeMap<>();
        long lowestLater = Long.MAX_VALUE;
        for (Map.Entry<Long, Long> cut : new TreeMap<>(stored).descendingMap().entrySet()) {
            if (cut.getValue() < lowestLater) {
                kept.put(cut.getKey(), cut.getValue());
                lowestLater = cut.getValue();
            }
        }
        return kept.isEmpty() ? NONE : new JournalCuts(kept);
    }

    /** @return these cuts and {@code epoch}'s: {@code highestAdopted}, a sequence number */
    JournalCuts with(long epoch, long highestAdopted) {
        Map<Long, Long> next = new TreeMap<>(cuts);
        next.put(epoch, highestAdopted);
        return of(next);
    }

    /**
     * @return the highest sequence number a row of {@code epoch} may have and still be replayed:
     *     the lowest cut of a later epoch, {@link Long#MAX_VALUE} when no later epoch has one
     */
    long limitFor(long epoch) {
        Map.Entry<Long, Long> firstLater = cuts.higherEntry(epoch);
        return firstLater == null ? Long.MAX_VALUE : firstLater.getValue();
    }

    /** @return epoch → highest adopted sequence number, unmodifiable */
    Map<Long, Long> asMap() {
        return Collections.unmodifiableMap(cuts);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof JournalCuts other && cuts.equals(other.cuts);
    }

    @Override
    public int hashCode() {
        return cuts.hashCode();
    }

    @Override
    public String toString() {
        return "cuts " + cuts;
    }
}
