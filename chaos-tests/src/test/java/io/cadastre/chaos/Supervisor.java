package io.cadastre.chaos;

import io.cadastre.testsupport.Member;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * Restarts members whose process has exited, as a DaemonSet's kubelet would: after a SIGKILL
 * (once the hold the fault injector set has passed), and after a member shut itself down (the
 * split-brain resolver downed it after a pause or a partition: Pekko's coordinated shutdown ends
 * the JVM). Every exit and restart is recorded in the history. A restart whose start-up fails is
 * retried with a growing back-off (2-10 s). Restarted members get seed nodes that do not start
 * with themselves ({@code restartSeeds}), so they can only join the existing cluster, never form
 * one of their own.
 */
final class Supervisor implements AutoCloseable {
    /** One member's supervision state; the volatile fields are written by the supervisor's threads. */
    static final class Slot {
        final Member member;
        volatile long holdUntilNanos;
        volatile long readyAtNanos;
        volatile boolean restarting;
        volatile boolean exitSeen;
        volatile int restarts;

        Slot(Member member) {
            this.member = member;
        }

        /** @return whether the process runs and no restart is under way */
        boolean up() {
            return !restarting && member.alive();
        }
    }

    private static final long POLL_MILLIS = 200;

    private final History history;
    private final Map<String, Slot> slots = new LinkedHashMap<>();
    private final Function<Member, List<String>> restartSeeds;
    private final ExecutorService starters =
            Executors.newCachedThreadPool(
                    r -> {
                        Thread t = new Thread(r, "chaos-supervisor-start");
                        t.setDaemon(true);
                        return t;
                    });
    private final Thread watcher;
    private volatile boolean closed;

    Supervisor(History history, List<Member> members, Function<Member, List<String>> restartSeeds) {
        this.history = history;
        this.restartSeeds = restartSeeds;
        long now = history.now();
        for (Member m : members) {
            Slot s = new Slot(m);
            s.readyAtNanos = now;
            slots.put(m.name(), s);
        }
        this.watcher = new Thread(this::watch, "chaos-supervisor");
        this.watcher.setDaemon(true);
    }

    void start() {
        watcher.start();
    }

    Slot slot(String host) {
        return slots.get(host);
    }

    /** Holds the member's restart until {@code untilNanos} (history time): the kill's "restart after a delay". */
    void hold(String host, long untilNanos) {
        slots.get(host).holdUntilNanos = untilNanos;
    }

    /** Steps that stop and start members themselves ({@link #whileHeld}). */
    @FunctionalInterface
    interface Manual {
        void run() throws Exception;
    }

    /**
     * Runs {@code manual}, which stops and starts members itself, with the supervisor's restarts
     * held off; afterwards every member counts as ready from now.
     */
    void whileHeld(Manual manual) throws Exception {
        slots.values().forEach(s -> s.holdUntilNanos = Long.MAX_VALUE);
        while (slots.values().stream().anyMatch(s -> s.restarting)) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
        try {
            manual.run();
        } finally {
            long now = history.now();
            slots.values()
                    .forEach(
                            s -> {
                                s.readyAtNanos = now;
                                s.exitSeen = false;
                                s.holdUntilNanos = 0;
                            });
        }
    }

    /** @return whether every member's process runs and none is being restarted */
    boolean allUp() {
        return slots.values().stream().allMatch(Slot::up);
    }

    /** @return restarts per host so far */
    Map<String, Integer> restarts() {
        Map<String, Integer> all = new LinkedHashMap<>();
        slots.forEach((host, s) -> all.put(host, s.restarts));
        return all;
    }

    private void watch() {
        while (!closed) {
            for (Slot s : slots.values()) {
                if (s.restarting || s.member.alive() || closed) {
                    continue;
                }
                if (!s.exitSeen) {
                    s.exitSeen = true;
                    String exit =
                            s.member.exitValue().stream()
                                    .mapToObj(c -> "exit code " + c)
                                    .findFirst()
                                    .orElse("exited");
                    history.event("member-exited", s.member.name(), exit);
                }
                if (history.now() >= s.holdUntilNanos) {
                    s.restarting = true;
                    s.exitSeen = false;
                    starters.execute(() -> restart(s));
                }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
    }

    private void restart(Slot s) {
        long backoff = 2_000;
        try {
            while (!closed) {
                long began = history.now();
                try {
                    s.member.seeds(restartSeeds.apply(s.member)).start();
                    s.readyAtNanos = history.now();
                    s.restarts++;
                    history.event(
                            "member-restarted",
                            s.member.name(),
                            String.format(
                                    java.util.Locale.ROOT,
                                    "ready after %.1f s (pid %d)",
                                    (s.readyAtNanos - began) / 1e9,
                                    s.member.pid()));
                    return;
                } catch (Exception e) {
                    if (closed) {
                        return;
                    }
                    String first = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
                    history.event("member-start-failed", s.member.name(), first);
                    if (s.member.alive()) { // started but never ready: no second agent beside it
                        try {
                            s.member.kill();
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(backoff));
                    backoff = Math.min(backoff * 2, 10_000);
                }
            }
        } finally {
            s.restarting = false;
        }
    }

    /** Stops supervising (members are not stopped: their owner closes them). */
    @Override
    public void close() throws InterruptedException {
        closed = true;
        watcher.join(5_000);
        starters.shutdownNow();
        starters.awaitTermination(10, TimeUnit.SECONDS);
    }
}
