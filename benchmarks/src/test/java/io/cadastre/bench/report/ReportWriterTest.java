package io.cadastre.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportWriterTest {
    @TempDir Path dir;

    private static final Figure CADASTRE_ADD =
            new Figure("ADD", "cadastre", "ms", new Distribution(1000, 5.0, 42.42, 12345.6));
    private static final Figure PEER_ADD =
            new Figure("ADD", "peer-name", "ms", new Distribution(1000, 10.0, 3.14159, 150.0));

    private static SuiteReport suite(List<Plot> execPlots) {
        Map<String, String> environment = new LinkedHashMap<>();
        environment.put("cores", "2");
        environment.put("kernel", "6.8 | generic");
        ScenarioReport exec =
                new ScenarioReport(
                        "plugin-exec",
                        "Plugin exec",
                        "Runs ADD and DEL 1000 times.",
                        List.of(CADASTRE_ADD, PEER_ADD),
                        List.of(Comparison.of(CADASTRE_ADD, PEER_ADD)),
                        List.of(
                                new Goal(
                                        "plugin ADD median ≤ peer-name",
                                        "0.50× the peer",
                                        true,
                                        null)),
                        execPlots,
                        List.of("warm-up of 50 runs discarded"));
        ScenarioReport throughput =
                new ScenarioReport(
                        "ipam-throughput",
                        "IPAM throughput",
                        "Allocates for a minute.",
                        List.of(
                                new Figure(
                                        "allocations",
                                        "cadastre",
                                        "ops/s",
                                        Distribution.single(2500))),
                        List.of(),
                        List.of(
                                new Goal(
                                        "10,000 allocations/s",
                                        "2,500 ops/s",
                                        false,
                                        "one Cassandra node's write latency")),
                        List.of(
                                new Plot(
                                        "throughput.png",
                                        "Allocations per second",
                                        "seconds",
                                        "ops/s",
                                        false,
                                        List.of(
                                                new Plot.Series(
                                                        "cadastre",
                                                        new double[] {0, 1, 2},
                                                        new double[] {2400, 2600, 2500})))),
                        List.of());
        return new SuiteReport(
                "2025-01-02T03:04:05Z", 75.5, environment, List.of(exec, throughput));
    }

    private static List<Plot> latencyPlot() {
        return List.of(
                new Plot(
                        "plugin-exec-add.png",
                        "ADD latency",
                        "percentile",
                        "ms",
                        true,
                        List.of(
                                new Plot.Series(
                                        "cadastre",
                                        new double[] {1, 2, 10, 100, 100, 1000},
                                        new double[] {1, 5, 9, 40, 42, 50}),
                                new Plot.Series(
                                        "peer-name",
                                        new double[] {1, 2, 10, 100, 1000},
                                        new double[] {2, 10, 12, 3, 150}))));
    }

    @Test
    void markdownHasGoalsResultsAndScenarioSections() throws IOException {
        ReportWriter.write(suite(latencyPlot()), dir);
        List<String> md = Files.readAllLines(dir.resolve("report.md"));

        assertEquals("# Cadastre benchmark report", md.get(0));
        List<String> expected =
                List.of(
                        "Started 2025-01-02T03:04:05Z, took 75.5 s.",
                        "| kernel | 6.8 \\| generic |",
                        "| plugin ADD median ≤ peer-name | 0.50× the peer | ✅ |  |",
                        "| 10,000 allocations/s | 2,500 ops/s | ❌ | one Cassandra node's write latency |",
                        "| plugin-exec | ADD | cadastre | 5.00 | 42.4 | 12,346 | ms | 0.50× peer-name |",
                        "| plugin-exec | ADD | peer-name | 10.0 | 3.14 | 150 | ms |  |",
                        "| ipam-throughput | allocations | cadastre | 2,500 | 2,500 | 2,500 | ops/s |  |",
                        "| ADD | cadastre | n = 1,000 | 5.00 | 42.4 | 12,346 | ms |",
                        "| allocations | cadastre | n = 1 | 2,500 | 2,500 | 2,500 | ops/s |",
                        "| ADD | cadastre | peer-name | 0.50× |",
                        "- warm-up of 50 runs discarded",
                        "![ADD latency](plugin-exec-add.png)",
                        "![Allocations per second](throughput.png)");
        for (String line : expected) {
            assertTrue(
                    md.contains(line), () -> "no line " + line + " in\n" + String.join("\n", md));
        }

        int goals = md.indexOf("## Goals");
        int results = md.indexOf("## Results");
        int exec = md.indexOf("## Plugin exec");
        int throughput = md.indexOf("## IPAM throughput");
        assertTrue(
                0 < goals && goals < results && results < exec && exec < throughput, md.toString());
        assertEquals(exec + 2, md.indexOf("Runs ADD and DEL 1000 times."));
    }

    @Test
    void jsonParsesBack() throws IOException {
        ReportWriter.write(suite(latencyPlot()), dir);
        JsonNode json = new ObjectMapper().readTree(dir.resolve("report.json").toFile());

        assertEquals("plugin-exec", json.at("/scenarios/0/id").asText());
        assertEquals("ipam-throughput", json.at("/scenarios/1/id").asText());
        JsonNode median = json.at("/scenarios/0/figures/0/distribution/median");
        assertTrue(median.isNumber());
        assertEquals(5.0, median.asDouble());
        assertEquals(1000, json.at("/scenarios/0/plots/0/series/0/x/5").asDouble());
        assertEquals(0.5, json.at("/scenarios/0/comparisons/0/ratio").asDouble());
        assertTrue(json.at("/scenarios/0/goals/0/bound").isNull());
        assertEquals(75.5, json.at("/durationSeconds").asDouble());
    }

    @Test
    void eachPlotIsA900By500Png() throws IOException {
        ReportWriter.write(suite(latencyPlot()), dir);
        for (String file : List.of("plugin-exec-add.png", "throughput.png")) {
            BufferedImage image = ImageIO.read(dir.resolve(file).toFile());
            assertEquals(900, image.getWidth(), file);
            assertEquals(500, image.getHeight(), file);
            assertFalse(blank(image), file + " is all one colour");
        }
    }

    @Test
    void twoPlotsOfOneNameAreRefusedBeforeWriting() {
        List<Plot> clash = List.of(new Plot("throughput.png", "clash", "x", "y", false, List.of()));
        assertThrows(
                IllegalArgumentException.class,
                () -> ReportWriter.write(suite(clash), dir.resolve("out")));
        assertFalse(Files.exists(dir.resolve("out")));
    }

    @Test
    void logAxisTicksReadAsPercentiles() {
        ReportWriter.PercentileFormat format = new ReportWriter.PercentileFormat();
        assertEquals("0%", format.format(1));
        assertEquals("50%", format.format(2));
        assertEquals("90%", format.format(10));
        assertEquals("99%", format.format(100));
        assertEquals("99.9%", format.format(1000));
        assertEquals("99.99%", format.format(10_000.0));
    }

    @Test
    void numbersAreRoundedBySize() {
        assertEquals("3.14", Markdown.number(3.14159));
        assertEquals("42.4", Markdown.number(42.42));
        assertEquals("12,346", Markdown.number(12345.6));
        assertEquals("-0.50", Markdown.number(-0.5));
        assertEquals("–", Markdown.number(Double.NaN));
        assertEquals("1.25×", Markdown.ratio(1.25));
    }

    private static boolean blank(BufferedImage image) {
        int first = image.getRGB(0, 0);
        for (int y = 0; y < image.getHeight(); y += 5) {
            for (int x = 0; x < image.getWidth(); x += 5) {
                if (image.getRGB(x, y) != first) {
                    return false;
                }
            }
        }
        return true;
    }
}
