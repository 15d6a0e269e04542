package io.cadastre.dataplane;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * The rtnetlink requests the dataplane makes, over one {@link NetlinkSocket} and so in one
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
     */
    record Link(int index, String name, int flags, int mtu, String mac, int peerIndex, String kind) {
        boolean up() {
            return (flags & Rtnl.IFF_UP) != 0;
        }
    }

    /** An address as RTM_GETADDR reports it (IFA_LOCAL, else IFA_ADDRESS). */
    record Address(int index, InetAddress address, int prefixLength) {}

    /**
     * A main-table unicast route as RTM_GETROUTE reports it.
     *
     * @param destination null for a default route
     * @param gateway null for a route without next hop
     * @param outputIndex RTA_OIF, or -1 (e.g. multipath)
     */
    record Route(InetAddress destination, int destinationLength, InetAddress gateway, int outputIndex) {}

    private final NetlinkSocket socket;
    private final String where;

    /** @param where appended to error messages, e.g. {@code " in netns /var/run/netns/x"}; "" for the host */
    Rtnetlink(NetlinkSocket socket, String where) {
        this.socket = socket;
        this.where = where;
    }

    /** @return the link named {@code name}, or empty if there is none (ENODEV) */
    Optional<Link> link(String name) throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_GETLINK, 0)
                .ifinfomsg(Rtnl.AF_UNSPEC, 0, 0, 0)
                .attrString(Rtnl.IFLA_IFNAME, name)
                .attrU32(Rtnl.IFLA_EXT_MASK, Rtnl.RTEXT_FILTER_SKIP_STATS);
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
            if (m.type() == Rtnl.RTM_NEWLINK) {
                return Optional.of(parseLink(m));
            }
        }
        throw new SyscallException("RTM_GETLINK " + name + where + ": no link in the reply");
    }

    /** @return the link named {@code name}; a missing one is an error here */
    Link existingLink(String name) throws SyscallException {
        return link(name).orElseThrow(() -> new SyscallException("RTM_GETLINK " + name + where, LibC.ENODEV));
    }

    /**
     * Creates a veth pair whose first end, {@code name}, lives here and whose peer is created
     * directly inside {@code peerNetns} under {@code peerName}: the peer name is
     * only checked for clashes there. NLM_F_EXCL, and the kernel creates both ends or neither.
     *
     * @param mtu bytes, for both ends; 0 keeps the kernel default
     */
    void createVeth(String name, byte[] mac, int mtu, String peerName, Netns peerNetns) throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_NEWLINK, Rtnl.NLM_F_CREATE | Rtnl.NLM_F_EXCL)
                .ifinfomsg(Rtnl.AF_UNSPEC, 0, 0, 0)
                .attrString(Rtnl.IFLA_IFNAME, name)
                .attr(Rtnl.IFLA_ADDRESS, mac);
        if (mtu > 0) {
            req.attrU32(Rtnl.IFLA_MTU, mtu);
        }
        int linkInfo = req.nest(Rtnl.IFLA_LINKINFO);
        req.attrString(Rtnl.IFLA_INFO_KIND, "veth");
        int data = req.nest(Rtnl.IFLA_INFO_DATA);
        int peer = req.nest(Rtnl.VETH_INFO_PEER);
        req.ifinfomsg(Rtnl.AF_UNSPEC, 0, 0, 0).attrString(Rtnl.IFLA_IFNAME, peerName);
        if (mtu > 0) {
            req.attrU32(Rtnl.IFLA_MTU, mtu);
        }
        req.attrU32(Rtnl.IFLA_NET_NS_FD, peerNetns.fd());
        req.end(peer).end(data).end(linkInfo);
        socket.request(req, "RTM_NEWLINK veth " + name + where + " peer " + peerName + " in netns " + peerNetns.path());
    }

    void setUp(Link link) throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_SETLINK, 0)
                .ifinfomsg(Rtnl.AF_UNSPEC, link.index(), Rtnl.IFF_UP, Rtnl.IFF_UP);
        socket.request(req, "RTM_SETLINK " + link.name() + " up" + where);
    }

    /**
     * Deletes a link by index, so that a name reused meanwhile cannot redirect the delete. A veth
     * takes its peer along, and each end takes its addresses and routes.
     */
    void deleteLink(Link link) throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_DELLINK, 0)
                .ifinfomsg(Rtnl.AF_UNSPEC, link.index(), 0, 0);
        socket.request(req, "RTM_DELLINK " + link.name() + where);
    }

    /** Deletes a link by name; see {@link #deleteLink(Link)}. */
    void deleteLink(String name) throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_DELLINK, 0)
                .ifinfomsg(Rtnl.AF_UNSPEC, 0, 0, 0)
                .attrString(Rtnl.IFLA_IFNAME, name);
        socket.request(req, "RTM_DELLINK " + name + where);
    }

    /** Adds a universe-scope address; IPv6 ones with IFA_F_NODAD, so they are usable at once. */
    void addAddress(Link link, InetAddress address, int prefixLength) throws SyscallException {
        boolean v4 = address instanceof Inet4Address;
        int flags = v4 ? 0 : Rtnl.IFA_F_NODAD;
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_NEWADDR, Rtnl.NLM_F_CREATE | Rtnl.NLM_F_EXCL)
                .ifaddrmsg(family(address), prefixLength, flags, Rtnl.RT_SCOPE_UNIVERSE, link.index())
                .attr(Rtnl.IFA_LOCAL, address.getAddress())
                .attr(Rtnl.IFA_ADDRESS, address.getAddress())
                .attrU32(Rtnl.IFA_FLAGS, flags);
        socket.request(req, "RTM_NEWADDR " + text(address) + "/" + prefixLength
                + " dev " + link.name() + where);
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
        int scope = gateway == null && v4 ? Rtnl.RT_SCOPE_LINK : Rtnl.RT_SCOPE_UNIVERSE;
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_NEWROUTE, Rtnl.NLM_F_CREATE | Rtnl.NLM_F_EXCL)
                .rtmsg(family(destination), destinationLength, Rtnl.RT_TABLE_MAIN, Rtnl.RTPROT_BOOT, scope,
                        Rtnl.RTN_UNICAST);
        if (destinationLength > 0) {
            req.attr(Rtnl.RTA_DST, destination.getAddress());
        }
        if (gateway != null) {
            req.attr(Rtnl.RTA_GATEWAY, gateway.getAddress());
        }
        req.attrU32(Rtnl.RTA_OIF, link.index());
        socket.request(req, "RTM_NEWROUTE " + describe(destination, destinationLength, gateway)
                + " dev " + link.name() + where);
    }

    /** @return every address of every link here, both families */
    List<Address> addresses() throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_GETADDR, 0).ifaddrmsg(Rtnl.AF_UNSPEC, 0, 0, 0, 0);
        List<Address> out = new ArrayList<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETADDR dump" + where)) {
            if (m.type() != Rtnl.RTM_NEWADDR) {
                continue;
            }
            ByteBuffer p = m.payload();
            NetlinkMessage.Attributes a = m.attributes(Rtnl.IFADDRMSG_LEN);
            InetAddress address = a.has(Rtnl.IFA_LOCAL) ? a.address(Rtnl.IFA_LOCAL) : a.address(Rtnl.IFA_ADDRESS);
            if (address != null) {
                out.add(new Address(p.getInt(4), address, Byte.toUnsignedInt(p.get(1))));
            }
        }
        return out;
    }

    /** @return the unicast routes of the main table here, both families */
    List<Route> routes() throws SyscallException {
        NetlinkRequest req = new NetlinkRequest(Rtnl.RTM_GETROUTE, 0).rtmsg(Rtnl.AF_UNSPEC, 0, 0, 0, 0, 0);
        List<Route> out = new ArrayList<>();
        for (NetlinkMessage m : socket.dump(req, "RTM_GETROUTE dump" + where)) {
            if (m.type() != Rtnl.RTM_NEWROUTE) {
                continue;
            }
            ByteBuffer p = m.payload();
            NetlinkMessage.Attributes a = m.attributes(Rtnl.RTMSG_LEN);
            int table = a.has(Rtnl.RTA_TABLE) ? a.u32(Rtnl.RTA_TABLE) : Byte.toUnsignedInt(p.get(4));
            if (table != Rtnl.RT_TABLE_MAIN || Byte.toUnsignedInt(p.get(7)) != Rtnl.RTN_UNICAST) {
                continue;
            }
            out.add(new Route(a.address(Rtnl.RTA_DST), Byte.toUnsignedInt(p.get(1)),
                    a.address(Rtnl.RTA_GATEWAY), a.u32(Rtnl.RTA_OIF)));
        }
        return out;
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

    private static int family(InetAddress address) {
        return address instanceof Inet4Address ? Rtnl.AF_INET : Rtnl.AF_INET6;
    }

    private static Link parseLink(NetlinkMessage m) throws SyscallException {
        ByteBuffer p = m.payload();
        NetlinkMessage.Attributes a = m.attributes(Rtnl.IFINFOMSG_LEN);
        byte[] mac = a.bytes(Rtnl.IFLA_ADDRESS);
        String kind = a.nested(Rtnl.IFLA_LINKINFO, 0).string(Rtnl.IFLA_INFO_KIND);
        return new Link(p.getInt(4), a.string(Rtnl.IFLA_IFNAME), p.getInt(8), a.u32(Rtnl.IFLA_MTU),
                mac == null ? "" : HexFormat.ofDelimiter(":").formatHex(mac), a.u32(Rtnl.IFLA_LINK),
                kind == null ? "" : kind);
    }
}
