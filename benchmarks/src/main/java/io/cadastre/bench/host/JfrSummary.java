package io.cadastre.bench.host;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * A JFR recording's CPU samples ({@code jdk.ExecutionSample}, Java threads running Java code)
 * summed up for the report: the share per thread pool, per method at the top of the stack (self
 * time), and per package anywhere on the stack (total time; the JDK's own packages left out, every
 * thread runs through them), the largest first.
 *
 * @param samples how many execution samples the recording holds
 * @param byThread samples per thread pool (a thread's name without its trailing number)
 * @param bySelf samples per top-of-stack method ({@code Class.method})
 * @param byPackage samples per package with a frame anywhere on the stack (counted once per sample)
 */
record JfrSummary(long samples, Map<String, Long> byThread, Map<String, Long> bySelf, Map<String, Long> byPackage) {
    private static final int TOP = 12;

    /** @throws IOException when the file is not a readable recording */
    static JfrSummary of(Path recording) throws IOException {
        Map<String, Long> byThread = new HashMap<>();
        Map<String, Long> bySelf = new HashMap<>();
        Map<String, Long> byPackage = new HashMap<>();
        long samples = 0;
        for (RecordedEvent event : RecordingFile.readAllEvents(recording)) {
            if (!event.getEventType().getName().equals("jdk.ExecutionSample")) {
                continue;
            }
            RecordedStackTrace stack = event.getStackTrace();
            if (stack == null || stack.getFrames().isEmpty()) {
                continue;
            }
            samples++;
            String thread = event.getThread("sampledThread") == null ? "?" : event.getThread("sampledThread").getJavaName();
            byThread.merge(thread == null ? "?" : thread.replaceAll("[-#]?\\d+$", ""), 1L, Long::sum);
            RecordedFrame top = stack.getFrames().get(0);
            bySelf.merge(top.getMethod().getType().getName().replaceAll(".*\\.", "") + "." + top.getMethod().getName(), 1L,
                    Long::sum);
            stack.getFrames().stream().map(f -> packageOf(f.getMethod().getType().getName())).distinct()
                    .filter(p -> !p.startsWith("java.") && !p.startsWith("jdk.") && !p.startsWith("sun."))
                    .forEach(p -> byPackage.merge(p, 1L, Long::sum));
        }
        return new JfrSummary(samples, top(byThread), top(bySelf), top(byPackage));
    }

    /** @return the summary as a markdown paragraph and three tables, for the report's notes */
    String markdown(String title) {
        StringBuilder out = new StringBuilder(title).append(String.format(Locale.ROOT, ": %,d samples.%n%n", samples));
        table(out, "thread pool", byThread);
        table(out, "method at the top of the stack (self)", bySelf);
        table(out, "package on the stack (total)", byPackage);
        return out.toString().stripTrailing();
    }

    private void table(StringBuilder out, String what, Map<String, Long> counts) {
        out.append("| ").append(what).append(" | share |\n| --- | --- |\n");
        counts.forEach((name, n) -> out.append(String.format(Locale.ROOT, "| `%s` | %.1f%% |%n", name, 100.0 * n / samples)));
        out.append('\n');
    }

    /** The first three parts of a class's package ({@code org.h2.mvstore}), enough to name a library's layer. */
    private static String packageOf(String className) {
        String[] parts = className.replaceFirst("\\$.*", "").split("\\.");
        int keep = Math.min(3, parts.length - 1);
        return keep <= 0 ? className : String.join(".", List.of(parts).subList(0, keep));
    }

    private static Map<String, Long> top(Map<String, Long> counts) {
        return counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(TOP)
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue, (a, b) -> a, LinkedHashMap::new));
    }
}
