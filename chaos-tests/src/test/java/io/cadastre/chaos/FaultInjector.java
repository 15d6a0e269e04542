package io.cadastre.chaos;

import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.Topology;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Injects the {@link FaultPlan}'s faults, one at a time, and records each with its start and end:
 *
 * <ul>
 *   <li>KILL: SIGKILL of the member's process; the {@link Supervisor} restarts it after the
 *       fault's delay. Ends when the member is ready again.
 *   <li>PAUSE: SIGSTOP of the member's process (its PID only), SIGCONT after 8-12 s, longer than
 *       failure detection plus stable-after, so the others down it. A downed member shuts itself
 *       down; the supervisor restarts it.
 *   <li>PARTITION: the host cut off the fabric ({@link Topology#partition}) for 10-15 s, then
 *       healed. The minority side downs itself; the supervisor restarts it.
 *   <li>CASSANDRA_RESTART: {@link CassandraNode#restart()} (SIGTERM, start, wait for CQL).
 * </ul>
 *
 * After each fault it waits, bounded, for recovery before the next: a settle time after the fault
 * was lifted (for pauses and partitions long enough that a downed member has exited), then every
 * member's process up and every host having completed a successful operation since then (and since
 * its member was last restarted). So two members are never faulted at once, and a majority
 * survives every fault. A recovery that does not come in time is recorded and the run goes on.
 */
final class FaultInjector {
    private static final long KILL_RESTART_TIMEOUT_S = 150;
    private static final long RECOVERY_TIMEOUT_S = 180;

    /** Failure detection (~3.5 s) + stable-after (3 s) + removal + margin: a downed member has exited by then. */
    private static final long SETTLE_AFTER_DOWNING_MS = 9_000;

    private static final long SETTLE_AFTER_CASSANDRA_MS = 2_000;

    private final History history;
    private final Topology topology;
    private final CassandraNode cassandra;
    private final Supervisor supervisor;
    private final List<Member> members;
    private final Set<Long> paused = ConcurrentHashMap.newKeySet();
    private final Set<Topology.Host> partitioned = ConcurrentHashMap.newKeySet();
    private final Map<FaultPlan.Kind, Integer> injected = new EnumMap<>(FaultPlan.Kind.class);
    private volatile int recoveryTimeouts;

    FaultInjector(
            History history,
            Topology topology,
            CassandraNode cassandra,
            Supervisor supervisor,
            List<Member> members) {
        this.history = history;
        this.topology = topology;
        this.cassandra = cassandra;
        this.supervisor = supervisor;
        this.members = List.copyOf(members);
    }

    /**
     * Injects the plan's mandatory faults, then more until {@code untilNanos} (history time) has
     * passed, or until {@code abort} says so.
     */
    void run(FaultPlan plan, long untilNanos, BooleanSupplier abort)
            throws IOException, InterruptedException {
        int done = 0;
        while (!abort.getAsBoolean()
                && (done < plan.mandatoryCount() || history.now() < untilNanos)) {
            FaultPlan.Fault f = plan.next();
            done++;
            sleep(f.gapMillis());
            inject(f);
        }
    }

    /** @return faults injected per kind */
    Map<FaultPlan.Kind, Integer> injected() {
        synchronized (injected) {
            return Map.copyOf(injected);
        }
    }

    int recoveryTimeouts() {
        return recoveryTimeouts;
    }

    private void inject(FaultPlan.Fault f) throws IOException, InterruptedException {
        if (f.kind() != FaultPlan.Kind.CASSANDRA_RESTART && !supervisor.slot(f.target()).up()) {
            awaitRecovery(history.now(), 0, "before " + f);
        }
        switch (f.kind()) {
            case KILL -> kill(f);
            case PAUSE -> pause(f);
            case PARTITION -> partition(f);
            case CASSANDRA_RESTART -> restartCassandra();
        }
        synchronized (injected) {
            injected.merge(f.kind(), 1, Integer::sum);
        }
    }

    private void kill(FaultPlan.Fault f) throws InterruptedException {
        Member m = members.get(f.host() - 1);
        Supervisor.Slot slot = supervisor.slot(m.name());
        long pid = m.pid();
        long at = history.now();
        supervisor.hold(m.name(), at + TimeUnit.MILLISECONDS.toNanos(f.millis()));
        long id =
                history.faultStarted(
                        "kill",
                        m.name(),
                        "SIGKILL pid " + pid + ", restart after " + f.millis() + " ms");
        m.kill();
        boolean back =
                awaitCondition(() -> slot.readyAtNanos > at && slot.up(), KILL_RESTART_TIMEOUT_S);
        history.faultEnded(
                id,
                back
                        ? String.format(
                                Locale.ROOT,
                                "ready again after %.1f s",
                                (slot.readyAtNanos - at) / 1e9)
                        : "not ready again within " + KILL_RESTART_TIMEOUT_S + " s");
        awaitRecovery(history.now(), 0, "kill of " + m.name());
    }

    private void pause(FaultPlan.Fault f) throws IOException, InterruptedException {
        Member m = members.get(f.host() - 1);
        long pid = m.pid();
        long id =
                history.faultStarted(
                        "pause", m.name(), "SIGSTOP pid " + pid + " for " + f.millis() + " ms");
        paused.add(pid);
        try {
            signal("STOP", pid);
            sleep(f.millis());
        } finally {
            signal("CONT", pid);
            paused.remove(pid);
        }
        history.faultEnded(id, "SIGCONT");
        awaitRecovery(history.now(), SETTLE_AFTER_DOWNING_MS, "pause of " + m.name());
    }

    private void partition(FaultPlan.Fault f) throws InterruptedException {
        Topology.Host host = topology.host(f.host());
        long id =
                history.faultStarted(
                        "partition", host.name(), "cut off the fabric for " + f.millis() + " ms");
        partitioned.add(host);
        try {
            topology.partition(host);
            sleep(f.millis());
        } finally {
            topology.heal(host);
            partitioned.remove(host);
        }
        history.faultEnded(id, "healed");
        awaitRecovery(history.now(), SETTLE_AFTER_DOWNING_MS, "partition of " + host.name());
    }

    private void restartCassandra() throws IOException, InterruptedException {
        long at = history.now();
        long id = history.faultStarted("cassandra-restart", "db", "SIGTERM, start, wait for CQL");
        cassandra.restart();
        history.faultEnded(
                id,
                String.format(Locale.ROOT, "CQL ready after %.1f s", (history.now() - at) / 1e9));
        awaitRecovery(history.now(), SETTLE_AFTER_CASSANDRA_MS, "Cassandra restart");
    }

    /**
     * Waits until {@code settle} after {@code from} has passed, every member is up, and every
     * host has completed a successful operation after that point and after its member's last
     * restart. Records a recovery timeout if that takes longer than the bound.
     */
    private void awaitRecovery(long from, long settleMillis, String after)
            throws InterruptedException {
        long settled = from + TimeUnit.MILLISECONDS.toNanos(settleMillis);
        boolean ok =
                awaitCondition(
                        () ->
                                history.now() >= settled
                                        && supervisor.allUp()
                                        && members.stream()
                                                .allMatch(
                                                        m ->
                                                                history.lastOk(m.name())
                                                                        > Math.max(
                                                                                settled,
                                                                                supervisor.slot(
                                                                                                m
                                                                                                        .name())
                                                                                        .readyAtNanos)),
                        RECOVERY_TIMEOUT_S);
        if (!ok) {
            recoveryTimeouts++;
            List<String> state = new ArrayList<>();
            for (Member m : members) {
                Supervisor.Slot s = supervisor.slot(m.name());
                state.add(
                        m.name()
                                + (s.up() ? " up" : " down")
                                + ", last ok "
                                + Times.seconds(history.lastOk(m.name()))
                                + ", ready "
                                + Times.seconds(s.readyAtNanos));
            }
            history.event(
                    "recovery-timeout",
                    "cluster",
                    "no recovery within "
                            + RECOVERY_TIMEOUT_S
                            + " s after "
                            + after
                            + ": "
                            + state);
        }
    }

    private static boolean awaitCondition(BooleanSupplier condition, long timeoutSeconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
        }
        return true;
    }

    /** Lifts whatever fault is in force (teardown after a failure): SIGCONT, heal. */
    void liftAll() {
        for (long pid : List.copyOf(paused)) {
            try {
                signal("CONT", pid);
            } catch (IOException | InterruptedException e) {
                // the process may be gone
            }
        }
        for (Topology.Host host : List.copyOf(partitioned)) {
            try {
                topology.heal(host);
            } catch (RuntimeException e) {
                // the topology may be gone
            }
        }
    }

    /** Sends a signal to one PID with kill(1). */
    static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process p =
                new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                        .redirectErrorStream(true)
                        .start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("kill -" + signal + " " + pid + " failed: " + out.strip());
        }
    }

    private static void sleep(long millis) throws InterruptedException {
        Thread.sleep(millis); // the schedule's spacing, not a timing assertion
    }
}
