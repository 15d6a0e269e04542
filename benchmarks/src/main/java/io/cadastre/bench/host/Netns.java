package io.cadastre.bench.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Fresh pod network namespaces for the plugin runs, named {@code <prefix><n>} so that they are
 * recognisably this run's ({@code ip netns add/del}: the benchmark plays the container runtime,
 * which makes the namespace before the ADD). {@link #close()} removes every one still there, also
 * any whose creation was cut short. Thread-safe.
 */
public final class Netns implements AutoCloseable {
    private final String prefix;
    private final Set<String> created = ConcurrentHashMap.newKeySet();

    /** @param prefix 1-20 of [A-Za-z0-9-], unique to this run */
    public Netns(String prefix) {
        this.prefix = prefix;
    }

    /** @return the namespace's path for {@code CNI_NETNS} */
    public static String path(String name) {
        return "/var/run/netns/" + name;
    }

    /**
     * Creates namespace {@code <prefix><n>} with its loopback down (as a runtime's fresh sandbox).
     *
     * @return its name
     */
    public String create(int n) throws IOException, InterruptedException {
        String name = prefix + n;
        created.add(name);
        ip("netns", "add", name);
        return name;
    }

    public void remove(String name) throws IOException, InterruptedException {
        ip("netns", "del", name);
        created.remove(name);
    }

    /** @return the addresses on {@code ifname} in the namespace, as {@code ip -o addr} prints them (with prefix length) */
    public static String addresses(String name, String ifname) throws IOException, InterruptedException {
        return ip("-n", name, "-o", "addr", "show", "dev", ifname);
    }

    @Override
    public void close() throws IOException, InterruptedException {
        List<String> left = new ArrayList<>(created);
        for (String line : ip("netns", "list").split("\n")) {
            String name = line.split(" ")[0];
            if (name.startsWith(prefix) && !left.contains(name)) {
                left.add(name);
            }
        }
        for (String name : left) {
            ip("netns", "del", name);
            created.remove(name);
        }
    }

    static String ip(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out.strip());
        }
        return out;
    }
}
