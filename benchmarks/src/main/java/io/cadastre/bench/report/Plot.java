package io.cadastre.bench.report;

import java.util.List;

/**
 * A line chart written as a PNG beside the report.
 *
 * @param file the PNG's file name ({@code plugin-exec-add.png})
 * @param logX whether the x axis is logarithmic (latency percentile plots)
 * @param series one line each
 */
public record Plot(
        String file,
        String title,
        String xLabel,
        String yLabel,
        boolean logX,
        List<Series> series) {
    /**
     * One line: points in x order.
     *
     * @param x the x values
     * @param y the y values, as many as {@code x}
     */
    public record Series(String name, double[] x, double[] y) {
        public Series {
            if (x.length != y.length) {
                throw new IllegalArgumentException(
                        name + ": " + x.length + " x values, " + y.length + " y values");
            }
        }
    }
}
