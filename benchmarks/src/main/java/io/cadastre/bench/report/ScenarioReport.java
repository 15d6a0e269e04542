package io.cadastre.bench.report;

import java.util.List;

/**
 * What one scenario measured.
 *
 * @param id a short stable name ({@code plugin-exec}, {@code burst}, {@code ipam-throughput})
 * @param title a heading for the report
 * @param method how it was measured, in a few sentences (the report prints it under the heading)
 * @param figures the measured quantities
 * @param comparisons Cadastre against its peers in the same run
 * @param goals issue 5's goals this scenario answers
 * @param plots PNG plots of its distributions and time series
 * @param notes anything a reader needs to trust or interpret the figures
 */
public record ScenarioReport(
        String id,
        String title,
        String method,
        List<Figure> figures,
        List<Comparison> comparisons,
        List<Goal> goals,
        List<Plot> plots,
        List<String> notes) {}
