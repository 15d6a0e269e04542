package io.cadastre.bench.host;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Distribution;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.Plot;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.bench.report.SideBySide;
import io.cadastre.testsupport.AgentExec;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniSocketClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What one IPAM call costs the node: the agent's CPU per ADD and DEL through the real
 * {@code cadastre-ipam} plugin (serial, after warm-up, the embedded journal, the agent's default
 * JVM flags), where that CPU goes (async-profiler over as many calls again, summarised, and its
 * flame graph), the agent's CPU at idle (ms per second) and per call back to back on the socket
 * (the churn), which together split the figure through the plugin into a call's work, the idle
 * agent's share and the cost of waking between execs; the agent's memory (heap after a full GC,
 * metaspace, RSS idle and peak), its start (exec to the first served ADD) and the embedded
 * journal's size on disk after a long churn of live pods.
 */
public final class AgentCostScenario implements Scenario {
    static final String ADD = "IPAM ADD through the plugin";
    static final String DEL = "IPAM DEL through the plugin";
    static final String START = "agent exec to a served ADD";
    static final String START_FIRST =
            "agent exec to a served ADD, first start (no class data archive yet)";

    /** The metaspace figure: archived classes are not in it but in the archives' mappings. */
    static final String METASPACE =
            "agent metaspace, idle (the classes loaded from jars; the archived ones are in its"
                    + " archives' mappings)";

    static final String CPU_PER_CALL = "agent CPU per IPAM call";
    static final String JOURNAL_BYTES = "embedded journal on disk after the churn";
    static final String CHURN_CALL = "IPAM call on the socket during the churn";
    static final String PLUGIN_CPU_PER_CALL = "plugin process CPU per IPAM call";
    static final String NODE_CPU_PER_CALL = "node CPU per IPAM call (plugin + agent)";
    static final String CHURN_CPU_PER_CALL =
            "agent CPU per IPAM call, back to back on the socket (the churn)";
    static final String IDLE_CPU = "agent CPU at idle";
    static final String FLOOR_CPU_PER_CALL =
            "the agent's CNI endpoint alone, answering from memory: CPU per IPAM call";

    /** The reference IPAM: its plugin alone does what cadastre-ipam and the agent do together. */
    static final String REFERENCE = "host-local";

    /** The issue-17 goals: CPU per call, journal size, start time. */
    static final double CPU_GOAL_MS = 0.3;

    static final double JOURNAL_GOAL_MIB = 10;
    static final double START_GOAL_MS = 2_000;

    private static final int WARM_UP_PAIRS = 1_500;
    private static final int MEASURED_PAIRS = 1_500;
    private static final int PROFILED_PAIRS = 1_000;
    static final String FLAME_GRAPH = "agent-cost-flame.html";
    static final String COLLAPSED_STACKS = "agent-cost-stacks.txt";
    private static final int STARTS = 3;
    private static final int LIVE_PODS = 100;

    /** How long the idle agent's CPU is read, in seconds. */
    private static final int IDLE_SECONDS = 20;

    /** Calls of the churn; {@code -Dcadastre.bench.churn-calls} overrides it. */
    private static final int CHURN_CALLS = 100_000;

    private static final String SUBJECT = "cadastre";

    @Override
    public String id() {
        return "agent-cost";
    }

    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        SideBySide results = new SideBySide(SUBJECT, Set.of());
        List<Figure> figures = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        int starts = context.quick() ? 1 : STARTS;
        // As bin/cadastre-agent and the image run it: the first start writes the class data
        // sharing archive when it exits, every later one maps it (here the suite's, which a
        // recording agent wrote after a warm-up, as a node's first run writes its own over its
        // life).
        results.record(
                START_FIRST,
                SUBJECT,
                timeToFirstAdd(
                        context.workDir(id() + "/start-first"),
                        context.workDir(id()).resolve("cadastre-agent.jsa"),
                        context.ipamNetns()));
        Path archive = SingleHostAgent.classDataArchive(context);
        if (archive == null) {
            // The JVM archives classes from jars only: a run from classes directories (a test, an
            // IDE) times every start without one.
            notes.add(
                    "No class data sharing archive was written (the class path holds directories): every agent "
                            + "here ran without one, unlike bin/cadastre-agent and the image.");
        }
        for (int i = 0; i < starts; i++) {
            results.record(
                    START,
                    SUBJECT,
                    timeToFirstAdd(
                            context.workDir(id() + "/start-" + i), archive, context.ipamNetns()));
        }
        int warmUp = context.quick() ? 20 : WARM_UP_PAIRS;
        int measured = context.quick() ? 50 : MEASURED_PAIRS;
        int churn =
                context.quick()
                        ? 500
                        : Integer.getInteger("cadastre.bench.churn-calls", CHURN_CALLS);
        int idleSeconds = context.quick() ? 1 : IDLE_SECONDS;
        double cpuPerCallMs;
        double journalMib;
        List<double[]> journalGrowth = new ArrayList<>();
        try (SingleHostAgent agent =
                SingleHostAgent.start(context.workDir(id() + "/agent"), archive)) {
            String netconf = CniSocketClient.ipamOnly(agent.socket(), SingleHostAgent.IPV4_POOL);
            agent.warmUp(context.plugin(), context.ipamNetns(), warmUp);
            AgentProbe probe = new AgentProbe(agent.pid());
            AgentProbe.Heap idle = probe.heapAfterFullGc();
            long idleRss = probe.rssBytes();
            long idleArchives = ProcessMemory.residentInFiles(agent.pid(), ".jsa");
            AgentProbe.Cpu idleBefore = probe.cpu();
            TimeUnit.SECONDS.sleep(idleSeconds);
            double idleMsPerSecond = probe.cpu().minus(idleBefore).total() / 1e6 / idleSeconds;
            figures.add(single(IDLE_CPU, SUBJECT, "ms/s", idleMsPerSecond));
            AgentProbe.Cpu cpuBefore = probe.cpu();
            Map<String, Long> threadsBefore = probe.cpuByThread();
            AgentProbe.Cpu pluginsBefore = AgentProbe.reapedChildren();
            pairs(context, context.plugin(), netconf, "cost-", measured, results);
            double pluginPerCallMs =
                    AgentProbe.reapedChildren().minus(pluginsBefore).total() / 1e6 / (2 * measured);
            AgentProbe.Cpu cpu = probe.cpu().minus(cpuBefore);
            Map<String, Long> threads = probe.cpuByThread();
            int calls = 2 * measured;
            cpuPerCallMs = cpu.total() / 1e6 / calls;
            notes.add(cpuByThread(threadsBefore, threads, calls, cpu, cpuPerCallMs));
            double referencePerCallMs =
                    childCpuPerCall(
                            context,
                            context.referencePlugins().resolve(REFERENCE),
                            referenceNetconf(context),
                            measured);
            double execFloorMs = childCpuPerCall(context, Path.of("/bin/true"), "{}", measured);
            figures.add(single(PLUGIN_CPU_PER_CALL, SUBJECT, "ms", pluginPerCallMs));
            figures.add(single(PLUGIN_CPU_PER_CALL, REFERENCE, "ms", referencePerCallMs));
            figures.add(single(NODE_CPU_PER_CALL, SUBJECT, "ms", pluginPerCallMs + cpuPerCallMs));
            figures.add(single(NODE_CPU_PER_CALL, REFERENCE, "ms", referencePerCallMs));
            notes.add(
                    String.format(
                            Locale.ROOT,
                            "The node's CPU per IPAM call, measured in this run: cadastre %.3f ms (the plugin "
                                    + "%.3f ms, the agent %.3f ms) against %s %.3f ms, %.2f×. Both plugins' figures "
                                    + "hold the exec itself, as this JVM starts a process (jspawnhelper, then the "
                                    + "plugin): %.3f ms for /bin/true in the same way. The machine's speed moves "
                                    + "every figure here by up to 2× between runs; this ratio, both sides measured "
                                    + "minutes apart, moves less.",
                            pluginPerCallMs + cpuPerCallMs,
                            pluginPerCallMs,
                            cpuPerCallMs,
                            REFERENCE,
                            referencePerCallMs,
                            (pluginPerCallMs + cpuPerCallMs) / referencePerCallMs,
                            execFloorMs));
            notes.add(
                    profile(context, probe, netconf, context.quick() ? 20 : PROFILED_PAIRS)
                            .markdown(
                                    "Where the agent's CPU goes in "
                                            + (context.quick() ? 20 : PROFILED_PAIRS)
                                            + " more pairs, profiled after the measured ones"));
            figures.add(single(CPU_PER_CALL, SUBJECT, "ms", cpuPerCallMs));
            figures.add(
                    single(
                            "agent heap after a full GC, idle",
                            SUBJECT,
                            "MiB",
                            mib(idle.heapUsedBytes())));
            figures.add(single(METASPACE, SUBJECT, "MiB", mib(idle.metaspaceUsedBytes())));
            figures.add(single("agent RSS, idle after warm-up", SUBJECT, "MiB", mib(idleRss)));
            figures.add(
                    single(
                            "agent RSS, idle: of it its class data archives (.jsa mappings)",
                            SUBJECT,
                            "MiB",
                            mib(idleArchives)));

            CniSocketClient socket =
                    new CniSocketClient(agent.socket(), netconf, context.ipamNetns());
            // The journal's own directory (application.conf: cadastre.embedded-journal.dir), not
            // the native library the agent unpacks beside it.
            Path journal = agent.dataDir().resolve("journal");
            Deque<String> live = new ArrayDeque<>();
            int next = 0;
            for (; next < LIVE_PODS; next++) {
                call(socket, "ADD", "churn-" + next);
                live.add("churn-" + next);
            }
            int step = Math.max(1, churn / 20);
            AgentProbe.Cpu churnBefore = probe.cpu();
            for (int done = 0; done < churn; done += 2) {
                long t0 = System.nanoTime();
                call(socket, "DEL", live.removeFirst());
                results.record(CHURN_CALL, SUBJECT, System.nanoTime() - t0);
                t0 = System.nanoTime();
                call(socket, "ADD", "churn-" + next);
                results.record(CHURN_CALL, SUBJECT, System.nanoTime() - t0);
                live.add("churn-" + next++);
                if ((done + 2) % step < 2) {
                    journalGrowth.add(new double[] {done + 2, mib(directoryBytes(journal))});
                }
            }
            double churnPerCallMs = probe.cpu().minus(churnBefore).total() / 1e6 / churn;
            figures.add(single(CHURN_CPU_PER_CALL, SUBJECT, "ms", churnPerCallMs));
            notes.add(coldCalls(cpuPerCallMs, churnPerCallMs, idleMsPerSecond, results));
            journalMib = mib(directoryBytes(journal));
            figures.add(single(JOURNAL_BYTES, SUBJECT, "MiB", journalMib));
            figures.add(
                    single("agent RSS, peak (VmHWM)", SUBJECT, "MiB", mib(probe.peakRssBytes())));
        }
        Floor floor = endpointFloor(context, warmUp, measured);
        double floorPerCallMs = floor.perCallMs();
        figures.add(single(FLOOR_CPU_PER_CALL, SUBJECT, "ms", floorPerCallMs));
        notes.add(
                String.format(
                                Locale.ROOT,
                                "The floor under the agent's figure: its own CNI endpoint (the socket, HTTP, the netconf "
                                        + "parsed and checked, the result rendered) over a backend that answers at once from "
                                        + "memory, on the CNI thread, in a JVM of its own with the agent's flags "
                                        + "(EndpointFloor), warmed up and measured with the same calls through the plugin: "
                                        + "%.3f ms per call, against the agent's %.3f ms. The agent's IPAM work (the node's "
                                        + "and the block's entities, one synced write, the netns check, and the threads that "
                                        + "carry them, each woken once per call) adds the other %.3f ms.",
                                floorPerCallMs,
                                cpuPerCallMs,
                                Math.max(0, cpuPerCallMs - floorPerCallMs))
                        + " Its CPU by thread:\n\n"
                        + floor.byThread());
        figures.addAll(0, results.figures());
        double startMs = results.histogram(START, SUBJECT).getValueAtPercentile(50) / 1e6;
        List<Goal> goals =
                List.of(
                        new Goal(
                                String.format(
                                        Locale.ROOT,
                                        "agent CPU per IPAM call (ADD or DEL), serial through the plugin: ≤ %.1f ms",
                                        CPU_GOAL_MS),
                                String.format(Locale.ROOT, "%.3f ms", cpuPerCallMs),
                                cpuPerCallMs <= CPU_GOAL_MS,
                                cpuPerCallMs <= CPU_GOAL_MS
                                        ? null
                                        : String.format(
                                                Locale.ROOT,
                                                "the agent's CNI endpoint alone, over a backend answering from "
                                                        + "memory, used %.3f ms per call (the notes: the floor); "
                                                        + "then the IPAM work's threads waking between execs (the "
                                                        + "notes: the same calls back to back on the socket), the "
                                                        + "CPU by thread and the profile",
                                                floorPerCallMs)),
                        new Goal(
                                String.format(
                                        Locale.ROOT,
                                        "embedded journal after %,d calls of %d live pods: ≤ %.0f MiB",
                                        churn,
                                        LIVE_PODS,
                                        JOURNAL_GOAL_MIB),
                                String.format(Locale.ROOT, "%.1f MiB", journalMib),
                                journalMib <= JOURNAL_GOAL_MIB,
                                journalMib <= JOURNAL_GOAL_MIB
                                        ? null
                                        : "the journal's store does not reclaim"),
                        new Goal(
                                String.format(
                                        Locale.ROOT,
                                        "agent exec to a served ADD: ≤ %.0f ms (median of %d starts after the "
                                                + "first)",
                                        START_GOAL_MS,
                                        starts),
                                String.format(Locale.ROOT, "%.0f ms", startMs),
                                startMs <= START_GOAL_MS,
                                startMs <= START_GOAL_MS
                                        ? null
                                        : "JVM start, class loading and the actor system's start"));
        List<Plot> plots =
                new ArrayList<>(
                        List.of(
                                results.plot(
                                        ADD,
                                        "agent-cost-calls.png",
                                        "IPAM calls through the plugin")));
        if (journalGrowth.size() > 1) {
            plots.add(
                    new Plot(
                            "agent-cost-journal.png",
                            "Embedded journal on disk during the churn",
                            "calls",
                            "MiB",
                            false,
                            List.of(
                                    new Plot.Series(
                                            SUBJECT,
                                            journalGrowth.stream().mapToDouble(p -> p[0]).toArray(),
                                            journalGrowth.stream()
                                                    .mapToDouble(p -> p[1])
                                                    .toArray()))));
        }
        notes.add(
                ProfileSummary.links(FLAME_GRAPH, COLLAPSED_STACKS)
                        + "async-profiler; both absent when it fell back to JFR).");
        notes.add(
                0,
                "CPU is the agent process's user + system time from /proc over the measured calls (clock ticks "
                        + "of 10 ms, over seconds of calls), divided by the number of calls; the plugin's own CPU is not in it.");
        return new ScenarioReport(
                id(),
                "The agent's cost per IPAM call, memory, start and journal size",
                String.format(
                        Locale.ROOT,
                        "One agent on this host with the embedded journal and its default JVM flags (%s). "
                                + "Start: a first agent, then %d more, each with a fresh data directory, timed from exec until "
                                + "an IPAM ADD on its socket is answered: the first without a class data sharing archive (a "
                                + "node's first start, which writes one when it exits), the others mapping the archive a "
                                + "recording agent wrote after a warm-up (as bin/cadastre-agent and the image map theirs from "
                                + "the second start on; every warm agent of the suite maps it). "
                                + "Then one agent, mapping it too, warmed up with %d IPAM-only ADD/DEL pairs through the real cadastre-ipam "
                                + "(IPv4 pool, /26 blocks: one node entity and one block entity write per call), its CPU read "
                                + "over %d s at idle, then measured over %d "
                                + "more pairs, serial (the plugin processes' CPU too, as this JVM's reaped children); then as many "
                                + "pairs of the reference, Debian's host-local run alone as the IPAM plugin, and of /bin/true "
                                + "(the exec alone). Then %d live pods and %,d calls of churn on the socket "
                                + "(DEL the oldest, ADD a new one, back to back: the agent's CPU over them too), the journal's "
                                + "directory (<data-dir>/journal) measured as it goes.",
                        String.join(" ", SingleHostAgent.JVM_FLAGS),
                        starts,
                        warmUp,
                        idleSeconds,
                        measured,
                        LIVE_PODS,
                        churn),
                figures,
                List.of(),
                goals,
                plots,
                notes);
    }

    /**
     * A note that splits the agent's CPU per call through the plugin into the work of a call (the
     * same calls back to back on the socket, where no thread of the agent sleeps between calls),
     * the idle agent's own CPU over the time a call through the plugin takes, and the rest: its
     * threads waking from sleep, with cold caches, once per call.
     */
    private static String coldCalls(
            double pluginPathMs, double backToBackMs, double idleMsPerSecond, SideBySide results) {
        double wallMs =
                (results.histogram(ADD, SUBJECT).getMean()
                                + results.histogram(DEL, SUBJECT).getMean())
                        / 2e6;
        double idleShareMs = idleMsPerSecond * wallMs / 1000;
        return String.format(
                Locale.ROOT,
                "Of the agent's %.3f ms of CPU per call through the plugin: %.3f ms is the call's work, as "
                        + "measured over the churn's calls made back to back on the socket; %.3f ms is what the "
                        + "idle agent spends anyway (%.2f ms per second at idle, over a call's %.2f ms); the rest, "
                        + "%.3f ms, comes with the calls being an exec apart: the agent's threads wake from sleep "
                        + "once per call, with cold caches, while the plugin's exec takes the other core (the same "
                        + "switches per call cost more CPU each; benchmarks/DESIGN.md, waking cold).",
                pluginPathMs,
                backToBackMs,
                idleShareMs,
                idleMsPerSecond,
                wallMs,
                Math.max(0, pluginPathMs - backToBackMs - idleShareMs));
    }

    /** @return a figure of one reading ({@code value} in {@code unit}) */
    private static Figure single(String metric, String subject, String unit, double value) {
        return new Figure(metric, subject, unit, Distribution.single(value));
    }

    /** A markdown table: CPU per call by thread group over the measured calls, the largest first. */
    private static String cpuByThread(
            Map<String, Long> before,
            Map<String, Long> after,
            int calls,
            AgentProbe.Cpu cpu,
            double perCallMs) {
        return String.format(
                        Locale.ROOT,
                        "The agent's CPU per call by thread (from "
                                + "/proc/<pid>/task, 10 ms ticks): %.3f ms per call in all, %.0f%% of it in the kernel.%n%n",
                        perCallMs,
                        100.0 * cpu.system() / Math.max(1, cpu.total()))
                + AgentProbe.cpuByThreadTable(before, after, calls, "call");
    }

    private static long timeToFirstAdd(Path dir, Path cdsArchive, String netns)
            throws IOException, InterruptedException {
        try (SingleHostAgent agent = SingleHostAgent.launch(dir, cdsArchive)) {
            CniSocketClient socket =
                    new CniSocketClient(
                            agent.socket(),
                            CniSocketClient.ipamOnly(agent.socket(), SingleHostAgent.IPV4_POOL),
                            netns);
            long deadline = agent.launchedNanos() + 120_000_000_000L;
            while (System.nanoTime() < deadline && agent.isAlive()) {
                if (Files.exists(agent.socket())) {
                    try {
                        if (socket.call("ADD", "first").status() == 200) {
                            return System.nanoTime() - agent.launchedNanos();
                        }
                    } catch (IOException notYet) {
                        // The socket file exists before the server accepts: try again.
                    }
                }
                Thread.sleep(5);
            }
            throw new IOException("the agent served no ADD within 120 s:\n" + agent.tail());
        }
    }

    /**
     * @return the netconf of the reference, Debian's {@code host-local} run directly as an IPAM
     *     plugin: its store in the scenario's work directory, a /20 of the test range beside the
     *     agent's pool
     */
    private String referenceNetconf(BenchContext context) throws IOException {
        return """
                {"cniVersion":"1.0.0","name":"bench-reference","ipam":{"type":"host-local",\
                "ranges":[[{"subnet":"198.18.32.0/20"}]],"dataDir":"%s"}}"""
                .formatted(context.workDir(id() + "/host-local"));
    }

    /**
     * The endpoint floor's cost.
     *
     * @param perCallMs user + system CPU per call, in milliseconds (10 ms ticks)
     * @param byThread that CPU by thread, a markdown table
     */
    private record Floor(double perCallMs, String byThread) {}

    /**
     * Starts {@link EndpointFloor} with the agent's JVM flags, warms it up and measures it with
     * {@code warmUp} and {@code measured} IPAM-only pairs through the real plugin, as the agent,
     * and stops it (SIGTERM, by its PID).
     *
     * @return its CPU per call and that CPU by thread
     * @throws IOException when it does not open its socket within 60 s or a call fails
     */
    private Floor endpointFloor(BenchContext context, int warmUp, int measured)
            throws IOException, InterruptedException {
        Path dir = context.workDir(id() + "/floor");
        Path socket = dir.resolve("cni.sock");
        Path log = dir.resolve("floor.log");
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java")
                                        .toString()));
        command.addAll(SingleHostAgent.JVM_FLAGS);
        command.addAll(
                List.of(
                        "-cp",
                        System.getProperty("java.class.path"),
                        EndpointFloor.class.getName(),
                        socket.toString()));
        Process floor =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                        .start();
        try {
            AgentExec.awaitSocket(floor, socket, Duration.ofSeconds(60), "the endpoint floor", log);
            String netconf = CniSocketClient.ipamOnly(socket, SingleHostAgent.IPV4_POOL);
            pairs(context, context.plugin(), netconf, "floor-warm-up-", warmUp, null);
            AgentProbe probe = new AgentProbe(floor.pid());
            AgentProbe.Cpu before = probe.cpu();
            Map<String, Long> threadsBefore = probe.cpuByThread();
            pairs(context, context.plugin(), netconf, "floor-", measured, null);
            return new Floor(
                    probe.cpu().minus(before).total() / 1e6 / (2 * measured),
                    AgentProbe.cpuByThreadTable(
                            threadsBefore, probe.cpuByThread(), 2 * measured, "call"));
        } catch (IllegalStateException e) {
            throw new IOException(e.getMessage(), e);
        } finally {
            AgentExec.terminate(floor, Duration.ofSeconds(10));
        }
    }

    /**
     * Runs {@code pairs} ADD/DEL pairs of {@code plugin}, serial as the measured ones.
     *
     * @return the user + system CPU of its processes per call, in milliseconds (10 ms ticks)
     */
    private static double childCpuPerCall(
            BenchContext context, Path plugin, String netconf, int pairs)
            throws IOException, InterruptedException {
        AgentProbe.Cpu before = AgentProbe.reapedChildren();
        pairs(context, plugin, netconf, "reference-", pairs, null);
        return AgentProbe.reapedChildren().minus(before).total() / 1e6 / (2 * pairs);
    }

    /** IPAM-only ADD/DEL pairs through {@code plugin}, serial; recorded when {@code results} is given. */
    private static void pairs(
            BenchContext context,
            Path plugin,
            String netconf,
            String prefix,
            int count,
            SideBySide results)
            throws IOException, InterruptedException {
        for (int i = 0; i < count; i++) {
            for (String command : List.of("ADD", "DEL")) {
                CniExec.Result run =
                        CniExec.run(
                                plugin,
                                command,
                                prefix + i,
                                context.ipamNetns(),
                                context.referencePlugins(),
                                netconf,
                                null);
                if (run.exit() != 0) {
                    throw new IOException(command + " failed: " + run.stdout());
                }
                if (results != null) {
                    results.record(command.equals("ADD") ? ADD : DEL, SUBJECT, run.nanos());
                }
            }
        }
    }

    /**
     * Profiles {@code count} more pairs with async-profiler (a flame graph in the report's
     * directory); with JFR where async-profiler cannot load (another platform, a JVM that refuses
     * agents).
     */
    private ProfileSummary profile(
            BenchContext context, AgentProbe probe, String netconf, int count) throws Exception {
        Path work = context.workDir(id());
        try {
            return probe.profileWhile(
                    work,
                    context.outputDir(),
                    FLAME_GRAPH,
                    COLLAPSED_STACKS,
                    () -> pairs(context, context.plugin(), netconf, "profiled-", count, null));
        } catch (IOException asyncProfilerFailed) {
            Path recording = work.resolve("profile.jfr");
            probe.startRecording();
            pairs(context, context.plugin(), netconf, "recorded-", count, null);
            probe.stopRecording(recording);
            ProfileSummary jfr = ProfileSummary.ofJfr(recording);
            return new ProfileSummary(
                    jfr.source() + "; async-profiler failed: " + asyncProfilerFailed.getMessage(),
                    jfr.samples(),
                    jfr.byThread(),
                    jfr.bySelf(),
                    jfr.byPackage());
        }
    }

    private static void call(CniSocketClient socket, String command, String container)
            throws IOException {
        CniSocketClient.Reply reply = socket.call(command, container);
        if (reply.status() != 200) {
            throw new IOException(
                    command
                            + " "
                            + container
                            + " answered "
                            + reply.status()
                            + ": "
                            + reply.body());
        }
    }

    /** The sizes of the files under {@code dir}; walked again when the store removed a file meanwhile. */
    private static long directoryBytes(Path dir) throws IOException {
        for (int attempt = 0; ; attempt++) {
            try {
                return sizes(dir);
            } catch (UncheckedIOException raced) {
                if (attempt == 10) {
                    throw raced.getCause();
                }
            }
        }
    }

    private static long sizes(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile)
                    .mapToLong(
                            p -> {
                                try {
                                    return Files.size(p);
                                } catch (IOException gone) {
                                    return 0; // removed by the store while walking
                                }
                            })
                    .sum();
        }
    }

    private static double mib(long bytes) {
        return bytes / (1024.0 * 1024.0);
    }
}
