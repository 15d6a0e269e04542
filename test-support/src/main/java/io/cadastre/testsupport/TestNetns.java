package io.cadastre.testsupport;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A network namespace made for one test (with {@code ip netns}, which tests may use) and removed
 * by {@link #close()}, also when the test fails. Reads what the namespace holds with {@code ip -j}.
 * A test may remove it early with {@link #close()} (a namespace vanishing under a pod); closing
 * again does nothing.
 */
public final class TestNetns implements AutoCloseable {
    /** The namespace's name ({@code cadtest-} and 8 hex digits). */
    public final String name;

    private boolean deleted;

    private TestNetns(String name) {
        this.name = name;
    }

    public static TestNetns create() throws IOException, InterruptedException {
        TestNetns ns = new TestNetns("cadtest-" + UUID.randomUUID().toString().substring(0, 8));
        Ip.run("netns", "add", ns.name);
        return ns;
    }

    public String path() {
        return "/var/run/netns/" + name;
    }

    /** @return the addresses on {@code ifname} in CIDR notation (link-local IPv6 excluded) */
    public List<String> addresses(String ifname) throws IOException, InterruptedException {
        List<String> addresses = new ArrayList<>();
        JsonNode links = CniExec.JSON.readTree(Ip.run("-n", name, "-j", "addr", "show"));
        for (JsonNode link : links) {
            if (!link.path("ifname").asText().equals(ifname)) {
                continue;
            }
            for (JsonNode a : link.path("addr_info")) {
                if (!"link".equals(a.path("scope").asText())) {
                    addresses.add(a.path("local").asText() + "/" + a.path("prefixlen").asInt());
                }
            }
        }
        return addresses;
    }

    /** @return the MTU of {@code ifname} in the namespace, in bytes */
    public int mtu(String ifname) throws IOException, InterruptedException {
        return CniExec.JSON
                .readTree(Ip.run("-n", name, "-j", "link", "show", ifname))
                .get(0)
                .path("mtu")
                .asInt();
    }

    public boolean hasLink(String ifname) throws IOException, InterruptedException {
        for (JsonNode link : CniExec.JSON.readTree(Ip.run("-n", name, "-j", "link", "show"))) {
            if (link.path("ifname").asText().equals(ifname)) {
                return true;
            }
        }
        return false;
    }

    /** @return "dst via gw" lines of the family's main routing table in the namespace */
    public List<String> routes(int family) throws IOException, InterruptedException {
        List<String> routes = new ArrayList<>();
        for (JsonNode r :
                CniExec.JSON.readTree(Ip.run("-n", name, "-" + family, "-j", "route", "show"))) {
            routes.add(
                    r.path("dst").asText()
                            + (r.has("gateway") ? " via " + r.path("gateway").asText() : ""));
        }
        return routes;
    }

    public static boolean hostHasLink(String ifname) throws IOException, InterruptedException {
        for (JsonNode link : CniExec.JSON.readTree(Ip.run("-j", "link", "show"))) {
            if (link.path("ifname").asText().equals(ifname)) {
                return true;
            }
        }
        return false;
    }

    /**
     * What a DEL leaves of a pod's veth pair: at most a host end that is down (DEL replies once
     * nothing routes to the pod), and nothing once the pair's deletion, which finishes after the
     * reply, is done: waited for with a deadline of 10 s.
     *
     * @throws AssertionError when the host end is up, or either end is still there at the deadline
     */
    public static void awaitPairGone(String hostIfname, TestNetns pod, String podIfname)
            throws IOException, InterruptedException {
        for (JsonNode link : CniExec.JSON.readTree(Ip.run("-j", "link", "show"))) {
            if (link.path("ifname").asText().equals(hostIfname)) {
                for (JsonNode flag : link.path("flags")) {
                    if (flag.asText().equals("UP")) {
                        throw new AssertionError(
                                "host end " + hostIfname + " still up after DEL: " + link);
                    }
                }
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (hostHasLink(hostIfname) || (pod != null && pod.hasLink(podIfname))) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "veth pair " + hostIfname + " not deleted within 10 s of DEL");
            }
            Thread.sleep(50);
        }
    }

    @Override
    public void close() throws IOException, InterruptedException {
        if (!deleted) {
            Ip.run("netns", "del", name);
            deleted = true;
        }
    }
}
