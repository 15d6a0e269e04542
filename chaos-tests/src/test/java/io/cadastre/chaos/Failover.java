package io.cadastre.chaos;

import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * What the run's kills cost (issue 3), for the summary: for each kill of a member, which surviving
 * hosts had their NodeEntity on it, how long until that NodeEntity was recovered on another
 * member, and how long until an ADD on the host succeeded again. Pure: computed from the
 * history's kills and operations and from the NodeEntity recoveries the agents logged (read by
 * {@link AgentLogs}); unit-tested on hand-made histories ({@code FailoverTest}). Every time here is
 * in nanoseconds of history time ({@link History#now()}).
 *
 * <p>A host's NodeEntity lives, at a given time, on the member that logged the host's latest
 * recovery before then: an entity is started (and its journal replayed) on exactly one member,
 * and it logs one recovery line each time. A host is <em>affected</em> by the kill of member M
 * when its NodeEntity lived on M at the SIGKILL; the killed member's own host is not counted (its
 * clients lose their agent whatever the shards do).
 */
final class Failover {
    /** A duration or a time that never came (within what was looked at). */
    static final long NEVER = Long.MAX_VALUE;

    /** The {@link FaultRecord#kind()} of the injector's SIGKILLs; their target is the host name. */
    static final String KILL = "kill";

    /**
     * A host's NodeEntity recovered (started, journal replayed), as a member logged it.
     *
     * @param atNanos when the line was logged, in history time (millisecond precision: the log's)
     * @param node the NodeEntity's node name, which is its host's name
     * @param member the member (host name) whose log holds the line: where the entity now lives
     */
    record Recovery(long atNanos, String node, String member) {}

    /** Where a surviving host's NodeEntity lived at the kill. */
    enum Place {
        /** On the killed member: the host is affected. */
        KILLED_MEMBER,
        /** On another member. */
        ELSEWHERE,
        /** No recovery of it was logged before the kill. */
        UNKNOWN
    }

    /**
     * One surviving host at one kill.
     *
     * @param livedOn the member its NodeEntity lived on at the kill, or {@code null} when unknown
     * @param recoveredAfterNanos from the SIGKILL to the first recovery of its NodeEntity at or
     *     after it (on any member, until the end of the logs), or {@link #NEVER}
     * @param recoveredOn the member of that recovery, or {@code null}
     * @param addAfterNanos from the SIGKILL to the earliest completion of a successful WORKLOAD ADD
     *     on the host invoked at or after it, or {@link #NEVER}: how long ADD was unavailable
     */
    record HostAfterKill(String host, Place place, String livedOn, long recoveredAfterNanos, String recoveredOn,
            long addAfterNanos) {
        boolean affected() {
            return place == Place.KILLED_MEMBER;
        }
    }

    /**
     * One kill and every other host's outcome.
     *
     * @param atNanos when the harness sent the SIGKILL (the fault's start)
     * @param member the killed member's host name
     * @param nextFaultNanos the start of the next injected fault of any kind, or {@link #NEVER}: a
     *     time measured past it may owe part of its length to that fault
     * @param hosts every other host of the run, in name order
     */
    record Kill(long atNanos, String member, long nextFaultNanos, List<HostAfterKill> hosts) {}

    /**
     * A sample's median and worst.
     *
     * @param count how many values
     * @param never how many of them are {@link #NEVER}
     * @param medianNanos the median, {@link #NEVER} when it falls on a value that never came
     * @param worstNanos the largest, {@link #NEVER} when any value never came
     */
    record Stats(int count, int never, long medianNanos, long worstNanos) {}

    private Failover() {}

    /**
     * Every injected kill and every other host's outcome. The hosts are those with a WORKLOAD
     * operation or a logged recovery. Recoveries and operations may come in any order.
     *
     * @param faults the history's faults and events; only injected faults of kind {@link #KILL}
     *     are kills, the others only bound them ({@link Kill#nextFaultNanos()})
     */
    static List<Kill> analyze(List<FaultRecord> faults, List<Recovery> recoveries, List<Operation> ops) {
        List<Recovery> byTime = new ArrayList<>(recoveries);
        byTime.sort(Comparator.comparingLong(Recovery::atNanos));
        List<Operation> okAdds = ops.stream()
                .filter(op -> op.phase() == Phase.WORKLOAD && op.kind() == Kind.ADD && op.ok()).toList();
        // host2 before host10
        Set<String> hosts = new TreeSet<>(Comparator.comparingInt(String::length)
                .thenComparing(Comparator.naturalOrder()));
        ops.stream().filter(op -> op.phase() == Phase.WORKLOAD).forEach(op -> hosts.add(op.host()));
        byTime.forEach(r -> hosts.add(r.node()));
        List<FaultRecord> injected = faults.stream().filter(FaultRecord::injected)
                .sorted(Comparator.comparingLong(FaultRecord::startNanos)).toList();
        List<Kill> kills = new ArrayList<>();
        for (int i = 0; i < injected.size(); i++) {
            FaultRecord f = injected.get(i);
            if (!KILL.equals(f.kind())) {
                continue;
            }
            long t0 = f.startNanos();
            long next = i + 1 < injected.size() ? injected.get(i + 1).startNanos() : NEVER;
            List<HostAfterKill> outcomes = new ArrayList<>();
            for (String host : hosts) {
                if (!host.equals(f.target())) {
                    outcomes.add(outcome(host, f.target(), t0, byTime, okAdds));
                }
            }
            kills.add(new Kill(t0, f.target(), next, List.copyOf(outcomes)));
        }
        return kills;
    }

    private static HostAfterKill outcome(String host, String killed, long t0, List<Recovery> byTime,
            List<Operation> okAdds) {
        Recovery before = null;
        Recovery after = null;
        for (Recovery r : byTime) {
            if (!r.node().equals(host)) {
                continue;
            }
            if (r.atNanos() < t0) {
                before = r;
            } else {
                after = r;
                break;
            }
        }
        Place place = before == null ? Place.UNKNOWN
                : before.member().equals(killed) ? Place.KILLED_MEMBER : Place.ELSEWHERE;
        long add = okAdds.stream().filter(op -> op.host().equals(host) && op.invokedNanos() >= t0)
                .mapToLong(Operation::completedNanos).min().orElse(NEVER);
        return new HostAfterKill(host, place, before == null ? null : before.member(),
                after == null ? NEVER : after.atNanos() - t0, after == null ? null : after.member(),
                add == NEVER ? NEVER : add - t0);
    }

    /**
     * The median (the usual one: the mean of the two middle values when the count is even) and
     * the largest, with {@link #NEVER} ordered after every time.
     *
     * @return {@code null} for no values
     */
    static Stats stats(List<Long> nanos) {
        if (nanos.isEmpty()) {
            return null;
        }
        List<Long> sorted = new ArrayList<>(nanos);
        sorted.sort(null);
        int n = sorted.size();
        long low = sorted.get((n - 1) / 2);
        long high = sorted.get(n / 2);
        long median = high == NEVER ? NEVER : low + (high - low) / 2;
        int never = (int) sorted.stream().filter(t -> t == NEVER).count();
        return new Stats(n, never, median, sorted.get(n - 1));
    }

    /**
     * The summary's section: one line over the run, then one line per kill. Without kills, or
     * without any recovery line to tell where the NodeEntities lived, one line saying so.
     *
     * @param logs the recoveries read from the agents' logs, with what could not be read
     */
    static String section(List<FaultRecord> faults, AgentLogs.Read logs, List<Operation> ops) {
        String title = "failover after kills (NodeEntity on the killed member): ";
        List<Kill> kills = analyze(faults, logs.recoveries(), ops);
        String unread = logs.problems().isEmpty() ? ""
                : " (agent logs not read: " + String.join("; ", logs.problems()) + ")";
        if (kills.isEmpty()) {
            return title + "no kill in this run" + unread + "\n";
        }
        String count = kills.size() + (kills.size() == 1 ? " kill" : " kills");
        if (logs.recoveries().isEmpty()) {
            return title + count + ", but no \"" + "recovered node entity\" line in the agents' logs: cannot tell "
                    + "which hosts it affected" + unread + "\n";
        }
        List<HostAfterKill> affected = new ArrayList<>();
        List<HostAfterKill> others = new ArrayList<>();
        int unknown = 0;
        for (Kill k : kills) {
            for (HostAfterKill h : k.hosts()) {
                switch (h.place()) {
                    case KILLED_MEMBER -> affected.add(h);
                    case ELSEWHERE -> others.add(h);
                    case UNKNOWN -> unknown++;
                }
            }
        }
        StringBuilder b = new StringBuilder(title);
        b.append(affected.size()).append(" host-kills in ").append(count).append("; ")
                .append(describe("ADD unavailable", stats(addWindows(affected)), "without an ok ADD in the workload"))
                .append("; ")
                .append(describe("NodeEntity recovered",
                        stats(affected.stream().map(HostAfterKill::recoveredAfterNanos).toList()), "never recovered"))
                .append("; ")
                .append(describe("other surviving hosts' ADD window", stats(addWindows(others)),
                        "without an ok ADD in the workload"));
        if (unknown > 0) {
            b.append("; ").append(unknown)
                    .append(" host-kills with the NodeEntity's member unknown (no recovery line before the kill)");
        }
        b.append(unread).append('\n');
        boolean marked = false;
        for (Kill k : kills) {
            b.append("  kill ").append(k.member()).append(" at ").append(Times.seconds(k.atNanos())).append(':')
                    .append(k.hosts().isEmpty() ? " no other host" : "");
            String separator = " ";
            for (HostAfterKill h : k.hosts()) {
                b.append(separator).append(describe(h, k));
                separator = "; ";
                marked |= pastNextFault(h.addAfterNanos(), k)
                        || (h.affected() && pastNextFault(h.recoveredAfterNanos(), k));
            }
            b.append('\n');
        }
        if (marked) {
            b.append("  (* ended after the next fault had started)\n");
        }
        return b.toString();
    }

    private static List<Long> addWindows(List<HostAfterKill> hosts) {
        return hosts.stream().map(HostAfterKill::addAfterNanos).toList();
    }

    /** @return e.g. {@code host2 affected, NodeEntity recovered on host3 after 8.1 s, ADD after 8.9 s} */
    private static String describe(HostAfterKill h, Kill k) {
        StringBuilder b = new StringBuilder(h.host());
        switch (h.place()) {
            case KILLED_MEMBER -> b.append(" affected, NodeEntity ").append(h.recoveredAfterNanos() == NEVER
                    ? "never recovered" : "recovered on " + h.recoveredOn() + " " + after(h.recoveredAfterNanos(), k));
            case ELSEWHERE -> {
                b.append(" not affected (on ").append(h.livedOn()).append(')');
                // A move before the next fault (e.g. a rebalance onto the restarted member)
                // explains a longer ADD window; a later one belongs to another fault.
                if (h.recoveredAfterNanos() != NEVER && k.atNanos() + h.recoveredAfterNanos() < k.nextFaultNanos()) {
                    b.append(", moved to ").append(h.recoveredOn()).append(' ')
                            .append(after(h.recoveredAfterNanos(), k));
                }
            }
            case UNKNOWN -> b.append(" NodeEntity's member unknown");
        }
        return b.append(h.addAfterNanos() == NEVER ? ", no ok ADD after the kill"
                : ", ADD " + after(h.addAfterNanos(), k)).toString();
    }

    private static String describe(String what, Stats s, String missing) {
        if (s == null) {
            return what + ": none";
        }
        return what + " median " + seconds(s.medianNanos()) + ", worst " + seconds(s.worstNanos())
                + (s.never() == 0 ? "" : " (" + s.never() + " of " + s.count() + " " + missing + ")");
    }

    /** @return e.g. {@code after 8.9 s}, marked when it ended past the next fault */
    private static String after(long nanos, Kill k) {
        return "after " + seconds(nanos) + (pastNextFault(nanos, k) ? "*" : "");
    }

    private static boolean pastNextFault(long nanos, Kill k) {
        return nanos != NEVER && k.atNanos() + nanos > k.nextFaultNanos();
    }

    /** @return e.g. {@code 8.9 s}, or {@code never} */
    static String seconds(long nanos) {
        return nanos == NEVER ? "never" : String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
    }
}
