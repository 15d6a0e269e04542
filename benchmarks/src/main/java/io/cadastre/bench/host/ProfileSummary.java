package io.cadastre.bench.host;

import java.io.IOException;
import java.nio.file.Files;
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
 * A CPU profile's samples summed up for the report: the share per thread pool, per frame at the
 * top of the stack (self time), and per Java package anywhere on the stack (total time; the JDK's
 * own packages left out, every thread runs through them), the largest first. Read from
 * async-profiler's collapsed stacks (every frame: Java, JVM, libc and kernel) or, where it cannot
 * run, from a JFR recording (Java frames of threads running Java code only).
 *
 * @param source what sampled, for the report
 * @param samples how many samples
 * @param byThread samples per thread pool (a thread's name without its trailing number)
 * @param bySelf samples per top-of-stack frame ({@code Class.method}, a native symbol, or a kernel one with {@code [k]})
 * @param byPackage samples per Java package with a frame anywhere on the stack (counted once per sample)
 */
public record ProfileSummary(
        String source,
        long samples,
        Map<String, Long> byThread,
        Map<String, Long> bySelf,
        Map<String, Long> byPackage) {
    private static final int TOP = 15;

    /**
     * @param collapsed async-profiler's {@code collapsed} output with the {@code threads} and
     *     {@code dot} options: one line per stack, {@code [thread tid=N];root;...;leaf count}
     */
    static ProfileSummary ofCollapsed(Path collapsed) throws IOException {
        Tally tally = new Tally();
        for (String line : Files.readAllLines(collapsed)) {
            int space = line.lastIndexOf(' ');
            if (space < 0) {
                continue;
            }
            long count = Long.parseLong(line.substring(space + 1).strip());
            List<String> frames = List.of(line.substring(0, space).split(";"));
            String thread = "?";
            if (frames.get(0).startsWith("[")) {
                thread =
                        frames.get(0)
                                .substring(1)
                                .replaceFirst(" tid=\\d+]$", "")
                                .replaceFirst("]$", "");
                frames = frames.subList(1, frames.size());
            }
            if (frames.isEmpty()) {
                continue;
            }
            tally.add(
                    thread,
                    leafName(frames.get(frames.size() - 1)),
                    frames.stream()
                            .filter(ProfileSummary::isJava)
                            .map(f -> f.replaceFirst("_\\[[a-z]]$", ""))
                            .toList(),
                    count);
        }
        return tally.summary("async-profiler, CPU time, every frame");
    }

    /** @throws IOException when the file is not a readable JFR recording */
    static ProfileSummary ofJfr(Path recording) throws IOException {
        Tally tally = new Tally();
        for (RecordedEvent event : RecordingFile.readAllEvents(recording)) {
            if (!event.getEventType().getName().equals("jdk.ExecutionSample")) {
                continue;
            }
            RecordedStackTrace stack = event.getStackTrace();
            if (stack == null || stack.getFrames().isEmpty()) {
                continue;
            }
            String thread =
                    event.getThread("sampledThread") == null
                            ? "?"
                            : event.getThread("sampledThread").getJavaName();
            RecordedFrame top = stack.getFrames().get(0);
            tally.add(
                    thread == null ? "?" : thread,
                    leafName(top.getMethod().getType().getName() + "." + top.getMethod().getName()),
                    stack.getFrames().stream()
                            .map(
                                    f ->
                                            f.getMethod().getType().getName()
                                                    + "."
                                                    + f.getMethod().getName())
                            .toList(),
                    1);
        }
        return tally.summary("JFR execution samples, Java code only");
    }

    /**
     * @param flameGraph the flame graph's file name in the report's directory
     * @param stacks the collapsed stacks' file name there
     * @return a markdown sentence linking both, without its closing parenthesis and full stop (the
     *     caller says what wrote them)
     */
    public static String links(String flameGraph, String stacks) {
        return String.format(
                Locale.ROOT,
                "The profile as a flame graph: [%s](%s), and its stacks, one per line: [%s](%s) (",
                flameGraph,
                flameGraph,
                stacks,
                stacks);
    }

    /** @return the summary as a markdown paragraph and three tables, for the report's notes */
    public String markdown(String title) {
        StringBuilder out =
                new StringBuilder(title)
                        .append(
                                String.format(
                                        Locale.ROOT, " (%s): %,d samples.%n%n", source, samples));
        table(out, "thread pool", byThread);
        table(out, "frame at the top of the stack (self)", bySelf);
        table(out, "Java package on the stack (total)", byPackage);
        return out.toString().stripTrailing();
    }

    private void table(StringBuilder out, String what, Map<String, Long> counts) {
        out.append("| ").append(what).append(" | share |\n| --- | --- |\n");
        counts.forEach(
                (name, n) ->
                        out.append(
                                String.format(
                                        Locale.ROOT,
                                        "| `%s` | %.1f%% |%n",
                                        name.replace("|", "\\|").replace("`", "'"),
                                        100.0 * n / Math.max(1, samples))));
        out.append('\n');
    }

    /** A Java frame in dotted form ({@code io.cadastre.x.Y.method}, maybe annotated {@code _[j]}, {@code _[i]}). */
    private static boolean isJava(String frame) {
        return !frame.endsWith("_[k]")
                && !frame.contains("::")
                && !frame.contains(" ")
                && frame.matches("[\\w$.]+\\.[\\w$<>]+(_\\[[a-z]])?");
    }

    /** {@code Class.method} of a Java frame, a kernel symbol marked {@code [k]}, any other as it is. */
    private static String leafName(String frame) {
        if (frame.endsWith("_[k]")) {
            return frame.substring(0, frame.length() - 4) + " [k]";
        }
        String plain = frame.replaceFirst("_\\[[a-z]]$", "");
        if (isJava(frame)) {
            String[] parts = plain.split("\\.");
            return parts.length < 2
                    ? plain
                    : parts[parts.length - 2] + "." + parts[parts.length - 1];
        }
        return plain;
    }

    /** The first three parts of a class's package ({@code org.h2.mvstore}), enough to name a library's layer. */
    private static String packageOf(String javaFrame) {
        String className = javaFrame.substring(0, Math.max(0, javaFrame.lastIndexOf('.')));
        String[] parts = className.replaceFirst("\\$.*", "").split("\\.");
        int keep = Math.min(3, parts.length - 1);
        return keep <= 0 ? className : String.join(".", List.of(parts).subList(0, keep));
    }

    private static final class Tally {
        private final Map<String, Long> byThread = new HashMap<>();
        private final Map<String, Long> bySelf = new HashMap<>();
        private final Map<String, Long> byPackage = new HashMap<>();
        private long samples;

        void add(String thread, String leaf, List<String> javaFrames, long count) {
            samples += count;
            byThread.merge(thread.replaceAll("[-#]?\\d+$", ""), count, Long::sum);
            bySelf.merge(leaf, count, Long::sum);
            javaFrames.stream()
                    .map(ProfileSummary::packageOf)
                    .distinct()
                    .filter(
                            p ->
                                    !p.startsWith("java.")
                                            && !p.startsWith("jdk.")
                                            && !p.startsWith("sun."))
                    .forEach(p -> byPackage.merge(p, count, Long::sum));
        }

        ProfileSummary summary(String source) {
            return new ProfileSummary(source, samples, top(byThread), top(bySelf), top(byPackage));
        }

        private static Map<String, Long> top(Map<String, Long> counts) {
            return counts.entrySet().stream()
                    .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                    .limit(TOP)
                    .collect(
                            Collectors.toMap(
                                    Map.Entry::getKey,
                                    Map.Entry::getValue,
                                    (a, b) -> a,
                                    LinkedHashMap::new));
        }
    }
}
