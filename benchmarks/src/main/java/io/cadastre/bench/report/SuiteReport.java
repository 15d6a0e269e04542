package io.cadastre.bench.report;

import java.util.List;

/**
 * A whole run of the suite.
 *
 * @param startedAt ISO-8601 instant
 * @param durationSeconds the suite's wall time
 * @param environment machine and build facts (cores, memory, kernel, JDK, commit, versions of the peers)
 * @param scenarios in the order run
 */
public record SuiteReport(
        String startedAt,
        double durationSeconds,
        java.util.Map<String, String> environment,
        List<ScenarioReport> scenarios) {}
