package io.cadastre.bench.micro;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Distribution;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.ScenarioReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.util.Statistics;
import org.openjdk.jmh.util.Version;

/**
 * The {@code micro} scenario: the pure IPAM domain ({@link BlockBenchmarks}, {@link CidrBenchmarks})
 * under JMH, run in-process through JMH's {@link Runner}. Each benchmark and parameter set becomes one
 * {@link Figure} of subject {@code cadastre}, unit {@code ns/op}, whose distribution is JMH's
 * sample-time percentiles (p50, p99, max) over every sampled invocation. No peer, so no comparison
 * or goal. JMH's own log is written beside the report as {@value #LOG}.
 *
 * <p>A full run forks one JVM per benchmark and parameter set (16 of them) and takes about a
 * minute; a quick run measures in the suite's own JVM for a fraction of a second each.
 */
public final class MicroBenchmarks implements Scenario {
    /** JMH's human-readable log, in the report's directory. */
    public static final String LOG = "micro-jmh.txt";

    /**
     * The benchmarks in words, by {@code Class.method}; a figure's metric is these words and its
     * parameters.
     */
    static final Map<String, String> WORDS =
            Map.of(
                    "BlockBenchmarks.autoAssign", "block ADD: auto-assign the next free address",
                    "BlockBenchmarks.releaseByHandle",
                            "block DEL: release the attachment's addresses by handle",
                    "BlockBenchmarks.copy", "block copy for a snapshot",
                    "CidrBenchmarks.entityId", "CIDR to block entity id",
                    "CidrBenchmarks.fromEntityId", "CIDR parsed from a block entity id",
                    "CidrBenchmarks.blockContaining",
                            "pool: the block holding an address (contains, subnetContaining)");

    /** How long JMH measures: per benchmark and parameter set. */
    private record Settings(
            int forks, int warmups, int warmupMillis, int measurements, int measurementMillis) {}

    // About a minute on two shared cores: C2 has settled after 1.6 s (the logs' medians stop
    // moving), and 1.8 s gives tens of thousands of samples: a stable median and p99, not a fine
    // p99.9.
    private static final Settings FULL = new Settings(1, 4, 400, 3, 600);
    // Fork 0 saves a JVM start per parameter set; the figures are then a smoke test, not numbers to
    // quote.
    private static final Settings QUICK = new Settings(0, 1, 200, 1, 200);

    @Override
    public String id() {
        return "micro";
    }

    /**
     * @return one figure per benchmark and parameter set, in JMH's order (by benchmark, then parameters)
     * @throws org.openjdk.jmh.runner.RunnerException when a benchmark throws, or another JMH run holds
     *     JMH's lock ({@code /tmp/jmh.lock})
     */
    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        Settings settings = context.quick() ? QUICK : FULL;
        Path log = Files.createDirectories(context.outputDir()).resolve(LOG);
        Options options =
                new OptionsBuilder()
                        .include("^" + Pattern.quote(MicroBenchmarks.class.getPackageName() + "."))
                        .mode(Mode.SampleTime)
                        .timeUnit(TimeUnit.NANOSECONDS)
                        .forks(settings.forks())
                        .warmupIterations(settings.warmups())
                        .warmupTime(TimeValue.milliseconds(settings.warmupMillis()))
                        .measurementIterations(settings.measurements())
                        .measurementTime(TimeValue.milliseconds(settings.measurementMillis()))
                        .threads(1)
                        .jvmArgs("-Xms256m", "-Xmx256m")
                        .shouldFailOnError(true)
                        .output(log.toString())
                        .build();
        List<Figure> figures =
                new Runner(options)
                        .run().stream()
                                .sorted(RunResult.DEFAULT_SORT_COMPARATOR)
                                .map(MicroBenchmarks::figure)
                                .toList();
        String method =
                "JMH "
                        + Version.getPlainVersion()
                        + " in Mode.SampleTime (each sampled invocation timed on its own"
                        + " with System.nanoTime), one thread; per benchmark and parameter set "
                        + (settings.forks() == 0
                                ? "no fork (the suite's JVM)"
                                : settings.forks() + " forked JVM (-Xmx256m)")
                        + ", "
                        + settings.warmups()
                        + " warm-up iteration(s) of "
                        + settings.warmupMillis()
                        + " ms and "
                        + settings.measurements()
                        + " measurement iteration(s) of "
                        + settings.measurementMillis()
                        + " ms."
                        + " The block benchmarks make the Block calls of BlockEntity's command and event handlers on a"
                        + " 64-address block (IPv4 /26, IPv6 /122) that other attachments hold 0 or 63 addresses of;"
                        + " the CIDR benchmarks use the default block sizes of a /16 IPv4 and a /56 IPv6 pool.";
        List<String> notes = new ArrayList<>();
        notes.add(
                "Per operation on the pure domain: no persistence, messaging or serialization, which an"
                        + " ADD or DEL through the cluster adds many times over.");
        notes.add(
                "ADD and DEL include undoing their change (one release or allocate by ordinal), so every"
                        + " invocation sees the same fill.");
        notes.add(
                "Values of a few tens of ns are near System.nanoTime's resolution and cost. The maxima are"
                        + " the machine's (GC pauses, descheduling on shared cores), not the operation's.");
        notes.add("JMH's log: " + LOG + ".");
        if (context.quick()) {
            notes.add(
                    "Quick run: no fork and 200 ms of measurement; figures are a smoke test, not to quote.");
        }
        return new ScenarioReport(
                id(),
                "IPAM domain micro-benchmarks (JMH)",
                method,
                figures,
                List.of(),
                List.of(),
                List.of(),
                notes);
    }

    /** @return the run's sample-time distribution, in JMH's score unit */
    static Figure figure(RunResult run) {
        Result<?> result = run.getPrimaryResult();
        Statistics stats = result.getStatistics();
        return new Figure(
                metric(run.getParams()),
                "cadastre",
                result.getScoreUnit(),
                new Distribution(
                        stats.getN(),
                        stats.getPercentile(50),
                        stats.getPercentile(99),
                        stats.getMax()));
    }

    /** @return the benchmark's words and its parameters ({@code ... (IPv6, 63 of 64 held by others)}) */
    static String metric(BenchmarkParams params) {
        String benchmark = params.getBenchmark();
        String name =
                benchmark.substring(benchmark.lastIndexOf('.', benchmark.lastIndexOf('.') - 1) + 1);
        List<String> values = new ArrayList<>();
        for (String key : params.getParamsKeys()) {
            String value = params.getParam(key);
            values.add(
                    switch (key) {
                        case "family" -> value.equals("V4") ? "IPv4" : "IPv6";
                        case "others" ->
                                value + " of " + Fixtures.BLOCK_CAPACITY + " held by others";
                        case "held" -> value + " of " + Fixtures.BLOCK_CAPACITY + " held";
                        default -> key + " " + value;
                    });
        }
        String words = WORDS.getOrDefault(name, name);
        return values.isEmpty() ? words : words + " (" + String.join(", ", values) + ")";
    }
}
