package io.cadastre.admin;

import java.util.Map;
import java.util.TreeMap;

/** Reads the samples of a Prometheus text exposition (format 0.0.4), for assertions. */
final class PrometheusText {
    private PrometheusText() {}

    /**
     * @return every sample, by its name and labels as written ({@code name{a="1",b="2"}}, labels in
     *     the writer's order, by name), to its value; comments and blank lines left out
     */
    static Map<String, Double> samples(String text) {
        Map<String, Double> samples = new TreeMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return samples;
    }
}
