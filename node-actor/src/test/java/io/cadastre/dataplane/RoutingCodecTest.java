package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.HostRouting.Desired;
import io.cadastre.dataplane.HostRouting.FdbEntry;
import io.cadastre.dataplane.HostRouting.NeighbourEntry;
import io.cadastre.dataplane.HostRouting.Route;
import io.cadastre.dataplane.HostRouting.VxlanDevice;
import io.cadastre.dataplane.Rtnetlink.Link;
import io.cadastre.dataplane.Rtnetlink.Neighbour;
import io.cadastre.dataplane.Rtnetlink.RouteInfo;
import io.cadastre.dataplane.Rtnetlink.Vxlan;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The host-routing messages without a kernel: each request decodes, through the parser the dumps
 * use, into what it encoded (the kernel's dump replies share the requests' layout), plus the
 * wire details the kernel is strict about, and the desired state's checks.
 */
class RoutingCodecTest {
    private static final Map<Integer, String> NAMES = Map.of(2, "eth0", 7, "cadastre.vx4");

    @Test
    void routeWithGatewayOnlinkAndMtuRoundTrips() throws Exception {
        RouteInfo r =
                NetlinkHostRouting.routeInfo(
                        Route.via(IpPrefix.parse("198.18.2.0/26"), ip("198.19.1.12"), "eth0", 1450),
                        2);
        NetlinkRequest req =
                Rtnetlink.routeMessage(
                        LinuxNetlinkAbi.RTM_NEWROUTE,
                        LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL,
                        r);
        ByteBuffer wire = wire(req);

        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, then u32 flags.
        assertEquals(LinuxNetlinkAbi.AF_INET, wire.get(16));
        assertEquals(26, wire.get(17));
        assertEquals((byte) LinuxNetlinkAbi.RT_TABLE_MAIN, wire.get(20));
        assertEquals((byte) 202, wire.get(21));
        assertEquals(LinuxNetlinkAbi.RTN_UNICAST, wire.get(23));
        assertEquals(LinuxNetlinkAbi.RTNH_F_ONLINK, wire.getInt(24));
        assertEquals(r, Rtnetlink.parseRoute(message(wire), true));
        assertEquals(
                "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink mtu 1450 proto 202",
                r.describe(NAMES));
    }

    @Test
    void blackholeAndIpv6RoutesRoundTrip() throws Exception {
        RouteInfo blackhole =
                NetlinkHostRouting.routeInfo(
                        Route.blackhole(IpPrefix.parse("fd00:198::1:0/122")), 0);
        assertEquals(
                blackhole,
                Rtnetlink.parseRoute(
                        message(
                                wire(
                                        Rtnetlink.routeMessage(
                                                LinuxNetlinkAbi.RTM_NEWROUTE, 0, blackhole))),
                        true));
        assertEquals("blackhole fd00:198::1:0/122 proto 202", blackhole.describe(NAMES));

        RouteInfo v6 =
                NetlinkHostRouting.routeInfo(
                        Route.via(
                                IpPrefix.parse("fd00:198::2:0/122"),
                                ip("fd00:198::2:1"),
                                "cadastre.vx4",
                                0),
                        7);
        assertEquals(
                v6,
                Rtnetlink.parseRoute(
                        message(wire(Rtnetlink.routeMessage(LinuxNetlinkAbi.RTM_NEWROUTE, 0, v6))),
                        true));

        RouteInfo defaultRoute =
                new RouteInfo(
                        Rtnetlink.zero(LinuxNetlinkAbi.AF_INET),
                        0,
                        LinuxNetlinkAbi.RTPROT_BOOT,
                        LinuxNetlinkAbi.RTN_UNICAST,
                        0,
                        0,
                        ip("198.19.1.1"),
                        2,
                        0,
                        0);
        ByteBuffer wire =
                wire(Rtnetlink.routeMessage(LinuxNetlinkAbi.RTM_NEWROUTE, 0, defaultRoute));
        assertEquals(
                16 + LinuxNetlinkAbi.RTMSG_LEN + 8 + 8,
                wire.limit(),
                "no RTA_DST for a default route");
        assertEquals(defaultRoute, Rtnetlink.parseRoute(message(wire), true));
    }

    @Test
    void routesOfOtherTablesAreSkippedByTheMainTableParser() throws Exception {
        ByteBuffer wire =
                wire(
                        new NetlinkRequest(LinuxNetlinkAbi.RTM_NEWROUTE, 0)
                                .rtmsg(
                                        LinuxNetlinkAbi.AF_INET,
                                        32,
                                        255,
                                        LinuxNetlinkAbi.RTPROT_KERNEL,
                                        254,
                                        2)
                                .attr(LinuxNetlinkAbi.RTA_DST, ip("198.19.1.11").getAddress()));
        assertNull(Rtnetlink.parseRoute(message(wire), true), "table 255, local");
        assertEquals(32, Rtnetlink.parseRoute(message(wire), false).destinationLength());
    }

    @Test
    void deleteNamesProtocolTypeAndMetricOnly() throws Exception {
        RouteInfo ours =
                new RouteInfo(
                        ip("fd00:198::9:0"),
                        122,
                        202,
                        LinuxNetlinkAbi.RTN_UNICAST,
                        0,
                        LinuxNetlinkAbi.RTNH_F_ONLINK,
                        ip("fd00:19:4::99"),
                        2,
                        1024,
                        1400);
        RouteInfo match =
                new RouteInfo(
                        ours.destination(),
                        122,
                        202,
                        LinuxNetlinkAbi.RTN_UNICAST,
                        LinuxNetlinkAbi.RT_SCOPE_NOWHERE,
                        0,
                        null,
                        -1,
                        1024,
                        0);
        ByteBuffer wire = wire(Rtnetlink.routeMessage(LinuxNetlinkAbi.RTM_DELROUTE, 0, match));
        RouteInfo parsed = Rtnetlink.parseRoute(message(wire), true);
        assertEquals(202, parsed.protocol());
        assertEquals(1024, parsed.priority());
        assertNull(parsed.gateway());
        assertEquals(-1, parsed.outputIndex());
    }

    @Test
    void vxlanLinkRoundTripsWithThePortInNetworkOrder() throws Exception {
        byte[] mac = HexFormat.ofDelimiter(":").parseHex("02:ca:da:04:00:04");
        Vxlan config = new Vxlan(4242, ip("fd00:19:4::11"), 4789, 2, false);
        ByteBuffer wire = wire(Rtnetlink.vxlanMessage("cadastre.vx6", mac, 1430, config));

        Link link = Rtnetlink.parseLink(message(wire));
        assertEquals("cadastre.vx6", link.name());
        assertEquals("vxlan", link.kind());
        assertEquals("02:ca:da:04:00:04", link.mac());
        assertEquals(1430, link.mtu());
        assertEquals(config, link.vxlan());
        NetlinkMessage.Attributes data =
                message(wire)
                        .attributes(LinuxNetlinkAbi.IFINFOMSG_LEN)
                        .nested(LinuxNetlinkAbi.IFLA_LINKINFO, 0)
                        .nested(LinuxNetlinkAbi.IFLA_INFO_DATA, 0);
        assertEquals(
                "12b5",
                HexFormat.of().formatHex(data.bytes(LinuxNetlinkAbi.IFLA_VXLAN_PORT)),
                "4789 big-endian");
        assertEquals(0, data.u8(LinuxNetlinkAbi.IFLA_VXLAN_LEARNING));
        assertFalse(data.has(LinuxNetlinkAbi.IFLA_VXLAN_LOCAL), "LOCAL6 for an IPv6 underlay");

        Link v4 =
                Rtnetlink.parseLink(
                        message(
                                wire(
                                        Rtnetlink.vxlanMessage(
                                                "cadastre.vx4",
                                                mac,
                                                0,
                                                new Vxlan(7, ip("198.19.4.11"), 8472, 3, true)))));
        assertEquals(new Vxlan(7, ip("198.19.4.11"), 8472, 3, true), v4.vxlan());
        assertEquals(-1, v4.mtu(), "no IFLA_MTU: the kernel derives it");
    }

    @Test
    void neighbourAndFdbEntriesRoundTrip() throws Exception {
        Neighbour neighbour =
                new Neighbour(
                        LinuxNetlinkAbi.AF_INET,
                        7,
                        ip("198.18.5.1"),
                        "02:ca:da:05:00:04",
                        LinuxNetlinkAbi.NUD_PERMANENT,
                        0,
                        202);
        ByteBuffer wire =
                wire(Rtnetlink.neighbourMessage(LinuxNetlinkAbi.RTM_NEWNEIGH, 0, neighbour));
        // ndmsg: family, pad, pad16, ifindex, u16 state, u8 flags, u8 type.
        assertEquals(7, wire.getInt(20));
        assertEquals(LinuxNetlinkAbi.NUD_PERMANENT, wire.getShort(24));
        assertEquals(neighbour, Rtnetlink.parseNeighbour(message(wire)));

        Neighbour fdb =
                new Neighbour(
                        LinuxNetlinkAbi.AF_BRIDGE,
                        7,
                        ip("fd00:19:5::11"),
                        "02:ca:da:05:00:06",
                        LinuxNetlinkAbi.NUD_PERMANENT,
                        LinuxNetlinkAbi.NTF_SELF,
                        0);
        ByteBuffer fdbWire = wire(Rtnetlink.neighbourMessage(LinuxNetlinkAbi.RTM_NEWNEIGH, 0, fdb));
        assertEquals(LinuxNetlinkAbi.NTF_SELF, fdbWire.get(26));
        assertEquals(fdb, Rtnetlink.parseNeighbour(message(fdbWire)));
        assertEquals(
                "fdb 02:ca:da:05:00:06 dst fd00:19:5::11 dev cadastre.vx6",
                Rtnetlink.describe(fdb, "cadastre.vx6"));
    }

    @Test
    void sameRouteIgnoresKernelStateButNotTheRoute() throws Exception {
        RouteInfo want =
                NetlinkHostRouting.routeInfo(
                        Route.via(IpPrefix.parse("198.18.2.0/26"), ip("198.19.1.12"), "eth0", 0),
                        2);
        int linkdown = 16;
        assertTrue(NetlinkHostRouting.same(withFlags(want, want.flags() | linkdown, 0), want));
        assertFalse(NetlinkHostRouting.same(withFlags(want, 0, 0), want), "not onlink");
        assertFalse(
                NetlinkHostRouting.same(withFlags(want, want.flags(), 100), want),
                "another metric");
        RouteInfo blackhole =
                NetlinkHostRouting.routeInfo(
                        Route.blackhole(IpPrefix.parse("fd00:198::1:0/122")), 0);
        RouteInfo reported =
                new RouteInfo(
                        blackhole.destination(),
                        122,
                        202,
                        LinuxNetlinkAbi.RTN_BLACKHOLE,
                        0,
                        0,
                        null,
                        1,
                        1024,
                        0);
        assertTrue(
                NetlinkHostRouting.same(reported, blackhole),
                "an IPv6 blackhole reports lo and metric 1024");
    }

    @Test
    void kernelVersions() {
        assertEquals(Optional.of(new KernelVersion(6, 18)), KernelVersion.parse("6.18.44-fc-v657"));
        assertEquals(
                Optional.of(new KernelVersion(5, 4)), KernelVersion.parse("5.4.0-150-generic"));
        assertEquals(Optional.empty(), KernelVersion.parse("linux"));
        assertTrue(new KernelVersion(5, 7).vxlanTxChecksumBroken());
        assertTrue(new KernelVersion(4, 19).vxlanTxChecksumBroken());
        assertFalse(new KernelVersion(5, 8).vxlanTxChecksumBroken());
        assertFalse(new KernelVersion(6, 1).vxlanTxChecksumBroken());
        assertTrue(KernelVersion.running().isPresent());
    }

    @Test
    void prefixesAreStrict() {
        assertEquals("198.18.1.0/26", IpPrefix.parse("198.18.1.0/26").toString());
        assertEquals("fd00:198::1:0/122", IpPrefix.parse("fd00:198:0:0:0:0:1:0/122").toString());
        assertEquals(IpPrefix.parse("198.18.1.5/32"), IpPrefix.host(ip("198.18.1.5")));
        for (String bad :
                List.of(
                        "198.18.1.1/26",
                        "198.18.1.0/33",
                        "198.18.1.0",
                        "example.com/24",
                        "fd00::1/64",
                        "cafe/16",
                        "198.18.1.0/x")) {
            assertThrows(IllegalArgumentException.class, () -> IpPrefix.parse(bad), bad);
        }
    }

    @Test
    void desiredStateIsCheckedWhenBuilt() {
        IpPrefix block = IpPrefix.parse("198.18.1.0/26");
        InetAddress local = ip("198.19.4.11");
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        new Desired(
                                List.of(
                                        Route.blackhole(block),
                                        Route.via(block, ip("198.19.4.12"), "eth0", 0)),
                                List.of()),
                "two routes to one destination");
        assertThrows(
                IllegalArgumentException.class,
                () -> Route.via(block, ip("fd00:19:4::12"), "eth0", 0));
        assertThrows(
                IllegalArgumentException.class,
                () -> Route.via(block, ip("198.19.4.12"), "a/b", 0));
        assertThrows(
                IllegalArgumentException.class,
                () -> new Route(block, null, null, 1400),
                "blackhole with mtu");
        assertThrows(
                IllegalArgumentException.class,
                () -> vxlan("vx4", 4242, local, "02:ca:da:00:00:01"),
                "no prefix");
        assertThrows(
                IllegalArgumentException.class,
                () -> vxlan("cadastre.vxlan46", 4242, local, "02:ca:da:00:00:01"),
                "16 bytes: above IFNAMSIZ - 1");
        assertThrows(
                IllegalArgumentException.class,
                () -> vxlan("cadastre.vx4", 0, local, "02:ca:da:00:00:01"));
        assertThrows(
                IllegalArgumentException.class,
                () -> vxlan("cadastre.vx4", 1 << 24, local, "02:ca:da:00:00:01"));
        assertThrows(
                IllegalArgumentException.class,
                () -> vxlan("cadastre.vx4", 4242, local, "03:ca:da:00:00:01"),
                "multicast MAC");
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        vx4(
                                local,
                                null,
                                List.of(new FdbEntry("02:ca:da:00:00:02", ip("fd00:19:4::12"))),
                                List.of()),
                "FDB remote of another family than the underlay");
        assertThrows(
                IllegalArgumentException.class,
                () -> vx4(local, IpPrefix.parse("198.18.1.0/26"), List.of(), List.of()),
                "tunnel address not a host prefix");
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        vx4(
                                local,
                                null,
                                List.of(),
                                List.of(
                                        new NeighbourEntry(ip("198.18.2.1"), "02:ca:da:00:00:02"),
                                        new NeighbourEntry(ip("198.18.2.1"), "02:ca:da:00:00:03"))),
                "two entries for an address");
        VxlanDevice ok = vxlan("cadastre.vx4", 4242, local, "02:CA:DA:00:00:01");
        assertEquals(
                "02:ca:da:00:00:01",
                ok.mac(),
                "MACs are kept in lower case, as the kernel reports them");
        assertEquals(1450, ok.maxMtu(1500));
        assertEquals(
                1430,
                vxlan("cadastre.vx6", 4242, ip("fd00:19:4::11"), "02:ca:da:00:00:01").maxMtu(1500));
    }

    /** @return device cadastre.vx4 (VNI 4242, MAC 02:ca:da:00:00:01, no MTU) with these tunnel address and entries */
    private static VxlanDevice vx4(
            InetAddress local,
            IpPrefix tunnel,
            List<FdbEntry> fdb,
            List<NeighbourEntry> neighbours) {
        return new VxlanDevice(
                "cadastre.vx4",
                4242,
                4789,
                local,
                "eth0",
                "02:ca:da:00:00:01",
                0,
                tunnel,
                fdb,
                neighbours);
    }

    private static VxlanDevice vxlan(String name, int vni, InetAddress local, String mac) {
        return new VxlanDevice(name, vni, 4789, local, "eth0", mac, 0, null, List.of(), List.of());
    }

    private static RouteInfo withFlags(RouteInfo r, int flags, int priority) {
        return new RouteInfo(
                r.destination(),
                r.destinationLength(),
                r.protocol(),
                r.type(),
                r.scope(),
                flags,
                r.gateway(),
                r.outputIndex(),
                priority,
                r.mtu());
    }

    private static ByteBuffer wire(NetlinkRequest req) {
        return ByteBuffer.wrap(req.encode(1, LinuxNetlinkAbi.NLM_F_REQUEST))
                .order(ByteOrder.nativeOrder());
    }

    /** The request as a received message: header fields, payload from the family header on. */
    private static NetlinkMessage message(ByteBuffer wire) {
        return new NetlinkMessage(
                wire.getShort(4),
                0,
                1,
                0,
                wire.slice(
                                LinuxNetlinkAbi.NLMSG_HDRLEN,
                                wire.limit() - LinuxNetlinkAbi.NLMSG_HDRLEN)
                        .order(ByteOrder.nativeOrder()));
    }

    private static InetAddress ip(String literal) {
        return IpPrefix.literal(literal);
    }
}
