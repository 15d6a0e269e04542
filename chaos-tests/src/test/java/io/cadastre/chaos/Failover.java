package io.cadastre.chaos;

import io.cadastre.chaos.Operation.Phase;
import io.cadastre.testsupport.AgentLogs;
import io.cadastre.testsupport.AgentLogs.Entity;
import io.cadastre.testsupport.AgentLogs.EntityKind;
import io.cadastre.testsupport.AgentLogs.Recovery;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the run's kills cost (issue 3), for the summary: for each kill of a member, which surviving
 * hosts had their NodeEntity on it, how long until that NodeEntity was recovered on another
 * member, and how long until an ADD on the host succeeded again; and which entities (NodeEntities
 * and BlockEntities) lived on the killed member and how long until each recovered on a survivor.
 * Pure: computed from the history's kills and operations and from the entity recoveries the agents
 * logged (read by {@link AgentLogs}); unit-tested on hand-made histories ({@code FailoverTest}).
 * Every time here is in nanoseconds of history time ({@link History#now()}).
 *
 * <p>An entity lives, at a given time, on the member that logged its latest recovery before then:
 * an entity is started (and its journal replayed) on exactly one member, and it logs one recovery
 * line each time. A host is <em>affected</em> by the kill of member M when its NodeEntity lived on
 * M at the SIGKILL; the killed member's own host is not counted (its clients lose their agent
 * whatever the shards do). The entities that lived on M are all counted, the killed member's own
 * NodeEntity included.
 */
final class Failover {
    /** A duration or a time that never came (within what was looked at). */
    static final long NEVER = Long.MAX_VALUE;

    /** The {@link FaultRecord#kind()} of the injector's SIGKILLs; their target is the host name. */
    static final String KILL = "kill";

    /**
     * A surviving host whose ADD window ({@link HostAfterKill#addAfterNanos()}) is longer than this
     * had to wait for an ADD; a shorter one is the ADD's own latency.
     */
    static final long WAITED_NANOS = 1_000_000_000L;

    /** host2 before host10 (CIDRs get a fixed order, not the addresses' one). */
    private static final Comparator<String> NAME_ORDER =
            Comparator.comparingInt(String::length).thenComparing(Comparator.naturalOrder());

    /** Nodes first, then blocks, each in {@link #NAME_ORDER}. */
    private static final Comparator<Entity> ENTITY_ORDER =
            Comparator.comparing(Entity::kind).thenComparing(Entity::id, NAME_ORDER);

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
    record HostAfterKill(
            String host,
            Place place,
            String livedOn,
            long recoveredAfterNanos,
            String recoveredOn,
            long addAfterNanos) {
        boolean affected() {
            return place == Place.KILLED_MEMBER;
        }

        /** @return whether the ADD window is over {@link #WAITED_NANOS} (no ok ADD at all included) */
        boolean waited() {
            return addAfterNanos > WAITED_NANOS;
        }
    }

    /** What became of an entity that lived on the killed member, up to the next injected fault. */
    enum Fate {
        /**
         * Its first recovery after the kill was on another member, before the next fault started:
         * a failover recovery.
         */
        RECOVERED_ELSEWHERE,
        /** Its first recovery after the kill was on the killed member itself, restarted, before the next fault. */
        BACK_ON_KILLED_MEMBER,
        /**
         * No recovery between the kill and the next fault's start. Entities start only when used,
         * so an idle one may never come back in that window; one that came back only after the
         * next fault started may owe its time to that fault, and is not counted either.
         */
        NOT_RECOVERED
    }

    /**
     * An entity that lived on the killed member at the kill.
     *
     * @param recoveredAfterNanos from the SIGKILL to its first recovery at or after it (on any
     *     member, until the end of the logs), or {@link #NEVER}
     * @param recoveredOn the member of that recovery, or {@code null}
     */
    record EntityAfterKill(Entity entity, Fate fate, long recoveredAfterNanos, String recoveredOn) {
        boolean recoveredElsewhere() {
            return fate == Fate.RECOVERED_ELSEWHERE;
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
     * @param entities every entity that lived on the killed member at the SIGKILL, nodes first,
     *     then blocks, in name order
     */
    record Kill(
            long atNanos,
            String member,
            long nextFaultNanos,
            List<HostAfterKill> hosts,
            List<EntityAfterKill> entities) {}

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
     * Every injected kill, every other host's outcome and the fate of every entity that lived on
     * the killed member. The hosts are those with a WORKLOAD operation or a logged NodeEntity
     * recovery. Recoveries and operations may come in any order.
     *
     * @param faults the history's faults and events; only injected faults of kind {@link #KILL}
     *     are kills, the others only bound them ({@link Kill#nextFaultNanos()})
     */
    static List<Kill> analyze(
            List<FaultRecord> faults, List<Recovery> recoveries, List<Operation> ops) {
        // Each entity's recoveries in time order (a stable sort: equal times keep the logs' order).
        Map<Entity, List<Recovery>> timelines = new TreeMap<>(ENTITY_ORDER);
        recoveries.stream()
                .sorted(Comparator.comparingLong(Recovery::atNanos))
                .forEach(r -> timelines.computeIfAbsent(r.entity(), e -> new ArrayList<>()).add(r));
        List<Operation> okAdds = ops.stream().filter(Operation::okWorkloadAdd).toList();
        Set<String> hosts = new TreeSet<>(NAME_ORDER);
        ops.stream().filter(op -> op.phase() == Phase.WORKLOAD).forEach(op -> hosts.add(op.host()));
        timelines.keySet().stream()
                .filter(e -> e.kind() == EntityKind.NODE)
                .forEach(e -> hosts.add(e.id()));
        List<FaultRecord> injected =
                faults.stream()
                        .filter(FaultRecord::injected)
                        .sorted(Comparator.comparingLong(FaultRecord::startNanos))
                        .toList();
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
                    outcomes.add(
                            outcome(
                                    host,
                                    f.target(),
                                    t0,
                                    around(
                                            timelines.getOrDefault(Entity.node(host), List.of()),
                                            t0),
                                    okAdds));
                }
            }
            List<EntityAfterKill> entities = new ArrayList<>();
            timelines.forEach(
                    (entity, timeline) -> {
                        Around at = around(timeline, t0);
                        if (at.before() != null && at.before().member().equals(f.target())) {
                            entities.add(fate(entity, f.target(), t0, next, at.after()));
                        }
                    });
            kills.add(new Kill(t0, f.target(), next, List.copyOf(outcomes), List.copyOf(entities)));
        }
        return kills;
    }

    /**
     * @param before an entity's latest recovery before a time, or {@code null}
     * @param after its first recovery at or after it, or {@code null}
     */
    private record Around(Recovery before, Recovery after) {}

    /** @param timeline one entity's recoveries in time order */
    private static Around around(List<Recovery> timeline, long t0) {
        Recovery before = null;
        for (Recovery r : timeline) {
            if (r.atNanos() >= t0) {
                return new Around(before, r);
            }
            before = r;
        }
        return new Around(before, null);
    }

    private static HostAfterKill outcome(
            String host, String killed, long t0, Around node, List<Operation> okAdds) {
        Recovery before = node.before();
        Recovery after = node.after();
        Place place =
                before == null
                        ? Place.UNKNOWN
                        : before.member().equals(killed) ? Place.KILLED_MEMBER : Place.ELSEWHERE;
        long add =
                okAdds.stream()
                        .filter(op -> op.host().equals(host) && op.invokedNanos() >= t0)
                        .mapToLong(Operation::completedNanos)
                        .min()
                        .orElse(NEVER);
        return new HostAfterKill(
                host,
                place,
                before == null ? null : before.member(),
                after == null ? NEVER : after.atNanos() - t0,
                after == null ? null : after.member(),
                add == NEVER ? NEVER : add - t0);
    }

    /** @param after the entity's first recovery at or after the kill, or {@code null} */
    private static EntityAfterKill fate(
            Entity entity, String killed, long t0, long nextFaultNanos, Recovery after) {
        if (after == null) {
            return new EntityAfterKill(entity, Fate.NOT_RECOVERED, NEVER, null);
        }
        Fate fate =
                after.atNanos() >= nextFaultNanos
                        ? Fate.NOT_RECOVERED
                        : after.member().equals(killed)
                                ? Fate.BACK_ON_KILLED_MEMBER
                                : Fate.RECOVERED_ELSEWHERE;
        return new EntityAfterKill(entity, fate, after.atNanos() - t0, after.member());
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
     * The summary's section: a line over the run for the hosts, one for the entities that moved
     * ({@link #moves}), then one line per kill. Without kills, or without any recovery line to
     * tell where the entities lived, one line saying so.
     *
     * @param logs the recoveries read from the agents' logs, with what could not be read
     */
    static String section(List<FaultRecord> faults, AgentLogs.Read logs, List<Operation> ops) {
        String title = "failover after kills (NodeEntity on the killed member): ";
        List<Kill> kills = analyze(faults, logs.recoveries(), ops);
        String unread =
                logs.problems().isEmpty()
                        ? ""
                        : " (agent logs not read: " + String.join("; ", logs.problems()) + ")";
        if (kills.isEmpty()) {
            return title + "no kill in this run" + unread + "\n";
        }
        String count = kills.size() + (kills.size() == 1 ? " kill" : " kills");
        if (logs.recoveries().isEmpty()) {
            return title
                    + count
                    + ", but no \"recovered node entity\" or \"recovered block\" line in the agents' "
                    + "logs: cannot tell which hosts and entities it affected"
                    + unread
                    + "\n";
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
        b.append(affected.size())
                .append(" host-kills in ")
                .append(count)
                .append("; ")
                .append(
                        describe(
                                "ADD unavailable",
                                stats(addWindows(affected)),
                                "without an ok ADD in the workload"))
                .append("; ")
                .append(
                        describe(
                                "NodeEntity recovered",
                                stats(
                                        affected.stream()
                                                .map(HostAfterKill::recoveredAfterNanos)
                                                .toList()),
                                "never recovered"))
                .append("; ")
                .append(
                        describe(
                                "other surviving hosts' ADD window",
                                stats(addWindows(others)),
                                "without an ok ADD in the workload"));
        if (unknown > 0) {
            b.append("; ")
                    .append(unknown)
                    .append(
                            " host-kills with the NodeEntity's member unknown (no recovery line before the kill)");
        }
        b.append(unread).append('\n');
        b.append(moves(kills)).append('\n');
        boolean marked = false;
        for (Kill k : kills) {
            b.append("  kill ")
                    .append(k.member())
                    .append(" at ")
                    .append(Times.seconds(k.atNanos()))
                    .append(':')
                    .append(k.hosts().isEmpty() ? " no other host" : "");
            String separator = " ";
            for (HostAfterKill h : k.hosts()) {
                b.append(separator).append(describe(h, k));
                separator = "; ";
                marked |=
                        pastNextFault(h.addAfterNanos(), k)
                                || (h.affected() && pastNextFault(h.recoveredAfterNanos(), k));
            }
            b.append("; ").append(describeEntities(k)).append('\n');
        }
        if (marked) {
            b.append("  (* ended after the next fault had started)\n");
        }
        return b.toString();
    }

    /**
     * @return e.g. {@code entities moved by kills: 23 lived on killed members, 19 recovered on a
     *     survivor: median 8.9 s, worst 10.4 s after the kill; surviving hosts that waited for an
     *     ADD: 9 host-kills, median 9.8 s, worst 11.0 s}
     */
    private static String moves(List<Kill> kills) {
        int lived = 0;
        List<Long> recovered = new ArrayList<>();
        List<HostAfterKill> waited = new ArrayList<>();
        for (Kill k : kills) {
            lived += k.entities().size();
            k.entities().stream()
                    .filter(EntityAfterKill::recoveredElsewhere)
                    .forEach(e -> recovered.add(e.recoveredAfterNanos()));
            k.hosts().stream().filter(HostAfterKill::waited).forEach(waited::add);
        }
        StringBuilder b =
                new StringBuilder("entities moved by kills: ")
                        .append(lived)
                        .append(" lived on killed members, ")
                        .append(recovered.size())
                        .append(" recovered on a survivor");
        Stats r = stats(recovered);
        if (r != null) {
            b.append(": median ")
                    .append(seconds(r.medianNanos()))
                    .append(", worst ")
                    .append(seconds(r.worstNanos()))
                    .append(" after the kill");
        }
        b.append("; surviving hosts that waited for an ADD: ");
        Stats w = stats(addWindows(waited));
        if (w == null) {
            return b.append("none").toString();
        }
        return b.append(w.count())
                .append(" host-kills, median ")
                .append(seconds(w.medianNanos()))
                .append(", worst ")
                .append(seconds(w.worstNanos()))
                .append(
                        w.never() == 0
                                ? ""
                                : " ("
                                        + w.never()
                                        + " of "
                                        + w.count()
                                        + " without an ok ADD in the workload)")
                .toString();
    }

    /** @return e.g. {@code entities on h2: 1 node, 5 blocks, 4 recovered elsewhere 8.7-9.9 s, 1 back on h2} */
    private static String describeEntities(Kill k) {
        StringBuilder b = new StringBuilder("entities on ").append(k.member()).append(": ");
        if (k.entities().isEmpty()) {
            return b.append("none").toString();
        }
        long nodes =
                k.entities().stream().filter(e -> e.entity().kind() == EntityKind.NODE).count();
        long blocks = k.entities().size() - nodes;
        List<Long> times =
                k.entities().stream()
                        .filter(EntityAfterKill::recoveredElsewhere)
                        .map(EntityAfterKill::recoveredAfterNanos)
                        .sorted()
                        .toList();
        long back =
                k.entities().stream().filter(e -> e.fate() == Fate.BACK_ON_KILLED_MEMBER).count();
        b.append(nodes)
                .append(nodes == 1 ? " node, " : " nodes, ")
                .append(blocks)
                .append(blocks == 1 ? " block, " : " blocks, ")
                .append(times.size())
                .append(" recovered elsewhere");
        if (!times.isEmpty()) {
            String first = seconds(times.get(0));
            String last = seconds(times.get(times.size() - 1));
            b.append(' ').append(first.equals(last) ? first : first.replace(" s", "") + "-" + last);
        }
        if (back > 0) {
            b.append(", ").append(back).append(" back on ").append(k.member());
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
            case KILLED_MEMBER ->
                    b.append(" affected, NodeEntity ")
                            .append(
                                    h.recoveredAfterNanos() == NEVER
                                            ? "never recovered"
                                            : "recovered on "
                                                    + h.recoveredOn()
                                                    + " "
                                                    + after(h.recoveredAfterNanos(), k));
            case ELSEWHERE -> {
                b.append(" not affected (on ").append(h.livedOn()).append(')');
                // A move before the next fault (e.g. a rebalance onto the restarted member)
                // explains a longer ADD window; a later one belongs to another fault.
                if (h.recoveredAfterNanos() != NEVER
                        && k.atNanos() + h.recoveredAfterNanos() < k.nextFaultNanos()) {
                    b.append(", moved to ")
                            .append(h.recoveredOn())
                            .append(' ')
                            .append(after(h.recoveredAfterNanos(), k));
                }
            }
            case UNKNOWN -> b.append(" NodeEntity's member unknown");
        }
        return b.append(
                        h.addAfterNanos() == NEVER
                                ? ", no ok ADD after the kill"
                                : ", ADD " + after(h.addAfterNanos(), k))
                .toString();
    }

    private static String describe(String what, Stats s, String missing) {
        if (s == null) {
            return what + ": none";
        }
        return what
                + " median "
                + seconds(s.medianNanos())
                + ", worst "
                + seconds(s.worstNanos())
                + (s.never() == 0
                        ? ""
                        : " (" + s.never() + " of " + s.count() + " " + missing + ")");
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
