package io.cadastre.bench.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.ScenarioReport;
import java.nio.file.Files;
import java.nio.file.Path;

/** What the host scenarios' tests share: a quick run against the built plugin, and its figures. */
final class QuickRuns {
    private QuickRuns() {}

    /**
     * Runs the scenario in quick mode with the plugin built by this reactor ({@code
     * cadastre.plugin}) and Debian's reference plugins ({@code /usr/lib/cni}), the work directory
     * removed after it.
     *
     * @param out the report's directory
     */
    static ScenarioReport run(Path out, Scenario scenario) throws Exception {
        try (BenchContext context =
                new BenchContext(
                        out,
                        Files.createTempDirectory("cadbench"),
                        true,
                        Path.of(System.getProperty("cadastre.plugin")),
                        Path.of("/usr/lib/cni"))) {
            return scenario.run(context);
        }
    }

    /** @return the report's figure of that metric (any subject) */
    static Figure figure(ScenarioReport report, String metric) {
        return report.figures().stream()
                .filter(f -> f.metric().equals(metric))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no figure " + metric));
    }

    /** Asserts that the subject's figure of that metric has {@code count} samples, median in (0, max]. */
    static void assertSampled(ScenarioReport report, String subject, String metric, int count) {
        Figure f =
                report.figures().stream()
                        .filter(x -> x.subject().equals(subject) && x.metric().equals(metric))
                        .findFirst()
                        .orElseThrow(
                                () -> new AssertionError("no figure " + subject + " " + metric));
        assertEquals(count, f.distribution().count(), subject + " " + metric);
        assertTrue(
                f.distribution().median() > 0
                        && f.distribution().median() <= f.distribution().max(),
                subject + " " + metric);
    }
}
