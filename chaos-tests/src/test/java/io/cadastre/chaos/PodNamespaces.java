package io.cadastre.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Pod network namespaces for the full plugin's ADDs, named {@code <topology>-p<containerId>} so
 * that they are recognisably this run's. {@link #close()} removes every one still there, also
 * any this object lost track of (a crash between {@code ip netns add} and recording it).
 * Thread-safe.
 */
final class PodNamespaces implements AutoCloseable {
    private final String prefix;
    private final Set<String> created = ConcurrentHashMap.newKeySet();

    PodNamespaces(String topologyName) {
        this.prefix = topologyName + "-p";
    }

    String name(Attachment a) {
        return prefix + a.containerId();
    }

    String path(Attachment a) {
        return "/var/run/netns/" + name(a);
    }

    /** Creates the attachment's pod namespace. */
    void create(Attachment a) throws IOException, InterruptedException {
        String name = name(a);
        created.add(name);
        ip("netns", "add", name);
    }

    /** Removes the attachment's pod namespace (its pod veth end goes with it). */
    void remove(Attachment a) throws IOException, InterruptedException {
        String name = name(a);
        ip("netns", "del", name);
        created.remove(name);
    }

    /** @return how many pod namespaces exist now */
    int count() throws IOException, InterruptedException {
        return existing().size();
    }

    @Override
    public void close() throws IOException, InterruptedException {
        List<String> left = new ArrayList<>(created);
        for (String name : existing()) {
            if (!left.contains(name)) {
                left.add(name);
            }
        }
        IOException failure = null;
        for (String name : left) {
            try {
                ip("netns", "del", name);
                created.remove(name);
            } catch (IOException e) {
                if (existing().contains(name)) {
                    failure = e;
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private List<String> existing() throws IOException, InterruptedException {
        List<String> names = new ArrayList<>();
        for (String line : ip("netns", "list").split("\n")) {
            String name = line.strip().split("\\s+")[0];
            if (name.startsWith(prefix)) {
                names.add(name);
            }
        }
        return names;
    }

    private static String ip(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", command) + " did not finish");
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out.strip());
        }
        return out;
    }
}
