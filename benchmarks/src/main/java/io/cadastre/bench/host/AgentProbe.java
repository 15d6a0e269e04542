package io.cadastre.bench.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads a running agent JVM from outside, as an operator would: CPU and resident memory from
 * {@code /proc/<pid>}, heap and metaspace after a full GC and JFR recordings through the JDK's
 * {@code jcmd} (the benchmark's own JDK, the one the agent runs on).
 */
final class AgentProbe {
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

    AgentProbe(long pid) {
        this.pid = pid;
    }

    /** @return user + system CPU time of the whole process (all threads) so far, in nanoseconds */
    long cpuNanos() throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        // Fields after the command name (which may hold spaces) in parentheses: state is field 3.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime (14), stime (15)
        return ticks * (1_000_000_000L / TICKS_PER_SECOND);
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

    private String jcmd(String... command) throws IOException, InterruptedException {
        List<String> argv = new java.util.ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(), Long.toString(pid)));
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
