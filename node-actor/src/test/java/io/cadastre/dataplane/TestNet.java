package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Network namespaces for one test, all named {@code cadrt-<random>-<role>}: a fabric (a bridge in
 * a namespace of its own), hosts on it or behind a router, pods wired into the hosts by the real
 * {@link NetlinkDataplane}. Every link, address and route lives in one of them, so {@link #close}
 * (deleting them) removes everything, pass or fail; the root namespace is never touched. Test
 * traffic goes only to addresses in these namespaces: underlays in 198.19.0.0/16 and fd00:19::/48,
 * pods in 198.18.0.0/16 and fd00:198::/48.
 */
final class TestNet implements AutoCloseable {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final long PING_DEADLINE_SECONDS = 15;

    private final String prefix;
    private final List<String> namespaces = new ArrayList<>();
    private final List<NetnsThread> threads = new ArrayList<>();

    /** A host namespace and a thread inside it, for the code under test. */
    record Host(String netns, NetnsThread thread) {
        <T> T call(java.util.concurrent.Callable<T> task) throws Exception {
            return thread.call(task);
        }
    }

    TestNet() {
        byte[] b = new byte[3];
        RANDOM.nextBytes(b);
        prefix = "cadrt-" + HexFormat.of().formatHex(b) + "-";
    }

    /** A new namespace with lo up. */
    String namespace(String role) {
        String name = prefix + role;
        Ip.run("netns", "add", name);
        namespaces.add(name);
        Ip.run("-n", name, "link", "set", "lo", "up");
        return name;
    }

    /** A namespace holding bridge br0, up: one L2 segment. */
    String fabric(String role) {
        String ns = namespace(role);
        Ip.run(
                "-n",
                ns,
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "stp_state",
                "0",
                "mcast_snooping",
                "0");
        Ip.run("-n", ns, "link", "set", "br0", "up");
        return ns;
    }

    /** A host whose eth0 is a port (named {@code role}) of the fabric's bridge, with {@code cidrs} on it. */
    Host host(String role, String fabric, String... cidrs) throws Exception {
        String ns = namespace(role);
        Ip.run(
                "-n", fabric, "link", "add", role, "type", "veth", "peer", "name", "eth0", "netns",
                ns);
        Ip.run("-n", fabric, "link", "set", role, "master", "br0");
        Ip.run("-n", fabric, "link", "set", role, "up");
        addresses(ns, "eth0", cidrs);
        return host(ns);
    }

    /** A thread in an existing namespace (one per namespace is enough). */
    Host host(String ns) throws Exception {
        NetnsThread thread = NetnsThread.enter(ns);
        threads.add(thread);
        return new Host(ns, thread);
    }

    /** A veth pair between two namespaces, both ends up. */
    void wire(String nsA, String ifA, String nsB, String ifB) {
        Ip.run("-n", nsA, "link", "add", ifA, "type", "veth", "peer", "name", ifB, "netns", nsB);
        Ip.run("-n", nsA, "link", "set", ifA, "up");
        Ip.run("-n", nsB, "link", "set", ifB, "up");
    }

    /** Addresses without DAD (usable at once), then the link up. */
    static void addresses(String ns, String dev, String... cidrs) {
        for (String cidr : cidrs) {
            if (cidr.contains(":")) {
                Ip.run("-n", ns, "addr", "add", cidr, "dev", dev, "nodad");
            } else {
                Ip.run("-n", ns, "addr", "add", cidr, "dev", dev);
            }
        }
        Ip.run("-n", ns, "link", "set", dev, "up");
    }

    /** A pod namespace wired into {@code host} by NetlinkDataplane.attach on the host's thread. */
    String pod(Host host, String role, String... addresses) throws Exception {
        return pod(host, role, Bandwidth.NONE, addresses);
    }

    /** As {@link #pod(Host, String, String...)}, with bandwidth limits. */
    String pod(Host host, String role, Bandwidth bandwidth, String... addresses) throws Exception {
        String ns = namespace(role);
        List<PodAddress> list = new ArrayList<>();
        for (String a : addresses) {
            InetAddress address = IpPrefix.literal(a);
            list.add(new PodAddress(address, address.getAddress().length * 8));
        }
        PodAttachment attachment =
                new PodAttachment(
                        "/var/run/netns/" + ns,
                        "eth0",
                        HostInterfaceName.of("cadrt", ns, "eth0"),
                        0,
                        list,
                        bandwidth);
        host.call(() -> new NetlinkDataplane().attach(attachment));
        return ns;
    }

    /** One echo request with a one-second wait. */
    static boolean ping(String ns, String address) {
        return Ip.tryRunCommand("ip", "netns", "exec", ns, "busybox", "ping", "-c1", "-W1", address)
                        .exit()
                == 0;
    }

    /**
     * Pings until an echo comes back, failing after the deadline (an IPv6 gateway appears a moment
     * after attach, and the first packets wait for neighbour resolution).
     */
    static void awaitPing(String ns, String address) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PING_DEADLINE_SECONDS);
        while (!ping(ns, address)) {
            assertTrue(
                    System.nanoTime() < deadline,
                    "no echo from "
                            + address
                            + " in "
                            + ns
                            + " within "
                            + PING_DEADLINE_SECONDS
                            + " s");
        }
    }

    @Override
    public void close() {
        threads.forEach(NetnsThread::close);
        // Pods and hosts first: a veth pair goes with either namespace, the fabric last.
        for (int i = namespaces.size() - 1; i >= 0; i--) {
            Ip.tryRun("netns", "del", namespaces.get(i));
        }
    }
}
