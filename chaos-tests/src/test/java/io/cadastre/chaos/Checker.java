package io.cadastre.chaos;

import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Checks a run's history against Cadastre's invariants, numbered in the root DESIGN.md (the checks
 * below name the number they check; chaos-tests/DESIGN.md, "Checks").
 * Pure: a list of {@link Operation}s in, a list of {@link Violation}s out; no cluster needed, so it
 * is unit-tested on hand-made histories ({@code CheckerTest}).
 *
 * <h2>Holdings</h2>
 * An attachment holds the addresses of an ADD that succeeded from that ADD's <em>completion</em>
 * until the <em>invocation</em> of the first later call that may have released them: a DEL
 * (whatever its outcome: a DEL that failed may still have taken effect), an ADD of the same
 * attachment that did not succeed (a failed ADD rolls back, and the client DELs it next), or a GC
 * on its host. Otherwise until the end. An ADD whose outcome was unknown holds nothing until an
 * ADD of it succeeds (counted from that one's completion). Between invocation and completion the
 * outcome is not known, so a holding's window is as narrow as the client's knowledge allows and
 * every overlap found is a real double allocation.
 *
 * <h2>Invariants</h2>
 * <ul>
 *   <li>UNIQUE (invariant 1): no address is held by two attachments at overlapping times.
 *   <li>IDEMPOTENT (invariant 4): an ADD that succeeds for an attachment that holds addresses
 *       answers exactly those addresses.
 *   <li>RESULT (invariant 5): an ADD that succeeds answers one IPv4 and one IPv6 address.
 *   <li>DURABLE (invariant 2): every attachment held at the end of {@link Phase#WORKLOAD} is
 *       answered, by the first {@link Purpose#VERIFY} ADD that succeeds, exactly the addresses it
 *       was acknowledged with; a definite failure before that is a loss too.
 *   <li>RELEASED (invariant 9): after every attachment was deleted and GC ran on every host,
 *       ADDs of fresh attachments ({@link Purpose#FILL}) get every address of the IPv4 pool, each
 *       once, and then every host is told the pool is exhausted (code 100).
 * </ul>
 * {@link #singleWriter} turns the journal audit's findings (two rows with one sequence number) into
 * SINGLE_WRITER violations (invariant 8).
 * DURABLE is checked only when the history reached {@link Phase#DURABLE}, RELEASED only when it
 * reached {@link Phase#EXHAUST}.
 */
final class Checker {
    static final int POOL_EXHAUSTED = 100;

    /**
     * @param seed the run's seed, quoted in every violation
     * @param ipv4Pool every address of the IPv4 pool (canonical), for RELEASED
     */
    record Spec(long seed, Set<String> ipv4Pool) {}

    /**
     * @param kind UNIQUE, IDEMPOTENT, RESULT, DURABLE or RELEASED
     * @param attachments the attachments involved, for the report's timeline
     * @param addresses the addresses involved, for the journal dump
     * @param fromNanos start of the interesting window
     * @param toNanos end of it
     */
    record Violation(
            String kind,
            String message,
            Set<Attachment> attachments,
            Set<String> addresses,
            long fromNanos,
            long toNanos) {
        @Override
        public String toString() {
            return kind + ": " + message;
        }
    }

    /** One address held by one attachment over [from, to). */
    record Holding(
            String address, Attachment attachment, long from, long to, long addOp, long endOp) {
        String describe() {
            return attachment
                    + " from "
                    + Times.seconds(from)
                    + " (ADD #"
                    + addOp
                    + " completed) until "
                    + (to == Long.MAX_VALUE
                            ? "the end"
                            : Times.seconds(to) + " (#" + endOp + " invoked)");
        }
    }

    private Checker() {}

    static List<Violation> check(List<Operation> history, Spec spec) {
        List<Operation> ops = ordered(history);
        List<Violation> violations = new ArrayList<>();
        Sweep sweep = new Sweep(spec, violations);
        ops.forEach(sweep::apply);
        violations.addAll(unique(sweep.finish(), spec));
        if (ops.stream().anyMatch(op -> op.phase().compareTo(Phase.DURABLE) >= 0)) {
            violations.addAll(durable(ops, spec));
        }
        if (ops.stream().anyMatch(op -> op.phase() == Phase.EXHAUST)) {
            violations.addAll(released(ops, spec));
        }
        return violations;
    }

    /** @return every holding of the history (for reports and tests) */
    static List<Holding> holdings(List<Operation> history, Spec spec) {
        Sweep sweep = new Sweep(spec, null);
        ordered(history).forEach(sweep::apply);
        return sweep.finish();
    }

    /** @return the attachments held (with their addresses) after every call of {@code phase} and before */
    static Map<Attachment, List<String>> liveAfter(List<Operation> history, Phase phase) {
        Sweep sweep = new Sweep(new Spec(0, Set.of()), null);
        ordered(history).stream()
                .filter(op -> op.phase().compareTo(phase) <= 0)
                .forEach(sweep::apply);
        Map<Attachment, List<String>> live = new LinkedHashMap<>();
        sweep.held.forEach((a, h) -> live.put(a, h.addresses));
        return live;
    }

    private static List<Operation> ordered(List<Operation> history) {
        List<Operation> ops = new ArrayList<>(history);
        ops.sort(
                Comparator.comparingLong(Operation::invokedNanos).thenComparingLong(Operation::id));
        return ops;
    }

    /** Follows each attachment through its calls, in invocation order, and collects holdings. */
    private static final class Sweep {
        private record Held(List<String> addresses, long since, long addOp) {}

        private final Spec spec;
        private final List<Violation> violations; // null: do not report
        private final Map<Attachment, Held> held = new LinkedHashMap<>();
        private final List<Holding> holdings = new ArrayList<>();

        Sweep(Spec spec, List<Violation> violations) {
            this.spec = spec;
            this.violations = violations;
        }

        void apply(Operation op) {
            switch (op.kind()) {
                case GC -> {
                    List<Attachment> onHost =
                            held.keySet().stream().filter(a -> a.host().equals(op.host())).toList();
                    onHost.forEach(a -> close(a, op.invokedNanos(), op.id()));
                }
                case DEL -> close(op.attachment(), op.invokedNanos(), op.id());
                case ADD -> add(op);
            }
        }

        private void add(Operation op) {
            Attachment a = op.attachment();
            Held h = held.get(a);
            if (!op.ok()) {
                close(a, op.invokedNanos(), op.id());
                return;
            }
            checkResult(op);
            if (h == null) {
                held.put(a, new Held(op.addresses(), op.completedNanos(), op.id()));
                return;
            }
            if (!sameSet(h.addresses, op.addresses())) {
                if (violations != null
                        && op.purpose() != Purpose.VERIFY) { // VERIFY: reported as DURABLE
                    violations.add(
                            new Violation(
                                    "IDEMPOTENT",
                                    "ADD #"
                                            + op.id()
                                            + " of "
                                            + a
                                            + " ("
                                            + op.purpose()
                                            + ") answered "
                                            + op.addresses()
                                            + " at "
                                            + Times.seconds(op.completedNanos())
                                            + ", but the attachment holds "
                                            + h.addresses
                                            + " since "
                                            + Times.seconds(h.since)
                                            + " (ADD #"
                                            + h.addOp
                                            + ")"
                                            + seed(spec),
                                    Set.of(a),
                                    union(h.addresses, op.addresses()),
                                    h.since,
                                    op.completedNanos()));
                }
                close(a, op.invokedNanos(), op.id());
                held.put(a, new Held(op.addresses(), op.completedNanos(), op.id()));
            }
        }

        private void checkResult(Operation op) {
            long v4 = op.addresses().stream().filter(Checker::isIpv4).count();
            long v6 = op.addresses().size() - v4;
            if (violations != null && (v4 != 1 || v6 != 1)) {
                violations.add(
                        new Violation(
                                "RESULT",
                                "ADD #"
                                        + op.id()
                                        + " of "
                                        + op.attachment()
                                        + " succeeded with "
                                        + op.addresses()
                                        + ", not one IPv4 and one IPv6 address"
                                        + seed(spec),
                                Set.of(op.attachment()),
                                Set.copyOf(op.addresses()),
                                op.invokedNanos(),
                                op.completedNanos()));
            }
        }

        private void close(Attachment a, long at, long opId) {
            Held h = held.remove(a);
            if (h != null && at > h.since) {
                h.addresses.forEach(
                        address ->
                                holdings.add(new Holding(address, a, h.since, at, h.addOp, opId)));
            }
        }

        List<Holding> finish() {
            List<Holding> all = new ArrayList<>(holdings);
            held.forEach(
                    (a, h) ->
                            h.addresses.forEach(
                                    address ->
                                            all.add(
                                                    new Holding(
                                                            address,
                                                            a,
                                                            h.since,
                                                            Long.MAX_VALUE,
                                                            h.addOp,
                                                            -1))));
            return all;
        }
    }

    private static List<Violation> unique(List<Holding> holdings, Spec spec) {
        Map<String, List<Holding>> byAddress = new HashMap<>();
        holdings.forEach(
                h -> byAddress.computeIfAbsent(h.address(), k -> new ArrayList<>()).add(h));
        List<Violation> violations = new ArrayList<>();
        for (List<Holding> list : byAddress.values()) {
            list.sort(Comparator.comparingLong(Holding::from));
            for (int i = 0; i < list.size(); i++) {
                Holding a = list.get(i);
                for (int j = i + 1; j < list.size() && list.get(j).from() < a.to(); j++) {
                    Holding b = list.get(j);
                    if (!a.attachment().equals(b.attachment())) {
                        violations.add(
                                new Violation(
                                        "UNIQUE",
                                        a.address()
                                                + " held twice: by "
                                                + a.describe()
                                                + ", and by "
                                                + b.describe()
                                                + "; overlap from "
                                                + Times.seconds(b.from())
                                                + " to "
                                                + Times.seconds(Math.min(a.to(), b.to()))
                                                + seed(spec),
                                        Set.of(a.attachment(), b.attachment()),
                                        Set.of(a.address()),
                                        a.from(),
                                        Math.min(a.to(), b.to())));
                    }
                }
            }
        }
        violations.sort(Comparator.comparingLong(Violation::fromNanos));
        return violations;
    }

    private static List<Violation> durable(List<Operation> ops, Spec spec) {
        Map<Attachment, List<String>> live = liveAfter(ops, Phase.WORKLOAD);
        Map<Attachment, List<Operation>> verifies =
                ops.stream()
                        .filter(op -> op.phase() == Phase.DURABLE && op.purpose() == Purpose.VERIFY)
                        .collect(
                                Collectors.groupingBy(
                                        Operation::attachment,
                                        LinkedHashMap::new,
                                        Collectors.toList()));
        Map<Attachment, Operation> acknowledged = lastOkAdd(ops, Phase.WORKLOAD);
        List<Violation> violations = new ArrayList<>();
        live.forEach(
                (a, addresses) -> {
                    Operation ack = acknowledged.get(a);
                    String acked =
                            "acknowledged "
                                    + addresses
                                    + (ack == null
                                            ? ""
                                            : " by ADD #"
                                                    + ack.id()
                                                    + " at "
                                                    + Times.seconds(ack.completedNanos()));
                    long from = ack == null ? 0 : ack.completedNanos();
                    List<Operation> checks = verifies.getOrDefault(a, List.of());
                    Operation answer =
                            checks.stream()
                                    .filter(op -> op.status() != Status.UNKNOWN)
                                    .findFirst()
                                    .orElse(null);
                    if (answer == null) {
                        violations.add(
                                new Violation(
                                        "DURABLE",
                                        a
                                                + " "
                                                + acked
                                                + ": no retried ADD got a definite answer ("
                                                + checks.size()
                                                + " tried: "
                                                + checks.stream()
                                                        .map(
                                                                op ->
                                                                        "#" + op.id() + " code "
                                                                                + op.code())
                                                        .toList()
                                                + ")"
                                                + seed(spec),
                                        Set.of(a),
                                        Set.copyOf(addresses),
                                        from,
                                        Long.MAX_VALUE));
                    } else if (!answer.ok()) {
                        violations.add(
                                new Violation(
                                        "DURABLE",
                                        a
                                                + " "
                                                + acked
                                                + ": the retried ADD #"
                                                + answer.id()
                                                + " failed with code "
                                                + answer.code()
                                                + " ("
                                                + answer.detail()
                                                + ")"
                                                + seed(spec),
                                        Set.of(a),
                                        Set.copyOf(addresses),
                                        from,
                                        answer.completedNanos()));
                    } else if (!sameSet(addresses, answer.addresses())) {
                        violations.add(
                                new Violation(
                                        "DURABLE",
                                        a
                                                + " "
                                                + acked
                                                + ": the retried ADD #"
                                                + answer.id()
                                                + " answered "
                                                + answer.addresses()
                                                + seed(spec),
                                        Set.of(a),
                                        union(addresses, answer.addresses()),
                                        from,
                                        answer.completedNanos()));
                    }
                });
        return violations;
    }

    private static Map<Attachment, Operation> lastOkAdd(List<Operation> ops, Phase upTo) {
        Map<Attachment, Operation> last = new HashMap<>();
        for (Operation op : ops) {
            if (op.kind() == Kind.ADD && op.ok() && op.phase().compareTo(upTo) <= 0) {
                last.put(op.attachment(), op);
            }
        }
        return last;
    }

    private static List<Violation> released(List<Operation> ops, Spec spec) {
        List<Violation> violations = new ArrayList<>();
        Set<String> hosts = new TreeSet<>();
        ops.forEach(op -> hosts.add(op.host()));
        for (String host : hosts) {
            boolean swept =
                    ops.stream()
                            .anyMatch(
                                    op ->
                                            op.phase() == Phase.CLEANUP
                                                    && op.kind() == Kind.GC
                                                    && op.host().equals(host)
                                                    && op.ok());
            if (!swept) {
                violations.add(
                        new Violation(
                                "RELEASED",
                                "GC never succeeded on "
                                        + host
                                        + " before the exhaustion check"
                                        + seed(spec),
                                Set.of(),
                                Set.of(),
                                0,
                                Long.MAX_VALUE));
            }
        }
        List<Operation> fills =
                ops.stream()
                        .filter(
                                op ->
                                        op.phase() == Phase.EXHAUST
                                                && op.kind() == Kind.ADD
                                                && op.purpose() == Purpose.FILL)
                        .toList();
        Map<Attachment, Operation> firstOk = new LinkedHashMap<>();
        fills.stream()
                .filter(Operation::ok)
                .forEach(op -> firstOk.putIfAbsent(op.attachment(), op));
        Map<String, List<Attachment>> byAddress = new LinkedHashMap<>();
        firstOk.forEach(
                (a, op) ->
                        op.addresses().stream()
                                .filter(Checker::isIpv4)
                                .forEach(
                                        address ->
                                                byAddress
                                                        .computeIfAbsent(
                                                                address, k -> new ArrayList<>())
                                                        .add(a)));
        byAddress.forEach(
                (address, holders) -> {
                    if (holders.size() > 1) {
                        violations.add(
                                new Violation(
                                        "RELEASED",
                                        address
                                                + " was allocated "
                                                + holders.size()
                                                + " times in the exhaustion check: "
                                                + holders
                                                + seed(spec),
                                        new LinkedHashSet<>(holders),
                                        Set.of(address),
                                        0,
                                        Long.MAX_VALUE));
                    }
                });
        Set<String> missing = new TreeSet<>(spec.ipv4Pool());
        missing.removeAll(byAddress.keySet());
        Set<String> foreign = new TreeSet<>(byAddress.keySet());
        foreign.removeAll(spec.ipv4Pool());
        if (firstOk.size() != spec.ipv4Pool().size() || !missing.isEmpty() || !foreign.isEmpty()) {
            violations.add(
                    new Violation(
                            "RELEASED",
                            "after deleting every attachment and GC on every host, "
                                    + firstOk.size()
                                    + " fresh ADDs succeeded before the pool was exhausted, but the IPv4 pool has "
                                    + spec.ipv4Pool().size()
                                    + " addresses; never handed out (still held?): "
                                    + abbreviate(missing)
                                    + (foreign.isEmpty()
                                            ? ""
                                            : "; outside the pool: " + abbreviate(foreign))
                                    + seed(spec),
                            Set.of(),
                            missing,
                            0,
                            Long.MAX_VALUE));
        }
        for (String host : hosts) {
            Operation last = null;
            for (Operation op : fills) {
                if (op.host().equals(host)) {
                    last = op;
                }
            }
            if (last != null && !(last.status() == Status.FAIL && last.code() == POOL_EXHAUSTED)) {
                violations.add(
                        new Violation(
                                "RELEASED",
                                "the exhaustion check on "
                                        + host
                                        + " did not end with code 100 (pool exhausted): "
                                        + last.describe()
                                        + seed(spec),
                                Set.of(),
                                Set.of(),
                                0,
                                Long.MAX_VALUE));
            }
        }
        return violations;
    }

    /**
     * SINGLE_WRITER: the journal audit's duplicate lines (one per entity and sequence number
     * written more than once in one journal epoch, see {@code JournalDump}) as violations. Every
     * recovery claims a new epoch by compare-and-set ({@code CassandraJournalEpochs}) and stamps
     * its events with it, so two rows of one number and one epoch would be two writers holding one
     * epoch, or one incarnation writing a number twice: none may be found. A stale incarnation's
     * rows carry an older epoch; its writes were refused (never acknowledged) and no replay
     * delivers them, so they are counted by the audit, not reported here.
     */
    static List<Violation> singleWriter(List<String> duplicates, long seed) {
        return duplicates.stream()
                .map(
                        line ->
                                new Violation(
                                        "SINGLE_WRITER",
                                        "two events with one sequence number: "
                                                + line
                                                + " (seed "
                                                + seed
                                                + ")",
                                        Set.of(),
                                        addressesIn(line),
                                        0,
                                        Long.MAX_VALUE))
                .toList();
    }

    private static final java.util.regex.Pattern ADDRESS =
            java.util.regex.Pattern.compile("\"address\":\"([^\"]+)\"");

    private static Set<String> addressesIn(String line) {
        Set<String> found = new LinkedHashSet<>();
        java.util.regex.Matcher m = ADDRESS.matcher(line);
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }

    private static String abbreviate(Set<String> addresses) {
        List<String> list = new ArrayList<>(addresses);
        return list.size() <= 24
                ? list.toString()
                : list.subList(0, 24)
                        + " and "
                        + (list.size() - 24)
                        + " more ("
                        + list.size()
                        + " in all)";
    }

    private static Set<String> union(List<String> a, List<String> b) {
        Set<String> all = new LinkedHashSet<>(a);
        all.addAll(b);
        return all;
    }

    static boolean isIpv4(String address) {
        return address.indexOf(':') < 0;
    }

    private static boolean sameSet(List<String> a, List<String> b) {
        return new HashSet<>(a).equals(new HashSet<>(b));
    }

    private static String seed(Spec spec) {
        return " (seed " + spec.seed() + ")";
    }
}
