package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.shards.MemberFence;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.dispatch.Futures;
import org.apache.pekko.persistence.AtomicWrite;
import org.apache.pekko.persistence.cassandra.journal.CassandraJournal;
import scala.collection.immutable.Seq;
import scala.concurrent.Future;
import scala.runtime.BoxedUnit;
import scala.util.Try;

/**
 * pekko-persistence-cassandra's journal, refusing writes while this member's {@link MemberFence}
 * is closed. The entities' own fence stops commands that arrive after a pause; this one stops the
 * writes an entity asked for just before the process was stopped and that the journal only gets
 * to after it resumed. Such a write would carry a timestamp later than the live incarnation's
 * events with the same sequence numbers, and Pekko's replay filter would then keep it and discard
 * the live incarnation's later events. A refused write fails the entity's persist: the entity
 * stops without replying, and its caller asks again. Writes begun before the pause carry earlier
 * timestamps and are repaired correctly by the replay filter.
 *
 * <p>Configured as {@code pekko.persistence.cassandra.journal.class}; the constructor is the one
 * Pekko calls for journal plugins.
 */
public final class FencedCassandraJournal extends CassandraJournal {
    private final MemberFence fence;

    public FencedCassandraJournal(Config config, String configPath) {
        super(config, configPath);
        this.fence = MemberFence.get(Adapter.toTyped(context().system()));
    }

    @Override
    public Future<Seq<Try<BoxedUnit>>> asyncWriteMessages(Seq<AtomicWrite> messages) {
        return unlessFenced(fence, () -> super.asyncWriteMessages(messages));
    }

    @Override
    public Future<BoxedUnit> asyncDeleteMessagesTo(String persistenceId, long toSequenceNr) {
        return unlessFenced(fence, () -> super.asyncDeleteMessagesTo(persistenceId, toSequenceNr));
    }

    /** @return the write's future, or a failed one ({@link FencedException}) while the fence is closed */
    static <T> Future<T> unlessFenced(MemberFence fence, Supplier<Future<T>> write) {
        Optional<String> refusal = fence.refusal();
        return refusal.isPresent() ? Futures.failed(new FencedException(refusal.get())) : write.get();
    }

    /** A journal or snapshot write refused because the member's fence is closed. */
    static final class FencedException extends IllegalStateException {
        FencedException(String why) {
            super("write refused: " + why);
        }
    }
}
