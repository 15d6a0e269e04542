package io.cadastre.bench.report;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/** Renders a {@link SuiteReport} as the Markdown page {@code report.md}; {@link ReportWriter} writes it. */
final class Markdown {
    private static final List<String> FIGURE_COLUMNS = List.of("median", "p99", "max", "unit");

    private final StringBuilder out = new StringBuilder();

    private Markdown() {}

    /**
     * @return the whole page: title, run facts and environment, a table of every goal, a table of
     *     every figure, then a section per scenario in run order
     */
    static String render(SuiteReport report) {
        Markdown md = new Markdown();
        md.line("# Cadastre benchmark report").line("");
        md.line(
                        "Started "
                                + report.startedAt()
                                + ", took "
                                + duration(report.durationSeconds())
                                + ".")
                .line("");
        md.line("## Environment").line("");
        md.table(
                List.of("key", "value"),
                report.environment().entrySet().stream()
                        .map(e -> List.of(e.getKey(), e.getValue()))
                        .toList());
        md.goals(report.scenarios());
        md.results(report.scenarios());
        report.scenarios().forEach(md::scenario);
        return md.out.toString();
    }

    private void goals(List<ScenarioReport> scenarios) {
        line("## Goals").line("");
        List<List<String>> rows =
                scenarios.stream()
                        .flatMap(s -> s.goals().stream())
                        .map(
                                g ->
                                        List.of(
                                                g.text(),
                                                g.measured(),
                                                g.met() ? "✅" : "❌",
                                                g.bound() == null ? "" : g.bound()))
                        .toList();
        table(List.of("goal", "measured", "met", "what bounds it"), rows);
    }

    private void results(List<ScenarioReport> scenarios) {
        line("## Results").line("");
        List<List<String>> rows = new ArrayList<>();
        for (ScenarioReport s : scenarios) {
            for (Figure f : s.figures()) {
                rows.add(
                        concat(
                                List.of(s.id(), f.metric(), f.subject()),
                                values(f),
                                List.of(ratios(s, f))));
            }
        }
        table(
                concat(
                        List.of("scenario", "metric", "subject"),
                        FIGURE_COLUMNS,
                        List.of("ratio to peer")),
                rows);
    }

    /** The ratio cell: the scenario's comparisons whose subject is this figure, e.g. {@code 0.62× bridge+host-local}. */
    private static String ratios(ScenarioReport s, Figure f) {
        return s.comparisons().stream()
                .filter(c -> c.metric().equals(f.metric()) && c.subject().equals(f.subject()))
                .map(c -> ratio(c.ratio()) + " " + c.peer())
                .collect(Collectors.joining("; "));
    }

    private void scenario(ScenarioReport s) {
        line("## " + s.title()).line("");
        if (s.method() != null && !s.method().isBlank()) {
            line(s.method()).line("");
        }
        table(
                concat(List.of("metric", "subject", "sample"), FIGURE_COLUMNS),
                s.figures().stream()
                        .map(
                                f ->
                                        concat(
                                                List.of(
                                                        f.metric(),
                                                        f.subject(),
                                                        "n = " + count(f.distribution().count())),
                                                values(f)))
                        .toList());
        if (!s.comparisons().isEmpty()) {
            line("Compared by median (subject ÷ peer):").line("");
            table(
                    List.of("metric", "subject", "peer", "ratio"),
                    s.comparisons().stream()
                            .map(c -> List.of(c.metric(), c.subject(), c.peer(), ratio(c.ratio())))
                            .toList());
        }
        if (!s.notes().isEmpty()) {
            s.notes().forEach(n -> line("- " + n));
            line("");
        }
        for (Plot p : s.plots()) {
            line("![" + p.title() + "](" + p.file() + ")").line("");
        }
    }

    private static List<String> values(Figure f) {
        Distribution d = f.distribution();
        return List.of(number(d.median()), number(d.p99()), number(d.max()), f.unit());
    }

    /** An empty table would render as a lone header row, which reads as a rendering fault. */
    private void table(List<String> header, List<List<String>> rows) {
        if (rows.isEmpty()) {
            line("_None._").line("");
            return;
        }
        row(header);
        row(header.stream().map(h -> "---").toList());
        rows.forEach(this::row);
        line("");
    }

    private void row(List<String> cells) {
        line(cells.stream().map(Markdown::cell).collect(Collectors.joining(" | ", "| ", " |")));
    }

    /** A pipe or a line break inside a cell would end the cell or the table. */
    private static String cell(String text) {
        return text == null ? "" : text.replace("|", "\\|").replaceAll("\\s*\\R\\s*", " ");
    }

    private Markdown line(String text) {
        out.append(text).append('\n');
        return this;
    }

    /**
     * @return {@code value} with 2 decimals below 10, 1 below 100, else none and thousands
     *     separators ({@code 3.14}, {@code 42.4}, {@code 12,346}); {@code –} when not a number
     */
    static String number(double value) {
        if (!Double.isFinite(value)) {
            return "–";
        }
        double size = Math.abs(value);
        String pattern = size < 10 ? "%.2f" : size < 100 ? "%.1f" : "%,.0f";
        return String.format(Locale.ROOT, pattern, value);
    }

    /** @return {@code ratio} with 2 decimals and a times sign ({@code 0.62×}); {@code –} when not a number */
    static String ratio(double ratio) {
        return Double.isFinite(ratio) ? String.format(Locale.ROOT, "%.2f×", ratio) : "–";
    }

    private static String count(long count) {
        return String.format(Locale.ROOT, "%,d", count);
    }

    private static String duration(double seconds) {
        return seconds < 120 ? number(seconds) + " s" : number(seconds / 60) + " min";
    }

    @SafeVarargs
    private static List<String> concat(List<String>... parts) {
        List<String> all = new ArrayList<>();
        for (List<String> part : parts) {
            all.addAll(part);
        }
        return Collections.unmodifiableList(all);
    }
}
