package io.cadastre.bench.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.axis.TickUnits;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.XYPlot;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * Writes a {@link SuiteReport} into a directory: {@code report.md} for people, {@code report.json}
 * for tools, and one PNG per {@link Plot}. Stateless; call it once the suite has finished.
 */
public final class ReportWriter {
    private static final int WIDTH = 900;
    private static final int HEIGHT = 500;

    static {
        // The suite runs on servers without a display; AWT must know before its first use.
        if (System.getProperty("java.awt.headless") == null) {
            System.setProperty("java.awt.headless", "true");
        }
    }

    private ReportWriter() {}

    /**
     * Creates {@code dir} (and its parents) if needed and writes into it, replacing files of the
     * same names: {@code report.md}, {@code report.json} (the report as pretty JSON, numbers as
     * numbers, plot series in full) and, for each plot of each scenario, a 900×500 px
     * PNG named {@link Plot#file()}.
     *
     * @throws IllegalArgumentException if two plots share a file name (one would overwrite the
     *     other); nothing is written then
     * @throws IOException if a file cannot be written; the files written before it stay
     */
    public static void write(SuiteReport report, Path dir) throws IOException {
        List<Plot> plots = report.scenarios().stream().flatMap(s -> s.plots().stream()).toList();
        Set<String> files = new HashSet<>();
        for (Plot p : plots) {
            if (!files.add(p.file())) {
                throw new IllegalArgumentException("two plots are named " + p.file());
            }
        }
        Files.createDirectories(dir);
        Files.writeString(
                dir.resolve("report.md"), Markdown.render(report), StandardCharsets.UTF_8);
        new ObjectMapper()
                .writerWithDefaultPrettyPrinter()
                .writeValue(dir.resolve("report.json").toFile(), report);
        for (Plot p : plots) {
            ChartUtils.saveChartAsPNG(dir.resolve(p.file()).toFile(), chart(p), WIDTH, HEIGHT);
        }
    }

    private static JFreeChart chart(Plot p) {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Plot.Series s : p.series()) {
            // Percentile lines may repeat an x and are already in the order to draw.
            XYSeries line = new XYSeries(uniqueKey(data, s.name()), false, true);
            for (int i = 0; i < s.x().length; i++) {
                line.add(s.x()[i], s.y()[i]);
            }
            data.addSeries(line);
        }
        JFreeChart chart =
                ChartFactory.createXYLineChart(
                        p.title(),
                        p.xLabel(),
                        p.yLabel(),
                        data,
                        PlotOrientation.VERTICAL,
                        true,
                        false,
                        false);
        chart.setBackgroundPaint(Color.WHITE);
        XYPlot plot = chart.getXYPlot();
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            plot.getRenderer().setSeriesStroke(i, new BasicStroke(2f));
        }
        if (p.logX()) {
            LogAxis x = new LogAxis(p.xLabel());
            x.setNumberFormatOverride(new PercentileFormat());
            // Whole decades only: ticks at 99%, 99.9%, 99.99%, not at 68% and 97% (half decades).
            TickUnits decades = new TickUnits();
            for (int step = 1; step <= 4; step++) {
                decades.add(new NumberTickUnit(step));
            }
            x.setStandardTickUnits(decades);
            plot.setDomainAxis(x);
        }
        return chart;
    }

    /** The collection rejects a second series of the same name; a report should not fail over a legend. */
    private static String uniqueKey(XYSeriesCollection data, String name) {
        String key = name;
        for (int n = 2; data.getSeriesIndex(key) >= 0; n++) {
            key = name + " (" + n + ")";
        }
        return key;
    }

    /**
     * Labels a log axis of x = 1 / (1 - percentile/100), as {@link Percentiles#series} plots
     * them, with the percentile: 2 → {@code 50%}, 10 → {@code 90%}, 1000 → {@code 99.9%}. Formatting only.
     */
    static final class PercentileFormat extends NumberFormat {
        @Override
        public StringBuffer format(double x, StringBuffer to, FieldPosition pos) {
            double percentile = 100 * (1 - 1 / x);
            // Each tenfold of x adds a nine; show as many decimals as the nines need.
            int decimals = Math.max(0, (int) Math.ceil(Math.log10(x) - 1e-9) - 2);
            return to.append(String.format(Locale.ROOT, "%." + decimals + "f%%", percentile));
        }

        @Override
        public StringBuffer format(long x, StringBuffer to, FieldPosition pos) {
            return format((double) x, to, pos);
        }

        @Override
        public Number parse(String source, ParsePosition pos) {
            throw new UnsupportedOperationException("formatting only");
        }
    }
}
