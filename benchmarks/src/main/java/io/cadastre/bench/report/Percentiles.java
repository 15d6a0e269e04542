package io.cadastre.bench.report;

import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/** Latency distributions as plot lines: the value at each percentile, HdrHistogram's own way of showing tails. */
public final class Percentiles {
    private Percentiles() {}

    /**
     * @param nanos durations recorded in nanoseconds
     * @return a line of x = "1 / (1 - percentile/100)" (1 at the median's left end, 100 at p99,
     *     1000 at p99.9; plot it on a log axis) against y = milliseconds
     */
    public static Plot.Series series(String name, Histogram nanos) {
        List<double[]> points = new ArrayList<>();
        for (HistogramIterationValue v : nanos.percentiles(5)) {
            double percentile = v.getPercentileLevelIteratedTo();
            if (percentile >= 100) {
                break;
            }
            points.add(new double[] {1 / (1 - percentile / 100), v.getValueIteratedTo() / 1e6});
        }
        points.add(
                new double[] {
                    Math.max(2, points.isEmpty() ? 2 : points.get(points.size() - 1)[0] * 2),
                    nanos.getMaxValue() / 1e6
                });
        double[] x = new double[points.size()];
        double[] y = new double[points.size()];
        for (int i = 0; i < points.size(); i++) {
            x[i] = points.get(i)[0];
            y[i] = points.get(i)[1];
        }
        return new Plot.Series(name, x, y);
    }

    /** @return a new histogram for durations in nanoseconds, 1 µs to 10 min, 3 significant digits */
    public static Histogram newNanosHistogram() {
        return new Histogram(1_000, 600_000_000_000L, 3);
    }
}
