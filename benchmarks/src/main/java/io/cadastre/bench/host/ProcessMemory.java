package io.cadastre.bench.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * Peak resident memory of a set of processes taken together (an agent and the plugin processes
 * of a burst, with their children), sampled from {@code /proc/<pid>/status} every few
 * milliseconds on a thread of its own until {@link #close()}. A process that starts and exits
 * between two samples is missed: the figure is a lower bound of the true peak.
 */
public final class ProcessMemory implements AutoCloseable {
    /** The first line of a mapping in {@code smaps}: its address range. */
    private static final Pattern MAPPING = Pattern.compile("[0-9a-f]+-[0-9a-f]+ ");

    private final Set<Long> roots = ConcurrentHashMap.newKeySet();
    private final Thread sampler;
    private volatile boolean stopped;
    private volatile long peakBytes;
    private volatile int samples;

    /** @param periodMillis the sampling period in milliseconds */
    public ProcessMemory(long periodMillis) {
        sampler =
                new Thread(
                        () -> {
                            while (!stopped) {
                                long total = 0;
                                for (long pid : roots) {
                                    total += rssWithDescendants(pid);
                                }
                                peakBytes = Math.max(peakBytes, total);
                                samples++;
                                try {
                                    Thread.sleep(periodMillis);
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        },
                        "rss-sampler");
        sampler.setDaemon(true);
        sampler.start();
    }

    /** Counts the process (and its descendants) from now on; a finished one counts as nothing. */
    public void add(long pid) {
        roots.add(pid);
    }

    /** @return the largest total seen, in bytes */
    public long peakBytes() {
        return peakBytes;
    }

    public int samples() {
        return samples;
    }

    /** @return the process's peak resident set ({@code VmHWM}) in bytes, or 0 when it is gone */
    public static long highWaterMark(long pid) {
        return statusKib(pid, "VmHWM:") * 1024;
    }

    private static long rssWithDescendants(long pid) {
        long bytes = statusKib(pid, "VmRSS:") * 1024;
        var handle = ProcessHandle.of(pid);
        if (handle.isPresent()) {
            for (ProcessHandle child :
                    (Iterable<ProcessHandle>) handle.get().descendants()::iterator) {
                bytes += statusKib(child.pid(), "VmRSS:") * 1024;
            }
        }
        return bytes;
    }

    /**
     * @return the resident bytes of the process's mappings of files whose path ends with {@code
     *     suffix} ({@code .jsa}: the JVM's class data archives), from the {@code Rss:} lines of
     *     {@code /proc/<pid>/smaps}; 0 when the process is gone
     */
    static long residentInFiles(long pid, String suffix) {
        long kib = 0;
        boolean counting = false;
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "smaps"))) {
                if (MAPPING.matcher(line).lookingAt()) {
                    // address perms offset dev inode [path]
                    String[] fields = line.trim().split("\\s+", 6);
                    counting = fields.length == 6 && fields[5].endsWith(suffix);
                } else if (counting && line.startsWith("Rss:")) {
                    kib += Long.parseLong(line.substring(4).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // The process has exited (or is exiting): it holds nothing any more.
            return 0;
        }
        return kib * 1024;
    }

    /** @return a {@code kB} field of {@code /proc/<pid>/status} ({@code VmRSS:}, {@code VmHWM:}), 0 when the process is gone */
    static long statusKib(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // The process has exited (or is exiting): it holds nothing any more.
        }
        return 0;
    }

    @Override
    public void close() throws InterruptedException {
        stopped = true;
        sampler.interrupt();
        sampler.join();
    }
}
