package io.cadastre.bench.host;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a running agent JVM from outside, as an operator would: CPU and resident memory from
 * {@code /proc/<pid>}, heap and metaspace after a full GC and JFR recordings through the JDK's
 * {@code jcmd} (the benchmark's own JDK, the one the agent runs on).
 */
public final class AgentProbe {
    /** Clock ticks per second of {@code /proc/<pid>/stat} (USER_HZ, 100 on Linux). */
    private static final long TICKS_PER_SECOND = 100;

    private static final Pattern USED_KIB = Pattern.compile("used (\\d+)K");

    /**
     * Heap and metaspace in use after a full GC.
     *
     * @param heapUsedBytes the generations' used bytes summed
     * @param metaspaceUsedBytes metaspace used (class space included)
     */
    record Heap(long heapUsedBytes, long metaspaceUsedBytes) {}

    private final long pid;

    /** @param pid the agent JVM's process id */
    public AgentProbe(long pid) {
        this.pid = pid;
    }

    /**
     * CPU time so far, in nanoseconds.
     *
     * @param user in user mode
     * @param system in the kernel on the process's behalf
     */
    public record Cpu(long user, long system) {
        /** @return user + system, in nanoseconds */
        public long total() {
            return user + system;
        }

        Cpu minus(Cpu earlier) {
            return new Cpu(user - earlier.user, system - earlier.system);
        }
    }

    /** @return the CPU time of the whole process (all threads, exited ones included) so far */
    public Cpu cpu() throws IOException {
        return cpuOf(Path.of("/proc", Long.toString(pid), "stat"));
    }

    /**
     * @return CPU time so far per thread group: the live threads' names ({@code comm}, 15
     *     characters at most) without their trailing number, summed
     */
    public Map<String, Long> cpuByThread() throws IOException {
        Map<String, Long> out = new TreeMap<>();
        try (DirectoryStream<Path> tasks =
                Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path task : tasks) {
                try {
                    String name =
                            Files.readString(task.resolve("comm"))
                                    .strip()
                                    .replaceAll("[-#]?\\d+$", "");
                    out.merge(name, cpuOf(task.resolve("stat")).total(), Long::sum);
                } catch (IOException exited) {
                    // The thread ended between the listing and the read.
                }
            }
        }
        return out;
    }

    /**
     * @return the CPU time of this JVM's children that have exited and been waited for (a plugin
     *     exec once {@code waitFor} returned), summed: {@code cutime} and {@code cstime} of
     *     {@code /proc/self/stat}, in nanoseconds (10 ms ticks)
     */
    static Cpu reapedChildren() throws IOException {
        String[] fields = statFields(Path.of("/proc/self/stat"));
        return new Cpu(ticksToNanos(fields[13]), ticksToNanos(fields[14]));
    }

    /**
     * @param before a reading of {@link #cpuByThread} (empty: {@code after} holds differences)
     * @param after a later one
     * @param units what the CPU is divided by: calls, ADD+DEL cycles
     * @param unit their name in the column's head ("call", "ADD+DEL")
     * @return a markdown table of the CPU between the two by thread group, in ms per unit and as
     *     a share, the largest first; groups under 0.5% of the whole are left out
     */
    public static String cpuByThreadTable(
            Map<String, Long> before, Map<String, Long> after, double units, String unit) {
        Map<String, Long> used = new TreeMap<>();
        after.forEach((name, ns) -> used.put(name, ns - before.getOrDefault(name, 0L)));
        long total = Math.max(1, used.values().stream().mapToLong(Long::longValue).sum());
        StringBuilder out =
                new StringBuilder(
                        "| thread | ms per " + unit + " | share |\n| --- | --- | --- |\n");
        used.entrySet().stream()
                .filter(e -> e.getValue() * 200 >= total)
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEach(
                        e ->
                                out.append(
                                        String.format(
                                                Locale.ROOT,
                                                "| `%s` | %.3f | %.0f%% |%n",
                                                e.getKey(),
                                                e.getValue() / 1e6 / units,
                                                100.0 * e.getValue() / total)));
        return out.toString().stripTrailing();
    }

    private static Cpu cpuOf(Path stat) throws IOException {
        String[] fields = statFields(stat);
        return new Cpu(ticksToNanos(fields[11]), ticksToNanos(fields[12])); // utime, stime
    }

    /** @return the fields after the command name (which may hold spaces): state, field 3, first */
    private static String[] statFields(Path stat) throws IOException {
        String line = Files.readString(stat);
        return line.substring(line.lastIndexOf(')') + 2).split(" ");
    }

    private static long ticksToNanos(String ticks) {
        return Long.parseLong(ticks) * (1_000_000_000L / TICKS_PER_SECOND);
    }

    /** @return the resident set now ({@code VmRSS}), in bytes */
    long rssBytes() {
        return ProcessMemory.statusKib(pid, "VmRSS:") * 1024;
    }

    /** @return the peak resident set so far ({@code VmHWM}), in bytes */
    long peakRssBytes() {
        return ProcessMemory.highWaterMark(pid);
    }

    /** Runs a full GC and reads the heap and metaspace in use ({@code GC.heap_info}). */
    Heap heapAfterFullGc() throws IOException, InterruptedException {
        jcmd("GC.run");
        long heap = 0;
        long metaspace = 0;
        for (String line : jcmd("GC.heap_info").lines().toList()) {
            Matcher used = USED_KIB.matcher(line);
            if (!used.find()) {
                continue;
            }
            if (line.contains("generation") || line.contains("garbage-first heap")) {
                heap += Long.parseLong(used.group(1)) * 1024;
            } else if (line.strip().startsWith("Metaspace")) {
                metaspace = Long.parseLong(used.group(1)) * 1024;
            }
        }
        return new Heap(heap, metaspace);
    }

    /** Starts a JFR recording with the JDK's {@code profile} settings (execution samples every 10 ms). */
    void startRecording() throws IOException, InterruptedException {
        jcmd("JFR.start", "name=agent-cost", "settings=profile");
    }

    /** Stops the recording and writes it to {@code file}. */
    void stopRecording(Path file) throws IOException, InterruptedException {
        jcmd("JFR.stop", "name=agent-cost", "filename=" + file.toAbsolutePath());
        if (!Files.exists(file)) {
            throw new IOException("jcmd wrote no recording to " + file);
        }
    }

    /** Work that runs while a profiler samples the agent. */
    @FunctionalInterface
    public interface Work {
        void run() throws Exception;
    }

    /**
     * Samples the agent's CPU with async-profiler while {@code work} runs (1 ms of CPU between
     * samples, every thread, every frame: Java, JVM, libc and kernel), and puts its flame graph
     * and collapsed stacks into the report's directory once both are written.
     *
     * @param scratch a directory for async-profiler's library (copied out of its jar on the class
     *     path) and its output
     * @param reportDir the report's directory (created if missing)
     * @param flameGraph the HTML flame graph's file name there
     * @param collapsedStacks the stacks' file name there, one line per stack ({@code [thread
     *     tid=N];root;...;leaf count})
     * @return the samples summed up for the report
     * @throws IOException when async-profiler is not on the class path for this platform, cannot be
     *     loaded into the agent's JVM, or wrote no profile (then nothing goes to the report)
     * @throws Exception what {@code work} throws (the profiler is stopped first)
     */
    public ProfileSummary profileWhile(
            Path scratch, Path reportDir, String flameGraph, String collapsedStacks, Work work)
            throws Exception {
        Path library = asyncProfilerLibrary(scratch);
        Path flame = scratch.resolve(flameGraph);
        Path stacks = scratch.resolve(collapsedStacks);
        startProfiler(library);
        try {
            work.run();
        } finally {
            stopProfiler(library, stacks, flame);
        }
        Files.createDirectories(reportDir);
        Files.copy(flame, reportDir.resolve(flameGraph), StandardCopyOption.REPLACE_EXISTING);
        Files.copy(stacks, reportDir.resolve(collapsedStacks), StandardCopyOption.REPLACE_EXISTING);
        return ProfileSummary.ofCollapsed(stacks);
    }

    /** async-profiler's native library for this machine, copied out of its jar on the class path. */
    private static Path asyncProfilerLibrary(Path scratch) throws IOException {
        String arch = System.getProperty("os.arch").equals("aarch64") ? "arm64" : "x64";
        String resource = "/linux-" + arch + "/libasyncProfiler.so";
        try (InputStream in = AgentProbe.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException(resource + " is not on the class path");
            }
            Path library = scratch.resolve("libasyncProfiler.so");
            Files.copy(in, library, StandardCopyOption.REPLACE_EXISTING);
            return library;
        }
    }

    /**
     * Loads async-profiler into the agent's JVM ({@code jcmd JVMTI.agent_load}) and starts CPU
     * sampling: perf events where the kernel allows them, else the CPU-time timer.
     *
     * @param library async-profiler's {@code libasyncProfiler.so} for this platform
     * @throws IOException when it cannot be loaded or started
     */
    void startProfiler(Path library) throws IOException, InterruptedException {
        IOException refused = null;
        for (String event : List.of("cpu", "ctimer")) {
            try {
                profiler(library, "start,threads,event=" + event + ",interval=1ms");
                return;
            } catch (IOException e) {
                refused = e;
            }
        }
        throw refused;
    }

    /**
     * One async-profiler command through {@code jcmd JVMTI.agent_load}: quoted, since jcmd would
     * read its {@code key=value} pairs as its own arguments.
     *
     * @throws IOException when the agent answers with another return code than 0 (its message is
     *     in the agent's own output)
     */
    private void profiler(Path library, String command) throws IOException, InterruptedException {
        String out =
                jcmd(
                        "JVMTI.agent_load",
                        library.toAbsolutePath().toString(),
                        "\"" + command + "\"");
        if (!out.contains("return code: 0")) {
            throw new IOException(
                    "async-profiler refused "
                            + command.replaceFirst(",.*", "")
                            + ": "
                            + out.strip());
        }
    }

    /**
     * Stops the profiler: its collapsed stacks (thread names, dotted Java names) and a flame graph.
     *
     * @param collapsed where the stacks go, one line per stack
     * @param flameGraph where the HTML flame graph goes
     */
    void stopProfiler(Path library, Path collapsed, Path flameGraph)
            throws IOException, InterruptedException {
        profiler(library, "dump,collapsed,dot,file=" + collapsed.toAbsolutePath());
        profiler(library, "stop,file=" + flameGraph.toAbsolutePath());
        if (!Files.exists(collapsed) || !Files.exists(flameGraph)) {
            throw new IOException(
                    "async-profiler wrote no profile to " + collapsed + " / " + flameGraph);
        }
    }

    private String jcmd(String... command) throws IOException, InterruptedException {
        List<String> argv =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                                Long.toString(pid)));
        argv.addAll(List.of(command));
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException("jcmd " + String.join(" ", command) + " failed: " + out);
        }
        return out;
    }
}
