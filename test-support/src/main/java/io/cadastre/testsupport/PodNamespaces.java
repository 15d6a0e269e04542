package io.cadastre.testsupport;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Pod network namespaces made the way a container runtime makes a sandbox's before the ADD
 * ({@code ip netns add}: loopback down), named {@code <prefix><suffix>} so that they are
 * recognisably this run's. {@link #close()} removes every one still there, also any this object
 * lost track of (a creation cut short between {@code ip netns add} and recording it); it goes on
 * after a failed removal and throws only for a namespace that is still there. Thread-safe.
 */
public final class PodNamespaces implements AutoCloseable {
    private final String prefix;
    private final Set<String> created = ConcurrentHashMap.newKeySet();

    /** @param prefix 1-20 of [A-Za-z0-9-], unique to this run (other runs' namespaces must not start with it) */
    public PodNamespaces(String prefix) {
        this.prefix = prefix;
    }

    /** @return the namespace's path, for {@code CNI_NETNS} */
    public static String path(String name) {
        return "/var/run/netns/" + name;
    }

    /** @return the name of the namespace for {@code suffix}: {@code <prefix><suffix>} */
    public String name(String suffix) {
        return prefix + suffix;
    }

    /**
     * Creates namespace {@code <prefix><suffix>}.
     *
     * @return its name
     * @throws IOException when {@code ip netns add} fails
     */
    public String create(String suffix) throws IOException, InterruptedException {
        String name = name(suffix);
        created.add(name);
        Ip.run("netns", "add", name);
        return name;
    }

    /** As {@link #create(String)}, with the number as the suffix. */
    public String create(int n) throws IOException, InterruptedException {
        return create(Integer.toString(n));
    }

    /** Removes the namespace {@code name} (its pod veth ends go with it). */
    public void remove(String name) throws IOException, InterruptedException {
        Ip.run("netns", "del", name);
        created.remove(name);
    }

    /** @return how many of this run's namespaces exist now */
    public int count() throws IOException, InterruptedException {
        return existing().size();
    }

    /** @return the addresses on {@code ifname} in namespace {@code name}, as {@code ip -o addr} prints them (with prefix length) */
    public static String addresses(String name, String ifname)
            throws IOException, InterruptedException {
        return Ip.run("-n", name, "-o", "addr", "show", "dev", ifname);
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
                remove(name);
            } catch (IOException e) {
                if (existing().contains(name)) {
                    failure = e;
                } else {
                    created.remove(name);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private List<String> existing() throws IOException, InterruptedException {
        List<String> names = new ArrayList<>();
        for (String line : Ip.run("netns", "list").split("\n")) {
            String name = line.strip().split("\\s+")[0];
            if (name.startsWith(prefix)) {
                names.add(name);
            }
        }
        return names;
    }
}
