package io.cadastre.bench.recovery;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Topology;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

/**
 * Scenario 5 of issue 5, {@code recovery}: how long a block entity and a node entity take to
 * recover after N = 10, 1,000 and 100,000 events with the entities' snapshots (every 100 events),
 * and how much heap an active block and node entity hold. Goal: block recovery after 100,000
 * events under 100 ms.
 *
 * <p>Runs {@link RecoveryProbe} as a JVM of its own in host h1 of the context's fabric, against the
 * fabric's Cassandra, and turns its {@link ProbeResult} into the report ({@link RecoveryReport}).
 * The probe writes journals under persistence ids no agent uses (blocks in 100.64.0.0/10, nodes
 * {@code bench-node-<i>}); they stay in the fabric's Cassandra, which the context discards. The
 * probe is stopped when the scenario ends, whatever happened.
 */
public final class RecoveryScenario implements Scenario {
    /** The event counts of a full run; a quick run stops at 1,000 (seeding 100,000 takes a minute). */
    static final long[] FULL_COUNTS = {10, 1_000, 100_000};

    static final long[] QUICK_COUNTS = {10, 1_000};

    /** Recoveries per measurement: at ~10–20 ms each, 100 cost little and give a p99 that is not just the maximum. */
    private static final int FULL_REPETITIONS = 100;

    private static final int FULL_WARMUP = 3;
    private static final int QUICK_WARMUP = 1;
    private static final int FULL_MEMORY_ENTITIES = 2_000;
    private static final int QUICK_MEMORY_ENTITIES = 200;

    /** Heap of the probe: the agents' order of magnitude, and room for 2 × 2,000 entities. */
    static final String PROBE_HEAP = "-Xmx512m";

    private static final Duration FULL_TIMEOUT = Duration.ofMinutes(20);
    private static final Duration QUICK_TIMEOUT = Duration.ofMinutes(4);

    @Override
    public String id() {
        return "recovery";
    }

    /**
     * @return the report: per entity kind and event count the recovery time and the time to the
     *     first reply (ms), the heap per active entity (KiB), the goal, a plot and notes
     * @throws IllegalStateException when the probe fails, exits non-zero or outlives its time
     *     limit (20 min; 4 min quick); the message holds the end of its log
     * @throws IOException when the probe's output cannot be read
     */
    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        Topology topology = context.topology();
        CassandraNode cassandra = context.cassandra();
        boolean quick = context.quick();
        long[] counts = quick ? QUICK_COUNTS : FULL_COUNTS;
        int repetitions = context.repetitions(FULL_REPETITIONS);
        int warmup = quick ? QUICK_WARMUP : FULL_WARMUP;
        int memoryEntities = quick ? QUICK_MEMORY_ENTITIES : FULL_MEMORY_ENTITIES;
        Path dir = context.workDir("recovery");
        Path out = dir.resolve("probe.json");
        Path log = dir.resolve("probe.log");
        List<String> command =
                List.of(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        PROBE_HEAP,
                        "-DCADASTRE_LOG_FORMAT=text",
                        "-cp",
                        System.getProperty("java.class.path"),
                        RecoveryProbe.class.getName(),
                        "--contact-point",
                        cassandra.contactPoint(),
                        "--out",
                        out.toString(),
                        "--counts",
                        LongStream.of(counts)
                                .mapToObj(Long::toString)
                                .collect(Collectors.joining(",")),
                        "--repetitions",
                        Integer.toString(repetitions),
                        "--warmup",
                        Integer.toString(warmup),
                        "--memory-entities",
                        Integer.toString(memoryEntities));
        Duration timeout = quick ? QUICK_TIMEOUT : FULL_TIMEOUT;
        long started = System.nanoTime();
        Process probe =
                topology.exec(
                        topology.host(1),
                        command,
                        pb ->
                                pb.redirectErrorStream(true)
                                        .redirectOutput(
                                                ProcessBuilder.Redirect.appendTo(log.toFile())));
        try {
            if (!probe.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(
                        "the recovery probe did not finish within " + timeout + ":\n" + tail(log));
            }
            if (probe.exitValue() != 0) {
                throw new IllegalStateException(
                        "the recovery probe exited with " + probe.exitValue() + ":\n" + tail(log));
            }
        } finally {
            if (probe.isAlive()) {
                probe.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        ProbeResult result = new ObjectMapper().readValue(out.toFile(), ProbeResult.class);
        return RecoveryReport.of(result, counts, warmup, took);
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join(
                    "\n",
                    new ArrayList<>(lines.subList(Math.max(0, lines.size() - 40), lines.size())));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
