package io.cadastre.bench.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.testsupport.Ip;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The plugin-exec scenario in quick mode, for real: agent, plugins, network namespaces (root). */
class PluginExecScenarioTest {
    @TempDir Path out;

    @Test
    void measuresEverySubjectsAddAndDelAndLeavesNoNamespace() throws Exception {
        ScenarioReport report = QuickRuns.run(out, new PluginExecScenario(42));
        for (String subject :
                List.of(
                        "cadastre",
                        "bridge+host-local",
                        "ptp+host-local",
                        "cadastre dual-stack",
                        "bridge+host-local dual-stack")) {
            for (String metric : List.of(PluginExecScenario.ADD, PluginExecScenario.DEL)) {
                QuickRuns.assertSampled(report, subject, metric, 3);
            }
        }
        assertEquals(
                6,
                report.comparisons().size(),
                "ADD and DEL against two IPv4 peers and the dual-stack one");
        assertEquals(2, report.goals().size(), "dual-stack ADD and DEL");
        assertFalse(
                Ip.run("netns", "list").contains("cadbench"), "a pod namespace was left behind");
    }
}
