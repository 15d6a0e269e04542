package io.cadastre.shards;

import java.util.function.UnaryOperator;
import org.apache.pekko.persistence.typed.SnapshotAdapter;

/**
 * Hands the snapshot store a copy of the state. The entities mutate their domain objects in place
 * in the event handler (cheap for a 4,096-address block), but the snapshot store serializes a
 * snapshot later, on its own thread: it must not see the state change under it.
 */
final class CopyingSnapshotAdapter<S> implements SnapshotAdapter<S> {
    private final UnaryOperator<S> copy;

    CopyingSnapshotAdapter(UnaryOperator<S> copy) {
        this.copy = copy;
    }

    @Override
    public Object toJournal(S state) {
        return copy.apply(state);
    }

    @Override
    @SuppressWarnings("unchecked")
    public S fromJournal(Object from) {
        return copy.apply((S) from);
    }
}
