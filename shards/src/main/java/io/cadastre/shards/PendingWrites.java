package io.cadastre.shards;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The events an entity decided since its last write and the answers that wait for them: the calls
 * that meet in one entity while a write is in flight share its next write (one atomic write of
 * all their events, {@link CadastreEntity#writePending}). Nothing here is in the entity's state
 * before the write (root DESIGN.md, invariant 2); a decision that depends on a pending one waits
 * for the write (the entity stashes its command).
 *
 * @param <E> the entity's events
 */
final class PendingWrites<E> {
    private final List<E> events = new ArrayList<>();
    private final List<Runnable> replies = new ArrayList<>();
    private final Set<String> keys = new HashSet<>();

    /** The events and answers of one write, in the order decided. */
    record Batch<E>(List<E> events, List<Runnable> replies) {}

    boolean isEmpty() {
        return events.isEmpty();
    }

    /** @return whether a pending event touches {@code key} (an attachment's key, for instance) */
    boolean touches(String key) {
        return keys.contains(key);
    }

    /**
     * @param key what the event touches ({@link #touches})
     * @param reply sends the answer, once the event is written
     * @return true when this is the first event since the last {@link #drain}: the entity must send
     *     itself the command that writes them
     */
    boolean add(E event, String key, Runnable reply) {
        boolean first = events.isEmpty();
        events.add(event);
        replies.add(reply);
        keys.add(key);
        return first;
    }

    /** @return what is pending, now no longer */
    Batch<E> drain() {
        Batch<E> batch = new Batch<>(List.copyOf(events), List.copyOf(replies));
        events.clear();
        replies.clear();
        keys.clear();
        return batch;
    }
}
