package io.cadastre.bench.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.testsupport.Topology;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The recovery scenario in quick mode against a real fabric (host namespaces and Cassandra):
 * ~1 min, needs root. Every recovered state is checked against its journal by the probe itself;
 * this checks that the report carries each figure with plausible values.
 */
class RecoveryScenarioTest {

    @BeforeAll
    static void topologyScript() {
        // Surefire runs in benchmarks/; the script sits in the checkout's scripts/.
        if (System.getProperty(Topology.SCRIPT_PROPERTY) == null) {
            System.setProperty(
                    Topology.SCRIPT_PROPERTY,
                    Path.of("../scripts/topology.sh").toAbsolutePath().normalize().toString());
        }
    }

    @Test
    void quickRunMeasuresRecoveryAndMemoryOfBothKinds() throws Exception {
        assumeTrue(
                Topology.supported(),
                "needs root (network namespaces), iproute2 and scripts/topology.sh");
        Path output = Files.createTempDirectory("recovery-report");
        BenchContext context =
                new BenchContext(
                        output,
                        Files.createTempDirectory("recovery-work"),
                        true,
                        Path.of("../cni-bridge/target/cadastre"),
                        Path.of("/usr/lib/cni"));
        ScenarioReport report;
        try {
            report = new RecoveryScenario().run(context);
        } finally {
            context.close();
            Files.deleteIfExists(
                    output); // the scenario writes no file there: the suite renders the plots
        }

        Map<String, Figure> figures =
                report.figures().stream()
                        .collect(Collectors.toMap(Figure::metric, Function.identity()));
        for (String kind : new String[] {"block", "node"}) {
            for (String after :
                    new String[] {
                        "10 events", "1,000 events", "1,099 events (99 after the snapshot)"
                    }) {
                Figure recovery = figures.get(kind + " recovery after " + after);
                Figure reply = figures.get(kind + " first reply after " + after);
                assertTrue(
                        recovery != null && reply != null,
                        kind + " after " + after + " missing from " + figures.keySet());
                assertEquals("ms", recovery.unit());
                assertEquals(3, recovery.distribution().count(), recovery.toString());
                assertTrue(
                        recovery.distribution().median() > 0
                                && recovery.distribution().max() < 10_000,
                        recovery.toString());
                // The reply's clock starts before the entity's (at the request to start it), and
                // stops later.
                assertTrue(
                        reply.distribution().median() >= recovery.distribution().median(),
                        reply + " vs " + recovery);
            }
            Figure memory = figures.get("heap per active " + kind + " entity");
            assertEquals("KiB", memory.unit());
            // A block of 32 allocations or a node of 30 attachments: kilobytes, not bytes nor
            // megabytes.
            assertTrue(
                    memory.distribution().median() > 1 && memory.distribution().median() < 200,
                    memory.toString());
        }
        assertEquals(1, report.goals().size());
        assertFalse(
                report.goals().get(0).met(),
                "a quick run cannot meet the 100,000-event goal: " + report.goals());
        assertEquals(2, report.plots().get(0).series().size());
        assertFalse(report.notes().isEmpty());
    }
}
