package io.cadastre.dataplane;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The rtnetlink requests the dataplane makes (links, veth and VXLAN devices, addresses, routes,
 * neighbour and FDB entries, and their dumps), over one {@link NetlinkSocket} and so in one
 * network namespace. Every method throws {@link SyscallException} naming the request, the
 * objects and the namespace ({@code where}) when the kernel refuses. Not thread-safe; close it
 * to close the socket.
 */
final class Rtnetlink implements AutoCloseable {

    /**
     * A link as RTM_GETLINK reports it.
     *
     * @param mac lower-case colon notation, or "" if the link has none
     * @param peerIndex IFLA_LINK: for a veth, the peer's index in the peer's namespace; -1 if absent
     * @param kind IFLA_INFO_KIND, e.g. {@code "veth"}; "" for links without one (lo, physical)
     * @param vxlan the VXLAN settings when {@code kind} is {@code "vxlan"}, else null
     */
    record Link(
            int index,
            String name,
            int flags,
            int mtu,
            String mac,
            int peerIndex,
            String kind,
            Vxlan vxlan) {
        boolean up() {
            return (flags & LinuxNetlinkAbi.IFF_UP) != 0;
        }
    }

    /**
     * The settings of a VXLAN device that cannot change while it lives (IFLA_INFO_DATA of kind
     * "vxlan"); a device whose settings differ from the wanted ones is deleted and created again.
     *
     * @param vni the VXLAN network identifier, 0 to 2^24-1
     * @param local the underlay source address (IFLA_VXLAN_LOCAL or LOCAL6); its family is the
     *     underlay's; null if the device has none
     * @param port the UDP destination port (IFLA_VXLAN_PORT, sent in network byte order)
     * @param underlayIndex IFLA_VXLAN_LINK: the ifindex of the device the packets leave by; -1 if none
     * @param learning whether the device learns remote MACs from received packets (Cadastre: never)
     */
    record Vxlan(int vni, InetAddress local, int port, int underlayIndex, boolean learning) {}

    /** An address as RTM_GETADDR reports it (IFA_LOCAL, else IFA_ADDRESS). */
    record Address(int index, InetAddress address, int prefixLength) {}

    /**
     * A main-table route of any type as RTM_GETROUTE reports it, or as one is asked for.
     *
     * @param destination the network address; the family's zero address for a default route
     * @param protocol rtm_protocol, e.g. {@link LinuxNetlinkAbi#RTPROT_KERNEL} or {@link LinuxNetlinkAbi#RTPROT_CADASTRE}
     * @param type rtm_type, e.g. {@link LinuxNetlinkAbi#RTN_UNICAST} or {@link LinuxNetlinkAbi#RTN_BLACKHOLE}
     * @param scope rtm_scope
     * @param flags rtm_flags, e.g. {@link LinuxNetlinkAbi#RTNH_F_ONLINK}
     * @param gateway RTA_GATEWAY, or null
     * @param outputIndex RTA_OIF, or -1 (none, or multipath); IPv6 blackholes report {@code lo}
     * @param priority RTA_PRIORITY (the metric), 0 if absent; IPv6 routes added without one get 1024
     * @param mtu RTAX_MTU in RTA_METRICS, bytes; 0 if absent
     */
    record RouteInfo(
            InetAddress destination,
            int destinationLength,
            int protocol,
            int type,
            int scope,
            int flags,
            InetAddress gateway,
            int outputIndex,
            int priority,
            int mtu) {
        boolean onlink() {
            return (flags & LinuxNetlinkAbi.RTNH_F_ONLINK) != 0;
        }

        /** @return e.g. {@code "198.18.2.0/26 via 198.19.1.12 dev eth0 onlink mtu 1450 proto 202"} */
        String describe(Map<Integer, String> names) {
            StringBuilder sb =
                    new StringBuilder(type == LinuxNetlinkAbi.RTN_BLACKHOLE ? "blackhole " : "");
            if (type != LinuxNetlinkAbi.RTN_BLACKHOLE && type != LinuxNetlinkAbi.RTN_UNICAST) {
                sb.append("type ").append(type).append(' ');
            }
            sb.append(Rtnetlink.describe(destination, destinationLength, gateway));
            if (outputIndex > 0 && type != LinuxNetlinkAbi.RTN_BLACKHOLE) {
                sb.append(" dev ").append(names.getOrDefault(outputIndex, "#" + outputIndex));
            }
            if (onlink()) {
                sb.append(" onlink");
            }
            if (mtu > 0) {
                sb.append(" mtu ").append(mtu);
            }
            return sb.append(" proto ").append(protocolName(protocol)).toString();
        }
    }

    /**
     * A neighbour (family AF_INET/AF_INET6: an IP address's MAC on a link) or an FDB entry
     * (AF_BRIDGE: where a MAC lives; on a VXLAN device, the remote VTEP's underlay address), as
     * RTM_GETNEIGH reports it or as one is asked for.
     *
     * @param index the device's ifindex
     * @param destination NDA_DST: the neighbour's address, or the FDB entry's remote; null if absent
     * @param mac NDA_LLADDR, lower-case colon notation; "" if absent
     * @param state ndm_state, e.g. {@link LinuxNetlinkAbi#NUD_PERMANENT}
     * @param flags ndm_flags, e.g. {@link LinuxNetlinkAbi#NTF_SELF}
     * @param protocol NDA_PROTOCOL; 0 if absent (FDB entries never carry one)
     */
    record Neighbour(
            int family,
            int index,
            InetAddress destination,
            String mac,
            int state,
            int flags,
            int protocol) {
        boolean permanent() {
            return (state & LinuxNetlinkAbi.NUD_PERMANENT) != 0;
        }
    }

    /**
     * A main-table unicast route as RTM_GETROUTE reports it.
     *
     * @param destination null for a default route
     * @param gateway null for a route without next hop
     * @param outputIndex RTA_OIF, or -1 (e.g. multipath)
     */
    record Route(
            InetAddress destination, int destinationLength, InetAddress gateway, int outputIndex) {}

    /**
     * A filter on a device's clsact ingress hook, as RTM_GETTFILTER reports it.
     *
     * @param priority the filter's priority (tcm_info's upper 16 bits)
     * @param kind TCA_KIND, e.g. {@code "bpf"}
     * @param ops a cls_bpf filter's classic instructions (TCA_BPF_OPS), else null
     * @param flags a cls_bpf filter's TCA_BPF_FLAGS, else 0
     * @param redirectIndex the ifindex its mirred action redirects to (egress), else -1
     */
    record Filter(int priority, String kind, byte[] ops, int flags, int redirectIndex) {}

    /**
     * A device's root token bucket filter, as RTM_GETQDISC reports it.
     *
     * @param rate bytes per second (TCA_TBF_RATE64 when the kernel gives it, else tc_ratespec.rate)
     * @param limit bytes that may wait for tokens, the bucket included (tc_tbf_qopt.limit)
     */
    record Tbf(long rate, long limit) {}

    private final NetlinkSocket socket;
    private final String where;

    /** @param where appended to error messages, e.g. {@code " in netns /var/run/netns/x"}; "" for the host */
    Rtnetlink(NetlinkSocket socket, String where) {
        this.socket = socket;
        this.where = where;
    }

    /** @return the link named {@code name}, or empty if there is none (ENODEV) */
    Optional<Link> link(String name) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETLINK, 0)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0)
                        .attrString(LinuxNetlinkAbi.IFLA_IFNAME, name)
                        .attrU32(
                                LinuxNetlinkAbi.IFLA_EXT_MASK,
                                LinuxNetlinkAbi.RTEXT_FILTER_SKIP_STATS);
        List<NetlinkMessage> replies;
        try {
            replies = socket.request(req, "RTM_GETLINK " + name + where);
        } catch (SyscallException e) {
            if (e.errno() == LibC.ENODEV) {
                return Optional.empty();
            }
            throw e;
        }
        for (NetlinkMessage m : replies) {
            if (m.type() == LinuxNetlinkAbi.RTM_NEWLINK) {
                return Optional.of(parseLink(m));
            }
        }
        throw new SyscallException("RTM_GETLINK " + name + where + ": no link in the reply");
    }

    /** @return the link named {@code name}; a missing one is an error here */
    Link existingLink(String name) throws SyscallException {
        return link(name)
                .orElseThrow(
                        () -> new SyscallException("RTM_GETLINK " + name + where, LibC.ENODEV));
    }

    /**
     * Creates a veth pair whose first end, {@code name}, lives here and whose peer is created
     * directly inside {@code peerNetns} under {@code peerName}: the peer name is
     * only checked for clashes there. NLM_F_EXCL, and the kernel creates both ends or neither.
     *
     * @param mtu bytes, for both ends; 0 keeps the kernel default
     */
    void createVeth(String name, byte[] mac, int mtu, String peerName, Netns peerNetns)
            throws SyscallException {
        NetlinkRequest req = newLinkMessage(name, mac, mtu);
        int linkInfo = req.nest(LinuxNetlinkAbi.IFLA_LINKINFO);
        req.attrString(LinuxNetlinkAbi.IFLA_INFO_KIND, "veth");
        int data = req.nest(LinuxNetlinkAbi.IFLA_INFO_DATA);
        int peer = req.nest(LinuxNetlinkAbi.VETH_INFO_PEER);
        req.ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0)
                .attrString(LinuxNetlinkAbi.IFLA_IFNAME, peerName);
        if (mtu > 0) {
            req.attrU32(LinuxNetlinkAbi.IFLA_MTU, mtu);
        }
        req.attrU32(LinuxNetlinkAbi.IFLA_NET_NS_FD, peerNetns.fd());
        req.end(peer).end(data).end(linkInfo);
        socket.request(
                req,
                "RTM_NEWLINK veth "
                        + name
                        + where
                        + " peer "
                        + peerName
                        + " in netns "
                        + peerNetns.path());
    }

    void setUp(Link link) throws SyscallException {
        setLinkUp(link, true);
    }

    /**
     * Sets a link down: the kernel then drops every route through it (IPv4 {@code
     * fib_sync_down_dev}, IPv6 {@code rt6_sync_down_dev}) and its neighbour entries, without the
     * RCU grace periods a delete waits for.
     */
    void setDown(Link link) throws SyscallException {
        setLinkUp(link, false);
    }

    /** RTM_SETLINK changing only IFF_UP (the change mask), to {@code up}. */
    private void setLinkUp(Link link, boolean up) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_SETLINK, 0)
                        .ifinfomsg(
                                LinuxNetlinkAbi.AF_UNSPEC,
                                link.index(),
                                up ? LinuxNetlinkAbi.IFF_UP : 0,
                                LinuxNetlinkAbi.IFF_UP);
        socket.request(req, "RTM_SETLINK " + link.name() + (up ? " up" : " down") + where);
    }

    /**
     * Deletes a link by index, so that a name reused meanwhile cannot redirect the delete. A veth
     * takes its peer along, and each end takes its addresses and routes.
     */
    void deleteLink(Link link) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_DELLINK, 0)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, link.index(), 0, 0);
        socket.request(req, "RTM_DELLINK " + link.name() + where);
    }

    /** Deletes a link by name; see {@link #deleteLink(Link)}. */
    void deleteLink(String name) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_DELLINK, 0)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0)
                        .attrString(LinuxNetlinkAbi.IFLA_IFNAME, name);
        socket.request(req, "RTM_DELLINK " + name + where);
    }

    /** Adds a universe-scope address; IPv6 ones with IFA_F_NODAD, so they are usable at once. */
    void addAddress(Link link, InetAddress address, int prefixLength) throws SyscallException {
        boolean v4 = address instanceof Inet4Address;
        int flags = v4 ? 0 : LinuxNetlinkAbi.IFA_F_NODAD;
        NetlinkRequest req =
                new NetlinkRequest(
                                LinuxNetlinkAbi.RTM_NEWADDR,
                                LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .ifaddrmsg(
                                family(address),
                                prefixLength,
                                flags,
                                LinuxNetlinkAbi.RT_SCOPE_UNIVERSE,
                                link.index())
                        .attr(LinuxNetlinkAbi.IFA_LOCAL, address.getAddress())
                        .attr(LinuxNetlinkAbi.IFA_ADDRESS, address.getAddress())
                        .attrU32(LinuxNetlinkAbi.IFA_FLAGS, flags);
        socket.request(req, "RTM_NEWADDR " + onLink(address, prefixLength, link));
    }

    /** @return {@code 198.18.0.1/24 dev eth0} and where, for a request's description */
    private String onLink(InetAddress address, int prefixLength, Link link) {
        return text(address) + "/" + prefixLength + " dev " + link.name() + where;
    }

    /**
     * Adds a main-table route out of {@code link}: link scope without a gateway (IPv4), universe
     * scope otherwise (IPv6 has no route scopes). NLM_F_EXCL: an existing equal route is an error.
     *
     * @param gateway null for a route straight onto the link
     */
    void addRoute(Link link, InetAddress destination, int destinationLength, InetAddress gateway)
            throws SyscallException {
        boolean v4 = destination instanceof Inet4Address;
        int scope =
                gateway == null && v4
                        ? LinuxNetlinkAbi.RT_SCOPE_LINK
                        : LinuxNetlinkAbi.RT_SCOPE_UNIVERSE;
        RouteInfo route =
                new RouteInfo(
                        destination,
                        destinationLength,
                        LinuxNetlinkAbi.RTPROT_BOOT,
                        LinuxNetlinkAbi.RTN_UNICAST,
                        scope,
                        0,
                        gateway,
                        link.index(),
                        0,
                        0);
        socket.request(
                routeMessage(
                        LinuxNetlinkAbi.RTM_NEWROUTE,
                        LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL,
                        route),
                "RTM_NEWROUTE "
                        + describe(destination, destinationLength, gateway)
                        + " dev "
                        + link.name()
                        + where);
    }

    /**
     * Adds a main-table route exactly as given (its protocol, type, flags, metrics).
     *
     * @param replace false: NLM_F_EXCL, an existing route with the same destination and metric is
     *     an error; true: NLM_F_REPLACE, such a route is replaced (whatever its protocol, so the
     *     caller must know it is its own)
     * @param names ifindex to name, for the error message
     */
    void addRoute(RouteInfo route, boolean replace, Map<Integer, String> names)
            throws SyscallException {
        int flags =
                LinuxNetlinkAbi.NLM_F_CREATE
                        | (replace ? LinuxNetlinkAbi.NLM_F_REPLACE : LinuxNetlinkAbi.NLM_F_EXCL);
        socket.request(
                routeMessage(LinuxNetlinkAbi.RTM_NEWROUTE, flags, route),
                (replace ? "RTM_NEWROUTE replace " : "RTM_NEWROUTE ")
                        + route.describe(names)
                        + where);
    }

    /**
     * Deletes one main-table route. The request names its protocol, type and metric, so the kernel
     * deletes only a route that has all three (never another protocol's at the same destination).
     */
    void deleteRoute(RouteInfo route, Map<Integer, String> names) throws SyscallException {
        RouteInfo match =
                new RouteInfo(
                        route.destination(),
                        route.destinationLength(),
                        route.protocol(),
                        route.type(),
                        LinuxNetlinkAbi.RT_SCOPE_NOWHERE,
                        0,
                        null,
                        -1,
                        route.priority(),
                        0);
        socket.request(
                routeMessage(LinuxNetlinkAbi.RTM_DELROUTE, 0, match),
                "RTM_DELROUTE " + route.describe(names) + where);
    }

    /**
     * RTM_NEWROUTE or RTM_DELROUTE for the main table: the rtmsg from {@code r}, then RTA_DST
     * (unless a default route), RTA_GATEWAY, RTA_OIF, RTA_PRIORITY and RTA_METRICS/RTAX_MTU where
     * {@code r} has them.
     */
    static NetlinkRequest routeMessage(int messageType, int flags, RouteInfo r) {
        NetlinkRequest req =
                new NetlinkRequest(messageType, flags)
                        .rtmsg(
                                family(r.destination()),
                                r.destinationLength(),
                                LinuxNetlinkAbi.RT_TABLE_MAIN,
                                r.protocol(),
                                r.scope(),
                                r.type(),
                                r.flags());
        if (r.destinationLength() > 0) {
            req.attr(LinuxNetlinkAbi.RTA_DST, r.destination().getAddress());
        }
        if (r.gateway() != null) {
            req.attr(LinuxNetlinkAbi.RTA_GATEWAY, r.gateway().getAddress());
        }
        if (r.outputIndex() > 0) {
            req.attrU32(LinuxNetlinkAbi.RTA_OIF, r.outputIndex());
        }
        if (r.priority() > 0) {
            req.attrU32(LinuxNetlinkAbi.RTA_PRIORITY, r.priority());
        }
        if (r.mtu() > 0) {
            int metrics = req.nest(LinuxNetlinkAbi.RTA_METRICS);
            req.attrU32(LinuxNetlinkAbi.RTAX_MTU, r.mtu());
            req.end(metrics);
        }
        return req;
    }

    /** @return every address of every link here, both families */
    List<Address> addresses() throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETADDR, 0)
                        .ifaddrmsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0, 0);
        List<Address> out = new ArrayList<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETADDR dump" + where)) {
            if (m.type() != LinuxNetlinkAbi.RTM_NEWADDR) {
                continue;
            }
            ByteBuffer p = m.payload();
            NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.IFADDRMSG_LEN);
            InetAddress address =
                    a.has(LinuxNetlinkAbi.IFA_LOCAL)
                            ? a.address(LinuxNetlinkAbi.IFA_LOCAL)
                            : a.address(LinuxNetlinkAbi.IFA_ADDRESS);
            if (address != null) {
                out.add(new Address(p.getInt(4), address, Byte.toUnsignedInt(p.get(1))));
            }
        }
        return out;
    }

    /** @return the unicast routes of the main table here, both families */
    List<Route> routes() throws SyscallException {
        List<Route> out = new ArrayList<>();
        for (RouteInfo r : mainTableRoutes()) {
            if (r.type() == LinuxNetlinkAbi.RTN_UNICAST) {
                out.add(
                        new Route(
                                r.destinationLength() == 0 ? null : r.destination(),
                                r.destinationLength(),
                                r.gateway(),
                                r.outputIndex()));
            }
        }
        return out;
    }

    /** @return every route of the main table here, both families, of every protocol and type */
    List<RouteInfo> mainTableRoutes() throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETROUTE, 0)
                        .rtmsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0, 0, 0);
        List<RouteInfo> out = new ArrayList<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETROUTE dump" + where)) {
            if (m.type() == LinuxNetlinkAbi.RTM_NEWROUTE) {
                RouteInfo r = parseRoute(m, true);
                if (r != null) {
                    out.add(r);
                }
            }
        }
        return out;
    }

    /**
     * @param mainOnly return null for a route of another table (local, or policy routing's)
     * @return the route in an RTM_NEWROUTE message, or null for one of another family or table
     */
    static RouteInfo parseRoute(NetlinkMessage m, boolean mainOnly) throws SyscallException {
        ByteBuffer p = m.payload();
        int family = Byte.toUnsignedInt(p.get(0));
        if (family != LinuxNetlinkAbi.AF_INET && family != LinuxNetlinkAbi.AF_INET6) {
            return null;
        }
        NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.RTMSG_LEN);
        // rtm_table is a u8; RTA_TABLE carries the full u32 (tables above 255).
        int table =
                a.has(LinuxNetlinkAbi.RTA_TABLE)
                        ? a.u32(LinuxNetlinkAbi.RTA_TABLE)
                        : Byte.toUnsignedInt(p.get(4));
        if (mainOnly && table != LinuxNetlinkAbi.RT_TABLE_MAIN) {
            return null;
        }
        InetAddress destination = a.address(LinuxNetlinkAbi.RTA_DST);
        if (destination == null) {
            destination = zero(family);
        }
        int priority = a.u32(LinuxNetlinkAbi.RTA_PRIORITY);
        int mtu = a.nested(LinuxNetlinkAbi.RTA_METRICS, 0).u32(LinuxNetlinkAbi.RTAX_MTU);
        return new RouteInfo(
                destination,
                Byte.toUnsignedInt(p.get(1)),
                Byte.toUnsignedInt(p.get(5)),
                Byte.toUnsignedInt(p.get(7)),
                Byte.toUnsignedInt(p.get(6)),
                p.getInt(8),
                a.address(LinuxNetlinkAbi.RTA_GATEWAY),
                a.u32(LinuxNetlinkAbi.RTA_OIF),
                Math.max(priority, 0),
                Math.max(mtu, 0));
    }

    /** @return every link here */
    List<Link> links() throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETLINK, 0)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0)
                        .attrU32(
                                LinuxNetlinkAbi.IFLA_EXT_MASK,
                                LinuxNetlinkAbi.RTEXT_FILTER_SKIP_STATS);
        List<Link> out = new ArrayList<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETLINK dump" + where)) {
            if (m.type() == LinuxNetlinkAbi.RTM_NEWLINK) {
                out.add(parseLink(m));
            }
        }
        return out;
    }

    /**
     * Creates a VXLAN device (NLM_F_EXCL), down: {@link #setUp} it once configured.
     *
     * @param mac the device's own MAC (its VTEP MAC, which peers put in their FDB and neighbour entries)
     * @param mtu bytes; 0 lets the kernel derive it from the underlay (its MTU less the VXLAN headroom)
     */
    void createVxlan(String name, byte[] mac, int mtu, Vxlan config) throws SyscallException {
        socket.request(
                vxlanMessage(name, mac, mtu, config),
                "RTM_NEWLINK vxlan "
                        + name
                        + " id "
                        + config.vni()
                        + " local "
                        + text(config.local())
                        + " dstport "
                        + config.port()
                        + where);
    }

    /**
     * RTM_NEWLINK kind "vxlan": VNI, local address (LOCAL or LOCAL6 by its family), underlay
     * ifindex, UDP port (network byte order: the kernel stores it as __be16), learning.
     */
    static NetlinkRequest vxlanMessage(String name, byte[] mac, int mtu, Vxlan config) {
        NetlinkRequest req = newLinkMessage(name, mac, mtu);
        int linkInfo = req.nest(LinuxNetlinkAbi.IFLA_LINKINFO);
        req.attrString(LinuxNetlinkAbi.IFLA_INFO_KIND, "vxlan");
        int data = req.nest(LinuxNetlinkAbi.IFLA_INFO_DATA);
        req.attrU32(LinuxNetlinkAbi.IFLA_VXLAN_ID, config.vni());
        req.attr(
                config.local() instanceof Inet4Address
                        ? LinuxNetlinkAbi.IFLA_VXLAN_LOCAL
                        : LinuxNetlinkAbi.IFLA_VXLAN_LOCAL6,
                config.local().getAddress());
        if (config.underlayIndex() > 0) {
            req.attrU32(LinuxNetlinkAbi.IFLA_VXLAN_LINK, config.underlayIndex());
        }
        req.attrBe16(LinuxNetlinkAbi.IFLA_VXLAN_PORT, config.port());
        req.attrU8(LinuxNetlinkAbi.IFLA_VXLAN_LEARNING, config.learning() ? 1 : 0);
        req.end(data).end(linkInfo);
        return req;
    }

    /** RTM_NEWLINK with NLM_F_EXCL: name, MAC and (unless 0) MTU; the caller adds IFLA_LINKINFO. */
    private static NetlinkRequest newLinkMessage(String name, byte[] mac, int mtu) {
        NetlinkRequest req =
                new NetlinkRequest(
                                LinuxNetlinkAbi.RTM_NEWLINK,
                                LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0)
                        .attrString(LinuxNetlinkAbi.IFLA_IFNAME, name)
                        .attr(LinuxNetlinkAbi.IFLA_ADDRESS, mac);
        if (mtu > 0) {
            req.attrU32(LinuxNetlinkAbi.IFLA_MTU, mtu);
        }
        return req;
    }

    void setMtu(Link link, int mtu) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_SETLINK, 0)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, link.index(), 0, 0)
                        .attrU32(LinuxNetlinkAbi.IFLA_MTU, mtu);
        socket.request(req, "RTM_SETLINK " + link.name() + " mtu " + mtu + where);
    }

    void setMac(Link link, byte[] mac) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_SETLINK, 0)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, link.index(), 0, 0)
                        .attr(LinuxNetlinkAbi.IFLA_ADDRESS, mac);
        socket.request(
                req,
                "RTM_SETLINK "
                        + link.name()
                        + " address "
                        + HexFormat.ofDelimiter(":").formatHex(mac)
                        + where);
    }

    void deleteAddress(Link link, InetAddress address, int prefixLength) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_DELADDR, 0)
                        .ifaddrmsg(family(address), prefixLength, 0, 0, link.index())
                        .attr(LinuxNetlinkAbi.IFA_LOCAL, address.getAddress());
        socket.request(req, "RTM_DELADDR " + onLink(address, prefixLength, link));
    }

    /**
     * @param family AF_INET or AF_INET6 for neighbours, AF_BRIDGE for FDB entries
     * @return the family's entries on every device here
     */
    List<Neighbour> neighbours(int family) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETNEIGH, 0).ndmsg(family, 0, 0, 0);
        List<Neighbour> out = new ArrayList<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETNEIGH dump family " + family + where)) {
            if (m.type() == LinuxNetlinkAbi.RTM_NEWNEIGH) {
                Neighbour n = parseNeighbour(m);
                if (n.family() == family) {
                    out.add(n);
                }
            }
        }
        return out;
    }

    /**
     * Adds a neighbour or FDB entry as given (state, flags and, for neighbours, NDA_PROTOCOL).
     *
     * @param replace false: NLM_F_EXCL; true: NLM_F_REPLACE (for an FDB entry, its remote is replaced)
     */
    void addNeighbour(Neighbour entry, boolean replace, String device) throws SyscallException {
        int flags =
                LinuxNetlinkAbi.NLM_F_CREATE
                        | (replace ? LinuxNetlinkAbi.NLM_F_REPLACE : LinuxNetlinkAbi.NLM_F_EXCL);
        socket.request(
                neighbourMessage(LinuxNetlinkAbi.RTM_NEWNEIGH, flags, entry),
                "RTM_NEWNEIGH " + (replace ? "replace " : "") + describe(entry, device) + where);
    }

    /** Deletes a neighbour (by address) or an FDB entry's remote (by MAC and remote). */
    void deleteNeighbour(Neighbour entry, String device) throws SyscallException {
        Neighbour match =
                new Neighbour(
                        entry.family(),
                        entry.index(),
                        entry.destination(),
                        entry.family() == LinuxNetlinkAbi.AF_BRIDGE ? entry.mac() : "",
                        0,
                        entry.flags() & LinuxNetlinkAbi.NTF_SELF,
                        0);
        socket.request(
                neighbourMessage(LinuxNetlinkAbi.RTM_DELNEIGH, 0, match),
                "RTM_DELNEIGH " + describe(entry, device) + where);
    }

    /** RTM_NEWNEIGH or RTM_DELNEIGH: the ndmsg, then NDA_DST, NDA_LLADDR and NDA_PROTOCOL where given. */
    static NetlinkRequest neighbourMessage(int messageType, int flags, Neighbour n) {
        NetlinkRequest req =
                new NetlinkRequest(messageType, flags)
                        .ndmsg(n.family(), n.index(), n.state(), n.flags());
        if (n.destination() != null) {
            req.attr(LinuxNetlinkAbi.NDA_DST, n.destination().getAddress());
        }
        if (!n.mac().isEmpty()) {
            req.attr(LinuxNetlinkAbi.NDA_LLADDR, HexFormat.ofDelimiter(":").parseHex(n.mac()));
        }
        if (n.protocol() > 0) {
            req.attrU8(LinuxNetlinkAbi.NDA_PROTOCOL, n.protocol());
        }
        return req;
    }

    static Neighbour parseNeighbour(NetlinkMessage m) throws SyscallException {
        ByteBuffer p = m.payload();
        NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.NDMSG_LEN);
        byte[] mac = a.bytes(LinuxNetlinkAbi.NDA_LLADDR);
        return new Neighbour(
                Byte.toUnsignedInt(p.get(0)),
                p.getInt(4),
                a.address(LinuxNetlinkAbi.NDA_DST),
                mac == null ? "" : HexFormat.ofDelimiter(":").formatHex(mac),
                Short.toUnsignedInt(p.getShort(8)),
                Byte.toUnsignedInt(p.get(10)),
                Math.max(a.u8(LinuxNetlinkAbi.NDA_PROTOCOL), 0));
    }

    /** @return e.g. {@code "fdb 02:ca:da:00:00:0d dst 198.19.3.11 dev cadastre.vx4"} */
    static String describe(Neighbour n, String device) {
        String dst = n.destination() == null ? "" : text(n.destination());
        return n.family() == LinuxNetlinkAbi.AF_BRIDGE
                ? "fdb " + n.mac() + " dst " + dst + " dev " + device
                : "neighbour " + dst + " lladdr " + n.mac() + " dev " + device;
    }

    /**
     * Adds a clsact qdisc to the link (NLM_F_EXCL): the hooks its ingress and egress filters hang
     * on. The kernel creates it with the link's first filter user; it goes with the link.
     */
    void addClsact(Link link) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(
                                LinuxNetlinkAbi.RTM_NEWQDISC,
                                LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .tcmsg(
                                LinuxNetlinkAbi.AF_UNSPEC,
                                link.index(),
                                LinuxNetlinkAbi.TC_H_CLSACT_HANDLE,
                                LinuxNetlinkAbi.TC_H_CLSACT,
                                0)
                        .attrString(LinuxNetlinkAbi.TCA_KIND, "clsact");
        socket.request(req, "RTM_NEWQDISC clsact dev " + link.name() + where);
    }

    /**
     * Adds a cls_bpf filter for every protocol on the link's clsact ingress hook, running classic
     * BPF {@code ops} in direct-action mode (its return value is the tc action), NLM_F_EXCL.
     *
     * @param ops {@code struct sock_filter} instructions in host byte order
     */
    void addIngressBpfFilter(Link link, int priority, byte[] ops) throws SyscallException {
        NetlinkRequest req = ingressBpfFilter(link, priority);
        int options = req.nest(LinuxNetlinkAbi.TCA_OPTIONS);
        req.attrU16(LinuxNetlinkAbi.TCA_BPF_OPS_LEN, ops.length / 8)
                .attr(LinuxNetlinkAbi.TCA_BPF_OPS, ops)
                .attrU32(LinuxNetlinkAbi.TCA_BPF_FLAGS, LinuxNetlinkAbi.TCA_BPF_FLAG_ACT_DIRECT);
        req.end(options);
        socket.request(
                req, "RTM_NEWTFILTER bpf ingress prio " + priority + " dev " + link.name() + where);
    }

    /**
     * Adds a cls_bpf filter for every protocol on the link's clsact ingress hook whose action
     * redirects each packet to the egress of the device {@code targetIndex} (mirred, the packet
     * consumed), NLM_F_EXCL. Not in direct-action mode: its one instruction returns -1, "use the
     * filter's actions" (cls_bpf_classify).
     */
    void addIngressRedirect(Link link, int priority, int targetIndex) throws SyscallException {
        NetlinkRequest req = ingressBpfFilter(link, priority);
        int options = req.nest(LinuxNetlinkAbi.TCA_OPTIONS);
        req.attrU16(LinuxNetlinkAbi.TCA_BPF_OPS_LEN, 1)
                .attr(LinuxNetlinkAbi.TCA_BPF_OPS, MATCH_ALL);
        int actions = req.nest(LinuxNetlinkAbi.TCA_BPF_ACT);
        int first = req.nest(1);
        req.attrString(LinuxNetlinkAbi.TCA_ACT_KIND, "mirred");
        int actionOptions = req.nest(LinuxNetlinkAbi.TCA_ACT_OPTIONS);
        req.attr(LinuxNetlinkAbi.TCA_MIRRED_PARMS, mirredRedirect(targetIndex));
        req.end(actionOptions).end(first).end(actions).end(options);
        socket.request(
                req,
                "RTM_NEWTFILTER bpf ingress prio "
                        + priority
                        + " dev "
                        + link.name()
                        + " action mirred egress redirect to ifindex "
                        + targetIndex
                        + where);
    }

    /** RTM_NEWTFILTER of a cls_bpf filter for every protocol on the link's clsact ingress hook, NLM_F_EXCL: the caller adds TCA_OPTIONS. */
    private static NetlinkRequest ingressBpfFilter(Link link, int priority) {
        return new NetlinkRequest(
                        LinuxNetlinkAbi.RTM_NEWTFILTER,
                        LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                .tcmsg(
                        LinuxNetlinkAbi.AF_UNSPEC,
                        link.index(),
                        1,
                        LinuxNetlinkAbi.TC_H_CLSACT_INGRESS,
                        filterInfo(priority))
                .attrString(LinuxNetlinkAbi.TCA_KIND, "bpf");
    }

    /** One classic BPF instruction, {@code ret #-1}: every packet matches. */
    private static final byte[] MATCH_ALL =
            ByteBuffer.allocate(8)
                    .order(ByteOrder.nativeOrder())
                    .putShort((short) 0x06)
                    .put((byte) 0)
                    .put((byte) 0)
                    .putInt(-1)
                    .array();

    /** struct tc_mirred: tc_gen (index, capab, action, refcnt, bindcnt), eaction, ifindex. */
    static byte[] mirredRedirect(int targetIndex) {
        return ByteBuffer.allocate(28)
                .order(ByteOrder.nativeOrder())
                .putInt(0)
                .putInt(0)
                .putInt(LinuxNetlinkAbi.TC_ACT_STOLEN)
                .putInt(0)
                .putInt(0)
                .putInt(LinuxNetlinkAbi.TCA_EGRESS_REDIR)
                .putInt(targetIndex)
                .array();
    }

    /**
     * Creates an IFB device (kind "ifb", NLM_F_EXCL), down: what a device's ingress redirects to
     * so that a qdisc can shape it.
     *
     * @param mtu bytes; 0 keeps the kernel default
     */
    void createIfb(String name, int mtu) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(
                                LinuxNetlinkAbi.RTM_NEWLINK,
                                LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .ifinfomsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0)
                        .attrString(LinuxNetlinkAbi.IFLA_IFNAME, name);
        if (mtu > 0) {
            req.attrU32(LinuxNetlinkAbi.IFLA_MTU, mtu);
        }
        int linkInfo = req.nest(LinuxNetlinkAbi.IFLA_LINKINFO);
        req.attrString(LinuxNetlinkAbi.IFLA_INFO_KIND, "ifb");
        req.end(linkInfo);
        socket.request(req, "RTM_NEWLINK ifb " + name + where);
    }

    /**
     * Adds a token bucket filter as the link's root qdisc (handle 1:, NLM_F_EXCL): the rate, the
     * bucket (TCA_TBF_BURST, so the kernel computes the bucket's time itself) and the limit.
     *
     * @param rate bytes per second
     * @param bucket bytes, at most 2^32-1
     * @param limit bytes, at most 2^32-1
     */
    void addRootTbf(Link link, long rate, long bucket, long limit) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(
                                LinuxNetlinkAbi.RTM_NEWQDISC,
                                LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .tcmsg(
                                LinuxNetlinkAbi.AF_UNSPEC,
                                link.index(),
                                LinuxNetlinkAbi.TC_H_ROOT_HANDLE,
                                LinuxNetlinkAbi.TC_H_ROOT,
                                0)
                        .attrString(LinuxNetlinkAbi.TCA_KIND, "tbf");
        int options = req.nest(LinuxNetlinkAbi.TCA_OPTIONS);
        req.attr(LinuxNetlinkAbi.TCA_TBF_PARMS, tbfOptions(rate, bucket, limit))
                .attr(
                        LinuxNetlinkAbi.TCA_TBF_RATE64,
                        ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(rate).array())
                .attrU32(LinuxNetlinkAbi.TCA_TBF_BURST, (int) bucket);
        req.end(options);
        socket.request(
                req,
                "RTM_NEWQDISC tbf root dev "
                        + link.name()
                        + " rate "
                        + rate
                        + " B/s burst "
                        + bucket
                        + " B limit "
                        + limit
                        + " B"
                        + where);
    }

    /**
     * struct tc_tbf_qopt: the rate's tc_ratespec (link layer ethernet, so no rate table; the rate
     * capped at 2^32-1, TCA_TBF_RATE64 carries it whole), no peak rate, the limit, the bucket's
     * time in psched ticks (64 ns; the kernel recomputes it from TCA_TBF_BURST), no MTU.
     */
    static byte[] tbfOptions(long rate, long bucket, long limit) {
        long bucketNanos = bucket * 1_000_000_000L / rate; // bucket < 2^32: no overflow
        return ByteBuffer.allocate(36)
                .order(ByteOrder.nativeOrder())
                .put((byte) 0)
                .put((byte) LinuxNetlinkAbi.TC_LINKLAYER_ETHERNET)
                .putShort((short) 0)
                .putShort((short) -1)
                .putShort((short) 0)
                .putInt((int) Math.min(rate, 0xFFFF_FFFFL))
                .put(new byte[12])
                .putInt((int) limit)
                .putInt((int) Math.min(bucketNanos >>> 6, 0xFFFF_FFFFL))
                .putInt(0)
                .array();
    }

    /** @return the link's root qdisc when it is a token bucket filter, else empty */
    Optional<Tbf> rootTbf(Link link) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETQDISC, 0)
                        .tcmsg(LinuxNetlinkAbi.AF_UNSPEC, link.index(), 0, 0, 0);
        for (NetlinkMessage m : socket.dump(req, "RTM_GETQDISC dump dev " + link.name() + where)) {
            ByteBuffer p = m.payload();
            if (m.type() != LinuxNetlinkAbi.RTM_NEWQDISC
                    || p.getInt(4) != link.index()
                    || p.getInt(12) != LinuxNetlinkAbi.TC_H_ROOT) {
                continue;
            }
            NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.TCMSG_LEN);
            if (!"tbf".equals(a.string(LinuxNetlinkAbi.TCA_KIND))) {
                return Optional.empty();
            }
            NetlinkMessage.Attributes options = a.nested(LinuxNetlinkAbi.TCA_OPTIONS, 0);
            byte[] parms = options.bytes(LinuxNetlinkAbi.TCA_TBF_PARMS);
            if (parms == null || parms.length < 36) {
                return Optional.empty();
            }
            ByteBuffer q = ByteBuffer.wrap(parms).order(ByteOrder.nativeOrder());
            byte[] rate64 = options.bytes(LinuxNetlinkAbi.TCA_TBF_RATE64);
            long rate =
                    rate64 != null && rate64.length == 8
                            ? ByteBuffer.wrap(rate64).order(ByteOrder.nativeOrder()).getLong()
                            : Integer.toUnsignedLong(q.getInt(8));
            return Optional.of(new Tbf(rate, Integer.toUnsignedLong(q.getInt(24))));
        }
        return Optional.empty();
    }

    /** tcm_info of a filter: the priority in the upper 16 bits, the protocol (ETH_P_ALL) in network order below. */
    static int filterInfo(int priority) {
        int protocol =
                ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN
                        ? Short.toUnsignedInt(Short.reverseBytes((short) LinuxNetlinkAbi.ETH_P_ALL))
                        : LinuxNetlinkAbi.ETH_P_ALL;
        return (priority << 16) | protocol;
    }

    /** @return the filters on the link's clsact ingress hook; empty when it has no clsact qdisc */
    List<Filter> ingressFilters(Link link) throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETTFILTER, 0)
                        .tcmsg(
                                LinuxNetlinkAbi.AF_UNSPEC,
                                link.index(),
                                0,
                                LinuxNetlinkAbi.TC_H_CLSACT_INGRESS,
                                0);
        List<NetlinkMessage> parts;
        try {
            parts = socket.dump(req, "RTM_GETTFILTER dump ingress dev " + link.name() + where);
        } catch (SyscallException e) {
            if (e.errno() == LibC.EINVAL || e.errno() == LibC.ENOENT) {
                return List.of(); // no clsact qdisc, so no ingress hook to list
            }
            throw e;
        }
        List<Filter> out = new ArrayList<>();
        for (NetlinkMessage m : parts) {
            if (m.type() != LinuxNetlinkAbi.RTM_NEWTFILTER) {
                continue;
            }
            NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.TCMSG_LEN);
            String kind = a.string(LinuxNetlinkAbi.TCA_KIND);
            NetlinkMessage.Attributes options = a.nested(LinuxNetlinkAbi.TCA_OPTIONS, 0);
            if (!options.has(LinuxNetlinkAbi.TCA_BPF_OPS)
                    && !options.has(LinuxNetlinkAbi.TCA_BPF_FLAGS)) {
                continue; // the filter chain's header entry, no filter of its own
            }
            int priority = m.payload().getInt(16) >>> 16;
            out.add(
                    new Filter(
                            priority,
                            kind == null ? "" : kind,
                            options.bytes(LinuxNetlinkAbi.TCA_BPF_OPS),
                            Math.max(options.u32(LinuxNetlinkAbi.TCA_BPF_FLAGS), 0),
                            redirectIndex(options)));
        }
        return out;
    }

    /** @return the ifindex the first action of a filter's list redirects to when it is mirred, else -1 */
    private static int redirectIndex(NetlinkMessage.Attributes filterOptions)
            throws SyscallException {
        NetlinkMessage.Attributes first =
                filterOptions.nested(LinuxNetlinkAbi.TCA_BPF_ACT, 0).nested(1, 0);
        if (!"mirred".equals(first.string(LinuxNetlinkAbi.TCA_ACT_KIND))) {
            return -1;
        }
        byte[] parms =
                first.nested(LinuxNetlinkAbi.TCA_ACT_OPTIONS, 0)
                        .bytes(LinuxNetlinkAbi.TCA_MIRRED_PARMS);
        return parms == null || parms.length < 28
                ? -1
                : ByteBuffer.wrap(parms).order(ByteOrder.nativeOrder()).getInt(24);
    }

    /** @return ifindex → the drops counted by that link's clsact qdisc, for every link here that has one */
    Map<Integer, Long> clsactDrops() throws SyscallException {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETQDISC, 0)
                        .tcmsg(LinuxNetlinkAbi.AF_UNSPEC, 0, 0, 0, 0);
        Map<Integer, Long> out = new HashMap<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETQDISC dump" + where)) {
            if (m.type() != LinuxNetlinkAbi.RTM_NEWQDISC) {
                continue;
            }
            NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.TCMSG_LEN);
            if (!"clsact".equals(a.string(LinuxNetlinkAbi.TCA_KIND))) {
                continue;
            }
            byte[] queue =
                    a.nested(LinuxNetlinkAbi.TCA_STATS2, 0).bytes(LinuxNetlinkAbi.TCA_STATS_QUEUE);
            long drops =
                    queue == null || queue.length < 12
                            ? 0
                            : Integer.toUnsignedLong(
                                    ByteBuffer.wrap(queue)
                                            .order(ByteOrder.nativeOrder())
                                            .getInt(8));
            out.put(m.payload().getInt(4), drops);
        }
        return out;
    }

    /** @return the name iproute2 gives a route protocol number, else the number */
    static String protocolName(int protocol) {
        return switch (protocol) {
            case LinuxNetlinkAbi.RTPROT_KERNEL -> "kernel";
            case LinuxNetlinkAbi.RTPROT_BOOT -> "boot";
            case LinuxNetlinkAbi.RTPROT_STATIC -> "static";
            default -> Integer.toString(protocol);
        };
    }

    @Override
    public void close() {
        socket.close();
    }

    /** @return e.g. {@code "0.0.0.0/0 via 169.254.1.1"} or {@code "fd00:198::5/128"} */
    static String describe(InetAddress destination, int destinationLength, InetAddress gateway) {
        String dst = text(destination) + "/" + destinationLength;
        return gateway == null ? dst : dst + " via " + text(gateway);
    }

    /** @return the address as people write it: RFC 5952 for IPv6 ({@code fd00:198::5}, not Java's long form) */
    static String text(InetAddress address) {
        byte[] b = address.getAddress();
        if (b.length == 4) {
            return address.getHostAddress();
        }
        int[] groups = new int[8];
        for (int i = 0; i < 8; i++) {
            groups[i] = (Byte.toUnsignedInt(b[2 * i]) << 8) | Byte.toUnsignedInt(b[2 * i + 1]);
        }
        int bestStart = -1;
        int bestLength = 1; // a single zero group is not shortened
        for (int i = 0; i < 8; i++) {
            int j = i;
            while (j < 8 && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) {
                bestStart = i;
                bestLength = j - i;
            }
            i = Math.max(i, j);
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLength - 1;
                continue;
            }
            if (i > 0 && i != bestStart + bestLength) {
                sb.append(':');
            }
            sb.append(Integer.toHexString(groups[i]));
        }
        return sb.toString();
    }

    static int family(InetAddress address) {
        return address instanceof Inet4Address ? LinuxNetlinkAbi.AF_INET : LinuxNetlinkAbi.AF_INET6;
    }

    static Link parseLink(NetlinkMessage m) throws SyscallException {
        ByteBuffer p = m.payload();
        NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.IFINFOMSG_LEN);
        byte[] mac = a.bytes(LinuxNetlinkAbi.IFLA_ADDRESS);
        NetlinkMessage.Attributes info = a.nested(LinuxNetlinkAbi.IFLA_LINKINFO, 0);
        String kind = info.string(LinuxNetlinkAbi.IFLA_INFO_KIND);
        Vxlan vxlan = null;
        if ("vxlan".equals(kind)) {
            NetlinkMessage.Attributes d = info.nested(LinuxNetlinkAbi.IFLA_INFO_DATA, 0);
            InetAddress local =
                    d.has(LinuxNetlinkAbi.IFLA_VXLAN_LOCAL6)
                            ? d.address(LinuxNetlinkAbi.IFLA_VXLAN_LOCAL6)
                            : d.address(LinuxNetlinkAbi.IFLA_VXLAN_LOCAL);
            vxlan =
                    new Vxlan(
                            d.u32(LinuxNetlinkAbi.IFLA_VXLAN_ID),
                            local,
                            d.be16(LinuxNetlinkAbi.IFLA_VXLAN_PORT),
                            d.has(LinuxNetlinkAbi.IFLA_VXLAN_LINK)
                                    ? d.u32(LinuxNetlinkAbi.IFLA_VXLAN_LINK)
                                    : -1,
                            d.u8(LinuxNetlinkAbi.IFLA_VXLAN_LEARNING) == 1);
        }
        return new Link(
                p.getInt(4),
                a.string(LinuxNetlinkAbi.IFLA_IFNAME),
                p.getInt(8),
                a.u32(LinuxNetlinkAbi.IFLA_MTU),
                mac == null ? "" : HexFormat.ofDelimiter(":").formatHex(mac),
                a.u32(LinuxNetlinkAbi.IFLA_LINK),
                kind == null ? "" : kind,
                vxlan);
    }

    /** @return 0.0.0.0 or :: */
    static InetAddress zero(int family) {
        try {
            return InetAddress.getByAddress(new byte[family == LinuxNetlinkAbi.AF_INET ? 4 : 16]);
        } catch (UnknownHostException e) {
            throw new AssertionError("4 or 16 bytes are always an address", e);
        }
    }
}
