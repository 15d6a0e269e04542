package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.dataplane.HostRouting.Desired;
import io.cadastre.dataplane.HostRouting.FdbEntry;
import io.cadastre.dataplane.HostRouting.Kind;
import io.cadastre.dataplane.HostRouting.NeighbourEntry;
import io.cadastre.dataplane.HostRouting.Result;
import io.cadastre.dataplane.HostRouting.Route;
import io.cadastre.dataplane.HostRouting.VxlanDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link NetlinkHostRouting} against the real kernel, as root, in namespaces each test creates and
 * removes ({@link TestNet}): hosts on one segment in direct mode, hosts on two subnets behind a
 * router in VXLAN mode, pods wired by the real dataplane pinging each other over IPv4 and IPv6,
 * ownership (stale, deleted and foreign routes), devices and their entries, idempotence.
 */
class NetlinkHostRoutingTest {
    private TestNet net;

    @BeforeAll
    static void requireRootIproute2AndBusybox() {
        assumeTrue("root".equals(System.getProperty("user.name")), "needs root: creates network namespaces");
        assumeTrue(Ip.tryRun("-V").exit() == 0, "needs iproute2 to set up and inspect namespaces");
        assumeTrue(Ip.tryRunCommand("busybox", "true").exit() == 0, "needs busybox for ping");
    }

    @BeforeEach
    void createNet() {
        net = new TestNet();
    }

    @AfterEach
    void removeNet() {
        net.close();
    }

    /** Host i of a segment: underlay 198.19.1.1i and fd00:19:1::1i, blocks 198.18.i.0/26 and fd00:198::i:0/122. */
    private record DirectHost(int i, TestNet.Host host, String pod) {
        String v4() {
            return "198.19.1.1" + i;
        }

        String v6() {
            return "fd00:19:1::1" + i;
        }

        String podV4() {
            return "198.18." + i + ".5";
        }

        String podV6() {
            return "fd00:198::" + i + ":5";
        }
    }

    @Test
    void directModeRoutesCarryPodTrafficBetweenHostsOnOneSegment() throws Exception {
        String fabric = net.fabric("fabric");
        List<DirectHost> hosts = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            TestNet.Host h = net.host("h" + i, fabric, "198.19.1.1" + i + "/24", "fd00:19:1::1" + i + "/64");
            // As real hosts have. Proxy ARP answers the pod's ARP for 169.254.1.1 only when the
            // host has a unicast route to it (DESIGN.md); 198.19.1.1 is no one's.
            Ip.run("-n", h.netns(), "route", "add", "default", "via", "198.19.1.1", "dev", "eth0");
            enableForwarding(h);
            hosts.add(new DirectHost(i, h, net.pod(h, "p" + i, "198.18." + i + ".5", "fd00:198::" + i + ":5")));
        }
        DirectHost a = hosts.get(0);
        DirectHost b = hosts.get(1);
        assertFalse(TestNet.ping(a.pod(), b.podV4()), "no route to the other host's block yet");

        for (DirectHost h : hosts) {
            List<Route> routes = new ArrayList<>(List.of(
                    Route.blackhole(IpPrefix.parse("198.18." + h.i() + ".0/26")),
                    Route.blackhole(IpPrefix.parse("fd00:198::" + h.i() + ":0/122"))));
            for (DirectHost peer : hosts) {
                if (peer != h) {
                    routes.add(Route.via(IpPrefix.parse("198.18." + peer.i() + ".0/26"), IpPrefix.literal(peer.v4()),
                            "eth0", 0));
                    routes.add(Route.via(IpPrefix.parse("fd00:198::" + peer.i() + ":0/122"),
                            IpPrefix.literal(peer.v6()), "eth0", 0));
                }
            }
            Result r = reconcile(h.host(), new Desired(routes, List.of()));
            assertEquals(6, r.added().size(), r.toString());
            assertClean(r);
        }

        assertEquals(Set.of("blackhole 198.18.1.0/26", "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink",
                "198.18.3.0/26 via 198.19.1.13 dev eth0 onlink"), cadastreRoutes(a.host().netns(), "-4"));
        assertEquals(Set.of("blackhole fd00:198::1:0/122", "fd00:198::2:0/122 via fd00:19:1::12 dev eth0 onlink",
                "fd00:198::3:0/122 via fd00:19:1::13 dev eth0 onlink"), cadastreRoutes(a.host().netns(), "-6"));
        for (DirectHost from : hosts) {
            for (DirectHost to : hosts) {
                if (from != to) {
                    TestNet.awaitPing(from.pod(), to.podV4());
                    TestNet.awaitPing(from.pod(), to.podV6());
                }
            }
        }
    }

    /**
     * Host i behind the router: underlay 198.19.i.11/24 and fd00:19:i::11/64 (router .1 and ::1),
     * blocks 198.18.i.0/26 and fd00:198::i:0/122 whose first address is the tunnel address.
     */
    private record VxlanHost(int i, TestNet.Host host, String pod) {
        String v4() {
            return "198.19." + i + ".11";
        }

        String v6() {
            return "fd00:19:" + i + "::11";
        }

        String tunnelV4() {
            return "198.18." + i + ".1";
        }

        String tunnelV6() {
            return "fd00:198::" + i + ":1";
        }

        String mac(int family) {
            return String.format("02:ca:da:%02x:00:%02x", i, family);
        }

        String podV4() {
            return "198.18." + i + ".5";
        }

        String podV6() {
            return "fd00:198::" + i + ":5";
        }
    }

    @Test
    void vxlanModeCarriesPodTrafficBetweenSubnetsBehindARouter() throws Exception {
        String router = net.namespace("r");
        TestNet.Host r = net.host(router);
        enableForwarding(r);
        List<VxlanHost> hosts = new ArrayList<>();
        for (int i = 2; i <= 3; i++) {
            String ns = net.namespace("h" + i);
            net.wire(router, "h" + i, ns, "eth0");
            TestNet.addresses(router, "h" + i, "198.19." + i + ".1/24", "fd00:19:" + i + "::1/64");
            TestNet.addresses(ns, "eth0", "198.19." + i + ".11/24", "fd00:19:" + i + "::11/64");
            Ip.run("-n", ns, "route", "add", "default", "via", "198.19." + i + ".1");
            Ip.run("-n", ns, "-6", "route", "add", "default", "via", "fd00:19:" + i + "::1");
            TestNet.Host h = net.host(ns);
            enableForwarding(h);
            hosts.add(new VxlanHost(i, h, net.pod(h, "p" + i, "198.18." + i + ".5", "fd00:198::" + i + ":5")));
        }
        VxlanHost c = hosts.get(0);
        VxlanHost d = hosts.get(1);

        for (VxlanHost h : hosts) {
            VxlanHost peer = h == c ? d : c;
            Result result = reconcile(h.host(), vxlanDesired(h, peer));
            // 2 devices, 2 tunnel addresses, 2 FDB and 2 neighbour entries, 4 routes.
            assertEquals(12, result.added().size(), result.toString());
            assertClean(result);
        }

        Map<String, Object> vx4 = Ip.json("-n", c.host().netns(), "-d", "link", "show", "dev", "cadastre.vx4").get(0);
        assertEquals(1450L, vx4.get("mtu"));
        assertEquals(c.mac(4), vx4.get("address"));
        @SuppressWarnings("unchecked")
        Map<String, Object> info = (Map<String, Object>) ((Map<String, Object>) vx4.get("linkinfo")).get("info_data");
        assertEquals(4242L, info.get("id"));
        assertEquals(4789L, info.get("port"));
        assertEquals("198.19.2.11", info.get("local"));
        assertEquals("eth0", info.get("link"));
        assertEquals(Boolean.FALSE, info.get("learning"));
        assertEquals(1430L, Ip.link(c.host().netns(), "cadastre.vx6").get("mtu"));
        assertEquals(Set.of(d.mac(4) + " dst 198.19.3.11 self permanent"), fdb(c.host().netns(), "cadastre.vx4"));
        assertEquals(Set.of(d.mac(6) + " dst fd00:19:3::11 self permanent"), fdb(c.host().netns(), "cadastre.vx6"));
        assertEquals(Set.of("198.18.3.1 lladdr " + d.mac(4) + " PERMANENT proto 202"),
                neighbours(c.host().netns(), "cadastre.vx4"));
        assertTrue(neighbours(c.host().netns(), "cadastre.vx6")
                .contains("fd00:198::3:1 lladdr " + d.mac(6) + " PERMANENT proto 202"));
        assertEquals(Set.of("198.18.3.0/26 via 198.18.3.1 dev cadastre.vx4 onlink mtu 1450", "blackhole 198.18.2.0/26"),
                cadastreRoutes(c.host().netns(), "-4"));

        TestNet.awaitPing(c.pod(), d.podV4());
        TestNet.awaitPing(c.pod(), d.podV6());
        TestNet.awaitPing(d.pod(), c.podV4());
        TestNet.awaitPing(d.pod(), c.podV6());
        TestNet.awaitPing(c.pod(), d.tunnelV4());
        TestNet.awaitPing(c.pod(), d.tunnelV6());
        TestNet.awaitPing(c.host().netns(), d.podV4());
        TestNet.awaitPing(c.host().netns(), d.podV6());

        for (VxlanHost h : hosts) {
            Result again = reconcile(h.host(), vxlanDesired(h, h == c ? d : c));
            assertEquals(0, again.changes(), again.toString());
            assertClean(again);
        }
    }

    /** VXLAN mode between two hosts: one device per family, blackholes for the own blocks. */
    private static Desired vxlanDesired(VxlanHost h, VxlanHost peer) {
        VxlanDevice vx4 = new VxlanDevice("cadastre.vx4", 4242, 4789, IpPrefix.literal(h.v4()), "eth0", h.mac(4), 1450,
                IpPrefix.parse(h.tunnelV4() + "/32"), List.of(new FdbEntry(peer.mac(4), IpPrefix.literal(peer.v4()))),
                List.of(new NeighbourEntry(IpPrefix.literal(peer.tunnelV4()), peer.mac(4))));
        VxlanDevice vx6 = new VxlanDevice("cadastre.vx6", 4242, 4789, IpPrefix.literal(h.v6()), "eth0", h.mac(6), 1430,
                IpPrefix.parse(h.tunnelV6() + "/128"), List.of(new FdbEntry(peer.mac(6), IpPrefix.literal(peer.v6()))),
                List.of(new NeighbourEntry(IpPrefix.literal(peer.tunnelV6()), peer.mac(6))));
        List<Route> routes = List.of(
                Route.blackhole(IpPrefix.parse("198.18." + h.i() + ".0/26")),
                Route.blackhole(IpPrefix.parse("fd00:198::" + h.i() + ":0/122")),
                Route.via(IpPrefix.parse("198.18." + peer.i() + ".0/26"), IpPrefix.literal(peer.tunnelV4()),
                        "cadastre.vx4", 1450),
                Route.via(IpPrefix.parse("fd00:198::" + peer.i() + ":0/122"), IpPrefix.literal(peer.tunnelV6()),
                        "cadastre.vx6", 1430));
        return new Desired(routes, List.of(vx4, vx6));
    }

    /** @return {@code bridge fdb} lines of the device, e.g. {@code "02:ca:da:03:00:04 dst 198.19.3.11 self permanent"} */
    @SuppressWarnings("unchecked")
    static Set<String> fdb(String ns, String dev) {
        Set<String> out = new TreeSet<>();
        String json = Ip.runCommand("bridge", "-n", ns, "-j", "fdb", "show", "dev", dev);
        for (Map<String, Object> e : MiniJson.parseArrayOfObjects(json)) {
            out.add(e.get("mac") + " dst " + e.get("dst") + " " + String.join(" ", (List<String>) e.get("flags"))
                    + " " + e.get("state"));
        }
        return out;
    }

    /** @return {@code ip neigh} lines of the device, e.g. {@code "198.18.3.1 lladdr 02:.. PERMANENT proto 202"} */
    @SuppressWarnings("unchecked")
    static Set<String> neighbours(String ns, String dev) {
        Set<String> out = new TreeSet<>();
        for (Map<String, Object> n : Ip.json("-n", ns, "neigh", "show", "dev", dev)) {
            out.add(n.get("dst") + " lladdr " + n.get("lladdr") + " " + String.join(" ", (List<String>) n.get("state"))
                    + (n.containsKey("protocol") ? " proto " + n.get("protocol") : ""));
        }
        return out;
    }

    private static void enableForwarding(TestNet.Host h) throws Exception {
        h.call(() -> {
            HostSysctls sysctls = new HostSysctls();
            sysctls.setIpv4Forwarding(true);
            sysctls.setIpv6Forwarding(true);
            return null;
        });
    }

    private static Result reconcile(TestNet.Host h, Desired desired) throws Exception {
        return reconcile(h, new NetlinkHostRouting(), desired);
    }

    private static Result reconcile(TestNet.Host h, HostRouting routing, Desired desired) throws Exception {
        return h.call(() -> routing.reconcile(desired));
    }

    private static void assertClean(Result r) {
        assertEquals(List.of(), r.errors(), r.toString());
        assertEquals(List.of(), r.conflicts(), r.toString());
    }

    /**
     * @return the main table's protocol-202 routes as iproute2 sees them, e.g.
     *     {@code "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink mtu 1400"} or {@code "blackhole 198.18.1.0/26"}
     */
    @SuppressWarnings("unchecked")
    static Set<String> cadastreRoutes(String ns, String family) {
        Set<String> out = new TreeSet<>();
        for (Map<String, Object> r : Ip.json("-n", ns, "-d", family, "route", "show", "table", "main", "proto", "202")) {
            StringBuilder sb = new StringBuilder();
            if ("blackhole".equals(r.get("type"))) {
                sb.append("blackhole ").append(r.get("dst"));
            } else {
                sb.append(r.get("dst"));
                if (r.containsKey("gateway")) {
                    sb.append(" via ").append(r.get("gateway"));
                }
                sb.append(" dev ").append(r.get("dev"));
                if (((List<Object>) r.getOrDefault("flags", List.of())).contains("onlink")) {
                    sb.append(" onlink");
                }
            }
            Object metrics = r.get("metrics");
            if (metrics instanceof List<?> list) {
                for (Object m : list) {
                    Object mtu = ((Map<String, Object>) m).get("mtu");
                    if (mtu != null) {
                        sb.append(" mtu ").append(mtu);
                    }
                }
            }
            out.add(sb.toString());
        }
        return out;
    }
}
