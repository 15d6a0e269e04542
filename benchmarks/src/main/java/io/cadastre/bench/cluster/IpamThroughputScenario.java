package io.cadastre.bench.cluster;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.host.AgentProbe;
import io.cadastre.bench.host.ProfileSummary;
import io.cadastre.bench.report.Comparison;
import io.cadastre.bench.report.Distribution;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.Plot;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.bench.report.SideBySide;
import io.cadastre.testsupport.AgentLogs;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.CniSocketClient;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.Topology;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Scenario 3 of issue 5: ADD+DEL per second sustained through the IPAM-only endpoint of a
 * 3-member cluster on Cassandra, next to the raw journal's throughput (persist and reply of a
 * trivial event) measured in the same run with as many writers: their ratio says how close to the
 * storage's limit the allocator runs. Both loads are closed loops (each writer waits for its
 * reply), so throughput = writers ÷ latency. The members run with mutual TLS, as by default; the
 * IPAM load runs a second time with the members on plain TCP, which prices TLS (CPU per ADD+DEL).
 */
public final class IpamThroughputScenario implements Scenario {
    /**
     * Seconds of IPAM load before each IPAM measurement ({@code
     * -Dcadastre.bench.throughput-warm-up-seconds} sets another). The first load meets a Cassandra
     * and members just started: after 10 s the rate still climbed from 145 to 380 ADD+DEL/s over
     * the 30 measured seconds; after 60 s it held at 314-426.
     */
    static final int IPAM_WARM_UP_SECONDS = 60;

    /** The raw journal runs after the IPAM load, on a warm Cassandra: its rate is flat after 10 s. */
    static final int JOURNAL_WARM_UP_SECONDS = 10;

    /** Clients per member, each one ADD+DEL cycle at a time; also the journal probe's entities per host. */
    static final int WRITERS_PER_MEMBER = 8;

    /**
     * Journal events of one ADD+DEL: the block's assignment, the node's record, the node's forget,
     * the block's release. Calls that meet in an entity share a write, so a write carries one or
     * more of them.
     */
    static final int EVENTS_PER_CYCLE = 4;

    static final String THROUGHPUT = "throughput per second";
    static final String IPAM = "cadastre IPAM (ADD+DEL cycles)";
    static final String JOURNAL = "raw journal (persist+reply)";
    static final String JOURNAL_ONE_WRITER = "raw journal, one writer per host (persist+reply)";
    static final String IPAM_PLAIN = "cadastre IPAM, members on plain TCP (ADD+DEL cycles)";
    static final String CPU_PER_CYCLE = "agents' CPU time per ADD+DEL (3 members together)";

    /** One member's profile under the load, as a flame graph, in the report's directory. */
    static final String FLAME_GRAPH = "ipam-throughput-flame.html";

    /** The same profile's stacks, one per line, in the report's directory. */
    static final String COLLAPSED_STACKS = "ipam-throughput-stacks.txt";

    /** The CNI endpoint's thread, as {@link AgentProbe#cpuByThread} names it. */
    static final String CNI_THREAD = "cadastre-cni";

    /** The Cassandra driver's I/O threads ({@code s0-io-0}, ...), as {@link AgentProbe#cpuByThread} names them. */
    static final String DRIVER_THREAD = "s0-io";

    private final long seed;

    public IpamThroughputScenario(long seed) {
        this.seed = seed;
    }

    @Override
    public String id() {
        return "ipam-throughput";
    }

    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        int warmUp = context.quick() ? 2 : JOURNAL_WARM_UP_SECONDS;
        int ipamWarmUp =
                context.quick()
                        ? 2
                        : Integer.getInteger(
                                "cadastre.bench.throughput-warm-up-seconds", IPAM_WARM_UP_SECONDS);
        int seconds = context.quick() ? 5 : 30;
        List<Member> members = context.members();
        String tag = Long.toString(Math.abs(seed) % 1_679_616, 36);

        // The IPAM load, the members authenticating each other with mutual TLS (the default).
        Load tls = ipamLoad(members, context.ipamNetns(), tag, ipamWarmUp, seconds);
        String tlsPlacement = placement(members);
        SideBySide latency = tls.latency();
        AtomicLong failures = new AtomicLong(tls.failures());
        // Where one member's CPU goes under the same load, sampled after the measured seconds so
        // that the profiler's own cost stays out of the figures.
        String profile =
                profileOneMember(context, members, tag + "f", context.quick() ? 3 : 20, failures);
        long agentCpuMillis = tls.cpuMillis();
        double[] ipamPerSecond = tls.perSecond();

        // The raw journal, same writers, same hosts, same JVM flags as the members.
        double[] journalPerSecond =
                journal(
                        context.topology(),
                        context.cassandra(),
                        tag,
                        WRITERS_PER_MEMBER,
                        warmUp,
                        seconds);
        // And with one writer per host: a node's ADDs all pass through its one NodeEntity (a single
        // writer).
        double[] oneWriterPerSecond =
                journal(context.topology(), context.cassandra(), tag + "s", 1, warmUp, seconds);

        // What TLS costs: the same load once more with the members restarted on plain TCP.
        Load plain;
        String plainPlacement;
        context.restartMembers(false);
        try {
            plain = ipamLoad(members, context.ipamNetns(), tag + "p", ipamWarmUp, seconds);
            plainPlacement = placement(members);
        } finally {
            context.restartMembers(true);
        }
        failures.addAndGet(plain.failures());

        Figure ipam = new Figure(THROUGHPUT, IPAM, "ops/s", Distribution.of(ipamPerSecond));
        Figure journal =
                new Figure(THROUGHPUT, JOURNAL, "ops/s", Distribution.of(journalPerSecond));
        double ipamMean = mean(ipamPerSecond);
        double journalMean = mean(journalPerSecond);
        double eventShare = ipamMean * EVENTS_PER_CYCLE / journalMean;
        Figure oneWriter =
                new Figure(
                        THROUGHPUT,
                        JOURNAL_ONE_WRITER,
                        "ops/s",
                        Distribution.of(oneWriterPerSecond));
        List<Figure> figures =
                new ArrayList<>(
                        List.of(
                                ipam,
                                journal,
                                oneWriter,
                                new Figure(
                                        "journal events per second made by the IPAM load",
                                        "cadastre",
                                        "ops/s",
                                        Distribution.of(
                                                java.util.Arrays.stream(ipamPerSecond)
                                                        .map(v -> v * EVENTS_PER_CYCLE)
                                                        .toArray()))));
        figures.addAll(latency.figures());
        double cpuPerCycle = agentCpuMillis / (ipamMean * seconds);
        figures.add(new Figure(CPU_PER_CYCLE, "cadastre", "ms", Distribution.single(cpuPerCycle)));
        Figure ipamPlain =
                new Figure(THROUGHPUT, IPAM_PLAIN, "ops/s", Distribution.of(plain.perSecond()));
        double plainMean = mean(plain.perSecond());
        double cpuPerCyclePlain = plain.cpuMillis() / (plainMean * seconds);
        figures.add(ipamPlain);
        figures.add(
                new Figure(
                        CPU_PER_CYCLE,
                        "cadastre, members on plain TCP",
                        "ms",
                        Distribution.single(cpuPerCyclePlain)));
        double cniPerCycle = tls.msPerCycle(CNI_THREAD, ipamMean * seconds);
        Goal goal =
                throughputGoal(
                        ipamMean,
                        journalMean,
                        mean(oneWriterPerSecond),
                        seconds,
                        cpuPerCycle,
                        cniPerCycle,
                        agentCpuMillis / (seconds * 2_000.0),
                        tlsPlacement);
        Goal cpuGoal =
                memberCpuGoal(
                        cpuPerCycle,
                        cpuPerCyclePlain,
                        cniPerCycle,
                        tls.msPerCycle(DRIVER_THREAD, ipamMean * seconds));
        Plot overTime =
                new Plot(
                        "ipam-throughput.png",
                        "Throughput over time (3 members, Cassandra)",
                        "second",
                        "per second",
                        false,
                        List.of(
                                series(IPAM, ipamPerSecond),
                                series(JOURNAL, journalPerSecond),
                                series(JOURNAL_ONE_WRITER, oneWriterPerSecond)));
        return new ScenarioReport(
                id(),
                "IPAM throughput on a 3-member cluster, against the raw journal",
                String.format(
                        Locale.ROOT,
                        "Three cadastre-agents (each in its own host network namespace, C1-only JVMs "
                                + "with a 256 MiB heap) share one Cassandra 5.0 node (its own namespace, 256 MiB heap). %d "
                                + "clients per member, %d in all, each ADD then DEL of a new attachment in a closed loop through "
                                + "the member's IPAM-only CNI endpoint (HTTP over its Unix socket, as the plugin sends it, "
                                + "without the plugin's exec), IPv4 from one pool in /26 blocks; %d s warm-up, %d s measured. "
                                + "Then the raw journal: in each host namespace a JVM with the members' flags runs %d trivial "
                                + "persistent entities on the same journal plugin and settings, each persisting a small event "
                                + "and replying in a closed loop, %d s warm-up, %d s measured. Distributions are of the "
                                + "per-second rates. The journal is measured a second time with one writer per host. The members "
                                + "authenticate each other with mutual TLS, as by default; to price it, the members are then "
                                + "restarted on plain TCP (cadastre.cluster.insecure-plaintext) and the IPAM load runs again "
                                + "(%d s warm-up, %d s measured), then they are restarted with TLS.",
                        WRITERS_PER_MEMBER,
                        WRITERS_PER_MEMBER * members.size(),
                        ipamWarmUp,
                        seconds,
                        WRITERS_PER_MEMBER,
                        warmUp,
                        seconds,
                        ipamWarmUp,
                        seconds),
                figures,
                List.of(
                        Comparison.of(ipam, journal),
                        Comparison.of(ipam, oneWriter),
                        Comparison.of(ipam, ipamPlain)),
                List.of(goal, cpuGoal),
                List.of(
                        overTime,
                        latency.plot(
                                "IPAM ADD",
                                "ipam-throughput-latency.png",
                                "IPAM ADD under load (3 members, Cassandra)")),
                List.of(
                        String.format(
                                Locale.ROOT,
                                "Failed calls during the IPAM loads: %d (each counted once, not "
                                        + "retried).",
                                failures.get()),
                        String.format(
                                Locale.ROOT,
                                "Mutual TLS between the members: %.2f ms of the agents' CPU per ADD+DEL "
                                        + "against %.2f ms on plain TCP (%+.0f%%); %.0f against %.0f ADD+DEL/s. Measured one after "
                                        + "the other, so the machine's drift is in the difference too.",
                                cpuPerCycle,
                                cpuPerCyclePlain,
                                (cpuPerCycle / cpuPerCyclePlain - 1) * 100,
                                ipamMean,
                                plainMean),
                        String.format(
                                Locale.ROOT,
                                "Counted in journal events (%d per ADD+DEL), the IPAM load wrote %.0f/s: "
                                        + "%.0f%% of the raw journal's rate.",
                                EVENTS_PER_CYCLE,
                                ipamMean * EVENTS_PER_CYCLE,
                                eventShare * 100),
                        "Where each node's NodeEntity lived at the end of the load (the members' logs: "
                                + "where it last recovered): with TLS, "
                                + tlsPlacement
                                + "; on plain TCP, "
                                + plainPlacement
                                + ". A node's entities live on its own member (EntityHomes), and on "
                                + "another only until the rebalance after its member restarted; an ADD or "
                                + "DEL whose node's entity lives on another member crosses to it and back.",
                        "The machine has 2 cores for three agents, Cassandra and the load: all of them compete for CPU.",
                        cpuByThreadTable(tls, ipamMean * seconds),
                        profile));
    }

    /**
     * Profiles the first member with async-profiler while the same IPAM load runs on every member
     * for {@code seconds} more, already warm; its flame graph and collapsed stacks go to the
     * report's directory ({@value #FLAME_GRAPH}, {@value #COLLAPSED_STACKS}).
     *
     * @param failures the failed calls so far, to which this load's are added
     * @return the profile's summary for the report's notes, or a note saying why there is none
     *     (async-profiler could not load)
     */
    private String profileOneMember(
            BenchContext context,
            List<Member> members,
            String tag,
            int seconds,
            AtomicLong failures)
            throws Exception {
        Member profiled = members.get(0);
        ProfileSummary summary;
        try {
            summary =
                    new AgentProbe(profiled.pid())
                            .profileWhile(
                                    context.workDir(id()),
                                    context.outputDir(),
                                    FLAME_GRAPH,
                                    COLLAPSED_STACKS,
                                    () ->
                                            failures.addAndGet(
                                                    ipamLoad(
                                                                    members,
                                                                    context.ipamNetns(),
                                                                    tag,
                                                                    0,
                                                                    seconds)
                                                            .failures()));
        } catch (IOException noProfiler) {
            return "No profile of a member: " + noProfiler.getMessage();
        }
        return summary.markdown(
                        String.format(
                                Locale.ROOT,
                                "Where one member's CPU goes (%s), over %d s more of the same load on "
                                        + "every member with TLS, after the measured seconds",
                                profiled.name(),
                                seconds))
                + "\n- "
                + ProfileSummary.links(FLAME_GRAPH, COLLAPSED_STACKS)
                + "async-profiler).";
    }

    /**
     * The throughput goal of issue 17: the IPAM load's ADD+DEL cycles per second at least 40% of
     * the raw journal's persist+reply per second on the same cluster.
     *
     * @param ipamMean ADD+DEL cycles per second, the mean over the measured seconds
     * @param journalMean the raw journal's persist+reply per second, its mean
     * @param oneWriterMean the raw journal with one writer per host, persist+reply per second
     * @param seconds the measured seconds
     * @param cpuPerCycle the members' CPU per ADD+DEL, summed, in ms
     * @param cniPerCycle of it, the members' CNI endpoint threads, in ms
     * @param machineShare the members' CPU over the measured seconds as a share of the machine's 2
     *     cores (0.5 = one core)
     * @param placement where the node entities lived ({@link #placement})
     * @return the goal, and when missed what bounds it: the CPU the machine would leave an ADD+DEL
     *     at the goal's rate against what the members' CNI endpoints alone used
     */
    static Goal throughputGoal(
            double ipamMean,
            double journalMean,
            double oneWriterMean,
            int seconds,
            double cpuPerCycle,
            double cniPerCycle,
            double machineShare,
            String placement) {
        double ratio = ipamMean / journalMean;
        boolean met = ratio >= 0.4;
        // At the goal's rate the machine's 2 cores hold this much CPU per ADD+DEL for everything
        // on it: the members, Cassandra and the load's clients.
        double budgetAtGoal = 2_000.0 / (0.4 * journalMean);
        return new Goal(
                "IPAM throughput at least 40% of the raw journal throughput",
                String.format(
                        Locale.ROOT,
                        "%.0f ADD+DEL/s ÷ %.0f persist+reply/s = %.0f%% (means over %d s)",
                        ipamMean,
                        journalMean,
                        ratio * 100,
                        seconds),
                met,
                met
                        ? null
                        : String.format(
                                Locale.ROOT,
                                "CPU: at 40%% (%.0f ADD+DEL/s) the machine's 2 cores would leave %.2f ms "
                                        + "per ADD+DEL for the members, Cassandra and the load together, and the "
                                        + "members' CNI endpoints alone (a connection, HTTP and the checks for each "
                                        + "of the 2 calls) used %.2f ms of it in this run, their IPAM work %.2f ms "
                                        + "more (%.0f%% of the 2 cores). An ADD+DEL persists %d events, each waited "
                                        + "for in turn (block, then node; node, then block), in its node's two single "
                                        + "writers (its NodeEntity and its block), whose sequential rate the "
                                        + "one-writer-per-host journal figure shows: %.0f/s for 3 writers; the calls "
                                        + "that meet in one of them share a write. Counted in events the IPAM load "
                                        + "drives the journal at %.0f%% of the raw rate. Node entities %s; one on "
                                        + "another member adds a crossing there and back to each of its node's calls "
                                        + "(benchmarks/DESIGN.md)",
                                0.4 * journalMean,
                                budgetAtGoal,
                                cniPerCycle,
                                cpuPerCycle - cniPerCycle,
                                machineShare * 100,
                                EVENTS_PER_CYCLE,
                                oneWriterMean,
                                ipamMean * EVENTS_PER_CYCLE / journalMean * 100,
                                placement));
    }

    /**
     * The cluster's CPU goal of issue 17: the 3 members' CPU per ADD+DEL, summed, at most 1 ms
     * under the IPAM load on Cassandra.
     *
     * @param cpuPerCycle with mutual TLS between the members (the default), in ms
     * @param cpuPerCyclePlain the same on plain TCP, in ms
     * @param cniPerCycle of the TLS figure, the CNI endpoint threads, in ms
     * @param driverPerCycle of the TLS figure, the Cassandra driver's I/O threads, in ms
     * @return the goal, and when missed what bounds it: the endpoints' and the driver's share
     */
    static Goal memberCpuGoal(
            double cpuPerCycle,
            double cpuPerCyclePlain,
            double cniPerCycle,
            double driverPerCycle) {
        boolean met = cpuPerCycle <= 1.0;
        return new Goal(
                "the 3 members' CPU per ADD+DEL on Cassandra, summed: ≤ 1 ms",
                String.format(
                        Locale.ROOT,
                        "%.2f ms with mutual TLS, %.2f ms on plain TCP",
                        cpuPerCycle,
                        cpuPerCyclePlain),
                met,
                met
                        ? null
                        : String.format(
                                Locale.ROOT,
                                "the members' CNI endpoints alone used %.2f ms (a connection, HTTP and the "
                                        + "checks for each of the 2 calls: the floor agent-cost measures), the "
                                        + "Cassandra driver's I/O %.2f ms (each write a CQL batch and an epoch read "
                                        + "back, the fence against a stale incarnation), the rest %.2f ms, most of "
                                        + "it Pekko's threads: the journal plugin, the entities, sharding (by thread below; "
                                        + "benchmarks/DESIGN.md, where an ADD+DEL's CPU goes)",
                                cniPerCycle,
                                driverPerCycle,
                                cpuPerCycle - cniPerCycle - driverPerCycle));
    }

    /**
     * @return where each node's NodeEntity lives now, from the members' logs: {@code "2 of 3 on
     *     their own member (h1 on h1, h2 on h3, h3 on h3)"}
     */
    private static String placement(List<Member> members) throws IOException {
        Map<String, String> homes = AgentLogs.nodeEntityHomes(Member.logs(members));
        long own = homes.entrySet().stream().filter(e -> e.getKey().equals(e.getValue())).count();
        List<String> each = new ArrayList<>();
        homes.forEach((node, member) -> each.add(node + " on " + member));
        return String.format(
                Locale.ROOT,
                "%d of %d on their own member (%s)",
                own,
                homes.size(),
                String.join(", ", each));
    }

    /**
     * One IPAM load's outcome.
     *
     * @param perSecond ADD+DEL cycles completed in each measured second
     * @param cpuMillis the members' CPU time (user and system) over the measured seconds, in ms
     * @param cpuByThread the same by thread group ({@link AgentProbe#cpuByThread}), the members
     *     summed, in ns (10 ms ticks)
     * @param failures failed calls, warm-up included
     * @param latency ADD and DEL latencies after warm-up
     */
    private record Load(
            double[] perSecond,
            long cpuMillis,
            Map<String, Long> cpuByThread,
            long failures,
            SideBySide latency) {
        /** @return the CPU of one thread group ({@link AgentProbe#cpuByThread}) per cycle, in ms */
        double msPerCycle(String threads, double cycles) {
            return cpuByThread.getOrDefault(threads, 0L) / 1e6 / cycles;
        }
    }

    /**
     * Runs {@link #WRITERS_PER_MEMBER} closed-loop clients per member through its IPAM-only
     * endpoint for {@code warmUp} then {@code seconds} seconds, attachments named after {@code tag}.
     */
    private static Load ipamLoad(
            List<Member> members, String netns, String tag, int warmUp, int seconds)
            throws IOException, InterruptedException {
        SideBySide latency = new SideBySide("cadastre", Set.of());
        AtomicLongArray cycles = new AtomicLongArray(warmUp + seconds + 2);
        AtomicLong failures = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        long t0 = System.nanoTime();
        List<Thread> clients = new ArrayList<>();
        for (Member m : members) {
            CniSocketClient client =
                    new CniSocketClient(
                            m.socket(),
                            CniSocketClient.ipamOnly(m.socket(), BenchContext.CLUSTER_POOL),
                            netns);
            for (int w = 0; w < WRITERS_PER_MEMBER; w++) {
                String prefix = "tp-" + tag + "-" + m.name() + "-" + w + "-";
                Thread t =
                        new Thread(
                                () ->
                                        cycle(
                                                client, prefix, latency, cycles, failures, stop, t0,
                                                warmUp),
                                "ipam-" + prefix);
                t.start();
                clients.add(t);
            }
        }
        TimeUnit.SECONDS.sleep(warmUp);
        long cpuBefore = cpuMillis(members);
        Map<String, Long> threadsBefore = cpuByThread(members);
        TimeUnit.SECONDS.sleep(seconds);
        long cpu = cpuMillis(members) - cpuBefore;
        Map<String, Long> threads = new TreeMap<>();
        cpuByThread(members)
                .forEach(
                        (name, nanos) ->
                                threads.put(name, nanos - threadsBefore.getOrDefault(name, 0L)));
        stop.set(true);
        for (Thread t : clients) {
            t.join(TimeUnit.SECONDS.toMillis(30));
        }
        return new Load(window(cycles, warmUp, seconds), cpu, threads, failures.get(), latency);
    }

    private static void cycle(
            CniSocketClient client,
            String prefix,
            SideBySide latency,
            AtomicLongArray cycles,
            AtomicLong failures,
            AtomicBoolean stop,
            long t0,
            int warmUp) {
        long n = 0;
        while (!stop.get()) {
            String id = prefix + n++;
            try {
                long a = System.nanoTime();
                CniSocketClient.Reply add = client.call("ADD", id);
                long b = System.nanoTime();
                CniSocketClient.Reply del = client.call("DEL", id);
                long c = System.nanoTime();
                if (add.status() != 200 || del.status() != 200) {
                    failures.incrementAndGet();
                    continue;
                }
                int second = (int) ((c - t0) / 1_000_000_000L);
                if (second < cycles.length()) {
                    cycles.incrementAndGet(second);
                }
                if (second >= warmUp) {
                    synchronized (latency) {
                        latency.record("IPAM ADD", "cadastre", b - a);
                        latency.record("IPAM DEL", "cadastre", c - b);
                    }
                }
            } catch (IOException e) {
                failures.incrementAndGet();
            }
        }
    }

    /** Runs {@link JournalProbe} in every host namespace at once; @return the summed per-second counts */
    private static double[] journal(
            Topology topology,
            CassandraNode cassandra,
            String tag,
            int writers,
            int warmUp,
            int seconds)
            throws IOException, InterruptedException {
        List<CompletableFuture<long[]>> probes = new ArrayList<>();
        for (Topology.Host host : topology.hosts()) {
            List<String> command =
                    List.of(
                            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                            "-Xmx256m",
                            "-XX:+UseSerialGC",
                            "-XX:TieredStopAtLevel=1",
                            "-Djava.util.concurrent.ForkJoinPool.common.parallelism=2",
                            "-DCADASTRE_LOG_FORMAT=text",
                            "-cp",
                            System.getProperty("java.class.path"),
                            JournalProbe.class.getName(),
                            cassandra.contactPoint(),
                            "j" + tag + "-" + host.name(),
                            Integer.toString(writers),
                            Integer.toString(warmUp),
                            Integer.toString(seconds));
            Process p = topology.exec(host, command, pb -> pb.redirectErrorStream(true));
            probes.add(CompletableFuture.supplyAsync(() -> result(p, host)));
        }
        double[] sum = new double[seconds];
        for (CompletableFuture<long[]> probe : probes) {
            long[] counts = probe.join();
            for (int i = 0; i < seconds; i++) {
                sum[i] += counts[i];
            }
        }
        return sum;
    }

    private static long[] result(Process p, Topology.Host host) {
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException(
                        "journal probe in " + host.name() + " failed:\n" + tail(out));
            }
            String line =
                    out.lines()
                            .filter(l -> l.startsWith("RESULT "))
                            .findFirst()
                            .orElseThrow(
                                    () ->
                                            new IllegalStateException(
                                                    "journal probe printed no result:\n"
                                                            + tail(out)));
            String[] parts = line.split(" ");
            long[] counts = new long[parts.length - 3];
            for (int i = 3; i < parts.length; i++) {
                counts[i - 3] = Long.parseLong(parts[i]);
            }
            return counts;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** @return the members' CPU time so far by thread group, summed over the members, in ns */
    private static Map<String, Long> cpuByThread(List<Member> members) throws IOException {
        Map<String, Long> out = new TreeMap<>();
        for (Member m : members) {
            new AgentProbe(m.pid())
                    .cpuByThread()
                    .forEach((name, ns) -> out.merge(name, ns, Long::sum));
        }
        return out;
    }

    /** @return the members' CPU per ADD+DEL by thread group over the measured seconds, in markdown */
    private static String cpuByThreadTable(Load load, double cycles) {
        return "The agents' CPU per ADD+DEL by thread (the 3 members summed; from "
                + "/proc/<pid>/task, 10 ms ticks; members on TLS):\n\n"
                + AgentProbe.cpuByThreadTable(Map.of(), load.cpuByThread(), cycles, "ADD+DEL");
    }

    /** @return the CPU time (user and system) the members' JVMs used so far, in milliseconds */
    private static long cpuMillis(List<Member> members) throws IOException {
        long nanos = 0;
        for (Member m : members) {
            nanos += new AgentProbe(m.pid()).cpu().total();
        }
        return nanos / 1_000_000;
    }

    private static String tail(String out) {
        List<String> lines = out.lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    private static double[] window(AtomicLongArray counts, int from, int length) {
        double[] out = new double[length];
        for (int i = 0; i < length; i++) {
            out[i] = counts.get(from + i);
        }
        return out;
    }

    private static double mean(double[] values) {
        return java.util.Arrays.stream(values).average().orElse(0);
    }

    private static Plot.Series series(String name, double[] perSecond) {
        double[] x = new double[perSecond.length];
        for (int i = 0; i < x.length; i++) {
            x[i] = i + 1;
        }
        return new Plot.Series(name, x, perSecond);
    }
}
