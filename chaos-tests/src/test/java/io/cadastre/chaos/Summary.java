package io.cadastre.chaos;

import io.cadastre.chaos.Checker.Violation;
import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Status;
import io.cadastre.testsupport.AgentLogs;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The run's summary (seed, durations, operations per kind and outcome, faults, violations, the
 * longest unavailability per host, ADD throughput, what the kills cost: {@link Failover}) and,
 * for each violation, a timeline of the calls of the attachments involved and of the faults
 * around it. Pure: computed from the history and the entity recoveries (NodeEntity, BlockEntity)
 * read from the agents' logs.
 */
final class Summary {
    private static final int TIMELINE_VIOLATIONS = 8;
    private static final long CONTEXT_BEFORE_NANOS = 30_000_000_000L;
    private static final long CONTEXT_AFTER_NANOS = 5_000_000_000L;

    /**
     * @param workloadFrom when the clients started (history time)
     * @param workloadTo when the last client ended
     * @param faultsFrom when fault injection started
     * @param faultsTo when it ended
     */
    record Span(long workloadFrom, long workloadTo, long faultsFrom, long faultsTo) {}

    private Summary() {}

    /** @param agentLogs the entity recoveries the members logged, for {@link Failover#section} */
    static String render(
            ChaosSettings settings,
            List<Operation> ops,
            List<FaultRecord> faults,
            List<Violation> violations,
            List<String> problems,
            Span span,
            long totalNanos,
            AgentLogs.Read agentLogs,
            String historyFile) {
        StringBuilder b = new StringBuilder();
        b.append("==== chaos summary ====\n");
        b.append("seed: ")
                .append(settings.seed())
                .append("   (reproduce: mvn -B -o -q -pl test-cassandra,chaos-tests -am ")
                .append(
                        "verify -Dsurefire.failIfNoSpecifiedTests=false -Dtest=ChaosTest -Dchaos.seed=")
                .append(settings.seed())
                .append(")\n");
        b.append("settings: ").append(settings).append('\n');
        b.append(
                String.format(
                        Locale.ROOT,
                        "duration: %s in all; workload %s; fault injection %s%n",
                        minutes(totalNanos),
                        minutes(span.workloadTo() - span.workloadFrom()),
                        minutes(span.faultsTo() - span.faultsFrom())));
        b.append("operations (workload | all phases):\n");
        for (Kind kind : Kind.values()) {
            b.append(
                    String.format(
                            Locale.ROOT,
                            "  %-4s %s | %s%n",
                            kind,
                            counts(
                                    ops.stream()
                                            .filter(
                                                    op ->
                                                            op.kind() == kind
                                                                    && op.phase() == Phase.WORKLOAD)
                                            .toList()),
                            counts(ops.stream().filter(op -> op.kind() == kind).toList())));
        }
        b.append("faults injected:");
        Map<String, List<FaultRecord>> byKind = new TreeMap<>();
        faults.stream()
                .filter(FaultRecord::injected)
                .forEach(f -> byKind.computeIfAbsent(f.kind(), k -> new ArrayList<>()).add(f));
        byKind.forEach(
                (kind, list) ->
                        b.append(
                                String.format(
                                        Locale.ROOT,
                                        " %s %d (%.0f s);",
                                        kind,
                                        list.size(),
                                        list.stream()
                                                        .mapToLong(
                                                                f ->
                                                                        f.endNanos()
                                                                                        == Operation
                                                                                                .PENDING
                                                                                ? 0
                                                                                : f.endNanos()
                                                                                        - f
                                                                                                .startNanos())
                                                        .sum()
                                                / 1e9)));
        b.append('\n');
        b.append("member events:");
        Map<String, Integer> events = new TreeMap<>();
        faults.stream()
                .filter(f -> !f.injected())
                .forEach(f -> events.merge(f.kind(), 1, Integer::sum));
        events.forEach((kind, n) -> b.append(' ').append(kind).append(' ').append(n).append(';'));
        b.append('\n');
        Map<String, Integer> byViolation = new TreeMap<>();
        violations.forEach(v -> byViolation.merge(v.kind(), 1, Integer::sum));
        b.append("violations: ")
                .append(violations.size())
                .append(violations.isEmpty() ? "" : " " + byViolation)
                .append('\n');
        if (!problems.isEmpty()) {
            b.append("problems (liveness, harness): ").append(problems).append('\n');
        }
        b.append("longest unavailability per host (gap between successful calls, workload):");
        unavailability(ops, span)
                .forEach(
                        (host, gap) ->
                                b.append(' ').append(host).append(' ').append(gap).append(';'));
        b.append('\n');
        long okAdds = ops.stream().filter(Operation::okWorkloadAdd).count();
        double seconds = (span.workloadTo() - span.workloadFrom()) / 1e9;
        b.append(
                String.format(
                        Locale.ROOT,
                        "ADD throughput (workload): %.1f ok ADDs/s (%d in %.0f s)%n",
                        seconds > 0 ? okAdds / seconds : 0,
                        okAdds,
                        seconds));
        try {
            b.append(Failover.section(faults, agentLogs, ops));
        } catch (
                RuntimeException
                        e) { // a report, not a check: it must not cost the rest of the summary
            b.append("failover after kills: not computed: ").append(e).append('\n');
        }
        b.append("history: ").append(historyFile).append('\n');
        return b.toString();
    }

    /** A timeline per violation (the first few): the involved attachments' calls and the faults nearby. */
    static String timelines(
            List<Violation> violations, List<Operation> ops, List<FaultRecord> faults) {
        StringBuilder b = new StringBuilder();
        int n = 0;
        for (Violation v : violations) {
            if (n++ == TIMELINE_VIOLATIONS) {
                b.append("(")
                        .append(violations.size() - TIMELINE_VIOLATIONS)
                        .append(" more violations: see the history)\n");
                break;
            }
            b.append("---- ").append(v.kind()).append(": ").append(v.message()).append('\n');
            java.util.Set<Attachment> involved = new java.util.LinkedHashSet<>(v.attachments());
            long fromNanos = v.fromNanos();
            long toNanos = v.toNanos();
            if (involved.isEmpty() && !v.addresses().isEmpty()) {
                // No attachment named (an address that never came back): its last two holders.
                for (String address : v.addresses().stream().limit(3).toList()) {
                    List<Operation> holders =
                            ops.stream()
                                    .filter(
                                            op ->
                                                    op.kind() == Kind.ADD
                                                            && op.ok()
                                                            && op.addresses().contains(address))
                                    .toList();
                    holders.subList(Math.max(0, holders.size() - 2), holders.size())
                            .forEach(op -> involved.add(op.attachment()));
                }
                List<Operation> theirs =
                        ops.stream().filter(op -> involved.contains(op.attachment())).toList();
                if (!theirs.isEmpty()) {
                    fromNanos = theirs.get(0).invokedNanos();
                    Operation last = theirs.get(theirs.size() - 1);
                    toNanos = last.pending() ? last.invokedNanos() : last.completedNanos();
                }
                b.append("  (the last holders of ")
                        .append(v.addresses().stream().limit(3).toList())
                        .append(")\n");
            }
            long from = Math.max(0, fromNanos - CONTEXT_BEFORE_NANOS);
            long to = toNanos == Long.MAX_VALUE ? Long.MAX_VALUE : toNanos + CONTEXT_AFTER_NANOS;
            List<String[]> lines = new ArrayList<>();
            for (Operation op : ops) {
                if (op.attachment() != null && involved.contains(op.attachment())) {
                    lines.add(
                            new String[] {Long.toString(op.invokedNanos()), "  " + op.describe()});
                }
            }
            for (FaultRecord f : faults) {
                long end = f.endNanos() == Operation.PENDING ? Long.MAX_VALUE : f.endNanos();
                if (end >= from && f.startNanos() <= to) {
                    lines.add(new String[] {Long.toString(f.startNanos()), "  " + f.describe()});
                }
            }
            lines.sort(Comparator.comparingLong(l -> Long.parseLong(l[0])));
            lines.forEach(l -> b.append(l[1]).append('\n'));
        }
        return b.toString();
    }

    private static String counts(List<Operation> ops) {
        Map<Status, Integer> byStatus = new EnumMap<>(Status.class);
        Map<Integer, Integer> failCodes = new TreeMap<>();
        for (Operation op : ops) {
            byStatus.merge(op.status(), 1, Integer::sum);
            if (op.status() == Status.FAIL) {
                failCodes.merge(op.code(), 1, Integer::sum);
            }
        }
        return String.format(
                Locale.ROOT,
                "ok %6d  fail %4d%s  unknown %4d",
                byStatus.getOrDefault(Status.OK, 0),
                byStatus.getOrDefault(Status.FAIL, 0),
                failCodes.isEmpty() ? "" : " " + codes(failCodes),
                byStatus.getOrDefault(Status.UNKNOWN, 0));
    }

    private static String codes(Map<Integer, Integer> byCode) {
        List<String> parts = new ArrayList<>();
        byCode.forEach((code, n) -> parts.add("code " + code + ": " + n));
        return "(" + String.join(", ", parts) + ")";
    }

    /** Per host: the longest gap between consecutive successful completions during the workload. */
    static Map<String, String> unavailability(List<Operation> ops, Span span) {
        Map<String, List<Long>> okTimes = new TreeMap<>();
        for (Operation op : ops) {
            if (op.phase() == Phase.WORKLOAD) {
                okTimes.computeIfAbsent(op.host(), h -> new ArrayList<>());
                if (op.ok()) {
                    okTimes.get(op.host()).add(op.completedNanos());
                }
            }
        }
        Map<String, String> longest = new TreeMap<>();
        okTimes.forEach(
                (host, times) -> {
                    times.sort(null);
                    long previous = span.workloadFrom();
                    long best = 0;
                    long bestFrom = previous;
                    List<Long> all = new ArrayList<>(times);
                    all.add(span.workloadTo());
                    for (long t : all) {
                        if (t - previous > best) {
                            best = t - previous;
                            bestFrom = previous;
                        }
                        previous = Math.max(previous, t);
                    }
                    longest.put(
                            host,
                            String.format(
                                    Locale.ROOT,
                                    "%.1f s (from %s)",
                                    best / 1e9,
                                    Times.seconds(bestFrom)));
                });
        return longest;
    }

    private static String minutes(long nanos) {
        long s = Math.max(0, nanos) / 1_000_000_000L;
        return String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60);
    }
}
