package io.cadastre.bench.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.HdrHistogram.Histogram;

/**
 * Latencies of several subjects for several metrics, recorded in the same run, turned into the
 * report's figures (milliseconds), comparisons of Cadastre against each peer, and percentile
 * plots. Metrics and subjects keep the order of their first record. Not thread-safe: record from
 * one thread, or synchronise.
 */
public final class SideBySide {
    private final String subject;
    private final Set<String> peers;
    private final Map<String, Map<String, Histogram>> byMetric = new LinkedHashMap<>();

    /**
     * @param subject the subject compared ({@code cadastre})
     * @param peers the subjects it is compared against; any other subject is reported without a ratio
     */
    public SideBySide(String subject, Set<String> peers) {
        this.subject = subject;
        this.peers = Set.copyOf(peers);
    }

    /** Records one duration in nanoseconds. */
    public void record(String metric, String who, long nanos) {
        histogram(metric, who).recordValue(Math.max(1_000, nanos));
    }

    /** @return the histogram (nanoseconds) of a metric and subject, created empty on first use */
    public Histogram histogram(String metric, String who) {
        return byMetric.computeIfAbsent(metric, m -> new LinkedHashMap<>())
                .computeIfAbsent(who, s -> Percentiles.newNanosHistogram());
    }

    /** @return a figure in ms for every metric and subject recorded */
    public List<Figure> figures() {
        List<Figure> figures = new ArrayList<>();
        byMetric.forEach(
                (metric, subjects) ->
                        subjects.forEach(
                                (who, h) ->
                                        figures.add(
                                                new Figure(
                                                        metric,
                                                        who,
                                                        "ms",
                                                        Distribution.millisOf(h)))));
        return figures;
    }

    /** @return for every metric, the subject against each peer recorded for it (medians) */
    public List<Comparison> comparisons() {
        List<Comparison> out = new ArrayList<>();
        byMetric.forEach(
                (metric, subjects) -> {
                    Histogram mine = subjects.get(subject);
                    if (mine == null) {
                        return;
                    }
                    subjects.forEach(
                            (who, h) -> {
                                if (peers.contains(who)) {
                                    out.add(
                                            new Comparison(
                                                    metric,
                                                    subject,
                                                    who,
                                                    (double) mine.getValueAtPercentile(50)
                                                            / h.getValueAtPercentile(50)));
                                }
                            });
                });
        return out;
    }

    /** @return the ratio of the subject's median to the peer's for the metric @throws IllegalArgumentException when either is missing */
    public double ratio(String metric, String peer) {
        Map<String, Histogram> subjects = byMetric.getOrDefault(metric, Map.of());
        if (!subjects.containsKey(subject) || !subjects.containsKey(peer)) {
            throw new IllegalArgumentException("no " + metric + " for " + subject + " and " + peer);
        }
        return (double) subjects.get(subject).getValueAtPercentile(50)
                / subjects.get(peer).getValueAtPercentile(50);
    }

    /** @return a latency-by-percentile plot of one metric, a line per subject */
    public Plot plot(String metric, String file, String title) {
        List<Plot.Series> series = new ArrayList<>();
        byMetric.getOrDefault(metric, Map.of())
                .forEach((who, h) -> series.add(Percentiles.series(who, h)));
        return new Plot(file, title, "percentile", "milliseconds", true, series);
    }
}
