package io.cadastre.bench.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.cadastre.bench.report.ScenarioReport;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cri-sandbox scenario in quick mode, for real: agent, containerd, plugins (root). */
class CriSandboxScenarioTest {
    @TempDir Path out;

    @Test
    void timesBothNetworksThroughOneContainerdAndLeavesNothingRunning() throws Exception {
        ScenarioReport report = QuickRuns.run(out, new CriSandboxScenario(42));
        for (String subject : List.of(CriSandboxScenario.CADASTRE, CriSandboxScenario.REFERENCE)) {
            for (String metric :
                    List.of(
                            CriSandboxScenario.RUN,
                            CriSandboxScenario.STOP,
                            CriSandboxScenario.RUN_PARALLEL,
                            CriSandboxScenario.STOP_PARALLEL,
                            CriSandboxScenario.RUN_SHAPED,
                            CriSandboxScenario.STOP_SHAPED)) {
                QuickRuns.assertSampled(report, subject, metric, 3);
            }
        }
        assertEquals(6, report.comparisons().size(), "every metric against bridge+host-local");
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
