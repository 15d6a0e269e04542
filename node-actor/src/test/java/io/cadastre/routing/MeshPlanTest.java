package io.cadastre.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.HostNetwork.InterfaceAddress;
import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.HostRouting.VxlanDevice;
import io.cadastre.dataplane.IpPrefix;
import io.cadastre.ipam.Cidr;
import io.cadastre.routing.MeshPlan.Family;
import io.cadastre.routing.MeshState.Claim;
import io.cadastre.routing.MeshState.NodeFacts;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.PeerInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * {@link MeshPlan#compute}, table-driven: each case is a host (mode, underlay, tunnel addresses),
 * the cluster state it read, and the routes, VXLAN devices (with their FDB and neighbour entries),
 * problems and wanted tunnel families that must follow.
 *
 * <p>The hosts: h1 (this one) at 198.19.255.11/24 and fd00:19:255::11/64; h2 and h3 on the same
 * subnets; h4 behind a router at 198.19.254.14/24 and fd00:19:254::14/64. Node hN's blocks are
 * 198.18.N.0/26 and fd00:198::N:0/122; its tunnel addresses 198.18.N.1 and fd00:198::N:1.
 */
class MeshPlanTest {
    private static final Underlay UNDERLAY =
            new Underlay("eth0", 1500, ia("198.19.255.11/24"), ia("fd00:19:255::11/64"));
    private static final Underlay V4_ONLY =
            new Underlay("eth0", 1500, ia("198.19.255.11/24"), null);

    private record Case(
            String name,
            MeshPlan.Self self,
            MeshState state,
            Set<String> routes,
            Set<String> devices,
            List<String> problems,
            Set<Family> tunnels) {}

    @Test
    void plans() {
        List<Case> cases = new ArrayList<>();
        cases.add(
                new Case(
                        "a single host: its blackholes and the pods' gateway, no device",
                        self(RoutingMode.CROSS_SUBNET, UNDERLAY, false),
                        state().block(1, "h1")
                                .node(
                                        "h1",
                                        "cross-subnet",
                                        "198.19.255.11/24",
                                        "fd00:19:255::11/64",
                                        false)
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "blackhole 198.18.1.0/26",
                                "blackhole fd00:198::1:0/122"),
                        Set.of(),
                        List.of(),
                        Set.of()));
        cases.add(
                new Case(
                        "cross-subnet: direct on the subnet, VXLAN behind the router",
                        self(RoutingMode.CROSS_SUBNET, UNDERLAY, true),
                        state().block(1, "h1")
                                .block(2, "h2")
                                .block(4, "h4")
                                .node(
                                        "h2",
                                        "cross-subnet",
                                        "198.19.255.12/24",
                                        "fd00:19:255::12/64",
                                        true)
                                .node(
                                        "h4",
                                        "cross-subnet",
                                        "198.19.254.14/24",
                                        "fd00:19:254::14/64",
                                        true)
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "blackhole 198.18.1.0/26",
                                "blackhole fd00:198::1:0/122",
                                "198.18.2.0/26 via 198.19.255.12 dev eth0 onlink",
                                "fd00:198::2:0/122 via fd00:19:255::12 dev eth0 onlink",
                                "198.18.4.0/26 via 198.18.4.1 dev cadastre.vx4 onlink",
                                "fd00:198::4:0/122 via fd00:198::4:1 dev cadastre.vx6 onlink"),
                        Set.of(
                                "cadastre.vx4 vni 7202 port 4789 local 198.19.255.11 dev eth0 mtu 1450 tunnel 198.18.1.1/32"
                                        + " fdb ["
                                        + fdb("h4", "198.19.254.14")
                                        + "] neighbours [neighbour 198.18.4.1 lladdr "
                                        + Vtep.mac("h4")
                                        + "]",
                                "cadastre.vx6 vni 7202 port 4789 local fd00:19:255::11 dev eth0 mtu 1430 tunnel fd00:198::1:1/128"
                                        + " fdb ["
                                        + fdb("h4", "fd00:19:254::14")
                                        + "] neighbours [neighbour fd00:198::4:1 lladdr "
                                        + Vtep.mac("h4")
                                        + "]"),
                        List.of(),
                        Set.of(Family.IPV4, Family.IPV6)));
        cases.add(
                new Case(
                        "borrowed addresses: host routes to where they live, none for this host's own",
                        self(RoutingMode.DIRECT, UNDERLAY, false),
                        state().block(1, "h1")
                                .block(2, "h2")
                                .block(3, "h3")
                                .node(
                                        "h2",
                                        "direct",
                                        "198.19.255.12/24",
                                        null,
                                        false,
                                        held("198.18.1.7", 1),
                                        held("198.18.2.5", 2))
                                .node(
                                        "h3",
                                        "direct",
                                        "198.19.255.13/24",
                                        null,
                                        false,
                                        held("198.18.2.9", 2))
                                .node(
                                        "h1",
                                        "direct",
                                        "198.19.255.11/24",
                                        null,
                                        false,
                                        held("198.18.3.8", 3))
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "blackhole 198.18.1.0/26",
                                "blackhole fd00:198::1:0/122",
                                "198.18.2.0/26 via 198.19.255.12 dev eth0 onlink",
                                "198.18.3.0/26 via 198.19.255.13 dev eth0 onlink",
                                "198.18.1.7/32 via 198.19.255.12 dev eth0 onlink",
                                "198.18.2.9/32 via 198.19.255.13 dev eth0 onlink"),
                        Set.of(),
                        List.of(
                                "node h2 has no IPv6 underlay address: fd00:198::2:0/122 on h2 is not routed",
                                "node h3 has no IPv6 underlay address: fd00:198::3:0/122 on h3 is not routed"),
                        Set.of()));
        cases.add(
                new Case(
                        "a removed node is withdrawn; an unreachable one is not (nothing here tells)",
                        self(RoutingMode.CROSS_SUBNET, V4_ONLY, false),
                        state().block(2, "h2")
                                .block(3, "h3")
                                .node("h2", "cross-subnet", "198.19.255.12/24", null, false)
                                .removed("h3", held("198.18.2.33", 2))
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "198.18.2.0/26 via 198.19.255.12 dev eth0 onlink"),
                        Set.of(),
                        List.of(
                                "this host has no IPv6 underlay address: fd00:198::2:0/122 on h2 is not routed"),
                        Set.of()));
        cases.add(
                new Case(
                        "a node without a peer: its blocks are not routed, and said so",
                        self(RoutingMode.CROSS_SUBNET, V4_ONLY, false),
                        state().claim("198.18.5.0/26", "h5").build(),
                        Set.of("169.254.1.1/32 dev lo"),
                        Set.of(),
                        List.of(
                                "node h5 has published no peer (its agent has not started since, or runs mode none):"
                                        + " 198.18.5.0/26 is not routed"),
                        Set.of()));
        cases.add(
                new Case(
                        "direct mode cannot reach a peer behind a router",
                        self(RoutingMode.DIRECT, V4_ONLY, false),
                        state().claim("198.18.4.0/26", "h4")
                                .node("h4", "direct", "198.19.254.14/24", null, false)
                                .build(),
                        Set.of("169.254.1.1/32 dev lo"),
                        Set.of(),
                        List.of(
                                "node h4 (198.19.254.14/24) is not on this host's subnet 198.19.255.11/24: direct mode needs one"
                                        + " L2 segment (cross-subnet would use VXLAN); 198.18.4.0/26 is not routed"),
                        Set.of()));
        cases.add(
                new Case(
                        "vxlan mode: every peer over VXLAN; one without a tunnel address waits",
                        self(RoutingMode.VXLAN, V4_ONLY, false),
                        state().claim("198.18.2.0/26", "h2")
                                .claim("198.18.3.0/26", "h3")
                                .node("h2", "vxlan", "198.19.255.12/24", null, true)
                                .node("h3", "vxlan", "198.19.255.13/24", null, false)
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "198.18.2.0/26 via 198.18.2.1 dev cadastre.vx4 onlink"),
                        Set.of(
                                "cadastre.vx4 vni 7202 port 4789 local 198.19.255.11 dev eth0 mtu 1450 tunnel none fdb ["
                                        + fdb("h2", "198.19.255.12")
                                        + "] neighbours [neighbour 198.18.2.1 lladdr "
                                        + Vtep.mac("h2")
                                        + "]"),
                        List.of(
                                "node h3 has no IPv4 tunnel address yet: 198.18.3.0/26 is not routed"),
                        Set.of(Family.IPV4)));
        cases.add(
                new Case(
                        "vxlan mode on dual-stack hosts with IPv4 pools only: no IPv6 device, no IPv6 tunnel wanted",
                        self(RoutingMode.VXLAN, UNDERLAY, true),
                        state().claim("198.18.1.0/26", "h1")
                                .claim("198.18.2.0/26", "h2")
                                .node("h2", "vxlan", "198.19.255.12/24", "fd00:19:255::12/64", true)
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "blackhole 198.18.1.0/26",
                                "198.18.2.0/26 via 198.18.2.1 dev cadastre.vx4 onlink"),
                        Set.of(
                                "cadastre.vx4 vni 7202 port 4789 local 198.19.255.11 dev eth0 mtu 1450 tunnel 198.18.1.1/32 fdb ["
                                        + fdb("h2", "198.19.255.12")
                                        + "] neighbours [neighbour 198.18.2.1 lladdr "
                                        + Vtep.mac("h2")
                                        + "]"),
                        List.of(),
                        Set.of(Family.IPV4)));
        cases.add(
                new Case(
                        "cross-subnet on one subnet, but the peer runs vxlan: a device to receive on, no entries",
                        self(RoutingMode.CROSS_SUBNET, V4_ONLY, true),
                        state().claim("198.18.2.0/26", "h2")
                                .node("h2", "vxlan", "198.19.255.12/24", null, true)
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "198.18.2.0/26 via 198.19.255.12 dev eth0 onlink"),
                        Set.of(
                                "cadastre.vx4 vni 7202 port 4789 local 198.19.255.11 dev eth0 mtu 1450 tunnel 198.18.1.1/32 fdb []"
                                        + " neighbours []"),
                        List.of(),
                        Set.of(Family.IPV4)));
        cases.add(
                new Case(
                        "a borrowed tunnel address behind the router: a host route over VXLAN",
                        self(RoutingMode.CROSS_SUBNET, V4_ONLY, true),
                        state().claim("198.18.2.0/26", "h2")
                                .node("h2", "cross-subnet", "198.19.255.12/24", null, false)
                                .node(
                                        "h4",
                                        "cross-subnet",
                                        "198.19.254.14/24",
                                        null,
                                        true,
                                        held("198.18.2.60", 2))
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "198.18.2.0/26 via 198.19.255.12 dev eth0 onlink",
                                "198.18.2.60/32 via 198.18.4.1 dev cadastre.vx4 onlink"),
                        Set.of(
                                "cadastre.vx4 vni 7202 port 4789 local 198.19.255.11 dev eth0 mtu 1450 tunnel 198.18.1.1/32 fdb ["
                                        + fdb("h4", "198.19.254.14")
                                        + "] neighbours [neighbour 198.18.4.1 lladdr "
                                        + Vtep.mac("h4")
                                        + "]"),
                        List.of(),
                        Set.of(Family.IPV4)));
        cases.add(
                new Case(
                        "one address recorded by two nodes (a stale read): routed to the first, said so",
                        self(RoutingMode.DIRECT, V4_ONLY, false),
                        state().block(1, "h1")
                                .node(
                                        "h2",
                                        "direct",
                                        "198.19.255.12/24",
                                        null,
                                        false,
                                        held("198.18.1.9", 1))
                                .node(
                                        "h3",
                                        "direct",
                                        "198.19.255.13/24",
                                        null,
                                        false,
                                        held("198.18.1.9", 1))
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "blackhole 198.18.1.0/26",
                                "blackhole fd00:198::1:0/122",
                                "198.18.1.9/32 via 198.19.255.12 dev eth0 onlink"),
                        Set.of(),
                        List.of("address 198.18.1.9 is recorded by nodes h2 and h3: routed to h2"),
                        Set.of()));
        cases.add(
                new Case(
                        "blocks of one address: no blackhole for an own one (the pod's route is the route)",
                        self(RoutingMode.DIRECT, V4_ONLY, false),
                        state().claim("198.18.200.0/32", "h1")
                                .claim("198.18.200.1/32", "h2")
                                .node("h2", "direct", "198.19.255.12/24", null, false)
                                .build(),
                        Set.of(
                                "169.254.1.1/32 dev lo",
                                "198.18.200.1/32 via 198.19.255.12 dev eth0 onlink"),
                        Set.of(),
                        List.of(),
                        Set.of()));
        cases.add(
                new Case(
                        "mode none: nothing at all",
                        self(RoutingMode.NONE, UNDERLAY, true),
                        state().block(1, "h1")
                                .block(2, "h2")
                                .node("h2", "direct", "198.19.255.12/24", null, false)
                                .build(),
                        Set.of(),
                        Set.of(),
                        List.of(),
                        Set.of()));

        for (Case c : cases) {
            MeshPlan plan = MeshPlan.compute(c.self(), c.state());
            assertEquals(c.routes(), texts(plan), c.name());
            assertEquals(c.devices(), devices(plan.desired().devices()), c.name());
            assertEquals(c.problems(), plan.problems(), c.name());
            assertEquals(c.tunnels(), plan.tunnelsWanted(), c.name());
            assertEquals(
                    plan,
                    MeshPlan.compute(c.self(), c.state()),
                    c.name() + ": the same inputs, the same plan");
        }
    }

    @Test
    void thePeersTableSaysHowEachNodeIsReached() {
        MeshPlan plan =
                MeshPlan.compute(
                        self(RoutingMode.CROSS_SUBNET, UNDERLAY, true),
                        state().block(2, "h2")
                                .block(4, "h4")
                                .node(
                                        "h2",
                                        "cross-subnet",
                                        "198.19.255.12/24",
                                        "fd00:19:255::12/64",
                                        true)
                                .node("h4", "cross-subnet", "198.19.254.14/24", null, true)
                                .build());
        assertEquals(
                "h2 IPv4 direct IPv6 direct; h4 IPv4 vxlan IPv6 -",
                String.join(
                        "; ",
                        plan.peers().stream()
                                .map(
                                        p ->
                                                p.node()
                                                        + " IPv4 "
                                                        + (p.ipv4() == null ? "-" : p.ipv4())
                                                        + " IPv6 "
                                                        + (p.ipv6() == null ? "-" : p.ipv6()))
                                .toList()));
        assertEquals(
                Map.of("block", 3L, "borrowed", 0L, "blackhole", 0L, "gateway", 1L),
                plan.routeCounts());
        assertEquals(Map.of("direct", 1L, "vxlan", 1L), plan.peerCounts());
    }

    @Test
    void theVtepMacIsUnicastLocallyAdministeredAndStable() {
        for (String node : List.of("h1", "h2", "node-with-a-long-name.example.com")) {
            String mac = Vtep.mac(node);
            assertTrue(mac.matches("[0-9a-f]{2}(:[0-9a-f]{2}){5}"), mac);
            int first = Integer.parseInt(mac.substring(0, 2), 16);
            assertEquals(0, first & 1, "unicast: " + mac);
            assertEquals(2, first & 2, "locally administered: " + mac);
            assertEquals(mac, Vtep.mac(node));
        }
        assertTrue(!Vtep.mac("h1").equals(Vtep.mac("h2")));
    }

    @Test
    void thePodMtuFollowsTheMode() {
        RoutingSettings d = RoutingSettings.defaults();
        assertEquals(1430, d.podMtu(UNDERLAY, true), "cross-subnet over an IPv6 underlay");
        assertEquals(1450, d.podMtu(UNDERLAY, false), "no IPv6 pods: IPv4 VXLAN only");
        assertEquals(1450, d.podMtu(V4_ONLY, true));
        assertEquals(1500, with(RoutingMode.DIRECT).podMtu(UNDERLAY, true));
        assertEquals(0, RoutingSettings.none().podMtu(UNDERLAY, true));
        assertEquals(0, d.podMtu(null, true), "no underlay: the kernel's default");
    }

    /**
     * Outgoing NAT: every pool masquerades its pods' packets to outside all pools; each family
     * can be off; the operator's exempt networks keep the pods' addresses; no pool, no table; mode
     * none touches nothing.
     */
    @Test
    void outgoingNatMasqueradesEveryPoolToOutsideAllPools() {
        Map<String, Cidr> pools =
                Map.of(
                        "v4", Cidr.parse("198.18.0.0/16"),
                        "v6", Cidr.parse("fd00:198::/64"),
                        "other-v4", Cidr.parse("198.19.128.0/24"));
        MeshState state = new MeshState(state().block(1, "h1").build().claims(), Map.of(), pools);

        assertEquals(
                "masquerade 198.18.0.0/16, 198.19.128.0/24, fd00:198::/64 except to"
                        + " 198.18.0.0/16, 198.19.128.0/24, fd00:198::/64",
                MeshPlan.compute(self(RoutingMode.CROSS_SUBNET, UNDERLAY, false), state)
                        .desired()
                        .outgoingNat()
                        .toString());

        RoutingSettings v4Only =
                direct(
                        new RoutingSettings.NatOutgoing(
                                true, false, List.of(IpPrefix.parse("10.0.0.0/8"))));
        assertEquals(
                "masquerade 198.18.0.0/16, 198.19.128.0/24 except to 10.0.0.0/8, 198.18.0.0/16,"
                        + " 198.19.128.0/24, fd00:198::/64",
                MeshPlan.compute(new MeshPlan.Self("h1", v4Only, UNDERLAY, null, null), state)
                        .desired()
                        .outgoingNat()
                        .toString());

        RoutingSettings off = direct(RoutingSettings.NatOutgoing.OFF);
        assertEquals(
                HostRouting.OutgoingNat.NONE,
                MeshPlan.compute(new MeshPlan.Self("h1", off, UNDERLAY, null, null), state)
                        .desired()
                        .outgoingNat());
        assertEquals(
                HostRouting.OutgoingNat.NONE,
                MeshPlan.compute(
                                self(RoutingMode.DIRECT, UNDERLAY, false),
                                state().block(1, "h1").build())
                        .desired()
                        .outgoingNat(),
                "no pool read yet");
        assertEquals(
                HostRouting.OutgoingNat.NONE,
                MeshPlan.compute(self(RoutingMode.NONE, UNDERLAY, false), state)
                        .desired()
                        .outgoingNat());
    }

    // ---- building cases ----

    /** Direct mode, outgoing NAT as {@code nat} says. */
    private static RoutingSettings direct(RoutingSettings.NatOutgoing nat) {
        RoutingSettings d = with(RoutingMode.DIRECT);
        return new RoutingSettings(
                d.mode(), d.device(), d.vni(), d.port(), d.resync(), d.debounce(), nat);
    }

    private static RoutingSettings with(RoutingMode mode) {
        RoutingSettings d = RoutingSettings.defaults();
        return new RoutingSettings(
                mode,
                "",
                d.vni(),
                d.port(),
                Duration.ofSeconds(30),
                Duration.ZERO,
                RoutingSettings.NatOutgoing.ON);
    }

    private static MeshPlan.Self self(RoutingMode mode, Underlay underlay, boolean tunnels) {
        return new MeshPlan.Self(
                "h1",
                with(mode),
                underlay,
                tunnels ? IpPrefix.literal("198.18.1.1") : null,
                tunnels ? IpPrefix.literal("fd00:198::1:1") : null);
    }

    private static InterfaceAddress ia(String cidr) {
        int slash = cidr.indexOf('/');
        return new InterfaceAddress(
                IpPrefix.literal(cidr.substring(0, slash)),
                Integer.parseInt(cidr.substring(slash + 1)));
    }

    private static HeldAddress held(String address, int blockOf) {
        String v4block = "198.18." + blockOf + ".0/26";
        return new HeldAddress(address, "pool", Cidr.parse(v4block));
    }

    private static String fdb(String node, String remote) {
        return "fdb " + Vtep.mac(node) + " dst " + remote;
    }

    private static StateBuilder state() {
        return new StateBuilder();
    }

    private static final class StateBuilder {
        private final Map<Cidr, Claim> claims = new HashMap<>();
        private final Map<String, NodeFacts> nodes = new HashMap<>();

        StateBuilder block(int n, String node) {
            claim("198.18." + n + ".0/26", node);
            return claim("fd00:198::" + n + ":0/122", node);
        }

        StateBuilder claim(String cidr, String node) {
            claims.put(Cidr.parse(cidr), new Claim(cidr.contains(":") ? "v6" : "v4", node));
            return this;
        }

        StateBuilder node(
                String name,
                String mode,
                String v4,
                String v6,
                boolean tunnels,
                HeldAddress... held) {
            int n = Integer.parseInt(name.substring(1));
            PeerInfo peer =
                    new PeerInfo(
                            name,
                            mode,
                            "eth0",
                            v4,
                            v6,
                            Vtep.mac(name),
                            tunnels ? "198.18." + n + ".1" : null,
                            tunnels ? "fd00:198::" + n + ":1" : null,
                            1500);
            nodes.put(name, new NodeFacts(peer, false, List.of(held)));
            return this;
        }

        StateBuilder removed(String name, HeldAddress... held) {
            PeerInfo peer =
                    new PeerInfo(
                            name,
                            "direct",
                            "eth0",
                            "198.19.255.13/24",
                            null,
                            Vtep.mac(name),
                            null,
                            null,
                            1500);
            nodes.put(name, new NodeFacts(peer, true, List.of(held)));
            return this;
        }

        MeshState build() {
            return new MeshState(claims, nodes);
        }
    }

    private static Set<String> texts(MeshPlan plan) {
        Set<String> out = new TreeSet<>();
        plan.routes().forEach(r -> out.add(r.route().toString()));
        return out;
    }

    private static Set<String> devices(List<VxlanDevice> devices) {
        Set<String> out = new TreeSet<>();
        for (VxlanDevice d : devices) {
            out.add(
                    d.name()
                            + " vni "
                            + d.vni()
                            + " port "
                            + d.port()
                            + " local "
                            + d.local()
                                    .getHostAddress()
                                    .replace("fd00:19:255:0:0:0:0:11", "fd00:19:255::11")
                            + " dev "
                            + d.underlay()
                            + " mtu "
                            + d.mtu()
                            + " tunnel "
                            + (d.tunnelAddress() == null ? "none" : d.tunnelAddress())
                            + " fdb "
                            + d.fdb()
                            + " neighbours "
                            + d.neighbours());
        }
        return out;
    }
}
