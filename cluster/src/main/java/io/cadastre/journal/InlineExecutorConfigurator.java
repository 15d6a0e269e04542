package io.cadastre.journal;

import com.typesafe.config.Config;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.dispatch.DispatcherPrerequisites;
import org.apache.pekko.dispatch.ExecutorServiceConfigurator;
import org.apache.pekko.dispatch.ExecutorServiceFactory;

/**
 * A Pekko dispatcher executor that runs each task on the thread that hands it over, for the
 * embedded journal's actor ({@code cadastre.embedded-journal.dispatcher} in application.conf:
 * {@code executor = "io.cadastre.journal.InlineExecutorConfigurator"}).
 *
 * <p>Why: Pekko's journal actor ({@code AsyncWriteJournal}) turns one persist into four thread
 * hand-offs on its own dispatcher: the entity's write request to the journal actor, the write's
 * completion callback, the resequencer actor that orders the replies, and the reply to the entity.
 * Each hand-off to a pool thread that is idle is a wake-up and a context switch, and the benchmark
 * suite's {@code agent-cost} profile put a third of the agent's CPU per IPAM call in the kernel's
 * thread switching. Run inline, the journal actor runs on the entity's thread (it serializes the
 * events and queues them for {@link RocksJournalStore}'s writer, which never blocks), and the
 * completion and resequencer run on the writer thread once the write is synced (they only send
 * messages): a persist then costs two hand-offs, to the writer and back to the entity.
 *
 * <p>What runs on it must never block for long: a replay reads RocksDB on the recovering entity's
 * thread, as it read it on the journal's own dispatcher before. Pekko still runs each actor on one
 * thread at a time: a mailbox already being run takes new messages into that run.
 */
public final class InlineExecutorConfigurator extends ExecutorServiceConfigurator {
    /** Called by Pekko with the dispatcher's configuration. */
    public InlineExecutorConfigurator(Config config, DispatcherPrerequisites prerequisites) {
        super(config, prerequisites);
    }

    @Override
    public ExecutorServiceFactory createExecutorServiceFactory(
            String id, ThreadFactory threadFactory) {
        return Inline::new;
    }

    /** Runs every task at once, on the caller's thread; refuses tasks once shut down. */
    static final class Inline extends AbstractExecutorService {
        private volatile boolean shutDown;

        @Override
        public void execute(Runnable task) {
            if (shutDown) {
                throw new RejectedExecutionException("the inline executor is shut down");
            }
            task.run();
        }

        @Override
        public void shutdown() {
            shutDown = true;
        }

        @Override
        public List<Runnable> shutdownNow() {
            shutDown = true;
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return shutDown;
        }

        @Override
        public boolean isTerminated() {
            return shutDown;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return shutDown;
        }
    }
}
