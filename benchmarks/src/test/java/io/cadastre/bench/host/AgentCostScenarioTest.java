package io.cadastre.bench.host;

import static io.cadastre.bench.host.QuickRuns.figure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.ScenarioReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent-cost scenario in quick mode, for real: agents, the plugin, jcmd and JFR (root). */
class AgentCostScenarioTest {
    @TempDir Path out;

    @Test
    void measuresCpuMemoryStartAndJournalOfARealAgent() throws Exception {
        ScenarioReport report = QuickRuns.run(out, new AgentCostScenario());
        for (String metric :
                List.of(
                        AgentCostScenario.CPU_PER_CALL,
                        AgentCostScenario.CHURN_CPU_PER_CALL,
                        AgentCostScenario.FLOOR_CPU_PER_CALL,
                        AgentCostScenario.JOURNAL_BYTES,
                        "agent heap after a full GC, idle",
                        AgentCostScenario.METASPACE,
                        "agent RSS, idle after warm-up",
                        "agent RSS, peak (VmHWM)")) {
            Figure f = figure(report, metric);
            assertTrue(f.distribution().median() > 0, metric + " measured nothing");
        }
        for (String subject : List.of("cadastre", AgentCostScenario.REFERENCE)) {
            Figure node =
                    report.figures().stream()
                            .filter(
                                    f ->
                                            f.subject().equals(subject)
                                                    && f.metric()
                                                            .equals(
                                                                    AgentCostScenario
                                                                            .NODE_CPU_PER_CALL))
                            .findFirst()
                            .orElseThrow(() -> new AssertionError("no node CPU of " + subject));
            assertTrue(node.distribution().median() > 0, subject + ": no node CPU measured");
        }
        assertTrue(
                report.notes().stream().anyMatch(n -> n.contains("against host-local")),
                "the ratio to the reference is in the notes: " + report.notes());
        assertTrue(
                figure(report, AgentCostScenario.IDLE_CPU).distribution().median() >= 0,
                "the idle agent's CPU is read");
        assertTrue(
                report.notes().stream().anyMatch(n -> n.contains("wake from sleep once per call")),
                "the CPU per call through the plugin is split in the notes: " + report.notes());
        assertTrue(
                report.notes().stream()
                        .anyMatch(
                                n ->
                                        n.contains("The floor under the agent's figure")
                                                && n.contains("`cadastre-cni`")),
                "the endpoint floor and its CPU by thread are in the notes: " + report.notes());
        assertEquals(50, figure(report, AgentCostScenario.ADD).distribution().count());
        assertEquals(500, figure(report, AgentCostScenario.CHURN_CALL).distribution().count());
        assertEquals(1, figure(report, AgentCostScenario.START).distribution().count());
        assertEquals(1, figure(report, AgentCostScenario.START_FIRST).distribution().count());
        assertEquals(3, report.goals().size());
        assertTrue(
                report.notes().stream()
                        .anyMatch(
                                n ->
                                        n.contains("profiled after the measured ones")
                                                && n.contains("| thread pool |")),
                "the profile's summary is in the notes");
        assertTrue(
                report.notes().stream().anyMatch(n -> n.contains("(async-profiler, CPU time")),
                "async-profiler ran (not the JFR fallback): " + report.notes());
        assertTrue(
                Files.size(out.resolve(AgentCostScenario.FLAME_GRAPH)) > 0,
                "the flame graph is written");
    }
}
