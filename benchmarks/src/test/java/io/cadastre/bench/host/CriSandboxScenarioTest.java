package io.cadastre.bench.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.ScenarioReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cri-sandbox scenario in quick mode, for real: agent, containerd, plugins (root). */
class CriSandboxScenarioTest {
    @TempDir Path out;

    @Test
    void timesBothNetworksThroughOneContainerdAndLeavesNothingRunning() throws Exception {
        ScenarioReport report;
        try (BenchContext context =
                new BenchContext(
                        out,
                        Files.createTempDirectory("cadbench"),
                        true,
                        Path.of(System.getProperty("cadastre.plugin")),
                        Path.of("/usr/lib/cni"))) {
            report = new CriSandboxScenario(42).run(context);
        }
        for (String subject : List.of(CriSandboxScenario.CADASTRE, CriSandboxScenario.REFERENCE)) {
            for (String metric :
                    List.of(
                            CriSandboxScenario.RUN,
                            CriSandboxScenario.STOP,
                            CriSandboxScenario.RUN_PARALLEL,
                            CriSandboxScenario.STOP_PARALLEL)) {
                Figure f =
                        report.figures().stream()
                                .filter(
                                        x ->
                                                x.subject().equals(subject)
                                                        && x.metric().equals(metric))
                                .findFirst()
                                .orElseThrow();
                assertEquals(3, f.distribution().count(), subject + " " + metric);
                assertTrue(
                        f.distribution().median() > 0
                                && f.distribution().median() <= f.distribution().max());
            }
        }
        assertEquals(4, report.comparisons().size(), "every metric against bridge+host-local");
        assertEquals(4, report.goals().size());
        assertFalse(
                ProcessHandle.allProcesses()
                        .anyMatch(
                                p ->
                                        p.info().command().orElse("").endsWith("/containerd")
                                                && p.parent()
                                                        .map(
                                                                pp ->
                                                                        pp.pid()
                                                                                == ProcessHandle
                                                                                        .current()
                                                                                        .pid())
                                                        .orElse(false)),
                "containerd still runs");
    }
}
