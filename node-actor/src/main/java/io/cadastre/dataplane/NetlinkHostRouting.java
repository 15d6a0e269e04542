package io.cadastre.dataplane;

import io.cadastre.dataplane.HostRouting.OutgoingNat;
import io.cadastre.dataplane.Rtnetlink.Address;
import io.cadastre.dataplane.Rtnetlink.Link;
import io.cadastre.dataplane.Rtnetlink.Neighbour;
import io.cadastre.dataplane.Rtnetlink.RouteInfo;
import io.cadastre.dataplane.Rtnetlink.Vxlan;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The production {@link HostRouting}: one NETLINK_ROUTE socket per reconcile, dumps of links,
 * addresses, FDB and neighbour entries and the main table, then only the requests that make a
 * difference. No process is ever started.
 *
 * <p>"The host" is the network namespace of the calling thread, as for {@link NetlinkDataplane}:
 * the process's own for the agent. Tests call it from a platform thread that entered a test
 * namespace and never leaves it (never from a pooled thread).
 *
 * <p>{@link #reconcile} is synchronized: one reconcile at a time per instance. Two instances (or
 * two processes) reconciling the same namespace at once would undo each other's work; the agent
 * keeps one.
 *
 * <p>Requires CAP_NET_ADMIN (in practice: root).
 */
public final class NetlinkHostRouting implements HostRouting {
    private static final HexFormat MAC = HexFormat.ofDelimiter(":");
    private final Optional<KernelVersion> kernel;

    /** Reconciles the calling thread's namespace; the kernel version decides the checksum workaround. */
    public NetlinkHostRouting() {
        this(KernelVersion.running());
    }

    /**
     * @param kernel the kernel to work around; empty (unknown) applies no workaround. Tests pass an
     *     old version to exercise the workaround on a new kernel.
     */
    NetlinkHostRouting(Optional<KernelVersion> kernel) {
        this.kernel = kernel;
    }

    @Override
    public synchronized Result reconcile(Desired desired) throws DataplaneException {
        long start = System.nanoTime();
        Report report = new Report();
        try (Rtnetlink rt = new Rtnetlink(NetlinkSocket.open(), "")) {
            Map<String, Link> ready = reconcileDevices(rt, desired.devices(), report);
            reconcileEntries(rt, desired.devices(), ready, report);
            reconcileRoutes(rt, desired.routes(), report);
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
        reconcileNat(desired.outgoingNat(), report);
        return report.result(Duration.ofNanos(System.nanoTime() - start));
    }

    /** The NAT table is one object: written whole, in one transaction, or removed; a refusal is reported, not thrown, as for routes. */
    private static void reconcileNat(OutgoingNat wanted, Report report) {
        try (NetlinkSocket nf = NetlinkSocket.openNetfilter()) {
            NetlinkOutgoingNat.reconcile(nf, wanted)
                    .ifPresent(
                            applied ->
                                    (switch (applied.action()) {
                                                case ADDED -> report.added;
                                                case REPLACED -> report.replaced;
                                                case REMOVED -> report.removed;
                                            })
                                            .add(applied.change()));
        } catch (SyscallException e) {
            report.error(Kind.NAT, e);
        }
    }

    // ---- devices ----

    /** @return the wanted devices that exist as wanted now, by name */
    private Map<String, Link> reconcileDevices(
            Rtnetlink rt, List<VxlanDevice> devices, Report report) throws SyscallException {
        Map<String, Link> links = new HashMap<>();
        for (Link l : rt.links()) {
            links.put(l.name(), l);
        }
        Set<String> wanted = new HashSet<>();
        devices.forEach(d -> wanted.add(d.name()));
        for (Link l : links.values()) {
            if (ours(l) && !wanted.contains(l.name())) {
                try {
                    // Its routes, addresses and entries go with it.
                    rt.deleteLink(l);
                    report.removed.add(new Change(Kind.DEVICE, describe(l)));
                } catch (SyscallException e) {
                    report.error(Kind.DEVICE, e);
                }
            }
        }
        List<Address> addresses = devices.isEmpty() ? List.of() : rt.addresses();
        Map<String, Link> ready = new HashMap<>();
        for (VxlanDevice d : devices) {
            try {
                Link link = reconcileDevice(rt, d, links, addresses, report);
                if (link != null) {
                    ready.put(d.name(), link);
                }
            } catch (SyscallException e) {
                report.error(Kind.DEVICE, e);
            }
        }
        return ready;
    }

    /** Cadastre's: a VXLAN device with Cadastre's prefix (a link of another kind is never ours). */
    private static boolean ours(Link l) {
        return l.name().startsWith(DEVICE_PREFIX) && l.vxlan() != null;
    }

    /** @return the device, up and as wanted, or null if it could not be made so (reported) */
    private Link reconcileDevice(
            Rtnetlink rt,
            VxlanDevice d,
            Map<String, Link> links,
            List<Address> addresses,
            Report report)
            throws SyscallException {
        Link underlay = links.get(d.underlay());
        if (underlay == null) {
            report.errors.add(
                    new Change(
                            Kind.DEVICE,
                            d.name() + ": underlay device " + d.underlay() + " does not exist"));
            return null;
        }
        // The kernel answers only EINVAL to a VXLAN MTU above underlay MTU − overhead; say why
        // here.
        if (d.mtu() > d.maxMtu(underlay.mtu())) {
            report.errors.add(
                    new Change(
                            Kind.DEVICE,
                            d.name()
                                    + ": MTU "
                                    + d.mtu()
                                    + " is above the "
                                    + d.maxMtu(underlay.mtu())
                                    + " the kernel allows over "
                                    + d.underlay()
                                    + " (MTU "
                                    + underlay.mtu()
                                    + " less "
                                    + (d.v4()
                                            ? VXLAN_IPV4_OVERHEAD + " for VXLAN over IPv4"
                                            : VXLAN_IPV6_OVERHEAD + " for VXLAN over IPv6")
                                    + ")"));
            return null;
        }
        if (addresses.stream()
                .noneMatch(a -> a.index() == underlay.index() && a.address().equals(d.local()))) {
            report.errors.add(
                    new Change(
                            Kind.DEVICE,
                            d.name()
                                    + ": local address "
                                    + Rtnetlink.text(d.local())
                                    + " is not on "
                                    + d.underlay()));
            return null;
        }
        Vxlan want = new Vxlan(d.vni(), d.local(), d.port(), underlay.index(), false);
        byte[] mac = MAC.parseHex(d.mac());
        Link existing = links.get(d.name());
        boolean created = false;
        if (existing != null && existing.vxlan() == null) {
            report.conflicts.add(
                    new Change(
                            Kind.DEVICE,
                            d.name()
                                    + ": a link of kind '"
                                    + existing.kind()
                                    + "' has the name; left alone"));
            return null;
        }
        if (existing == null) {
            rt.createVxlan(d.name(), mac, d.mtu(), want);
            report.added.add(new Change(Kind.DEVICE, describe(d)));
            created = true;
        } else if (!want.equals(existing.vxlan())) {
            // VNI, port, local address and underlay are fixed for a device's life: recreate it.
            rt.deleteLink(existing);
            rt.createVxlan(d.name(), mac, d.mtu(), want);
            report.replaced(Kind.DEVICE, describe(d), describe(existing.vxlan(), links));
            created = true;
        } else {
            if (d.mtu() > 0 && existing.mtu() != d.mtu()) {
                rt.setMtu(existing, d.mtu());
                report.replaced(
                        Kind.DEVICE, d.name() + " mtu " + d.mtu(), String.valueOf(existing.mtu()));
            }
            if (!existing.mac().equals(d.mac())) {
                rt.setMac(existing, mac);
                report.replaced(Kind.DEVICE, d.name() + " address " + d.mac(), existing.mac());
            }
        }
        Link link = rt.existingLink(d.name());
        if (!link.up()) {
            rt.setUp(link);
            if (!created) {
                report.replaced(Kind.DEVICE, d.name() + " up", "down");
            }
        }
        workAroundChecksumOffload(d, report);
        reconcileTunnelAddress(rt, d, link, created ? List.of() : addresses, report);
        return link;
    }

    /** On kernels up to 5.7 only (see {@link KernelVersion#vxlanTxChecksumBroken()}). */
    private void workAroundChecksumOffload(VxlanDevice d, Report report) {
        if (kernel.isEmpty() || !kernel.get().vxlanTxChecksumBroken()) {
            return;
        }
        try {
            if (Ethtool.txChecksum(d.name())) {
                Ethtool.setTxChecksum(d.name(), false);
                report.replaced(
                        Kind.DEVICE,
                        d.name() + " tx checksum offload off",
                        "on; broken for VXLAN on kernel " + kernel.get() + " <= 5.7");
            }
        } catch (SyscallException e) {
            report.error(Kind.DEVICE, e);
        }
    }

    /** The device's global addresses: exactly the tunnel address (link-local ones are the kernel's). */
    private static void reconcileTunnelAddress(
            Rtnetlink rt, VxlanDevice d, Link link, List<Address> addresses, Report report) {
        boolean present = false;
        for (Address a : addresses) {
            if (a.index() != link.index() || a.address().isLinkLocalAddress()) {
                continue;
            }
            IpPrefix want = d.tunnelAddress();
            if (want != null
                    && want.address().equals(a.address())
                    && want.length() == a.prefixLength()) {
                present = true;
                continue;
            }
            try {
                rt.deleteAddress(link, a.address(), a.prefixLength());
                // Not an IpPrefix: an address added by hand may have host bits (198.19.4.11/24).
                report.removed.add(
                        new Change(
                                Kind.ADDRESS,
                                Rtnetlink.text(a.address())
                                        + "/"
                                        + a.prefixLength()
                                        + " dev "
                                        + link.name()));
            } catch (SyscallException e) {
                report.error(Kind.ADDRESS, e);
            }
        }
        if (!present && d.tunnelAddress() != null) {
            try {
                rt.addAddress(link, d.tunnelAddress().address(), d.tunnelAddress().length());
                report.added.add(
                        new Change(Kind.ADDRESS, d.tunnelAddress() + " dev " + link.name()));
            } catch (SyscallException e) {
                report.error(Kind.ADDRESS, e);
            }
        }
    }

    // ---- FDB and neighbour entries ----

    private static void reconcileEntries(
            Rtnetlink rt, List<VxlanDevice> devices, Map<String, Link> ready, Report report)
            throws SyscallException {
        if (ready.isEmpty()) {
            return; // devices Cadastre no longer wants took their entries along
        }
        List<Neighbour> fdb = rt.neighbours(LinuxNetlinkAbi.AF_BRIDGE);
        List<Neighbour> neighbours = new ArrayList<>(rt.neighbours(LinuxNetlinkAbi.AF_INET));
        neighbours.addAll(rt.neighbours(LinuxNetlinkAbi.AF_INET6));
        for (VxlanDevice d : devices) {
            Link link = ready.get(d.name());
            if (link != null) {
                reconcileFdb(
                        rt,
                        d,
                        link,
                        fdb.stream().filter(n -> n.index() == link.index()).toList(),
                        report);
                reconcileNeighbours(
                        rt,
                        d,
                        link,
                        neighbours.stream().filter(n -> n.index() == link.index()).toList(),
                        report);
            }
        }
    }

    /**
     * Every FDB entry on the device is Cadastre's (learning is off): one permanent entry per
     * wanted MAC with the wanted remote, nothing else.
     */
    private static void reconcileFdb(
            Rtnetlink rt, VxlanDevice d, Link link, List<Neighbour> actual, Report report) {
        Map<String, List<Neighbour>> byMac = new LinkedHashMap<>();
        for (Neighbour n : actual) {
            byMac.computeIfAbsent(n.mac(), k -> new ArrayList<>()).add(n);
        }
        for (FdbEntry e : d.fdb()) {
            Neighbour want =
                    new Neighbour(
                            LinuxNetlinkAbi.AF_BRIDGE,
                            link.index(),
                            e.remote(),
                            e.mac(),
                            LinuxNetlinkAbi.NUD_PERMANENT,
                            LinuxNetlinkAbi.NTF_SELF,
                            0);
            List<Neighbour> have = byMac.remove(e.mac());
            try {
                if (have == null) {
                    rt.addNeighbour(want, false, link.name());
                    report.added.add(new Change(Kind.FDB, Rtnetlink.describe(want, link.name())));
                } else if (have.size() == 1) {
                    Neighbour h = have.get(0);
                    if (!Objects.equals(h.destination(), e.remote()) || !h.permanent()) {
                        // Replaces the entry's remote in place: no moment without one.
                        rt.addNeighbour(want, true, link.name());
                        report.replaced(
                                Kind.FDB,
                                Rtnetlink.describe(want, link.name()),
                                Rtnetlink.describe(h, link.name()) + state(h));
                    }
                } else {
                    // Several remotes for one MAC (appended by hand): start over with one.
                    for (Neighbour h : have) {
                        rt.deleteNeighbour(h, link.name());
                    }
                    rt.addNeighbour(want, false, link.name());
                    report.replaced(
                            Kind.FDB,
                            Rtnetlink.describe(want, link.name()),
                            have.size() + " remotes");
                }
            } catch (SyscallException ex) {
                report.error(Kind.FDB, ex);
            }
        }
        for (List<Neighbour> stale : byMac.values()) {
            for (Neighbour h : stale) {
                try {
                    rt.deleteNeighbour(h, link.name());
                    report.removed.add(new Change(Kind.FDB, Rtnetlink.describe(h, link.name())));
                } catch (SyscallException ex) {
                    report.error(Kind.FDB, ex);
                }
            }
        }
    }

    /**
     * Permanent neighbour entries on the device are Cadastre's; entries the kernel made while
     * resolving (incomplete, stale, reachable; multicast ones) are its own and left alone unless
     * they hold a wanted address, which is then made permanent.
     */
    private static void reconcileNeighbours(
            Rtnetlink rt, VxlanDevice d, Link link, List<Neighbour> actual, Report report) {
        Map<InetAddress, Neighbour> byAddress = new HashMap<>();
        for (Neighbour n : actual) {
            if (n.destination() != null) {
                byAddress.put(n.destination(), n);
            }
        }
        for (NeighbourEntry e : d.neighbours()) {
            Neighbour want =
                    new Neighbour(
                            Rtnetlink.family(e.address()),
                            link.index(),
                            e.address(),
                            e.mac(),
                            LinuxNetlinkAbi.NUD_PERMANENT,
                            0,
                            PROTOCOL);
            Neighbour have = byAddress.remove(e.address());
            try {
                if (have == null) {
                    rt.addNeighbour(want, false, link.name());
                    report.added.add(
                            new Change(Kind.NEIGHBOUR, Rtnetlink.describe(want, link.name())));
                } else if (!have.mac().equals(e.mac()) || !have.permanent()) {
                    rt.addNeighbour(want, true, link.name());
                    report.replaced(
                            Kind.NEIGHBOUR,
                            Rtnetlink.describe(want, link.name()),
                            (have.mac().isEmpty() ? "no lladdr" : "lladdr " + have.mac())
                                    + state(have));
                }
            } catch (SyscallException ex) {
                report.error(Kind.NEIGHBOUR, ex);
            }
        }
        for (Neighbour stale : byAddress.values()) {
            if (!stale.permanent()) {
                continue;
            }
            try {
                rt.deleteNeighbour(stale, link.name());
                report.removed.add(
                        new Change(Kind.NEIGHBOUR, Rtnetlink.describe(stale, link.name())));
            } catch (SyscallException ex) {
                report.error(Kind.NEIGHBOUR, ex);
            }
        }
    }

    // ---- routes ----

    @Override
    public List<Installed> installed() throws DataplaneException {
        try (Rtnetlink rt = new Rtnetlink(NetlinkSocket.open(), "")) {
            Map<Integer, String> names = new HashMap<>();
            for (Link l : rt.links()) {
                names.put(l.index(), l.name());
            }
            List<Installed> out = new ArrayList<>();
            for (RouteInfo r : rt.mainTableRoutes()) {
                IpPrefix destination;
                try {
                    destination = new IpPrefix(r.destination(), r.destinationLength());
                } catch (IllegalArgumentException e) {
                    continue; // the kernel keeps no host bits; nothing to report if it ever did
                }
                boolean blackhole = r.type() == LinuxNetlinkAbi.RTN_BLACKHOLE;
                String device =
                        blackhole || r.outputIndex() <= 0 ? null : names.get(r.outputIndex());
                out.add(
                        new Installed(
                                destination,
                                r.protocol(),
                                blackhole,
                                r.gateway(),
                                device,
                                r.describe(names)));
            }
            return out;
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    /** A route's identity for ownership: destination and prefix length (the kernel adds metric and tos). */
    private record Destination(InetAddress address, int length) {
        static Destination of(RouteInfo r) {
            return new Destination(r.destination(), r.destinationLength());
        }

        static Destination of(IpPrefix p) {
            return new Destination(p.address(), p.length());
        }
    }

    private static void reconcileRoutes(Rtnetlink rt, List<Route> routes, Report report)
            throws SyscallException {
        Map<String, Integer> indexes = new HashMap<>();
        Map<Integer, String> names = new HashMap<>();
        for (Link l : rt.links()) {
            indexes.put(l.name(), l.index());
            names.put(l.index(), l.name());
        }
        Map<Destination, List<RouteInfo>> ours = new HashMap<>();
        Map<Destination, RouteInfo> foreign = new HashMap<>();
        for (RouteInfo r : rt.mainTableRoutes()) {
            if (r.protocol() == PROTOCOL) {
                ours.computeIfAbsent(Destination.of(r), k -> new ArrayList<>()).add(r);
            } else {
                foreign.putIfAbsent(Destination.of(r), r);
            }
        }
        Set<Destination> keep = new HashSet<>();
        for (Route route : routes) {
            Destination key = Destination.of(route.destination());
            keep.add(key);
            RouteInfo other = foreign.get(key);
            if (other != null) {
                // Never replaced: the other owner's route stays, and so does any of Cadastre's
                // there.
                report.conflicts.add(
                        new Change(
                                Kind.ROUTE,
                                route
                                        + ": the destination has "
                                        + other.describe(names)
                                        + "; left alone"));
                continue;
            }
            Integer index = route.blackhole() ? Integer.valueOf(0) : indexes.get(route.device());
            if (index == null) {
                report.errors.add(
                        new Change(
                                Kind.ROUTE,
                                route + ": device " + route.device() + " does not exist"));
                continue;
            }
            RouteInfo want = routeInfo(route, index);
            try {
                reconcileRoute(rt, want, ours.getOrDefault(key, List.of()), names, report);
            } catch (SyscallException e) {
                report.error(Kind.ROUTE, e);
            }
        }
        for (Map.Entry<Destination, List<RouteInfo>> e : ours.entrySet()) {
            if (keep.contains(e.getKey())) {
                continue;
            }
            for (RouteInfo stale : e.getValue()) {
                try {
                    rt.deleteRoute(stale, names);
                    report.removed.add(new Change(Kind.ROUTE, stale.describe(names)));
                } catch (SyscallException ex) {
                    // ESRCH: gone meanwhile (its device was deleted), which is what was wanted.
                    if (ex.errno() != LibC.ESRCH) {
                        report.error(Kind.ROUTE, ex);
                    }
                }
            }
        }
    }

    /** One wanted destination without a foreign route: add it, keep it, or replace Cadastre's own. */
    private static void reconcileRoute(
            Rtnetlink rt,
            RouteInfo want,
            List<RouteInfo> have,
            Map<Integer, String> names,
            Report report)
            throws SyscallException {
        RouteInfo same = have.stream().filter(h -> same(h, want)).findFirst().orElse(null);
        if (have.isEmpty()) {
            rt.addRoute(want, false, names);
            report.added.add(new Change(Kind.ROUTE, want.describe(names)));
            return;
        }
        List<RouteInfo> extra = new ArrayList<>(have);
        if (same == null) {
            RouteInfo old = have.get(0);
            if (old.priority() == defaultPriority(want)) {
                // Safe: no other protocol's route has this destination, so REPLACE hits Cadastre's.
                rt.addRoute(want, true, names);
            } else {
                // Another metric (added by hand): REPLACE would add beside it, so add then delete
                // it.
                rt.addRoute(want, false, names);
                rt.deleteRoute(old, names);
            }
            extra.remove(old);
            report.replaced(Kind.ROUTE, want.describe(names), old.describe(names));
        } else {
            extra.remove(same);
        }
        for (RouteInfo r : extra) {
            rt.deleteRoute(r, names);
            report.removed.add(new Change(Kind.ROUTE, r.describe(names)));
        }
    }

    /**
     * The route as the kernel is asked for it, in the main table with protocol 202: a blackhole; via
     * a gateway: universe scope, onlink; onto a device: link scope for IPv4 (IPv6 has no scopes).
     */
    static RouteInfo routeInfo(Route route, int outputIndex) {
        if (route.blackhole()) {
            return new RouteInfo(
                    route.destination().address(),
                    route.destination().length(),
                    PROTOCOL,
                    LinuxNetlinkAbi.RTN_BLACKHOLE,
                    LinuxNetlinkAbi.RT_SCOPE_UNIVERSE,
                    0,
                    null,
                    -1,
                    0,
                    0);
        }
        if (route.gateway() == null) {
            return new RouteInfo(
                    route.destination().address(),
                    route.destination().length(),
                    PROTOCOL,
                    LinuxNetlinkAbi.RTN_UNICAST,
                    route.destination().v4()
                            ? LinuxNetlinkAbi.RT_SCOPE_LINK
                            : LinuxNetlinkAbi.RT_SCOPE_UNIVERSE,
                    0,
                    null,
                    outputIndex,
                    0,
                    route.mtu());
        }
        return new RouteInfo(
                route.destination().address(),
                route.destination().length(),
                PROTOCOL,
                LinuxNetlinkAbi.RTN_UNICAST,
                LinuxNetlinkAbi.RT_SCOPE_UNIVERSE,
                LinuxNetlinkAbi.RTNH_F_ONLINK,
                route.gateway(),
                outputIndex,
                0,
                route.mtu());
    }

    /**
     * Whether an existing route is the wanted one: same type, default metric, and for a unicast
     * route the same gateway, device, onlink flag and MTU. Other rtm_flags (linkdown, offload) are
     * the kernel's state, not the route; an IPv6 blackhole reports {@code lo}, which is ignored.
     */
    static boolean same(RouteInfo have, RouteInfo want) {
        if (have.type() != want.type()
                || have.priority() != defaultPriority(want)
                || have.mtu() != want.mtu()) {
            return false;
        }
        return want.type() == LinuxNetlinkAbi.RTN_BLACKHOLE
                || (Objects.equals(have.gateway(), want.gateway())
                        && have.outputIndex() == want.outputIndex()
                        && have.onlink() == want.onlink());
    }

    /** The metric the kernel gives a route added without one: 0 for IPv4, 1024 for IPv6 (IP6_RT_PRIO_USER). */
    private static int defaultPriority(RouteInfo r) {
        return r.destination() instanceof Inet4Address ? 0 : 1024;
    }

    // ---- text ----

    private static String describe(VxlanDevice d) {
        return "vxlan "
                + d.name()
                + " "
                + describe(new Vxlan(d.vni(), d.local(), d.port(), 0, false), Map.of())
                + " dev "
                + d.underlay()
                + " address "
                + d.mac()
                + (d.mtu() > 0 ? " mtu " + d.mtu() : "");
    }

    private static String describe(Vxlan v, Map<String, Link> links) {
        String underlay =
                links.values().stream()
                        .filter(l -> l.index() == v.underlayIndex())
                        .map(Link::name)
                        .findFirst()
                        .orElse(v.underlayIndex() > 0 ? "#" + v.underlayIndex() : "");
        return "id "
                + v.vni()
                + " local "
                + (v.local() == null ? "none" : Rtnetlink.text(v.local()))
                + " dstport "
                + v.port()
                + (underlay.isEmpty() ? "" : " dev " + underlay)
                + (v.learning() ? " learning" : "");
    }

    private static String describe(Link l) {
        return "vxlan " + l.name() + (l.vxlan() == null ? "" : " id " + l.vxlan().vni());
    }

    private static String state(Neighbour n) {
        return n.permanent() ? "" : String.format(" state 0x%x", n.state());
    }

    /** The lists a {@link Result} is made of, filled as the reconcile goes. */
    private static final class Report {
        final List<Change> added = new ArrayList<>();
        final List<Change> removed = new ArrayList<>();
        final List<Change> replaced = new ArrayList<>();
        final List<Change> conflicts = new ArrayList<>();
        final List<Change> errors = new ArrayList<>();

        /** Notes a change to what was there, as "{@code now} (was {@code was})". */
        void replaced(Kind kind, String now, String was) {
            replaced.add(new Change(kind, now + " (was " + was + ")"));
        }

        void error(Kind kind, SyscallException e) {
            errors.add(new Change(kind, e.getMessage()));
        }

        Result result(Duration elapsed) {
            return new Result(added, removed, replaced, conflicts, errors, elapsed);
        }
    }
}
