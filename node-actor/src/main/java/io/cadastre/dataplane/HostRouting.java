package io.cadastre.dataplane;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * The host's routes to other hosts' pods, declaratively: given the whole desired state (routes,
 * VXLAN devices and their FDB and neighbour entries), {@link #reconcile} makes Cadastre's share of
 * the host's network equal to it and reports what it changed. It knows nothing of peers, blocks or
 * modes: the node agent computes the desired state from cluster state (node-actor/DESIGN.md,
 * "Host routing"). The production implementation speaks rtnetlink ({@link NetlinkHostRouting});
 * the agent's tests use a fake behind this interface.
 *
 * <p>What is Cadastre's: main-table routes of protocol {@link #PROTOCOL}, VXLAN devices whose name
 * starts with {@link #DEVICE_PREFIX}, every FDB entry and every permanent neighbour entry on
 * those devices, and the nftables table {@code inet} {@link #NAT_TABLE}. Everything else is never
 * deleted nor replaced; a wanted route whose destination has a route of another protocol is a
 * conflict, reported and left alone.
 */
public interface HostRouting {

    /** rtm_protocol (and NDA_PROTOCOL) of Cadastre's routes and neighbour entries: {@code ip route show proto 202}. */
    int PROTOCOL = LinuxNetlinkAbi.RTPROT_CADASTRE;

    /** The nftables table of Cadastre's outgoing NAT, family inet: {@code nft list table inet cadastre}. */
    String NAT_TABLE = "cadastre";

    /** Its base chain (postrouting, srcnat priority). */
    String NAT_CHAIN = "nat-outgoing";

    /** Every Cadastre VXLAN device's name starts with this; such devices not wanted are deleted. */
    String DEVICE_PREFIX = "cadastre.";

    /** Bytes VXLAN adds over an IPv4 underlay (outer Ethernet 14, IPv4 20, UDP 8, VXLAN 8). */
    int VXLAN_IPV4_OVERHEAD = 50;

    /** Bytes VXLAN adds over an IPv6 underlay (outer Ethernet 14, IPv6 40, UDP 8, VXLAN 8). */
    int VXLAN_IPV6_OVERHEAD = 70;

    /**
     * Makes the host's Cadastre-owned routes, VXLAN devices and their entries equal to {@code desired}:
     * devices first (created, recreated when a setting that cannot change differs, MTU, MAC, up,
     * tunnel address), then their FDB and neighbour entries, then routes; removes what Cadastre
     * owns and no longer wants. A failure of one object is reported in {@link Result#errors()} and
     * the others are still done. A second call with the same state changes nothing.
     *
     * @throws DataplaneException only when the current state cannot be read (no netlink socket, a
     *     dump refused); changes made before that are not undone
     */
    Result reconcile(Desired desired) throws DataplaneException;

    /**
     * Reads the main table as it is now, every protocol's routes, for the consistency check and
     * the operator's views: what is Cadastre's ({@link Installed#ours()}) and what is in its way.
     *
     * @return one entry per route, in the kernel's dump order
     * @throws DataplaneException when the table cannot be read
     */
    List<Installed> installed() throws DataplaneException;

    /**
     * One main-table route as the kernel holds it.
     *
     * @param destination the route's destination
     * @param protocol rtm_protocol: {@link #PROTOCOL} for Cadastre's, e.g. 2 (kernel), 3 (boot), 4 (static)
     * @param blackhole whether it is a blackhole route
     * @param gateway the next hop, or null
     * @param device the output device's name, or null (a blackhole, a multipath route)
     * @param text the route as {@code ip route} would show it, e.g. {@code "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink proto 202"}
     */
    record Installed(
            IpPrefix destination,
            int protocol,
            boolean blackhole,
            InetAddress gateway,
            String device,
            String text) {
        public boolean ours() {
            return protocol == PROTOCOL;
        }
    }

    /**
     * The whole desired state of Cadastre's share of the host's network.
     *
     * @param routes main-table routes, at most one per destination
     * @param devices the VXLAN devices, at most one per name
     * @param outgoingNat which pods' packets leaving for outside the pools are masqueraded
     */
    record Desired(List<Route> routes, List<VxlanDevice> devices, OutgoingNat outgoingNat) {
        public Desired {
            routes = List.copyOf(routes);
            devices = List.copyOf(devices);
            Objects.requireNonNull(outgoingNat, "outgoingNat");
            Set<IpPrefix> destinations = new HashSet<>();
            for (Route r : routes) {
                if (!destinations.add(r.destination())) {
                    throw new IllegalArgumentException("two routes to " + r.destination());
                }
            }
            Set<String> names = new HashSet<>();
            for (VxlanDevice d : devices) {
                if (!names.add(d.name())) {
                    throw new IllegalArgumentException("two VXLAN devices named " + d.name());
                }
            }
        }

        /** Routes and devices, no outgoing NAT. */
        public Desired(List<Route> routes, List<VxlanDevice> devices) {
            this(routes, devices, OutgoingNat.NONE);
        }

        public static Desired empty() {
            return new Desired(List.of(), List.of());
        }
    }

    /**
     * Outgoing NAT (Calico's {@code natOutgoing}, Cilium's masquerade, Flannel's {@code ip-masq}):
     * a packet from a pod address leaving the host for a destination outside every pool takes the
     * address of the interface it leaves by ({@code masquerade}, ports fully random), so that a
     * network that knows no route to the pools still answers. Packets to another pod, on any host,
     * keep their source. In nftables: table {@code inet cadastre}, base chain {@link #NAT_CHAIN}
     * at the postrouting hook with srcnat priority (100), one rule per source prefix going to a
     * chain per family that accepts the exempt destinations and masquerades the rest.
     *
     * @param sources the pod prefixes (pools' CIDRs) whose packets are masqueraded; none turns
     *     outgoing NAT off (the table is removed)
     * @param exempt destinations those packets keep their source to: every pool's CIDR, and
     *     networks that route the pools back (the operator's list)
     */
    record OutgoingNat(List<IpPrefix> sources, List<IpPrefix> exempt) {
        /** No outgoing NAT. */
        public static final OutgoingNat NONE = new OutgoingNat(List.of(), List.of());

        public OutgoingNat {
            sources = sorted(sources);
            exempt = sorted(exempt);
        }

        public boolean enabled() {
            return !sources.isEmpty();
        }

        /** @return the prefixes of one family (IPv4 when {@code v4}) */
        public static List<IpPrefix> of(List<IpPrefix> prefixes, boolean v4) {
            return prefixes.stream().filter(p -> p.v4() == v4).toList();
        }

        /**
         * @return e.g. {@code "masquerade 198.18.0.0/20, fd00:198::/112 except to 198.18.0.0/20,
         *     fd00:198::/112"}, or {@code "none"}
         */
        @Override
        public String toString() {
            if (!enabled()) {
                return "none";
            }
            return "masquerade "
                    + String.join(", ", sources.stream().map(IpPrefix::toString).toList())
                    + (exempt.isEmpty()
                            ? ""
                            : " except to "
                                    + String.join(
                                            ", ",
                                            exempt.stream().map(IpPrefix::toString).toList()));
        }

        private static List<IpPrefix> sorted(List<IpPrefix> prefixes) {
            return prefixes.stream()
                    .distinct()
                    .sorted(
                            Comparator.comparing((IpPrefix p) -> !p.v4())
                                    .thenComparing(IpPrefix::toString))
                    .toList();
        }
    }

    /**
     * A main-table route of protocol {@link #PROTOCOL}: a blackhole (a node's own block, so that
     * traffic to its unallocated addresses goes nowhere rather than to the default route), a route
     * via a gateway, onlink (the gateway need not be in any of the device's prefixes: a peer's
     * underlay address in direct mode, its tunnel address in VXLAN mode), out of a device, or a
     * route straight onto a device without a gateway (link scope for IPv4: {@code 169.254.1.1/32
     * dev lo}, which makes proxy ARP answer the pods' gateway on a host without a default route).
     *
     * @param destination a block, or a borrowed address's host prefix
     * @param gateway the next hop, of the destination's family; null for a blackhole or a device route
     * @param device the output device's name; null for a blackhole
     * @param mtu the route's MTU metric in bytes (RTAX_MTU); 0 for none
     */
    record Route(IpPrefix destination, InetAddress gateway, String device, int mtu) {
        public Route {
            if (gateway != null && device == null) {
                throw new IllegalArgumentException(
                        "route to " + destination + ": a gateway needs a device");
            }
            if (gateway != null && (gateway instanceof Inet4Address) != destination.v4()) {
                throw new IllegalArgumentException(
                        "route to "
                                + destination
                                + " via "
                                + Rtnetlink.text(gateway)
                                + ": families differ");
            }
            if (device != null) {
                requireName(device, "route to " + destination + ": device");
            }
            if (mtu < 0 || (device == null && mtu != 0)) {
                throw new IllegalArgumentException("route to " + destination + ": mtu " + mtu);
            }
        }

        public static Route blackhole(IpPrefix destination) {
            return new Route(destination, null, null, 0);
        }

        public static Route via(IpPrefix destination, InetAddress gateway, String device, int mtu) {
            return new Route(destination, gateway, device, mtu);
        }

        /** A route straight onto {@code device}, no gateway (e.g. {@code 169.254.1.1/32 dev lo}). */
        public static Route device(IpPrefix destination, String device) {
            return new Route(destination, null, device, 0);
        }

        public boolean blackhole() {
            return device == null;
        }

        /**
         * @return e.g. {@code "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink mtu 1450"},
         *     {@code "blackhole 198.18.1.0/26"} or {@code "169.254.1.1/32 dev lo"}
         */
        @Override
        public String toString() {
            if (blackhole()) {
                return "blackhole " + destination;
            }
            String tail =
                    " dev "
                            + device
                            + (gateway == null ? "" : " onlink")
                            + (mtu > 0 ? " mtu " + mtu : "");
            return gateway == null
                    ? destination + tail
                    : destination + " via " + Rtnetlink.text(gateway) + tail;
        }
    }

    /**
     * A VXLAN device, one per underlay family: learning off (the FDB is programmed), a fixed MAC,
     * and its entries. Its overlay family is its underlay's: the neighbours and the tunnel address
     * have the family of {@code local}.
     *
     * @param name starts with {@link #DEVICE_PREFIX}, at most 15 bytes (IFNAMSIZ - 1), e.g.
     *     {@code cadastre.vx4}
     * @param vni 1 to 2^24-1
     * @param port UDP destination port, e.g. 4789 (IANA's)
     * @param local this host's underlay address, the outer source
     * @param underlay the device the outer packets leave by, which must hold {@code local}
     * @param mac this device's MAC, lower-case colon notation, unicast (peers program it)
     * @param mtu bytes; at most the underlay's MTU less {@link #VXLAN_IPV4_OVERHEAD} or
     *     {@link #VXLAN_IPV6_OVERHEAD} (the kernel refuses more); 0 lets the kernel pick that maximum
     * @param tunnelAddress the host prefix (/32, /128) put on the device, the source of this host's
     *     own packets to other hosts' pods; null for none
     * @param fdb where each peer's VTEP MAC lives
     * @param neighbours each peer's tunnel address and VTEP MAC
     */
    record VxlanDevice(
            String name,
            int vni,
            int port,
            InetAddress local,
            String underlay,
            String mac,
            int mtu,
            IpPrefix tunnelAddress,
            List<FdbEntry> fdb,
            List<NeighbourEntry> neighbours) {
        public VxlanDevice {
            fdb = List.copyOf(fdb);
            neighbours = List.copyOf(neighbours);
            requireName(name, "VXLAN device");
            if (!name.startsWith(DEVICE_PREFIX)) {
                throw new IllegalArgumentException(
                        "VXLAN device " + name + ": name must start with " + DEVICE_PREFIX);
            }
            requireName(underlay, "VXLAN device " + name + ": underlay");
            if (vni < 1 || vni > 0xffffff) {
                throw new IllegalArgumentException(
                        "VXLAN device " + name + ": VNI " + vni + " out of 1.." + 0xffffff);
            }
            if (port < 1 || port > 0xffff) {
                throw new IllegalArgumentException(
                        "VXLAN device " + name + ": port " + port + " out of 1..65535");
            }
            mac = unicastMac(mac, "VXLAN device " + name);
            if (mtu != 0 && mtu < 68) {
                throw new IllegalArgumentException(
                        "VXLAN device " + name + ": mtu " + mtu + " below 68");
            }
            boolean v4 = local instanceof Inet4Address;
            if (tunnelAddress != null
                    && (tunnelAddress.v4() != v4
                            || tunnelAddress.length()
                                    != tunnelAddress.address().getAddress().length * 8)) {
                throw new IllegalArgumentException(
                        "VXLAN device "
                                + name
                                + ": tunnel address "
                                + tunnelAddress
                                + " is not a host prefix of the underlay's family");
            }
            Set<String> macs = new HashSet<>();
            for (FdbEntry e : fdb) {
                if ((e.remote() instanceof Inet4Address) != v4 || !macs.add(e.mac())) {
                    throw new IllegalArgumentException(
                            "VXLAN device "
                                    + name
                                    + ": "
                                    + e
                                    + " (another family than local, or a second entry for the MAC)");
                }
            }
            Set<InetAddress> addresses = new HashSet<>();
            for (NeighbourEntry n : neighbours) {
                if ((n.address() instanceof Inet4Address) != v4 || !addresses.add(n.address())) {
                    throw new IllegalArgumentException(
                            "VXLAN device "
                                    + name
                                    + ": "
                                    + n
                                    + " (another family than local, or a second entry for the address)");
                }
            }
        }

        public boolean v4() {
            return local instanceof Inet4Address;
        }

        /** @return the most the kernel accepts over an underlay of {@code underlayMtu} bytes */
        public int maxMtu(int underlayMtu) {
            return underlayMtu - (v4() ? VXLAN_IPV4_OVERHEAD : VXLAN_IPV6_OVERHEAD);
        }
    }

    /**
     * A permanent FDB entry on a VXLAN device: frames to {@code mac} go in UDP to {@code remote}.
     *
     * @param mac a peer's VTEP MAC, lower-case colon notation
     * @param remote the peer's underlay address
     */
    record FdbEntry(String mac, InetAddress remote) {
        public FdbEntry {
            mac = unicastMac(mac, "FDB entry");
        }

        @Override
        public String toString() {
            return "fdb " + mac + " dst " + Rtnetlink.text(remote);
        }
    }

    /**
     * A permanent neighbour entry on a VXLAN device, so that no ARP or NDP crosses the tunnel.
     *
     * @param address a peer's tunnel address (the gateway of the routes to its blocks)
     * @param mac the peer's VTEP MAC
     */
    record NeighbourEntry(InetAddress address, String mac) {
        public NeighbourEntry {
            mac = unicastMac(mac, "neighbour entry");
        }

        @Override
        public String toString() {
            return "neighbour " + Rtnetlink.text(address) + " lladdr " + mac;
        }
    }

    /** What a change or a problem was about. */
    enum Kind {
        ROUTE,
        DEVICE,
        ADDRESS,
        FDB,
        NEIGHBOUR,
        NAT,
        /** The NetworkPolicy table ({@link HostPolicy}). */
        POLICY
    }

    /**
     * One object changed, in conflict or failed.
     *
     * @param what e.g. {@code "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink"}, with what it was
     *     for a replacement, or the kernel's error for a failure
     */
    record Change(Kind kind, String what) {
        @Override
        public String toString() {
            return kind.name().toLowerCase(Locale.ROOT) + " " + what;
        }
    }

    /**
     * What one reconcile did.
     *
     * @param conflicts wanted objects left alone because another owner's object is in the way
     *     (a route of another protocol at the destination, a link of another kind by the name)
     * @param errors objects the kernel refused, and devices that could not be set up (missing
     *     underlay, an MTU above its maximum), with the reason
     * @param elapsed wall time of the reconcile
     */
    record Result(
            List<Change> added,
            List<Change> removed,
            List<Change> replaced,
            List<Change> conflicts,
            List<Change> errors,
            Duration elapsed) {
        public Result {
            added = List.copyOf(added);
            removed = List.copyOf(removed);
            replaced = List.copyOf(replaced);
            conflicts = List.copyOf(conflicts);
            errors = List.copyOf(errors);
        }

        /** @return how many objects were added, removed or replaced */
        public int changes() {
            return added.size() + removed.size() + replaced.size();
        }

        /** @return how many of {@code changes} are about {@code kind} */
        public static long count(List<Change> changes, Kind kind) {
            return changes.stream().filter(c -> c.kind() == kind).count();
        }

        /** @return e.g. {@code "added 3, removed 1, replaced 0, conflicts 1, errors 0 in 12 ms"} */
        public String summary() {
            return "added "
                    + added.size()
                    + ", removed "
                    + removed.size()
                    + ", replaced "
                    + replaced.size()
                    + ", conflicts "
                    + conflicts.size()
                    + ", errors "
                    + errors.size()
                    + " in "
                    + elapsed.toMillis()
                    + " ms";
        }
    }

    private static void requireName(String name, String what) {
        String why = NetlinkDataplane.invalidName(name);
        if (why != null) {
            throw new IllegalArgumentException(what + " name " + why);
        }
    }

    private static String unicastMac(String mac, String what) {
        String m = mac == null ? "" : mac.toLowerCase(Locale.ROOT);
        if (!m.matches("[0-9a-f]{2}(:[0-9a-f]{2}){5}")
                || (Integer.parseInt(m.substring(0, 2), 16) & 1) != 0
                || m.equals("00:00:00:00:00:00")) {
            throw new IllegalArgumentException(
                    what + ": " + mac + " is not a unicast MAC (xx:xx:xx:xx:xx:xx)");
        }
        return m;
    }
}
