package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.dataplane.HostRouting.Desired;
import io.cadastre.dataplane.HostRouting.FdbEntry;
import io.cadastre.dataplane.HostRouting.Kind;
import io.cadastre.dataplane.HostRouting.NeighbourEntry;
import io.cadastre.dataplane.HostRouting.Result;
import io.cadastre.dataplane.HostRouting.Route;
import io.cadastre.dataplane.HostRouting.VxlanDevice;
import java.nio.file.Files;
import java.nio.file.Path;
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
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
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

    /** Host i of a segment: underlay 198.19.1.1i and fd00:19:1::1i (blocks and pods: {@link #blockV4}, {@link #podV4}). */
    private record DirectHost(int i, TestNet.Host host, String pod) {
        String v4() {
            return "198.19.1.1" + i;
        }

        String v6() {
            return "fd00:19:1::1" + i;
        }
    }

    @Test
    void directModeRoutesCarryPodTrafficBetweenHostsOnOneSegment() throws Exception {
        String fabric = net.fabric("fabric");
        List<DirectHost> hosts = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            TestNet.Host h =
                    net.host("h" + i, fabric, "198.19.1.1" + i + "/24", "fd00:19:1::1" + i + "/64");
            // As real hosts have. Proxy ARP answers the pod's ARP for 169.254.1.1 only when the
            // host has a unicast route to it (node-actor/DESIGN.md); 198.19.1.1 is no one's.
            Ip.run("-n", h.netns(), "route", "add", "default", "via", "198.19.1.1", "dev", "eth0");
            enableForwarding(h);
            hosts.add(new DirectHost(i, h, net.pod(h, "p" + i, podV4(i), podV6(i))));
        }
        DirectHost a = hosts.get(0);
        DirectHost b = hosts.get(1);
        assertFalse(TestNet.ping(a.pod(), podV4(b.i())), "no route to the other host's block yet");

        for (DirectHost h : hosts) {
            List<Route> routes =
                    new ArrayList<>(
                            List.of(
                                    Route.blackhole(blockV4(h.i())),
                                    Route.blackhole(blockV6(h.i()))));
            for (DirectHost peer : hosts) {
                if (peer != h) {
                    routes.add(
                            Route.via(blockV4(peer.i()), IpPrefix.literal(peer.v4()), "eth0", 0));
                    routes.add(
                            Route.via(blockV6(peer.i()), IpPrefix.literal(peer.v6()), "eth0", 0));
                }
            }
            Result r = reconcile(h.host(), new Desired(routes, List.of()));
            assertEquals(6, r.added().size(), r.toString());
            assertClean(r);
        }

        assertEquals(
                Set.of(
                        "blackhole 198.18.1.0/26",
                        "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink",
                        "198.18.3.0/26 via 198.19.1.13 dev eth0 onlink"),
                cadastreRoutes(a.host().netns(), "-4"));
        assertEquals(
                Set.of(
                        "blackhole fd00:198::1:0/122",
                        "fd00:198::2:0/122 via fd00:19:1::12 dev eth0 onlink",
                        "fd00:198::3:0/122 via fd00:19:1::13 dev eth0 onlink"),
                cadastreRoutes(a.host().netns(), "-6"));
        for (DirectHost from : hosts) {
            for (DirectHost to : hosts) {
                if (from != to) {
                    TestNet.awaitPing(from.pod(), podV4(to.i()));
                    TestNet.awaitPing(from.pod(), podV6(to.i()));
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
            hosts.add(new VxlanHost(i, h, net.pod(h, "p" + i, podV4(i), podV6(i))));
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

        Map<String, Object> vx4 =
                Ip.json("-n", c.host().netns(), "-d", "link", "show", "dev", "cadastre.vx4").get(0);
        assertEquals(1450L, vx4.get("mtu"));
        assertEquals(c.mac(4), vx4.get("address"));
        @SuppressWarnings("unchecked")
        Map<String, Object> info =
                (Map<String, Object>) ((Map<String, Object>) vx4.get("linkinfo")).get("info_data");
        assertEquals(4242L, info.get("id"));
        assertEquals(4789L, info.get("port"));
        assertEquals("198.19.2.11", info.get("local"));
        assertEquals("eth0", info.get("link"));
        assertEquals(Boolean.FALSE, info.get("learning"));
        assertEquals(1430L, Ip.link(c.host().netns(), "cadastre.vx6").get("mtu"));
        assertEquals(
                Set.of(d.mac(4) + " dst 198.19.3.11 self permanent"),
                fdb(c.host().netns(), "cadastre.vx4"));
        assertEquals(
                Set.of(d.mac(6) + " dst fd00:19:3::11 self permanent"),
                fdb(c.host().netns(), "cadastre.vx6"));
        assertEquals(
                Set.of("198.18.3.1 lladdr " + d.mac(4) + " PERMANENT proto 202"),
                neighbours(c.host().netns(), "cadastre.vx4"));
        assertTrue(
                neighbours(c.host().netns(), "cadastre.vx6")
                        .contains("fd00:198::3:1 lladdr " + d.mac(6) + " PERMANENT proto 202"));
        assertEquals(
                Set.of(
                        "198.18.3.0/26 via 198.18.3.1 dev cadastre.vx4 onlink mtu 1450",
                        "blackhole 198.18.2.0/26"),
                cadastreRoutes(c.host().netns(), "-4"));

        TestNet.awaitPing(c.pod(), podV4(d.i()));
        TestNet.awaitPing(c.pod(), podV6(d.i()));
        TestNet.awaitPing(d.pod(), podV4(c.i()));
        TestNet.awaitPing(d.pod(), podV6(c.i()));
        TestNet.awaitPing(c.pod(), d.tunnelV4());
        TestNet.awaitPing(c.pod(), d.tunnelV6());
        TestNet.awaitPing(c.host().netns(), podV4(d.i()));
        TestNet.awaitPing(c.host().netns(), podV6(d.i()));

        for (VxlanHost h : hosts) {
            Result again = reconcile(h.host(), vxlanDesired(h, h == c ? d : c));
            assertEquals(0, again.changes(), again.toString());
            assertClean(again);
        }
    }

    /** VXLAN mode between two hosts: one device per family, blackholes for the own blocks. */
    private static Desired vxlanDesired(VxlanHost h, VxlanHost peer) {
        VxlanDevice vx4 =
                new VxlanDevice(
                        "cadastre.vx4",
                        4242,
                        4789,
                        IpPrefix.literal(h.v4()),
                        "eth0",
                        h.mac(4),
                        1450,
                        IpPrefix.parse(h.tunnelV4() + "/32"),
                        List.of(new FdbEntry(peer.mac(4), IpPrefix.literal(peer.v4()))),
                        List.of(
                                new NeighbourEntry(
                                        IpPrefix.literal(peer.tunnelV4()), peer.mac(4))));
        VxlanDevice vx6 =
                new VxlanDevice(
                        "cadastre.vx6",
                        4242,
                        4789,
                        IpPrefix.literal(h.v6()),
                        "eth0",
                        h.mac(6),
                        1430,
                        IpPrefix.parse(h.tunnelV6() + "/128"),
                        List.of(new FdbEntry(peer.mac(6), IpPrefix.literal(peer.v6()))),
                        List.of(
                                new NeighbourEntry(
                                        IpPrefix.literal(peer.tunnelV6()), peer.mac(6))));
        List<Route> routes =
                List.of(
                        Route.blackhole(blockV4(h.i())),
                        Route.blackhole(blockV6(h.i())),
                        Route.via(
                                blockV4(peer.i()),
                                IpPrefix.literal(peer.tunnelV4()),
                                "cadastre.vx4",
                                1450),
                        Route.via(
                                blockV6(peer.i()),
                                IpPrefix.literal(peer.tunnelV6()),
                                "cadastre.vx6",
                                1430));
        return new Desired(routes, List.of(vx4, vx6));
    }

    /** @return {@code bridge fdb} lines of the device, e.g. {@code "02:ca:da:03:00:04 dst 198.19.3.11 self permanent"} */
    @SuppressWarnings("unchecked")
    static Set<String> fdb(String ns, String dev) {
        Set<String> out = new TreeSet<>();
        String json = Ip.runCommand("bridge", "-n", ns, "-j", "fdb", "show", "dev", dev);
        for (Map<String, Object> e : MiniJson.parseArrayOfObjects(json)) {
            out.add(
                    e.get("mac")
                            + " dst "
                            + e.get("dst")
                            + " "
                            + String.join(" ", (List<String>) e.get("flags"))
                            + " "
                            + e.get("state"));
        }
        return out;
    }

    /** @return {@code ip neigh} lines of the device, e.g. {@code "198.18.3.1 lladdr 02:.. PERMANENT proto 202"} */
    @SuppressWarnings("unchecked")
    static Set<String> neighbours(String ns, String dev) {
        Set<String> out = new TreeSet<>();
        for (Map<String, Object> n : Ip.json("-n", ns, "neigh", "show", "dev", dev)) {
            out.add(
                    n.get("dst")
                            + " lladdr "
                            + n.get("lladdr")
                            + " "
                            + String.join(" ", (List<String>) n.get("state"))
                            + (n.containsKey("protocol") ? " proto " + n.get("protocol") : ""));
        }
        return out;
    }

    @Test
    void reconcileRemovesStaleRoutesRestoresDeletedOnesAndLeavesOtherProtocolsAlone()
            throws Exception {
        TestNet.Host h = singleHost();
        String ns = h.netns();
        Ip.run(
                "-n",
                ns,
                "route",
                "add",
                "198.18.9.0/26",
                "via",
                "198.19.4.99",
                "dev",
                "eth0",
                "onlink",
                "proto",
                "202");
        Ip.run(
                "-n",
                ns,
                "-6",
                "route",
                "add",
                "fd00:198::9:0/122",
                "via",
                "fd00:19:4::99",
                "dev",
                "eth0",
                "onlink",
                "proto",
                "202");
        Ip.run(
                "-n",
                ns,
                "route",
                "add",
                "198.18.7.0/26",
                "via",
                "198.19.4.98",
                "dev",
                "eth0",
                "proto",
                "static");
        Ip.run("-n", ns, "route", "add", "198.18.8.0/26", "dev", "eth0", "proto", "static");
        // Cadastre's beside another protocol's at one destination: only Cadastre's may go.
        Ip.run(
                "-n",
                ns,
                "route",
                "append",
                "198.18.8.0/26",
                "via",
                "198.19.4.97",
                "dev",
                "eth0",
                "onlink",
                "proto",
                "202",
                "metric",
                "5");
        List<Route> routes =
                List.of(
                        Route.blackhole(IpPrefix.parse("198.18.1.0/26")),
                        Route.blackhole(IpPrefix.parse("fd00:198::1:0/122")),
                        Route.via(
                                IpPrefix.parse("198.18.2.0/26"),
                                IpPrefix.literal("198.19.4.12"),
                                "eth0",
                                1400),
                        Route.via(
                                IpPrefix.parse("fd00:198::2:0/122"),
                                IpPrefix.literal("fd00:19:4::12"),
                                "eth0",
                                0),
                        Route.via(
                                IpPrefix.parse("198.18.7.0/26"),
                                IpPrefix.literal("198.19.4.12"),
                                "eth0",
                                0));
        Desired desired = new Desired(routes, List.of());
        HostRouting routing = new NetlinkHostRouting();

        Result first = reconcile(h, routing, desired);

        assertEquals(4, first.added().size(), first.toString());
        assertEquals(
                Set.of(
                        "route 198.18.9.0/26 via 198.19.4.99 dev eth0 onlink proto 202",
                        "route 198.18.8.0/26 via 198.19.4.97 dev eth0 onlink proto 202",
                        "route fd00:198::9:0/122 via fd00:19:4::99 dev eth0 onlink proto 202"),
                texts(first.removed()));
        assertEquals(List.of(), first.replaced());
        assertEquals(1, first.conflicts().size(), first.toString());
        assertTrue(
                first.conflicts()
                        .get(0)
                        .what()
                        .startsWith(
                                "198.18.7.0/26 via 198.19.4.12 dev eth0 onlink: the "
                                        + "destination has 198.18.7.0/26 via 198.19.4.98 dev eth0 proto static"),
                first.toString());
        assertEquals(List.of(), first.errors());
        assertEquals(
                Set.of(
                        "blackhole 198.18.1.0/26",
                        "198.18.2.0/26 via 198.19.4.12 dev eth0 onlink mtu 1400"),
                cadastreRoutes(ns, "-4"));
        assertEquals(
                Set.of(
                        "blackhole fd00:198::1:0/122",
                        "fd00:198::2:0/122 via fd00:19:4::12 dev eth0 onlink"),
                cadastreRoutes(ns, "-6"));
        assertEquals(
                Set.of(
                        "198.18.7.0/26 via 198.19.4.98 dev eth0 proto static",
                        "198.18.8.0/26 dev eth0 proto static"),
                staticRoutes(ns));

        Ip.run("-n", ns, "route", "del", "198.18.2.0/26");
        Ip.run("-n", ns, "-6", "route", "del", "blackhole", "fd00:198::1:0/122");
        Ip.run(
                "-n",
                ns,
                "route",
                "change",
                "blackhole",
                "198.18.1.0/26",
                "proto",
                "202",
                "mtu",
                "1300");
        Result second = reconcile(h, routing, desired);

        assertEquals(
                Set.of(
                        "route 198.18.2.0/26 via 198.19.4.12 dev eth0 onlink mtu 1400 proto 202",
                        "route blackhole fd00:198::1:0/122 proto 202"),
                texts(second.added()));
        assertEquals(
                Set.of(
                        "route blackhole 198.18.1.0/26 proto 202 (was blackhole 198.18.1.0/26 mtu 1300 proto 202)"),
                texts(second.replaced()));
        assertEquals(List.of(), second.removed());
        assertEquals(1, second.conflicts().size(), "still reported, still left alone");
        assertEquals(
                Set.of(
                        "blackhole 198.18.1.0/26",
                        "198.18.2.0/26 via 198.19.4.12 dev eth0 onlink mtu 1400"),
                cadastreRoutes(ns, "-4"));
        assertEquals(
                Set.of(
                        "blackhole fd00:198::1:0/122",
                        "fd00:198::2:0/122 via fd00:19:4::12 dev eth0 onlink"),
                cadastreRoutes(ns, "-6"));

        List<Route> moved = new ArrayList<>(routes);
        moved.set(
                2,
                Route.via(
                        IpPrefix.parse("198.18.2.0/26"),
                        IpPrefix.literal("198.19.4.13"),
                        "eth0",
                        1380));
        moved.set(
                3,
                Route.via(
                        IpPrefix.parse("fd00:198::2:0/122"),
                        IpPrefix.literal("fd00:19:4::13"),
                        "eth0",
                        0));
        Result third = reconcile(h, routing, new Desired(moved, List.of()));

        assertEquals(2, third.replaced().size(), third.toString());
        assertEquals(0, third.added().size() + third.removed().size(), third.toString());
        assertEquals(
                Set.of(
                        "blackhole 198.18.1.0/26",
                        "198.18.2.0/26 via 198.19.4.13 dev eth0 onlink mtu 1380"),
                cadastreRoutes(ns, "-4"));
        assertEquals(
                Set.of(
                        "blackhole fd00:198::1:0/122",
                        "fd00:198::2:0/122 via fd00:19:4::13 dev eth0 onlink"),
                cadastreRoutes(ns, "-6"));

        Result fourth = reconcile(h, routing, new Desired(moved, List.of()));
        assertEquals(0, fourth.changes(), fourth.toString());
        assertEquals(List.of(), fourth.errors());

        Result emptied = reconcile(h, routing, Desired.empty());
        assertEquals(4, emptied.removed().size(), emptied.toString());
        assertEquals(Set.of(), cadastreRoutes(ns, "-4"));
        assertEquals(Set.of(), cadastreRoutes(ns, "-6"));
        assertEquals(
                2, staticRoutes(ns).size(), "other protocols' routes survive Cadastre's removals");
    }

    /**
     * A host without a default route: proxy ARP answers the pod's ARP for 169.254.1.1 only once
     * the host has a unicast route to it through another interface, so without Cadastre's
     * {@code 169.254.1.1/32 dev lo} the pod reaches nothing, not even its host.
     */
    @Test
    void aDeviceRouteToTheGatewayLetsPodsReachTheirHostWithoutADefaultRoute() throws Exception {
        String fabric = net.fabric("fabric");
        TestNet.Host h = net.host("h1", fabric, "198.19.5.11/24", "fd00:19:5::11/64");
        enableForwarding(h);
        String pod = net.pod(h, "p1", "198.18.5.5", "fd00:198::5:5");
        assertFalse(
                TestNet.ping(pod, "198.19.5.11"),
                "no route to 169.254.1.1 on the host: no proxy ARP answer");
        Route gateway = Route.device(IpPrefix.parse("169.254.1.1/32"), "lo");
        assertEquals("169.254.1.1/32 dev lo", gateway.toString());

        Result added = reconcile(h, new Desired(List.of(gateway), List.of()));

        assertEquals(
                Set.of("route 169.254.1.1/32 dev lo proto 202"),
                texts(added.added()),
                added.toString());
        assertClean(added);
        assertEquals(Set.of("169.254.1.1 dev lo"), cadastreRoutes(h.netns(), "-4"));
        TestNet.awaitPing(pod, "198.19.5.11");
        TestNet.awaitPing(pod, "fd00:19:5::11");
        assertEquals(
                0,
                reconcile(h, new Desired(List.of(gateway), List.of())).changes(),
                "the same route again");
        HostRouting.Installed installed =
                h.call(() -> new NetlinkHostRouting().installed()).stream()
                        .filter(r -> r.destination().toString().equals("169.254.1.1/32"))
                        .findFirst()
                        .orElseThrow();
        assertTrue(installed.ours(), installed.toString());
        assertEquals("lo", installed.device());
        assertEquals(null, installed.gateway());
        assertFalse(installed.blackhole());
        assertEquals(
                1,
                h.call(() -> new NetlinkHostRouting().installed()).stream()
                        .filter(
                                r ->
                                        r.destination().toString().equals("198.18.5.5/32")
                                                && r.protocol() == LinuxNetlinkAbi.RTPROT_BOOT
                                                && !r.ours())
                        .count(),
                "the pod's own host route, another protocol's");
    }

    /**
     * A router (198.19.6.1, fd00:19:6::1) that knows no route to the pools answers a pod only
     * once its host masquerades; the exempt destinations keep the pod's address (and so get no
     * answer here). The table is written once, rewritten when a rule went missing or the wanted
     * state changed, and removed when outgoing NAT is off; {@code nft} reads it as written.
     */
    @Test
    void outgoingNatLetsPodsReachANetworkThatDoesNotRouteThePools() throws Exception {
        String fabric = net.fabric("fabric");
        TestNet.Host router = net.host("r", fabric, "198.19.6.1/24", "fd00:19:6::1/64");
        TestNet.Host h = net.host("h1", fabric, "198.19.6.11/24", "fd00:19:6::11/64");
        Ip.run("-n", h.netns(), "route", "add", "default", "via", "198.19.6.1", "dev", "eth0");
        Ip.run("-n", h.netns(), "-6", "route", "add", "default", "via", "fd00:19:6::1");
        enableForwarding(h);
        String pod = net.pod(h, "p1", podV4(6), podV6(6));
        List<Route> routes =
                List.of(
                        Route.device(IpPrefix.parse("169.254.1.1/32"), "lo"),
                        Route.blackhole(blockV4(6)),
                        Route.blackhole(blockV6(6)));
        assertClean(reconcile(h, new Desired(routes, List.of())));
        TestNet.awaitPing(pod, "198.19.6.11");
        assertFalse(TestNet.ping(pod, "198.19.6.1"), "the router has no route back to the pod");
        assertFalse(TestNet.ping(pod, "fd00:19:6::1"), "the router has no route back to the pod");

        List<IpPrefix> pools =
                List.of(IpPrefix.parse("198.18.0.0/16"), IpPrefix.parse("fd00:198::/64"));
        HostRouting.OutgoingNat nat = new HostRouting.OutgoingNat(pools, pools);
        Result added = reconcile(h, new Desired(routes, List.of(), nat));

        assertEquals(
                Set.of(
                        "nat masquerade 198.18.0.0/16, fd00:198::/64 except to 198.18.0.0/16,"
                                + " fd00:198::/64"),
                texts(added.added()),
                added.toString());
        assertClean(added);
        TestNet.awaitPing(pod, "198.19.6.1");
        TestNet.awaitPing(pod, "fd00:19:6::1");
        // nft, the operator's view, reads it as written (scripts/test.sh installs nftables).
        String listed = nft(h, "list", "table", "inet", "cadastre");
        for (String line :
                List.of(
                        "type nat hook postrouting priority srcnat; policy accept;",
                        "ip saddr 198.18.0.0/16 goto masquerade-ipv4",
                        "ip6 saddr fd00:198::/64 goto masquerade-ipv6",
                        "ip daddr 198.18.0.0/16 accept",
                        "ip6 daddr fd00:198::/64 accept",
                        "masquerade fully-random",
                        "comment \"managed by cadastre-agent, state ")) {
            assertTrue(listed.contains(line), "no '" + line + "' in:\n" + listed);
        }
        assertEquals(0, reconcile(h, new Desired(routes, List.of(), nat)).changes());

        // A rule removed by hand is put back.
        assertTrue(nft(h, "flush", "chain", "inet", "cadastre", "masquerade-ipv4").isEmpty());
        Result mended = reconcile(h, new Desired(routes, List.of(), nat));
        assertEquals(1, mended.replaced().size(), mended.toString());
        assertTrue(mended.replaced().get(0).what().contains("(was 4 rules"), mended.toString());
        TestNet.awaitPing(pod, "198.19.6.1");

        // The router's network exempt: the pod's address goes out as it is, and no answer comes.
        HostRouting.OutgoingNat exempt =
                new HostRouting.OutgoingNat(
                        pools,
                        List.of(
                                IpPrefix.parse("198.18.0.0/16"),
                                IpPrefix.parse("fd00:198::/64"),
                                IpPrefix.parse("198.19.6.0/24")));
        Result changed = reconcile(h, new Desired(routes, List.of(), exempt));
        assertEquals(1, changed.replaced().size(), changed.toString());
        assertFalse(TestNet.ping(pod, "198.19.6.1"), "an exempt destination was masqueraded");
        TestNet.awaitPing(pod, "fd00:19:6::1");

        Result removed = reconcile(h, new Desired(routes, List.of()));
        assertEquals(Set.of("nat table inet cadastre"), texts(removed.removed()));
        assertEquals(
                Optional.empty(),
                h.call(
                        () -> {
                            try (NetlinkSocket nf = NetlinkSocket.openNetfilter()) {
                                return NetlinkOutgoingNat.read(nf);
                            }
                        }));
        assertFalse(TestNet.ping(pod, "fd00:19:6::1"), "masqueraded after the table went");
        assertEquals(0, reconcile(h, new Desired(routes, List.of())).changes());
    }

    /** Runs {@code nft} in the host's namespace; its output ("" for a change). */
    private static String nft(TestNet.Host h, String... args) {
        List<String> command = new ArrayList<>(List.of("ip", "netns", "exec", h.netns(), "nft"));
        command.addAll(List.of(args));
        return Ip.runCommand(command.toArray(String[]::new));
    }

    @Test
    void devicesAndTheirEntriesAreReconciledAndOnlyCadastresAreTouched() throws Exception {
        TestNet.Host h = singleHost();
        String ns = h.netns();
        Ip.run(
                "-n",
                ns,
                "link",
                "add",
                "cadastre.vx4",
                "type",
                "vxlan",
                "id",
                "1",
                "local",
                "198.19.4.11",
                "dev",
                "eth0",
                "dstport",
                "4789");
        Ip.run(
                "-n",
                ns,
                "link",
                "add",
                "cadastre.old",
                "type",
                "vxlan",
                "id",
                "2",
                "local",
                "198.19.4.11",
                "dev",
                "eth0",
                "dstport",
                "4790");
        Ip.run(
                "-n",
                ns,
                "link",
                "add",
                "other.vx",
                "type",
                "vxlan",
                "id",
                "3",
                "local",
                "198.19.4.11",
                "dev",
                "eth0",
                "dstport",
                "4791");
        Ip.run("-n", ns, "link", "add", "cadastre.vx9", "type", "veth", "peer", "name", "vx9peer");
        VxlanDevice vx4 =
                new VxlanDevice(
                        "cadastre.vx4",
                        4242,
                        4789,
                        IpPrefix.literal("198.19.4.11"),
                        "eth0",
                        "02:ca:da:04:00:04",
                        1450,
                        IpPrefix.parse("198.18.4.1/32"),
                        List.of(
                                new FdbEntry("02:ca:da:05:00:04", IpPrefix.literal("198.19.5.11")),
                                new FdbEntry("02:ca:da:06:00:04", IpPrefix.literal("198.19.6.11"))),
                        List.of(
                                new NeighbourEntry(
                                        IpPrefix.literal("198.18.5.1"), "02:ca:da:05:00:04"),
                                new NeighbourEntry(
                                        IpPrefix.literal("198.18.6.1"), "02:ca:da:06:00:04")));
        VxlanDevice tooBig =
                new VxlanDevice(
                        "cadastre.vx6",
                        4242,
                        4789,
                        IpPrefix.literal("fd00:19:4::11"),
                        "eth0",
                        "02:ca:da:04:00:06",
                        1450,
                        null,
                        List.of(),
                        List.of());
        VxlanDevice taken =
                new VxlanDevice(
                        "cadastre.vx9",
                        4243,
                        4789,
                        IpPrefix.literal("198.19.4.11"),
                        "eth0",
                        "02:ca:da:04:00:09",
                        0,
                        null,
                        List.of(),
                        List.of());
        VxlanDevice noUnderlay =
                new VxlanDevice(
                        "cadastre.vxm",
                        4244,
                        4789,
                        IpPrefix.literal("198.19.4.11"),
                        "eth9",
                        "02:ca:da:04:00:0a",
                        0,
                        null,
                        List.of(),
                        List.of());
        Desired desired =
                new Desired(
                        List.of(
                                Route.via(
                                        IpPrefix.parse("198.18.5.0/26"),
                                        IpPrefix.literal("198.18.5.1"),
                                        "cadastre.vx4",
                                        1450),
                                Route.via(
                                        IpPrefix.parse("fd00:198::5:0/122"),
                                        IpPrefix.literal("fd00:198::5:1"),
                                        "cadastre.vx6",
                                        0)),
                        List.of(vx4, tooBig, taken, noUnderlay));
        HostRouting routing = new NetlinkHostRouting();

        Result first = reconcile(h, routing, desired);

        assertEquals(Set.of("device vxlan cadastre.old id 2"), texts(first.removed()));
        assertEquals(1, first.replaced().size(), first.toString());
        assertEquals(
                "device vxlan cadastre.vx4 id 4242 local 198.19.4.11 dstport 4789 dev eth0 address 02:ca:da:04:00:04"
                        + " mtu 1450 (was id 1 local 198.19.4.11 dstport 4789 dev eth0 learning)",
                first.replaced().get(0).toString());
        assertEquals(1, Result.count(first.added(), Kind.ADDRESS), first.toString());
        assertEquals(2, Result.count(first.added(), Kind.FDB), first.toString());
        assertEquals(2, Result.count(first.added(), Kind.NEIGHBOUR), first.toString());
        assertEquals(1, Result.count(first.added(), Kind.ROUTE), first.toString());
        assertEquals(
                List.of(
                        new HostRouting.Change(
                                Kind.DEVICE,
                                "cadastre.vx9: a link of kind 'veth' has the name;"
                                        + " left alone")),
                first.conflicts());
        assertEquals(
                Set.of(
                        "device cadastre.vx6: MTU 1450 is above the 1430 the kernel allows over eth0 (MTU 1500 less 70 for VXLAN"
                                + " over IPv6)",
                        "device cadastre.vxm: underlay device eth9 does not exist",
                        "route fd00:198::5:0/122 via fd00:198::5:1 dev cadastre.vx6 onlink: device cadastre.vx6 does not exist"),
                texts(first.errors()));
        assertFalse(Ip.linkExists(ns, "cadastre.old"));
        assertFalse(Ip.linkExists(ns, "cadastre.vx6"));
        assertTrue(Ip.linkExists(ns, "other.vx"), "not Cadastre's: no prefix");
        assertEquals(
                "veth",
                ((Map<?, ?>)
                                Ip.json("-n", ns, "-d", "link", "show", "dev", "cadastre.vx9")
                                        .get(0)
                                        .get("linkinfo"))
                        .get("info_kind"));

        // By hand: a stale FDB entry and neighbour, a wanted FDB entry deleted, one pointing
        // elsewhere, a neighbour with another MAC, an extra address, another MTU.
        String vx = "cadastre.vx4";
        Ip.runCommand(
                "bridge",
                "-n",
                ns,
                "fdb",
                "add",
                "02:ca:da:07:00:04",
                "dev",
                vx,
                "dst",
                "198.19.7.11",
                "self",
                "permanent");
        Ip.runCommand(
                "bridge",
                "-n",
                ns,
                "fdb",
                "del",
                "02:ca:da:05:00:04",
                "dev",
                vx,
                "dst",
                "198.19.5.11",
                "self");
        Ip.runCommand(
                "bridge",
                "-n",
                ns,
                "fdb",
                "replace",
                "02:ca:da:06:00:04",
                "dev",
                vx,
                "dst",
                "198.19.6.99",
                "self",
                "permanent");
        Ip.run(
                "-n",
                ns,
                "neigh",
                "add",
                "198.18.7.1",
                "lladdr",
                "02:ca:da:07:00:04",
                "dev",
                vx,
                "nud",
                "permanent");
        Ip.run(
                "-n",
                ns,
                "neigh",
                "replace",
                "198.18.6.1",
                "lladdr",
                "02:ca:da:66:00:04",
                "dev",
                vx,
                "nud",
                "permanent");
        Ip.run("-n", ns, "addr", "add", "198.18.77.1/24", "dev", vx);
        Ip.run("-n", ns, "link", "set", vx, "mtu", "1400");

        Result second = reconcile(h, routing, desired);

        assertEquals(
                Set.of("fdb fdb 02:ca:da:05:00:04 dst 198.19.5.11 dev cadastre.vx4"),
                texts(second.added()));
        assertEquals(
                Set.of(
                        "address 198.18.77.1/24 dev cadastre.vx4",
                        "fdb fdb 02:ca:da:07:00:04 dst 198.19.7.11 dev cadastre.vx4",
                        "neighbour neighbour 198.18.7.1 lladdr 02:ca:da:07:00:04 dev cadastre.vx4"),
                texts(second.removed()));
        assertEquals(
                Set.of(
                        "device cadastre.vx4 mtu 1450 (was 1400)",
                        "fdb fdb 02:ca:da:06:00:04 dst 198.19.6.11 dev cadastre.vx4 (was fdb 02:ca:da:06:00:04 dst 198.19.6.99"
                                + " dev cadastre.vx4)",
                        "neighbour neighbour 198.18.6.1 lladdr 02:ca:da:06:00:04 dev cadastre.vx4 (was lladdr 02:ca:da:66:00:04)"),
                texts(second.replaced()));
        assertEquals(
                Set.of(
                        "02:ca:da:05:00:04 dst 198.19.5.11 self permanent",
                        "02:ca:da:06:00:04 dst 198.19.6.11 self permanent"),
                fdb(ns, vx));
        assertEquals(
                Set.of(
                        "198.18.5.1 lladdr 02:ca:da:05:00:04 PERMANENT proto 202",
                        "198.18.6.1 lladdr 02:ca:da:06:00:04 PERMANENT proto 202"),
                neighbours(ns, vx));
        assertEquals(Set.of("198.18.4.1/32"), Ip.globalAddresses(ns, vx));

        // Down takes the routes through the device along, a new MAC its neighbour entries; all come
        // back.
        Ip.run("-n", ns, "link", "set", vx, "down", "address", "02:ca:da:44:00:04");
        Result third = reconcile(h, routing, desired);
        assertTrue(
                third.replaced()
                        .containsAll(
                                List.of(
                                        new HostRouting.Change(
                                                Kind.DEVICE,
                                                "cadastre.vx4 address 02:ca:da:04:00:04 (was 02:ca:da:44:00:04)"),
                                        new HostRouting.Change(
                                                Kind.DEVICE, "cadastre.vx4 up (was down)"))),
                third.toString());
        assertEquals("02:ca:da:04:00:04", Ip.link(ns, vx).get("address"));
        assertEquals(
                Set.of("198.18.5.0/26 via 198.18.5.1 dev cadastre.vx4 onlink mtu 1450"),
                cadastreRoutes(ns, "-4"));
        assertEquals(2, neighbours(ns, vx).size());
        assertEquals(2, fdb(ns, vx).size());

        Result fourth = reconcile(h, routing, desired);
        assertEquals(0, fourth.changes(), fourth.toString());
        assertEquals(1, fourth.conflicts().size());
        assertEquals(3, fourth.errors().size());

        Result emptied = reconcile(h, routing, Desired.empty());
        assertEquals(
                Set.of("device vxlan cadastre.vx4 id 4242"),
                texts(emptied.removed()),
                "its routes went with it");
        assertEquals(Set.of(), cadastreRoutes(ns, "-4"));
        assertTrue(Ip.linkExists(ns, "other.vx"));
        assertTrue(Ip.linkExists(ns, "cadastre.vx9"));
    }

    @Test
    void onKernelsUpTo57TxChecksumOffloadIsTurnedOffOnTheVxlanDevice() throws Exception {
        TestNet.Host h = singleHost();
        VxlanDevice vx4 =
                new VxlanDevice(
                        "cadastre.vx4",
                        4242,
                        4789,
                        IpPrefix.literal("198.19.4.11"),
                        "eth0",
                        "02:ca:da:04:00:04",
                        0,
                        null,
                        List.of(),
                        List.of());
        Desired desired = new Desired(List.of(), List.of(vx4));

        Result current =
                reconcile(
                        h, new NetlinkHostRouting(Optional.of(new KernelVersion(6, 18))), desired);
        assertEquals(1, current.changes(), current.toString());
        assertTrue(
                h.call(() -> Ethtool.txChecksum("cadastre.vx4")),
                "left on where the kernel is fine");
        assertEquals(
                1450L,
                Ip.link(h.netns(), "cadastre.vx4").get("mtu"),
                "mtu 0: the kernel's maximum");

        HostRouting old = new NetlinkHostRouting(Optional.of(new KernelVersion(5, 4)));
        Result first = reconcile(h, old, desired);
        assertEquals(
                List.of(
                        new HostRouting.Change(
                                Kind.DEVICE,
                                "cadastre.vx4 tx checksum offload off (was on;"
                                        + " broken for VXLAN on kernel 5.4 <= 5.7)")),
                first.replaced());
        assertFalse(h.call(() -> Ethtool.txChecksum("cadastre.vx4")));
        assertEquals(0, reconcile(h, old, desired).changes());
    }

    @Test
    void sysctlsAreThoseOfTheCallingThreadsNamespace() throws Exception {
        String rootForwarding = Files.readString(Path.of("/proc/sys/net/ipv4/ip_forward")).trim();
        TestNet.Host h = singleHost();
        h.call(
                () -> {
                    HostSysctls sysctls = new HostSysctls();
                    sysctls.setIpv4Forwarding(!"1".equals(rootForwarding));
                    sysctls.setIpv6Forwarding(true);
                    sysctls.setAcceptRa("eth0", 2);
                    sysctls.setRpFilter("eth0", 1);
                    assertEquals(!"1".equals(rootForwarding), sysctls.ipv4Forwarding());
                    assertTrue(sysctls.ipv6Forwarding());
                    assertEquals(2, sysctls.acceptRa("eth0"));
                    assertEquals(1, sysctls.rpFilter("eth0"));
                    DataplaneException missing =
                            assertThrows(DataplaneException.class, () -> sysctls.rpFilter("eth9"));
                    assertTrue(missing.getMessage().contains("no such file"), missing.getMessage());
                    assertThrows(
                            DataplaneException.class,
                            () -> sysctls.setAcceptRa("../../ipv4/ip_forward", 1));
                    return null;
                });
        assertEquals(
                !"1".equals(rootForwarding) ? "1" : "0", inside(h.netns(), "net/ipv4/ip_forward"));
        assertEquals("1", inside(h.netns(), "net/ipv6/conf/all/forwarding"));
        assertEquals("2", inside(h.netns(), "net/ipv6/conf/eth0/accept_ra"));
        assertEquals("1", inside(h.netns(), "net/ipv4/conf/eth0/rp_filter"));
        assertEquals(
                rootForwarding,
                Files.readString(Path.of("/proc/sys/net/ipv4/ip_forward")).trim(),
                "the process's own namespace is untouched");
    }

    /** Reads a /proc/sys file from a process inside the namespace: an independent look. */
    private static String inside(String ns, String key) {
        return Ip.runCommand("ip", "netns", "exec", ns, "cat", "/proc/sys/" + key).trim();
    }

    /**
     * The figures: reconcile time for 1,000 IPv4 and 1,000 IPv6 routes (one per block of a
     * 1,000-node cluster, per family) when all are new, when none changed, and when a tenth moved
     * to another gateway and a tenth went away. Printed, not asserted beyond the counts: the
     * machine is shared.
     */
    @Test
    void reconcileTimeForTwoThousandRoutes() throws Exception {
        TestNet.Host h = singleHost();
        int n = 1000;
        HostRouting routing = new NetlinkHostRouting();
        Result added = reconcile(h, routing, new Desired(manyRoutes(n, 0, n), List.of()));
        assertEquals(2 * n, added.added().size());
        assertClean(added);
        Result unchanged = reconcile(h, routing, new Desired(manyRoutes(n, 0, n), List.of()));
        assertEquals(0, unchanged.changes());
        Result churn =
                reconcile(h, routing, new Desired(manyRoutes(n, n / 10, 9 * n / 10), List.of()));
        assertEquals(2 * n / 10, churn.removed().size(), churn.summary());
        assertEquals(2 * n / 10, churn.replaced().size(), churn.summary());
        assertEquals(
                2 * n - 2 * n / 10,
                Ip.json("-n", h.netns(), "route", "show", "proto", "202").size()
                        + Ip.json("-n", h.netns(), "-6", "route", "show", "proto", "202").size());
        System.out.printf(
                "figure: reconcile of %d routes: all new %d ms, none changed %d ms,"
                        + " %d replaced and %d removed %d ms%n",
                2 * n,
                added.elapsed().toMillis(),
                unchanged.elapsed().toMillis(),
                churn.replaced().size(),
                churn.removed().size(),
                churn.elapsed().toMillis());
    }

    /**
     * Routes to blocks 0..count-1 (198.18.0.0/26 on, fd00:198::/122 on), each via a peer on eth0;
     * blocks below {@code moved} via another gateway, blocks from {@code kept} on left out.
     */
    private static List<Route> manyRoutes(int count, int moved, int kept) {
        List<Route> routes = new ArrayList<>();
        for (int b = 0; b < Math.min(count, kept); b++) {
            String gw = b < moved ? "13" : "12";
            routes.add(
                    Route.via(
                            IpPrefix.parse("198.18." + (b / 4) + "." + (b % 4 * 64) + "/26"),
                            IpPrefix.literal("198.19.4." + gw),
                            "eth0",
                            0));
            routes.add(
                    Route.via(
                            IpPrefix.parse("fd00:198::" + Integer.toHexString(b * 64) + "/122"),
                            IpPrefix.literal("fd00:19:4::" + gw),
                            "eth0",
                            0));
        }
        return routes;
    }

    /** A host with eth0 (MTU 1500) at 198.19.4.11/24 and fd00:19:4::11/64; its peer end stays down. */
    private TestNet.Host singleHost() throws Exception {
        String ns = net.namespace("h");
        Ip.run("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0");
        TestNet.addresses(ns, "eth0", "198.19.4.11/24", "fd00:19:4::11/64");
        Ip.run("-n", ns, "link", "set", "peer0", "up");
        return net.host(ns);
    }

    private static Set<String> texts(List<HostRouting.Change> changes) {
        Set<String> out = new TreeSet<>();
        changes.forEach(c -> out.add(c.toString()));
        return out;
    }

    /** @return the main table's proto-static IPv4 routes, e.g. {@code "198.18.8.0/26 dev eth0 proto static"} */
    private static Set<String> staticRoutes(String ns) {
        Set<String> out = new TreeSet<>();
        for (Map<String, Object> r :
                Ip.json("-n", ns, "-4", "route", "show", "table", "main", "proto", "static")) {
            out.add(
                    r.get("dst")
                            + (r.containsKey("gateway") ? " via " + r.get("gateway") : "")
                            + " dev "
                            + r.get("dev")
                            + " proto static");
        }
        return out;
    }

    /** Host i's pods: 198.18.i.5 and fd00:198::i:5, in its blocks. */
    private static String podV4(int i) {
        return "198.18." + i + ".5";
    }

    private static String podV6(int i) {
        return "fd00:198::" + i + ":5";
    }

    /** Host i's blocks: 198.18.i.0/26 and fd00:198::i:0/122. */
    private static IpPrefix blockV4(int i) {
        return IpPrefix.parse("198.18." + i + ".0/26");
    }

    private static IpPrefix blockV6(int i) {
        return IpPrefix.parse("fd00:198::" + i + ":0/122");
    }

    private static void enableForwarding(TestNet.Host h) throws Exception {
        h.call(
                () -> {
                    HostSysctls sysctls = new HostSysctls();
                    sysctls.setIpv4Forwarding(true);
                    sysctls.setIpv6Forwarding(true);
                    return null;
                });
    }

    private static Result reconcile(TestNet.Host h, Desired desired) throws Exception {
        return reconcile(h, new NetlinkHostRouting(), desired);
    }

    private static Result reconcile(TestNet.Host h, HostRouting routing, Desired desired)
            throws Exception {
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
        for (Map<String, Object> r :
                Ip.json("-n", ns, "-d", family, "route", "show", "table", "main", "proto", "202")) {
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
