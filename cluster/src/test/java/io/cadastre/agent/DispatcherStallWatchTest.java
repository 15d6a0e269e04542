package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/** A dispatcher that runs nothing is reported once, with the threads, and its recovery too; a paused JVM is not. */
class DispatcherStallWatchTest {
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final List<Runnable> queued = new ArrayList<>();
    private final Executor held = queued::add;
    private final List<String> warnings = new ArrayList<>();
    private final List<String> infos = new ArrayList<>();
    private final DispatcherStallWatch watch =
            new DispatcherStallWatch(
                    List.of(Map.entry("internal", held)),
                    Duration.ofSeconds(5),
                    clock::get,
                    warnings::add,
                    infos::add,
                    () -> "THREADS");

    private void advance(long millis) {
        clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    /** Advances in steps shorter than the threshold, checking after each, as the watcher's thread does. */
    private void watchFor(long millis) {
        for (long done = 0; done < millis; done += 500) {
            advance(500);
            watch.check();
        }
    }

    @Test
    void aProbeWaitingPastTheThresholdIsReportedOnceWithTheThreadsAndItsEndIsLogged() {
        watch.check();
        assertEquals(1, queued.size(), "one probe sent");
        watchFor(5_000);
        assertEquals(List.of(), warnings, "5 s is not past the threshold");
        watchFor(1_000);
        assertEquals(1, warnings.size());
        assertTrue(
                warnings.get(0).startsWith("the internal dispatcher has run nothing for 5.5 s"),
                warnings.get(0));
        assertTrue(warnings.get(0).endsWith("THREADS"), warnings.get(0));
        watchFor(10_000);
        assertEquals(1, warnings.size(), "reported once per stall");
        assertEquals(1, queued.size(), "no second probe while the first waits");
        queued.remove(0).run();
        watch.check();
        assertEquals(List.of("the internal dispatcher runs again after 16.0 s"), infos);
        assertEquals(1, queued.size(), "probing goes on");
    }

    @Test
    void aDispatcherThatRunsItsProbesIsNeverReported() {
        for (int i = 0; i < 100; i++) {
            watch.check();
            queued.forEach(Runnable::run);
            queued.clear();
            advance(500);
        }
        assertEquals(List.of(), warnings);
        assertEquals(List.of(), infos);
    }

    @Test
    void aGapInTheWatchersOwnScheduleIsAPauseNotAStall() {
        watch.check();
        advance(30_000);
        watch.check();
        watchFor(4_500);
        assertEquals(
                List.of(),
                warnings,
                "the probe's clock restarted after the watcher's own 30 s gap");
        watchFor(1_000);
        assertEquals(1, warnings.size(), "a stall after the pause is still reported");
    }

    @Test
    void theReportOfARealBlockedExecutorNamesWhereItsThreadWaits() throws Exception {
        AtomicReference<Thread> worker = new AtomicReference<>();
        ExecutorService single =
                Executors.newSingleThreadExecutor(
                        r -> {
                            Thread thread = new Thread(r, "stall-test-worker");
                            worker.set(thread);
                            return thread;
                        });
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> reports = new CopyOnWriteArrayList<>();
        try {
            single.execute(
                    () -> {
                        entered.countDown();
                        try {
                            release.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    });
            assertTrue(entered.await(10, TimeUnit.SECONDS));
            // the worker counts down before it parks: the dump must not catch it in between
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (worker.get().getState() != Thread.State.WAITING) {
                assertTrue(System.nanoTime() < deadline, "the worker never parked");
                Thread.sleep(1);
            }
            DispatcherStallWatch real =
                    new DispatcherStallWatch(
                            List.of(Map.entry("test", single)),
                            Duration.ofSeconds(5),
                            clock::get,
                            reports::add,
                            reports::add,
                            ThreadDump::take);
            real.check();
            for (int i = 0; i < 12; i++) {
                advance(500);
                real.check();
            }
            assertEquals(1, reports.size(), "the probe queued behind the blocked task is reported");
            String report = reports.get(0);
            assertTrue(report.contains("\"stall-test-worker\" WAITING"), report);
            assertTrue(report.contains("java.util.concurrent.CountDownLatch.await("), report);
            assertTrue(
                    report.contains(
                            "DispatcherStallWatchTest.lambda$theReportOfARealBlockedExecutorNamesWhereItsThreadWaits"),
                    report);
        } finally {
            release.countDown();
            single.shutdown();
            assertTrue(single.awaitTermination(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void
            aJournalOnAPoolOfItsOwnIsWatchedBesideTheDefaultAndInternalOnesAndOneOnTheActorsThreadOnce()
                    throws Exception {
        ActorSystem<Void> system =
                ActorSystem.create(
                        Behaviors.empty(),
                        "stall-watch-test",
                        ConfigFactory.parseString("pekko.actor.provider = local")
                                .withFallback(ConfigFactory.load()));
        try {
            // The agent's configuration runs the Cassandra journal on the actors' thread: watched
            // as "default" already.
            String journal =
                    system.settings()
                            .config()
                            .getString("pekko.persistence.cassandra.journal.plugin-dispatcher");
            assertEquals(
                    List.of("default", "internal"),
                    DispatcherStallWatch.dispatchers(system, List.of(journal)).stream()
                            .map(Map.Entry::getKey)
                            .toList());
            // Pointed back at the plugin's own pool, that pool is watched on its own threads.
            String pool = "pekko.persistence.cassandra.default-dispatcher";
            List<Map.Entry<String, Executor>> watched =
                    DispatcherStallWatch.dispatchers(system, List.of(pool));
            assertEquals(
                    List.of("default", "internal", pool),
                    watched.stream().map(Map.Entry::getKey).toList());
            CompletableFuture<String> ranOn = new CompletableFuture<>();
            watched.get(2)
                    .getValue()
                    .execute(() -> ranOn.complete(Thread.currentThread().getName()));
            String thread = ranOn.get(10, TimeUnit.SECONDS);
            assertTrue(thread.contains(pool), thread);
        } finally {
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
