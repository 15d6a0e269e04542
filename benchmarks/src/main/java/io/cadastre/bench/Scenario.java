package io.cadastre.bench;

import io.cadastre.bench.report.ScenarioReport;

/**
 * One scenario of the suite. It starts what it needs (or takes shared parts from the
 * {@link BenchContext}), measures, stops and removes everything it started, even when it fails,
 * and returns its report.
 */
public interface Scenario {
    /** @return a short stable name, also the {@code --only} value ({@code plugin-exec}) */
    String id();

    /**
     * @throws Exception when the scenario cannot be measured; the suite records the failure and
     *     goes on with the next scenario
     */
    ScenarioReport run(BenchContext context) throws Exception;
}
