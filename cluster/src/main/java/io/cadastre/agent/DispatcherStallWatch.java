package io.cadastre.agent;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports a dispatcher that runs nothing: every {@link #PERIOD} a no-op task is handed to each
 * watched dispatcher, and one still waiting after {@code threshold} means every thread of that
 * dispatcher is blocked or busy. The report carries every thread's stack ({@link ThreadDump}),
 * logged once per stall, and a second line when the dispatcher runs again. Cluster membership,
 * remoting and sharding run on Pekko's internal dispatcher, the node agent and the entities on
 * the default one; a stall of either shows up elsewhere only as missed heartbeats and timeouts.
 *
 * <p>A gap in this watcher's own schedule (the whole JVM was stopped or starved) restarts the
 * clock of every waiting probe instead of reporting it: that is a pause, not a dispatcher stall,
 * and {@code io.cadastre.shards.MemberFence} handles it.
 */
final class DispatcherStallWatch implements AutoCloseable {
    private static final String DEFAULT_DISPATCHER = "pekko.actor.default-dispatcher";
    private static final String INTERNAL_DISPATCHER = "pekko.actor.internal-dispatcher";

    /** How often each dispatcher is probed. */
    static final Duration PERIOD = Duration.ofMillis(500);

    /** One watched executor and its probe in flight. */
    private static final class Watched {
        final String name;
        final Executor executor;

        /** When the probe in flight was sent (nanoseconds), or 0 when none is. */
        long sentAt;

        /** When the probe in flight ran (nanoseconds), or 0 until it has. */
        final AtomicLong ranAt = new AtomicLong();

        boolean reported;

        Watched(String name, Executor executor) {
            this.name = name;
            this.executor = executor;
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(DispatcherStallWatch.class);

    private final List<Watched> watched;
    private final long thresholdNanos;
    private final LongSupplier nanoClock;
    private final Consumer<String> warn;
    private final Consumer<String> info;
    private final Supplier<String> threads;
    private long lastCheck;
    private volatile boolean closed;

    /**
     * @param executors the dispatchers by name
     * @param threshold how long a probe may wait before the stall is reported
     * @param nanoClock a monotonic clock in nanoseconds
     * @param warn where a stall's report goes; {@code info} where its end goes
     * @param threads the thread dump to attach ({@link ThreadDump#take})
     */
    DispatcherStallWatch(
            List<Map.Entry<String, Executor>> executors,
            Duration threshold,
            LongSupplier nanoClock,
            Consumer<String> warn,
            Consumer<String> info,
            Supplier<String> threads) {
        this.watched = executors.stream().map(e -> new Watched(e.getKey(), e.getValue())).toList();
        this.thresholdNanos = threshold.toNanos();
        this.nanoClock = nanoClock;
        this.warn = warn;
        this.info = info;
        this.threads = threads;
        this.lastCheck = nanoClock.getAsLong();
    }

    /**
     * Watches the actor system's default and internal dispatchers, and {@code more} (config paths
     * of dispatchers, e.g. the Cassandra journal's, reported by their path), on a daemon thread,
     * logging to this class's logger, until the system terminates.
     *
     * @param threshold how long a dispatcher may run nothing before it is reported
     */
    static DispatcherStallWatch start(
            ActorSystem<?> system, Duration threshold, List<String> more) {
        DispatcherStallWatch watch =
                new DispatcherStallWatch(
                        dispatchers(system, more),
                        threshold,
                        System::nanoTime,
                        LOG::warn,
                        LOG::info,
                        ThreadDump::take);
        Thread thread = new Thread(watch::run, "cadastre-stall-watch");
        thread.setDaemon(true);
        thread.start();
        system.getWhenTerminated().thenRun(watch::close);
        return watch;
    }

    /**
     * @return the default and internal dispatchers of {@code system}, then those of {@code more}
     *     (config paths) that are neither of those two (the Cassandra journal runs on the default
     *     one by the agent's configuration), each by the name its reports use
     */
    static List<Map.Entry<String, Executor>> dispatchers(ActorSystem<?> system, List<String> more) {
        Map<String, DispatcherSelector> selectors = new LinkedHashMap<>();
        selectors.put("default", DispatcherSelector.defaultDispatcher());
        selectors.put("internal", DispatcherSelector.fromConfig(INTERNAL_DISPATCHER));
        more.stream()
                .filter(
                        path ->
                                !path.equals(DEFAULT_DISPATCHER)
                                        && !path.equals(INTERNAL_DISPATCHER))
                .forEach(path -> selectors.put(path, DispatcherSelector.fromConfig(path)));
        var dispatchers = system.dispatchers();
        return selectors.entrySet().stream()
                .map(e -> Map.<String, Executor>entry(e.getKey(), dispatchers.lookup(e.getValue())))
                .toList();
    }

    private void run() {
        while (!closed) {
            check();
            try {
                Thread.sleep(PERIOD.toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** One round: collects the probes that ran, reports those waiting too long, sends new ones. */
    void check() {
        long now = nanoClock.getAsLong();
        boolean watcherPaused = now - lastCheck > thresholdNanos;
        lastCheck = now;
        for (Watched w : watched) {
            if (w.sentAt != 0) {
                long ran = w.ranAt.get();
                if (ran != 0) {
                    if (w.reported) {
                        info.accept(
                                String.format(
                                        Locale.ROOT,
                                        "the %s dispatcher runs again after %.1f s",
                                        w.name,
                                        (ran - w.sentAt) / 1e9));
                    }
                    w.sentAt = 0;
                } else if (watcherPaused) {
                    w.sentAt = now;
                } else if (!w.reported && now - w.sentAt > thresholdNanos) {
                    w.reported = true;
                    warn.accept(
                            String.format(
                                    Locale.ROOT,
                                    "the %s dispatcher has run nothing for %.1f s: its threads are blocked or busy; all threads:%n%s",
                                    w.name,
                                    (now - w.sentAt) / 1e9,
                                    threads.get()));
                }
            }
            if (w.sentAt == 0) {
                w.sentAt = now;
                w.reported = false;
                w.ranAt.set(0);
                try {
                    w.executor.execute(() -> w.ranAt.set(Math.max(1, nanoClock.getAsLong())));
                } catch (RejectedExecutionException e) {
                    close(); // the dispatcher has shut down with the actor system
                }
            }
        }
    }

    @Override
    public void close() {
        closed = true;
    }
}
