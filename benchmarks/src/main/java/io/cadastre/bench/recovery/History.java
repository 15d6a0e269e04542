package io.cadastre.bench.recovery;

import java.util.Iterator;
import java.util.Random;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;

/**
 * One entity's events as its life writes them: endless, the same for the same seed, applied as
 * they are produced to a model made of the entity's own empty state and event handler, so that the
 * next event follows from the state (as the entity's commands decide from theirs) and a recovered
 * entity can be checked against the state its journal leads to.
 *
 * @param <E> the entity's event type
 * @param <S> its state type
 * @param <V> its reply to a read (GetBlock, GetNode)
 */
abstract class History<E, S, V> implements Iterator<E> {
    /** A fixed clock: the same seed writes the same events. */
    static final long EPOCH_MILLIS = 1_750_000_000_000L;

    /** Container ids, pod names and such. */
    final Random random;

    private final EventHandler<S, E> handler;
    private S state;
    private long events;

    /** @param model an incarnation of the entity that is never started: its empty state and event handler */
    History(EventSourcedBehavior<?, E, S> model, long seed) {
        this.handler = model.eventHandler();
        this.state = model.emptyState();
        this.random = new Random(seed);
    }

    /** Never ends. */
    @Override
    public final boolean hasNext() {
        return true;
    }

    @Override
    public final E next() {
        E event = nextEvent(state, events);
        state = handler.apply(state, event);
        events++;
        return event;
    }

    /**
     * @param events how many events came before
     * @return the event that follows {@code state}
     */
    abstract E nextEvent(S state, long events);

    /** @return the state the events so far lead to */
    final S state() {
        return state;
    }

    /** @return the id of the entity whose life this is */
    abstract String entityId();

    /**
     * @param view the reply of an entity recovered from the events produced so far
     * @throws IllegalStateException when it differs from the state those events lead to: the
     *     seeded journal did not recover as the entity's own would
     */
    abstract void verify(V view);

    /** @return the state the events so far lead to, in words ("32 of 64 addresses allocated") */
    abstract String describe();

    /** @return a container id as runtimes make them: 64 hex digits */
    final String containerId() {
        return String.format(
                "%016x%016x%016x%016x",
                random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong());
    }

    /** @return a pod name as a Deployment's ReplicaSet makes them ({@code web-5d78c9b6f4-x2kq9}) */
    final String podName() {
        return String.format(
                "web-%010x-%s",
                random.nextLong() & 0xff_ffff_ffffL,
                Long.toString(36L * 36 * 36 * 36 + random.nextInt(35 * 36 * 36 * 36 * 36), 36)
                        .substring(0, 5));
    }
}
