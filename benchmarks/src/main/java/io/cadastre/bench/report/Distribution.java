package io.cadastre.bench.report;

import org.HdrHistogram.Histogram;

/**
 * A sample's median, 99th percentile and maximum, in the unit of its {@link Figure}.
 *
 * @param count how many values
 */
public record Distribution(long count, double median, double p99, double max) {
    /** One value (a throughput, a size): median, p99 and max are all that value. */
    public static Distribution single(double value) {
        return new Distribution(1, value, value, value);
    }

    /**
     * @param nanos a histogram of durations recorded in nanoseconds
     * @return its distribution in milliseconds
     */
    public static Distribution millisOf(Histogram nanos) {
        return new Distribution(
                nanos.getTotalCount(),
                nanos.getValueAtPercentile(50) / 1e6,
                nanos.getValueAtPercentile(99) / 1e6,
                nanos.getMaxValue() / 1e6);
    }

    /** @return the distribution of {@code values} (nearest-rank percentiles), in their own unit */
    public static Distribution of(double... values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("no values");
        }
        double[] sorted = values.clone();
        java.util.Arrays.sort(sorted);
        return new Distribution(
                sorted.length, rank(sorted, 50), rank(sorted, 99), sorted[sorted.length - 1]);
    }

    private static double rank(double[] sorted, double percentile) {
        int index = (int) Math.ceil(percentile / 100 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }
}
