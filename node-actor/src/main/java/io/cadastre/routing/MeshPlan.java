package io.cadastre.routing;

import io.cadastre.dataplane.HostNetwork.InterfaceAddress;
import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.HostRouting.Desired;
import io.cadastre.dataplane.HostRouting.FdbEntry;
import io.cadastre.dataplane.HostRouting.NeighbourEntry;
import io.cadastre.dataplane.HostRouting.OutgoingNat;
import io.cadastre.dataplane.HostRouting.Route;
import io.cadastre.dataplane.HostRouting.VxlanDevice;
import io.cadastre.dataplane.IpPrefix;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.routing.MeshState.Claim;
import io.cadastre.routing.MeshState.NodeFacts;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.PeerInfo;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One host's desired routing, computed from cluster state: a pure function ({@link #compute}),
 * tested table-driven. The rules, and whose they are:
 *
 * <ul>
 *   <li>every block affine to this node: a blackhole, so that traffic to its unallocated addresses
 *       goes nowhere instead of to the default route (Calico felix's route_mgr blackholes its own
 *       blocks the same way); not a block of one address (/32, /128), whose pod's own host route
 *       has the same key to the kernel;
 *   <li>every block affine to another node that is not removed and has published a peer: a route
 *       to that peer, direct or over VXLAN by the mode (below);
 *   <li>every address held by a node other than its block's (borrowed), living on another node: a
 *       /32 or /128 to the node it lives on, on every host, the block's owner included; longest
 *       prefix wins over the block's route and its owner's blackhole (Calico's borrowed-IP routes);
 *   <li>{@code 169.254.1.1/32 dev lo}: proxy ARP answers the pods' gateway only when the host has a
 *       unicast route to it through another interface, which a host without a default route lacks;
 *   <li>how to reach a peer, per family: {@code direct} via its underlay address onlink out of the
 *       underlay interface (only when it is on this host's underlay subnet: it must answer ARP or
 *       NDP), {@code vxlan} via its tunnel address onlink out of {@code cadastre.vx4} or
 *       {@code cadastre.vx6} with a permanent FDB entry (its VTEP MAC → its underlay address) and
 *       a permanent neighbour entry (its tunnel address → its VTEP MAC); cross-subnet picks direct
 *       when the peer's underlay address is on this host's underlay subnet, else vxlan;
 *   <li>a VXLAN device of a family exists while some block or address of that family is held and
 *       some live peer may exchange VXLAN with this host in that family (this host routes to it over
 *       VXLAN, or its mode and subnet make it route here over VXLAN), so a single host, a
 *       one-subnet cluster, or a family without pools opens no VXLAN port; its MTU is
 *       the underlay's less 50 (IPv4) or 70 (IPv6), its address this node's tunnel address, which
 *       it then needs ({@link #tunnelsWanted});
 *   <li>outgoing NAT, per family as {@code cadastre.routing.nat-outgoing} says: a pod's packet to
 *       a destination outside every pool and the exempt networks is masqueraded
 *       ({@link #outgoingNat}; Calico's natOutgoing).
 * </ul>
 *
 * A removed node's peer, blocks and addresses are left out (withdrawn); a node that is merely
 * unreachable or down keeps everything: the dataplane works on while the control plane fails over.
 * What cannot be routed is left out and said in {@link #problems}.
 *
 * @param desired what {@link HostRouting#reconcile} is given
 * @param routes every wanted route with its purpose and the node it leads to
 * @param peers how each node with routes is reached, by family
 * @param problems what cannot be routed and why, one line each, sorted
 * @param tunnelsWanted the families of the VXLAN devices this host needs: it should hold a tunnel
 *     address of each
 */
public record MeshPlan(
        Desired desired,
        List<PlannedRoute> routes,
        List<PeerPath> peers,
        List<String> problems,
        Set<Family> tunnelsWanted) {

    /** An address family. */
    public enum Family {
        IPV4,
        IPV6;

        static Family of(InetAddress a) {
            return a instanceof Inet4Address ? IPV4 : IPV6;
        }

        static Family of(IpFamily f) {
            return f == IpFamily.V4 ? IPV4 : IPV6;
        }

        String device() {
            return this == IPV4 ? "cadastre.vx4" : "cadastre.vx6";
        }

        @Override
        public String toString() {
            return this == IPV4 ? "IPv4" : "IPv6";
        }
    }

    /** How a peer is reached in one family. */
    public enum Way {
        DIRECT,
        VXLAN;

        @Override
        public String toString() {
            return this == DIRECT ? "direct" : "vxlan";
        }
    }

    /** Why a route exists. */
    public enum RouteType {
        /** Another node's block. */
        BLOCK,
        /** An address borrowed from a block, living on another node than the block's. */
        BORROWED,
        /** This node's own block. */
        BLACKHOLE,
        /** The pods' gateway, 169.254.1.1. */
        GATEWAY;

        public String spelling() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * @param type why the route exists
     * @param node the node it leads to (this node for blackholes and the gateway)
     */
    public record PlannedRoute(RouteType type, String node, Route route) {}

    /**
     * @param node the peer
     * @param ipv4 how its IPv4 blocks are reached, or null when they are not (or it has none)
     * @param ipv6 likewise for IPv6
     * @param peer what it published
     */
    public record PeerPath(String node, Way ipv4, Way ipv6, PeerInfo peer) {}

    /** The pods' IPv4 gateway, answered by proxy ARP. */
    public static final IpPrefix GATEWAY = IpPrefix.parse("169.254.1.1/32");

    /**
     * What this host is, for the computation.
     *
     * @param node this node's name
     * @param settings the routing settings (mode, VNI, port)
     * @param underlay the host's underlay, or null when it has none
     * @param tunnelV4 this node's IPv4 tunnel address, or null
     * @param tunnelV6 this node's IPv6 tunnel address, or null
     */
    public record Self(
            String node,
            RoutingSettings settings,
            Underlay underlay,
            InetAddress tunnelV4,
            InetAddress tunnelV6) {
        InterfaceAddress underlay(Family f) {
            return underlay == null ? null : f == Family.IPV4 ? underlay.ipv4() : underlay.ipv6();
        }

        InetAddress tunnel(Family f) {
            return f == Family.IPV4 ? tunnelV4 : tunnelV6;
        }
    }

    /** The plan of a host that routes nothing (mode none). */
    public static MeshPlan empty() {
        return new MeshPlan(Desired.empty(), List.of(), List.of(), List.of(), Set.of());
    }

    /** Computes the plan; see the class comment for the rules. Pure: same inputs, same plan. */
    public static MeshPlan compute(Self self, MeshState state) {
        if (self.settings().mode() == RoutingMode.NONE) {
            return empty();
        }
        Set<String> problems = new TreeSet<>();
        Map<String, PeerInfo> live = new TreeMap<>();
        state.nodes()
                .forEach(
                        (name, facts) -> {
                            if (!name.equals(self.node())
                                    && !facts.removed()
                                    && facts.peer() != null) {
                                live.put(name, facts.peer());
                            }
                        });
        // A family without a block or an address has nothing to carry, and its device would want
        // a tunnel address that no pool of the family can give (IPv4-only pools, dual-stack hosts).
        Set<Family> inUse = EnumSet.noneOf(Family.class);
        state.claims().keySet().forEach(b -> inUse.add(Family.of(b.family())));
        state.nodes()
                .values()
                .forEach(n -> n.addresses().forEach(h -> inUse.add(Family.of(h.family()))));
        Set<Family> devices = EnumSet.noneOf(Family.class);
        for (Family f : inUse) {
            if (self.settings().mode().overlay()
                    && self.underlay(f) != null
                    && live.values().stream().anyMatch(p -> mayExchangeVxlan(self, p, f))) {
                devices.add(f);
            }
        }

        Map<IpPrefix, PlannedRoute> routes = new LinkedHashMap<>();
        Map<String, Map<Family, Way>> ways = new TreeMap<>();
        routes.put(
                GATEWAY,
                new PlannedRoute(RouteType.GATEWAY, self.node(), Route.device(GATEWAY, "lo")));
        List<Map.Entry<Cidr, Claim>> claims = new ArrayList<>(state.claims().entrySet());
        claims.sort(Map.Entry.comparingByKey());
        for (Map.Entry<Cidr, Claim> e : claims) {
            IpPrefix block = IpPrefix.parse(e.getKey().toString());
            String owner = e.getValue().node();
            if (owner.equals(self.node())) {
                // A block of one address (/32, /128) holds only the pod's: its host route through
                // the pod's veth is the route, and a blackhole there would be the same key to the
                // kernel (destination and metric), refusing the pod's route.
                if (block.length() < block.address().getAddress().length * 8) {
                    routes.put(
                            block,
                            new PlannedRoute(RouteType.BLACKHOLE, owner, Route.blackhole(block)));
                }
                continue;
            }
            NodeFacts facts = state.nodes().get(owner);
            if (facts != null && facts.removed()) {
                continue; // withdrawn with its node
            }
            Route r = routeTo(self, owner, live.get(owner), block, devices, ways, problems);
            if (r != null) {
                routes.put(block, new PlannedRoute(RouteType.BLOCK, owner, r));
            }
        }
        borrowed(self, state, live, devices, ways, problems, routes);

        List<VxlanDevice> vxlan = new ArrayList<>();
        for (Family f : devices) {
            vxlan.add(device(self, f, live, ways));
        }
        List<PlannedRoute> planned = List.copyOf(routes.values());
        List<PeerPath> peers =
                ways.entrySet().stream()
                        .map(
                                w ->
                                        new PeerPath(
                                                w.getKey(),
                                                w.getValue().get(Family.IPV4),
                                                w.getValue().get(Family.IPV6),
                                                live.get(w.getKey())))
                        .toList();
        return new MeshPlan(
                new Desired(
                        planned.stream().map(PlannedRoute::route).toList(),
                        vxlan,
                        outgoingNat(self.settings().natOutgoing(), state.pools().values())),
                planned,
                peers,
                List.copyOf(problems),
                devices);
    }

    /**
     * Outgoing NAT: the pools of each family that masquerades are the sources; every pool (a pod
     * on any host keeps its address to another pod) and the operator's exempt networks are the
     * destinations that keep the pods' addresses. Calico's natOutgoing exempts every pool the same
     * way.
     */
    static OutgoingNat outgoingNat(RoutingSettings.NatOutgoing settings, Collection<Cidr> pools) {
        List<IpPrefix> all = pools.stream().map(c -> IpPrefix.parse(c.toString())).toList();
        List<IpPrefix> sources = all.stream().filter(settings::covers).toList();
        if (sources.isEmpty()) {
            return OutgoingNat.NONE;
        }
        List<IpPrefix> exempt = new ArrayList<>(all);
        exempt.addAll(settings.exempt());
        return new OutgoingNat(sources, exempt);
    }

    /** Host routes to addresses that live on another node than their block's, deduplicated. */
    private static void borrowed(
            Self self,
            MeshState state,
            Map<String, PeerInfo> live,
            Set<Family> devices,
            Map<String, Map<Family, Way>> ways,
            Set<String> problems,
            Map<IpPrefix, PlannedRoute> routes) {
        Map<String, String> holder = new TreeMap<>();
        state.nodes().entrySet().stream()
                .sorted(Map.Entry.comparingByKey())
                .forEach(
                        e -> {
                            if (e.getValue().removed()) {
                                return;
                            }
                            for (HeldAddress h : e.getValue().addresses()) {
                                Claim claim = state.claims().get(h.block());
                                if (claim != null && claim.node().equals(e.getKey())) {
                                    // in its own node's block: the block's route covers it
                                    continue;
                                }
                                String before = holder.putIfAbsent(h.address(), e.getKey());
                                if (before != null && !before.equals(e.getKey())) {
                                    problems.add(
                                            "address "
                                                    + h.address()
                                                    + " is recorded by nodes "
                                                    + before
                                                    + " and "
                                                    + e.getKey()
                                                    + ": routed to "
                                                    + before);
                                }
                            }
                        });
        holder.forEach(
                (address, node) -> {
                    if (node.equals(self.node())) {
                        return; // the pod's own host route (through its veth) reaches it here
                    }
                    IpPrefix host = IpPrefix.host(IpPrefix.literal(address));
                    Route r = routeTo(self, node, live.get(node), host, devices, ways, problems);
                    if (r != null) {
                        routes.put(host, new PlannedRoute(RouteType.BORROWED, node, r));
                    }
                });
    }

    /** @return the route to {@code destination} on {@code node}, or null (said in problems) */
    private static Route routeTo(
            Self self,
            String node,
            PeerInfo peer,
            IpPrefix destination,
            Set<Family> devices,
            Map<String, Map<Family, Way>> ways,
            Set<String> problems) {
        Family f = Family.of(destination.address());
        if (peer == null) {
            problems.add(
                    "node "
                            + node
                            + " has published no peer (its agent has not started since, or runs mode"
                            + " none): "
                            + destination
                            + " is not routed");
            return null;
        }
        InterfaceAddress local = self.underlay(f);
        InterfaceAddress remote = address(peer, f);
        if (local == null || remote == null) {
            problems.add(
                    (local == null ? "this host has" : "node " + node + " has")
                            + " no "
                            + f
                            + " underlay address: "
                            + destination
                            + " on "
                            + node
                            + " is not routed");
            return null;
        }
        Way way =
                switch (self.settings().mode()) {
                    case DIRECT -> Way.DIRECT;
                    case VXLAN -> Way.VXLAN;
                    default -> local.onLink(remote.address()) ? Way.DIRECT : Way.VXLAN;
                };
        if (way == Way.DIRECT && !local.onLink(remote.address())) {
            problems.add(
                    "node "
                            + node
                            + " ("
                            + remote
                            + ") is not on this host's subnet "
                            + local
                            + ": direct mode"
                            + " needs one L2 segment (cross-subnet would use VXLAN); "
                            + destination
                            + " is not routed");
            return null;
        }
        if (way == Way.DIRECT) {
            ways.computeIfAbsent(node, k -> new EnumMap<>(Family.class)).put(f, way);
            return Route.via(destination, remote.address(), self.underlay().device(), 0);
        }
        InetAddress tunnel = tunnel(peer, f);
        if (tunnel == null) {
            problems.add(
                    "node "
                            + node
                            + " has no "
                            + f
                            + " tunnel address yet: "
                            + destination
                            + " is not routed");
            return null;
        }
        if (!devices.contains(f)) {
            throw new IllegalStateException("a VXLAN route without its device: " + destination);
        }
        ways.computeIfAbsent(node, k -> new EnumMap<>(Family.class)).put(f, way);
        return Route.via(destination, tunnel, f.device(), 0);
    }

    /**
     * Whether this host and the peer may send each other VXLAN in family {@code f}: this host
     * would route to it over VXLAN, or it, by its own mode and subnet, would route here so.
     */
    private static boolean mayExchangeVxlan(Self self, PeerInfo peer, Family f) {
        InterfaceAddress local = self.underlay(f);
        InterfaceAddress remote = address(peer, f);
        if (local == null || remote == null) {
            return false;
        }
        boolean ours =
                self.settings().mode() == RoutingMode.VXLAN || !local.onLink(remote.address());
        boolean theirs =
                RoutingMode.VXLAN.spelling().equals(peer.mode())
                        || (RoutingMode.CROSS_SUBNET.spelling().equals(peer.mode())
                                && !remote.onLink(local.address()));
        return ours || theirs;
    }

    private static VxlanDevice device(
            Self self, Family f, Map<String, PeerInfo> live, Map<String, Map<Family, Way>> ways) {
        InterfaceAddress local = self.underlay(f);
        List<FdbEntry> fdb = new ArrayList<>();
        List<NeighbourEntry> neighbours = new ArrayList<>();
        Set<String> macs = new TreeSet<>();
        ways.forEach(
                (node, byFamily) -> {
                    PeerInfo p = live.get(node);
                    if (byFamily.get(f) == Way.VXLAN && macs.add(p.vtepMac())) {
                        fdb.add(new FdbEntry(p.vtepMac(), address(p, f).address()));
                        neighbours.add(new NeighbourEntry(tunnel(p, f), p.vtepMac()));
                    }
                });
        int overhead =
                f == Family.IPV4
                        ? HostRouting.VXLAN_IPV4_OVERHEAD
                        : HostRouting.VXLAN_IPV6_OVERHEAD;
        InetAddress tunnel = self.tunnel(f);
        return new VxlanDevice(
                f.device(),
                self.settings().vni(),
                self.settings().port(),
                local.address(),
                self.underlay().device(),
                Vtep.mac(self.node()),
                self.underlay().mtu() - overhead,
                tunnel == null ? null : IpPrefix.host(tunnel),
                fdb,
                neighbours);
    }

    /** @return the peer's underlay address of the family, or null (absent or malformed) */
    static InterfaceAddress address(PeerInfo peer, Family f) {
        String text = f == Family.IPV4 ? peer.ipv4() : peer.ipv6();
        if (text == null) {
            return null;
        }
        int slash = text.indexOf('/');
        try {
            InetAddress a = IpPrefix.literal(slash < 0 ? text : text.substring(0, slash));
            return Family.of(a) == f
                    ? new InterfaceAddress(
                            a,
                            slash < 0
                                    ? a.getAddress().length * 8
                                    : Integer.parseInt(text.substring(slash + 1)))
                    : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** @return the peer's tunnel address of the family, or null */
    static InetAddress tunnel(PeerInfo peer, Family f) {
        String text = f == Family.IPV4 ? peer.tunnelIpv4() : peer.tunnelIpv6();
        if (text == null) {
            return null;
        }
        try {
            InetAddress a = IpPrefix.literal(text);
            return Family.of(a) == f ? a : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** @return how many wanted routes there are of each type, for the metrics */
    public Map<String, Long> routeCounts() {
        Map<String, Long> out = new HashMap<>();
        for (RouteType t : RouteType.values()) {
            out.put(t.spelling(), routes.stream().filter(r -> r.type() == t).count());
        }
        return out;
    }

    /** @return how many peers are reached each way (a peer reached both ways counts for both) */
    public Map<String, Long> peerCounts() {
        Map<String, Long> out = new HashMap<>();
        for (Way w : Way.values()) {
            out.put(
                    w.toString(),
                    peers.stream().filter(p -> p.ipv4() == w || p.ipv6() == w).count());
        }
        return out;
    }
}
