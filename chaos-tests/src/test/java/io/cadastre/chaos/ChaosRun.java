package io.cadastre.chaos;

import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
import io.cadastre.testsupport.AgentLogs;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Closing;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.PodNamespaces;
import io.cadastre.testsupport.Schema;
import io.cadastre.testsupport.TestPki;
import io.cadastre.testsupport.Topology;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * One chaos run, start to end: the topology, Cassandra, one member per host, the workload
 * clients, the fault injector and the supervisor; then, with the faults over, the final checks
 * (settle, durability, cleanup and GC, exhaustion); then the checker over the whole history.
 * {@link #close()} stops everything it started, by PID, and removes every namespace, whatever
 * happened before.
 *
 * <p>Phases after the workload, each bounded by {@link #PHASE_TIMEOUT_S}:
 * <ol>
 *   <li>SETTLE: every host answers an ADD (then the probe is DELed); then every member is
 *       SIGKILLed at once and started again (the entities recover from the journal), and every
 *       host must answer an ADD again.
 *   <li>DURABLE: every attachment live at the end of the workload (as the checker computes it from
 *       the history) is ADDed again until the answer is definite.
 *   <li>CLEANUP: every attachment still held or left in doubt is DELed, then GC with no valid
 *       attachment runs on every host.
 *   <li>EXHAUST: every host ADDs fresh IPAM-only attachments until told the pool is exhausted
 *       (code 100); EXHAUST_CLEANUP DELs them and runs GC again.
 *   <li>IPAM_CHECK: {@code cadastrectl ipam check} on the first host must report a clean cluster,
 *       once after DURABLE with the workload's allocations live, and once at the end.
 * </ol>
 * When a phase cannot finish in time, the rest is skipped and the run reports a liveness problem.
 */
final class ChaosRun implements AutoCloseable {
    static final long PHASE_TIMEOUT_S = 180;
    private static final long WARMUP_MS = 10_000;
    private static final long QUIET_MS = 3_000;
    private static final long CLIENT_STOP_TIMEOUT_S = 240;
    private static final int HARNESS_CLIENT = -1;
    private static final long IPAM_CHECK_TIMEOUT_S = 60;

    /** CNI code for "no address left" (Cadastre's code 100). */
    private static final int POOL_EXHAUSTED = 100;

    /** What the test reports; the journal audit's duplicates are among the violations ({@link Checker#singleWriter}). */
    record Result(
            String summary,
            String timelines,
            List<Checker.Violation> violations,
            List<String> problems) {
        boolean passed() {
            return violations.isEmpty() && problems.isEmpty();
        }
    }

    private final ChaosSettings settings;
    private final Path dir;
    private final long startedAt = System.nanoTime();
    private final List<Member> members = new ArrayList<>();
    private final Map<String, Member> byHost = new LinkedHashMap<>();
    private final List<Client> clients = new ArrayList<>();
    private final List<Thread> clientThreads = new ArrayList<>();
    private final List<String> problems = Collections.synchronizedList(new ArrayList<>());
    private final Thread podCleanup =
            new Thread(this::removePodsAtShutdown, "chaos-pod-netns-cleanup");
    private History history;
    private Topology topology;
    private CassandraNode cassandra;
    private PodNamespaces pods;
    private Calls calls;
    private Supervisor supervisor;
    private FaultInjector injector;
    private ExecutorService harness;
    private List<String> journalAudit = List.of();
    private long workloadFrom;
    private long workloadTo;
    private long faultsFrom;
    private long faultsTo;

    ChaosRun(ChaosSettings settings, Path dir) {
        this.settings = settings;
        this.dir = dir;
    }

    Path historyFile() {
        return dir.resolve("history.jsonl");
    }

    /** Runs everything and checks the history; infrastructure failures are thrown. */
    Result execute() throws Exception {
        Throwable failure = null;
        try {
            start();
            workload();
            finalChecks();
        } catch (Exception | AssertionError e) {
            failure = e;
        }
        if (failure == null) {
            try {
                auditJournal();
            } catch (Exception e) {
                problems.add("journal audit failed: " + e);
            }
        }
        Result result = history == null ? null : check();
        if (result != null && !result.violations().isEmpty() && cassandra != null) {
            String journal = journalEvidence(result.violations());
            java.nio.file.Files.writeString(dir.resolve("journal-evidence.txt"), journal);
            result =
                    new Result(
                            result.summary(),
                            result.timelines() + "\n==== journal evidence ====\n" + journal,
                            result.violations(),
                            result.problems());
        }
        if (failure != null) {
            if (result != null) {
                System.out.println(result.summary());
            }
            throw new IllegalStateException(
                    "chaos run aborted (seed "
                            + settings.seed()
                            + ", files in "
                            + dir
                            + "): "
                            + failure,
                    failure);
        }
        return result;
    }

    private void start() throws Exception {
        history = new History(historyFile());
        harness =
                Executors.newFixedThreadPool(
                        settings.hosts(),
                        r -> {
                            Thread t = new Thread(r, "chaos-harness");
                            t.setDaemon(true);
                            return t;
                        });
        topology = Topology.up(Topology.randomName(), settings.hosts());
        pods = new PodNamespaces(topology.name() + "-p");
        Runtime.getRuntime().addShutdownHook(podCleanup); // the fork killed with TERM: no close()
        cassandra = CassandraNode.start(topology, dir.resolve("cassandra"));
        Schema.create(topology, cassandra);
        TestPki ca =
                TestPki.authority(
                        "cadastre-chaos-ca"); // the members authenticate each other, as by default
        for (Topology.Host host : topology.hosts()) {
            Member m =
                    new Member(
                            topology,
                            host,
                            dir.resolve(host.name()),
                            cassandra,
                            ca,
                            initialSeeds(host),
                            settings.poolsConfig());
            members.add(m);
            byHost.put(host.name(), m);
        }
        Member.startTogether(
                members, harness); // the first seed forms the cluster; the others join it
        history.event(
                "cluster-up",
                "cluster",
                "members "
                        + members.stream().map(m -> m.name() + " pid " + m.pid()).toList()
                        + ", topology "
                        + topology.name());
        calls = new Calls(history, byHost, pods);
        supervisor = new Supervisor(history, members, this::restartSeeds);
        supervisor.start();
        injector = new FaultInjector(history, topology, cassandra, supervisor, members);
    }

    /** Host 1 forms the cluster; the others join through it (and each other). */
    private List<String> initialSeeds(Topology.Host host) {
        return host.index() == 1 ? List.of(Member.address(host)) : restartSeeds(host);
    }

    private List<String> restartSeeds(Member m) {
        return restartSeeds(m.host);
    }

    /** Every other member: a restarted member must join the cluster, never form one alone. */
    private List<String> restartSeeds(Topology.Host self) {
        return topology.hosts().stream().filter(h -> !h.equals(self)).map(Member::address).toList();
    }

    private void workload() throws Exception {
        workloadFrom = history.now();
        for (Topology.Host host : topology.hosts()) {
            for (int c = 0; c < settings.clientsPerHost(); c++) {
                long seed = settings.seed() * 31 + host.index() * 1_000 + c;
                Client client = new Client(calls, pods, host.name(), c, seed, settings);
                Thread t = new Thread(client, "chaos-client-" + client.name());
                t.setDaemon(true);
                clients.add(client);
                clientThreads.add(t);
            }
        }
        clientThreads.forEach(Thread::start);
        Thread.sleep(WARMUP_MS); // the first fault meets a pool the clients hold a share of
        faultsFrom = history.now();
        long until = faultsFrom + (long) (settings.minutes() * 60e9);
        try {
            injector.run(FaultPlan.of(settings), until, () -> false);
        } finally {
            faultsTo = history.now();
        }
        Thread.sleep(QUIET_MS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CLIENT_STOP_TIMEOUT_S);
        clients.forEach(c -> c.stop(deadline));
        for (Thread t : clientThreads) {
            t.join(
                    Math.max(
                            1,
                            TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()) + 30_000));
            if (t.isAlive()) {
                problems.add(
                        t.getName()
                                + " did not finish within "
                                + CLIENT_STOP_TIMEOUT_S
                                + " s of the stop");
            }
        }
        workloadTo = history.now();
        clients.forEach(
                c -> {
                    if (!c.unresolved().isEmpty()) {
                        problems.add(
                                c.name()
                                        + " left "
                                        + c.unresolved().size()
                                        + " attachments in doubt: "
                                        + c.unresolved().stream()
                                                .map(l -> l.attachment().toString())
                                                .toList());
                    }
                });
    }

    private void finalChecks() throws Exception {
        if (!perHost(this::settle, "SETTLE: a host did not answer an ADD")) {
            return;
        }
        restartCluster();
        if (!perHost(
                this::settle, "SETTLE: a host did not answer an ADD after the cluster restart")) {
            return;
        }
        Map<Attachment, Boolean> live = liveAttachments();
        if (!perHost(
                host -> durable(host, live),
                "DURABLE: an attachment's retried ADD got no definite answer")) {
            return;
        }
        // An ADD whose outcome was unknown may have allocated in a block its retry did not ask
        // again: an orphan by design (root DESIGN.md, invariant 4: found and released by GC),
        // even once resolved.
        Set<String> inDoubt = new HashSet<>();
        history.operations().stream()
                .filter(
                        o ->
                                o.kind() == Operation.Kind.ADD
                                        && (o.status() == Operation.Status.UNKNOWN
                                                || o.completedNanos() == Operation.PENDING))
                .forEach(o -> inDoubt.add(o.attachment().containerId()));
        ipamCheck("ipam-check-live", inDoubt);
        Map<Attachment, Boolean> doomed = new HashMap<>(live);
        clients.forEach(c -> c.unresolved().forEach(l -> doomed.put(l.attachment(), l.full())));
        if (!perHost(
                host -> release(Phase.CLEANUP, host, doomed) && sweep(Phase.CLEANUP, host),
                "CLEANUP: a DEL or GC did not succeed")) {
            return;
        }
        Map<String, List<Attachment>> filled = new HashMap<>();
        if (!perHost(
                host -> fill(host, filled), "EXHAUST: a host never reached the end of the pool")) {
            return;
        }
        Map<Attachment, Boolean> fills = new HashMap<>();
        filled.values().forEach(list -> list.forEach(a -> fills.put(a, false)));
        if (!perHost(
                host ->
                        release(Phase.EXHAUST_CLEANUP, host, fills)
                                && sweep(Phase.EXHAUST_CLEANUP, host),
                "EXHAUST_CLEANUP: a DEL or GC did not succeed")) {
            return;
        }
        ipamCheck("ipam-check", Set.of());
    }

    /**
     * The operator's view: {@code cadastrectl ipam check -o json} against the first host's agent
     * (its admin API listens on loopback inside the host's namespace; the token is the one that agent
     * generated in its data directory) must report a clean cluster —
     * no allocation without an attachment, no attachment without its allocation, no block affine to
     * an unknown node — once while the workload's allocations are live, and once at the end. While
     * live, an allocation without attachment is excused only for an attachment one of whose ADDs
     * had an unknown outcome (it may have allocated where the retry did not look; CLEANUP's GC
     * releases it). Anything else is a problem of the run.
     *
     * @param excusedContainers container IDs with an ADD whose outcome was unknown
     */
    private void ipamCheck(String name, Set<String> excusedContainers)
            throws IOException, InterruptedException {
        Topology.Host host = topology.hosts().get(0);
        List<String> command =
                List.of(
                        java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java")
                                .toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        "io.cadastre.ctl.Cadastrectl",
                        "ipam",
                        "check",
                        "-o",
                        "json",
                        "--token-file",
                        byHost.get(host.name()).adminTokenFile().toString());
        // To a file, not a pipe: reading a pipe would block past the timeout if the tool hung.
        Path out = dir.resolve(name + ".json");
        Process check =
                topology.exec(
                        host,
                        command,
                        pb ->
                                pb.redirectErrorStream(true)
                                        .redirectOutput(ProcessBuilder.Redirect.to(out.toFile())));
        if (!check.waitFor(IPAM_CHECK_TIMEOUT_S, TimeUnit.SECONDS)) {
            check.destroyForcibly();
            problems.add(
                    "IPAM_CHECK: cadastrectl ipam check did not finish in "
                            + IPAM_CHECK_TIMEOUT_S
                            + " s");
            return;
        }
        String output = java.nio.file.Files.readString(out);
        if (check.exitValue() != 0 && check.exitValue() != 1) {
            problems.add(
                    "IPAM_CHECK ("
                            + name
                            + "): cadastrectl ipam check exit "
                            + check.exitValue()
                            + ":\n"
                            + output);
            return;
        }
        com.fasterxml.jackson.databind.JsonNode report =
                new com.fasterxml.jackson.databind.ObjectMapper().readTree(output);
        List<String> findings = new java.util.ArrayList<>();
        report.get("allocationsWithoutAttachment")
                .forEach(
                        f -> {
                            String handle = f.get("allocation").get("handle").asText();
                            if (!excusedContainers.contains(
                                    handle.substring(handle.indexOf('.') + 1))) {
                                findings.add("allocation without attachment " + f);
                            }
                        });
        report.get("attachmentsWithoutAllocation")
                .forEach(f -> findings.add("attachment without allocation " + f));
        report.get("blocksAffineToUnknownNodes")
                .forEach(f -> findings.add("block affine to an unknown node " + f));
        history.event(
                name,
                host.name(),
                "cadastrectl ipam check exit "
                        + check.exitValue()
                        + ": "
                        + report.get("checkedAllocations")
                        + " allocations, "
                        + report.get("checkedAttachments")
                        + " attachments, "
                        + findings.size()
                        + " findings, "
                        + report.get("tookMillis")
                        + " ms");
        if (!findings.isEmpty()) {
            problems.add("IPAM_CHECK (" + name + "): " + String.join("\n", findings));
        }
    }

    /** Runs the step for every host at once; false (and a problem recorded) when one fails. */
    private boolean perHost(java.util.function.Predicate<String> step, String problem) {
        List<CompletableFuture<Boolean>> all =
                byHost.keySet().stream()
                        .map(host -> CompletableFuture.supplyAsync(() -> step.test(host), harness))
                        .toList();
        boolean ok = all.stream().allMatch(CompletableFuture::join);
        if (!ok) {
            problems.add(problem);
        }
        return ok;
    }

    /**
     * SIGKILL of every member at once, then a fresh start (host 1 forms the cluster again): every
     * entity the durability and exhaustion checks touch is then recovered from the journal and
     * snapshots, not served from a live actor's memory.
     */
    private void restartCluster() throws Exception {
        long at = history.now();
        history.event(
                "cluster-restart", "cluster", "SIGKILL of every member, then all started again");
        supervisor.whileHeld(
                () -> {
                    for (Member m : members) {
                        m.kill();
                    }
                    Member first = members.get(0);
                    first.seeds(List.of(Member.address(first.host)));
                    members.subList(1, members.size()).forEach(m -> m.seeds(restartSeeds(m)));
                    Member.startTogether(members, harness);
                });
        history.event(
                "cluster-restarted",
                "cluster",
                String.format(
                        java.util.Locale.ROOT,
                        "every member ready after %.1f s",
                        (history.now() - at) / 1e9));
    }

    private final java.util.concurrent.atomic.AtomicInteger probes =
            new java.util.concurrent.atomic.AtomicInteger();

    /**
     * A host is settled when it answers an ADD definitely: with addresses, or with code 100 (no
     * address left), which is the right answer when the workload ended holding the whole pool (a
     * run ended with all 512 IPv4 addresses held by live attachments).
     */
    private boolean settle(String host) {
        Attachment probe = new Attachment(host, host + "probe" + probes.incrementAndGet());
        return repeat(
                        () -> calls.add(Phase.SETTLE, Purpose.PROBE, HARNESS_CLIENT, probe, false),
                        op ->
                                op.ok()
                                        || (op.status() == Status.FAIL
                                                && op.code() == POOL_EXHAUSTED))
                && repeat(
                        () ->
                                calls.del(
                                        Phase.SETTLE,
                                        Purpose.RELEASE,
                                        HARNESS_CLIENT,
                                        probe,
                                        false),
                        Operation::ok);
    }

    /** Live attachments at the end of the workload, as the checker sees them, with whether each is a full one. */
    private Map<Attachment, Boolean> liveAttachments() {
        List<Operation> ops = history.operations();
        Map<Attachment, Boolean> full = new HashMap<>();
        ops.stream()
                .filter(op -> op.kind() == Kind.ADD && op.attachment() != null)
                .forEach(op -> full.put(op.attachment(), op.full()));
        Map<Attachment, Boolean> live = new LinkedHashMap<>();
        Checker.liveAfter(ops, Phase.WORKLOAD).keySet().forEach(a -> live.put(a, full.get(a)));
        return live;
    }

    private boolean durable(String host, Map<Attachment, Boolean> live) {
        for (Map.Entry<Attachment, Boolean> e : live.entrySet()) {
            if (e.getKey().host().equals(host)
                    && !repeat(
                            () ->
                                    calls.add(
                                            Phase.DURABLE,
                                            Purpose.VERIFY,
                                            HARNESS_CLIENT,
                                            e.getKey(),
                                            e.getValue()),
                            op -> op.status() != Status.UNKNOWN)) {
                return false;
            }
        }
        return true;
    }

    private boolean release(Phase phase, String host, Map<Attachment, Boolean> attachments) {
        for (Map.Entry<Attachment, Boolean> e : attachments.entrySet()) {
            Attachment a = e.getKey();
            if (a.host().equals(host)) {
                if (!repeat(
                        () -> calls.del(phase, Purpose.RELEASE, HARNESS_CLIENT, a, e.getValue()),
                        Operation::ok)) {
                    return false;
                }
                if (e.getValue()) {
                    try {
                        pods.remove(pods.name(a.containerId()));
                    } catch (Exception ex) {
                        history.event(
                                "netns-failed",
                                host,
                                "ip netns del "
                                        + pods.name(a.containerId())
                                        + ": "
                                        + ex.getMessage());
                    }
                }
            }
        }
        return true;
    }

    private boolean sweep(Phase phase, String host) {
        return repeat(() -> calls.gc(phase, host, HARNESS_CLIENT), Operation::ok);
    }

    /** ADDs fresh IPAM-only attachments on the host until the pool is exhausted (code 100). */
    private boolean fill(String host, Map<String, List<Attachment>> filled) {
        List<Attachment> mine = new ArrayList<>();
        synchronized (filled) {
            filled.put(host, mine);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PHASE_TIMEOUT_S);
        int n = 0;
        Attachment a = new Attachment(host, host + "fill" + n);
        while (System.nanoTime() < deadline) {
            Operation op = calls.add(Phase.EXHAUST, Purpose.FILL, HARNESS_CLIENT, a, false);
            if (op.status() == Status.FAIL && op.code() == Checker.POOL_EXHAUSTED) {
                mine.add(a); // an orphan of it, if any, is released too
                return true;
            }
            if (op.status() == Status.UNKNOWN) {
                pause(300);
                continue; // the same attachment again until the answer is definite
            }
            mine.add(a);
            a = new Attachment(host, host + "fill" + ++n);
        }
        return false;
    }

    /** Repeats the call until {@code done} accepts its outcome, or {@link #PHASE_TIMEOUT_S} passed. */
    private static boolean repeat(
            Supplier<Operation> call, java.util.function.Predicate<Operation> done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PHASE_TIMEOUT_S);
        while (true) {
            if (done.test(call.get())) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            pause(500);
        }
    }

    private static void pause(long millis) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    /**
     * Single writer: no entity's journal may hold two events with one sequence number (two
     * incarnations writing the same entity at once, e.g. a paused member's in-flight writes
     * landing after its shards moved). Read from Cassandra after the final checks.
     */
    private void auditJournal() {
        String out = JournalDump.run(topology, cassandra, JournalDump.AUDIT, List.of());
        journalAudit = out.lines().filter(l -> l.startsWith(JournalDump.DUPLICATE)).toList();
        String verdict = out.lines().filter(l -> l.startsWith("AUDITED")).findFirst().orElse(null);
        if (verdict == null) {
            problems.add("the journal audit did not finish: " + out.strip());
        } else {
            history.event("journal-audit", "db", verdict);
        }
    }

    private Result check() {
        List<Operation> ops = history.operations();
        List<FaultRecord> faults = history.faults();
        List<Checker.Violation> violations =
                new ArrayList<>(
                        Checker.check(
                                ops,
                                new Checker.Spec(settings.seed(), ChaosSettings.ipv4Addresses())));
        violations.addAll(Checker.singleWriter(journalAudit, settings.seed()));
        if (injector != null) {
            Map<FaultPlan.Kind, Integer> counts = injector.injected();
            int[] wanted = {
                settings.kills(),
                settings.pauses(),
                settings.partitions(),
                settings.cassandraRestarts()
            };
            FaultPlan.Kind[] kinds = FaultPlan.Kind.values();
            for (int i = 0; i < kinds.length; i++) {
                if (workloadTo > 0 && counts.getOrDefault(kinds[i], 0) < wanted[i]) {
                    problems.add(
                            "only "
                                    + counts.getOrDefault(kinds[i], 0)
                                    + " "
                                    + kinds[i]
                                    + " faults injected, "
                                    + wanted[i]
                                    + " wanted");
                }
            }
        }
        Summary.Span span =
                new Summary.Span(
                        workloadFrom,
                        workloadTo == 0 ? history.now() : workloadTo,
                        faultsFrom,
                        faultsTo == 0 ? history.now() : faultsTo);
        String summary =
                Summary.render(
                        settings,
                        ops,
                        faults,
                        violations,
                        List.copyOf(problems),
                        span,
                        System.nanoTime() - startedAt,
                        agentLogs(),
                        historyFile().toString());
        return new Result(
                summary,
                Summary.timelines(violations, ops, faults),
                List.copyOf(violations),
                List.copyOf(problems));
    }

    /**
     * The entity recoveries in every member's log, for the summary's failover section. Never
     * fails the run: what cannot be read is reported in the section instead.
     */
    private AgentLogs.Read agentLogs() {
        try {
            return AgentLogs.read(
                    Member.logs(members),
                    history.originEpochMillis(),
                    java.time.ZoneId.systemDefault());
        } catch (RuntimeException e) {
            return new AgentLogs.Read(List.of(), List.of("reading the agents' logs failed: " + e));
        }
    }

    /**
     * The journal rows behind the first few violations: the events of each involved address's
     * block that mention it (and, in the node entities, the handles of its last holders), and
     * the node entities' events of each involved attachment.
     */
    private String journalEvidence(List<Checker.Violation> violations) {
        StringBuilder b = new StringBuilder();
        List<String> nodes = topology.hosts().stream().map(h -> "Node|" + h.name()).toList();
        java.util.Set<String> addresses = new java.util.LinkedHashSet<>();
        java.util.Set<Attachment> attachments = new java.util.LinkedHashSet<>();
        for (Checker.Violation v : violations.subList(0, Math.min(4, violations.size()))) {
            v.addresses().stream().limit(3).forEach(addresses::add);
            attachments.addAll(v.attachments());
        }
        for (String address : addresses) {
            b.append(
                    JournalDump.run(
                            topology,
                            cassandra,
                            address,
                            List.of(
                                    "--follow=" + String.join(",", nodes),
                                    ChaosSettings.blockPersistenceId(address))));
            // Which node claimed the block (the pool is the source of truth for affinity).
            b.append(
                    JournalDump.run(
                            topology,
                            cassandra,
                            "\"" + ChaosSettings.blockOf(address) + "\"",
                            List.of(
                                    "Pool|"
                                            + (Checker.isIpv4(address)
                                                    ? "chaos-ipv4"
                                                    : "chaos-ipv6"))));
        }
        for (Attachment a : attachments) {
            b.append(
                    JournalDump.run(
                            topology, cassandra, a.containerId(), List.of("Node|" + a.host())));
        }
        return b.toString();
    }

    /** Stops everything started, by PID, and removes every namespace; keeps going past failures. */
    @Override
    public void close() throws Exception {
        List<Exception> failures = new ArrayList<>();
        clients.forEach(c -> c.stop(System.nanoTime()));
        clientThreads.forEach(Thread::interrupt);
        if (injector != null) {
            injector.liftAll();
        }
        run(
                failures,
                () -> {
                    if (supervisor != null) {
                        supervisor.close();
                    }
                });
        run(failures, () -> Closing.together(members));
        run(
                failures,
                () -> {
                    if (cassandra != null) {
                        cassandra.close();
                    }
                });
        run(
                failures,
                () -> {
                    if (pods != null) {
                        pods.close();
                        Runtime.getRuntime().removeShutdownHook(podCleanup);
                    }
                });
        run(
                failures,
                () -> {
                    if (topology != null) {
                        topology.close();
                    }
                });
        if (harness != null) {
            harness.shutdownNow();
        }
        run(
                failures,
                () -> {
                    if (history != null) {
                        history.close();
                    }
                });
        if (!failures.isEmpty()) {
            Exception first = failures.get(0);
            failures.subList(1, failures.size()).forEach(first::addSuppressed);
            throw first;
        }
    }

    private void removePodsAtShutdown() {
        try {
            pods.close();
        } catch (Exception e) {
            System.err.println("chaos: removing pod namespaces at shutdown failed: " + e);
        }
    }

    @FunctionalInterface
    private interface Step {
        void run() throws Exception;
    }

    private static void run(List<Exception> failures, Step step) {
        try {
            step.run();
        } catch (Exception e) {
            failures.add(e);
        }
    }
}
