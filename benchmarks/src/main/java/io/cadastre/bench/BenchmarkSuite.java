package io.cadastre.bench;

import io.cadastre.bench.cluster.FailoverScenario;
import io.cadastre.bench.cluster.IpamThroughputScenario;
import io.cadastre.bench.host.AgentCostScenario;
import io.cadastre.bench.host.BurstScenario;
import io.cadastre.bench.host.CriSandboxScenario;
import io.cadastre.bench.host.PluginExecScenario;
import io.cadastre.bench.host.SingleHostAgent;
import io.cadastre.bench.micro.MicroBenchmarks;
import io.cadastre.bench.network.PodNetworkScenario;
import io.cadastre.bench.recovery.RecoveryScenario;
import io.cadastre.bench.report.ReportWriter;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.bench.report.SuiteReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.LongFunction;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The benchmark suite's main ({@code scripts/bench.sh} runs it as root): runs the scenarios in
 * order, each starting and removing what it needs, and writes the report (report.md, report.json,
 * PNG plots) into the output directory. A scenario that fails is reported as failed and the others
 * still run; the exit code is then 1.
 */
@Command(
        name = "cadastre-bench",
        mixinStandardHelpOptions = true,
        description =
                "Measures Cadastre side by side with the reference CNI plugins and against its own limits.")
public final class BenchmarkSuite implements Callable<Integer> {
    /** The scenarios in the order they run, each made from the run's seed. */
    static final Map<String, LongFunction<Scenario>> SCENARIOS = scenarios();

    @Option(names = "--out", description = "where the report goes (default: ${DEFAULT-VALUE})")
    Path out = Path.of("benchmarks/target/report");

    @Option(
            names = "--quick",
            description =
                    "a few repetitions only: checks that the suite runs, figures not to quote")
    boolean quick;

    @Option(
            names = "--only",
            split = ",",
            description = "run only these scenarios: ${COMPLETION-CANDIDATES}",
            completionCandidates = ScenarioIds.class)
    List<String> only;

    @Option(
            names = "--seed",
            description = "orders and names everything random (default: the clock)")
    long seed = System.nanoTime();

    @Option(
            names = "--plugin",
            description =
                    "the cadastre plugin executable (default: ${DEFAULT-VALUE}, the static build"
                            + " the image installs)")
    Path plugin =
            Path.of(System.getProperty("cadastre.plugin", "cni-bridge/target/static/cadastre"));

    @Option(
            names = "--reference-plugins",
            description = "Debian's containernetworking-plugins (default: ${DEFAULT-VALUE})")
    Path referencePlugins = Path.of("/usr/lib/cni");

    public static void main(String[] args) {
        System.exit(new CommandLine(new BenchmarkSuite()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (only != null && !SCENARIOS.keySet().containsAll(only)) {
            throw new CommandLine.ParameterException(
                    new CommandLine(this),
                    "unknown scenario in " + only + "; known: " + SCENARIOS.keySet());
        }
        Instant started = Instant.now();
        long t0 = System.nanoTime();
        List<ScenarioReport> reports = new ArrayList<>();
        boolean failed = false;
        try (BenchContext context =
                new BenchContext(
                        out,
                        Files.createTempDirectory("cadastre-bench"),
                        quick,
                        plugin.toAbsolutePath(),
                        referencePlugins)) {
            for (var e : SCENARIOS.entrySet()) {
                if (only != null && !only.contains(e.getKey())) {
                    continue;
                }
                Scenario scenario = e.getValue().apply(seed);
                System.out.printf("== %s%n", scenario.id());
                long s0 = System.nanoTime();
                try {
                    reports.add(scenario.run(context));
                } catch (Exception | AssertionError failure) {
                    failed = true;
                    reports.add(failedReport(scenario.id(), failure));
                    failure.printStackTrace();
                }
                System.out.printf(
                        "   %s took %.0f s%n", scenario.id(), (System.nanoTime() - s0) / 1e9);
            }
        }
        SuiteReport report =
                new SuiteReport(
                        started.toString(), (System.nanoTime() - t0) / 1e9, environment(), reports);
        ReportWriter.write(report, out);
        System.out.printf("report: %s%n", out.resolve("report.md").toAbsolutePath());
        return failed ? 1 : 0;
    }

    private Map<String, String> environment() throws IOException {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("seed", Long.toString(seed));
        env.put("mode", quick ? "quick (few repetitions: not figures to quote)" : "full");
        env.put("cores", Integer.toString(Runtime.getRuntime().availableProcessors()));
        env.put(
                "memory",
                Files.readAllLines(Path.of("/proc/meminfo"))
                        .get(0)
                        .replaceAll("MemTotal:\\s+", ""));
        env.put(
                "cpu",
                Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                        .filter(l -> l.startsWith("model name"))
                        .findFirst()
                        .map(l -> l.replaceAll("model name\\s*:\\s*", ""))
                        .orElse("unknown"));
        env.put("kernel", Files.readString(Path.of("/proc/sys/kernel/osrelease")).strip());
        env.put(
                "java",
                System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        env.put("cadastre commit", System.getProperty("cadastre.commit", "unknown"));
        env.put("reference plugins", System.getProperty("cadastre.reference.version", "unknown"));
        env.put("cadastre plugin", plugin.toString());
        env.put("cassandra", "5.0.9 (one node, in a network namespace of this machine)");
        String extraFlags = System.getProperty("cadastre.bench.agent-flags", "").strip();
        env.put(
                "agent JVM flags",
                String.join(" ", SingleHostAgent.JVM_FLAGS)
                        + (extraFlags.isEmpty()
                                ? " (the agent's defaults)"
                                : " then, for this run, " + extraFlags));
        return env;
    }

    private static ScenarioReport failedReport(String id, Throwable failure) {
        StringWriter trace = new StringWriter();
        failure.printStackTrace(new PrintWriter(trace));
        String first =
                trace.toString().lines().limit(8).reduce((a, b) -> a + " " + b.strip()).orElse("");
        return new ScenarioReport(
                id,
                id + " (FAILED)",
                "The scenario failed; no figures.",
                List.of(),
                List.of(),
                List.of(),
                List.of(),
                List.of("Failure: " + first));
    }

    private static Map<String, LongFunction<Scenario>> scenarios() {
        Map<String, LongFunction<Scenario>> s = new LinkedHashMap<>();
        s.put("micro", seed -> new MicroBenchmarks());
        s.put("plugin-exec", PluginExecScenario::new);
        s.put("agent-cost", seed -> new AgentCostScenario());
        s.put("burst", BurstScenario::new);
        s.put("cri-sandbox", CriSandboxScenario::new);
        s.put("ipam-throughput", IpamThroughputScenario::new);
        s.put("failover", FailoverScenario::new);
        s.put("pod-network", PodNetworkScenario::new);
        s.put("recovery", seed -> new RecoveryScenario());
        return s;
    }

    /** The scenario ids, for picocli's completion and help. */
    static final class ScenarioIds extends ArrayList<String> {
        ScenarioIds() {
            super(SCENARIOS.keySet());
        }
    }
}
