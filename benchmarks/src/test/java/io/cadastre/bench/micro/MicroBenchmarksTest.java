package io.cadastre.bench.micro;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.ScenarioReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MicroBenchmarksTest {
    @Test
    void quickRunGivesAFigurePerBenchmarkAndParameterSet(@TempDir Path dir) throws Exception {
        ScenarioReport report;
        try (BenchContext context =
                new BenchContext(
                        dir.resolve("report"),
                        Files.createDirectories(dir.resolve("work")),
                        true,
                        Path.of("unused"),
                        Path.of("unused"))) {
            report = new MicroBenchmarks().run(context);
        }

        assertEquals("micro", report.id());
        List<Figure> figures = report.figures();
        // ADD and DEL: 2 families x 2 fills; copy: 2 fills; each CIDR benchmark: 2 families.
        assertEquals(4 + 4 + 2 + 3 * 2, figures.size(), () -> "figures: " + figures);
        Set<String> metrics = figures.stream().map(Figure::metric).collect(Collectors.toSet());
        assertEquals(figures.size(), metrics.size(), () -> "duplicate metrics: " + figures);
        for (String words : MicroBenchmarks.WORDS.values()) {
            assertTrue(
                    metrics.stream().anyMatch(m -> m.startsWith(words)),
                    () -> "no figure for " + words + ": " + metrics);
        }
        assertTrue(
                metrics.contains(
                        "block ADD: auto-assign the next free address (IPv6, 63 of 64 held by others)"),
                () -> "metrics: " + metrics);
        for (Figure figure : figures) {
            assertEquals("cadastre", figure.subject());
            assertEquals("ns/op", figure.unit());
            var d = figure.distribution();
            assertTrue(d.count() > 0, () -> figure + ": no samples");
            assertTrue(
                    d.median() > 0 && d.median() <= d.p99() && d.p99() <= d.max(),
                    () -> figure + ": not 0 < median <= p99 <= max");
        }
        assertTrue(
                Files.size(dir.resolve("report").resolve(MicroBenchmarks.LOG)) > 0,
                "JMH's log is written");
    }
}
