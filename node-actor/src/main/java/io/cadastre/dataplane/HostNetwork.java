package io.cadastre.dataplane;

import io.cadastre.dataplane.Rtnetlink.Address;
import io.cadastre.dataplane.Rtnetlink.Link;
import io.cadastre.dataplane.Rtnetlink.RouteInfo;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * What the host's own network looks like to the routing layer: which interface carries traffic
 * to other hosts (the underlay) and its addresses and MTU, and which VXLAN devices hold which UDP
 * port. Read over rtnetlink in the calling thread's network namespace (the process's for the
 * agent); no state, thread-safe.
 */
public final class HostNetwork {
    private HostNetwork() {}

    /**
     * An address with its prefix length as the interface holds it (host bits set).
     *
     * @param address an IPv4 or IPv6 address
     * @param prefixLength the on-link prefix's length
     */
    public record InterfaceAddress(InetAddress address, int prefixLength) {
        /** @return whether {@code other} lies in this address's on-link prefix */
        public boolean onLink(InetAddress other) {
            byte[] a = address.getAddress();
            byte[] b = other.getAddress();
            if (a.length != b.length) {
                return false;
            }
            for (int bit = 0; bit < prefixLength; bit++) {
                int mask = 0x80 >>> (bit % 8);
                if ((a[bit / 8] & mask) != (b[bit / 8] & mask)) {
                    return false;
                }
            }
            return true;
        }

        /** @return e.g. {@code 198.19.255.11/24} */
        @Override
        public String toString() {
            return Rtnetlink.text(address) + "/" + prefixLength;
        }
    }

    /**
     * The host's interface to the other hosts.
     *
     * @param device its name, e.g. {@code eth0}
     * @param mtu its MTU in bytes
     * @param ipv4 its IPv4 address (the cluster address when it holds it, else its first global
     *     one), or null when it has none
     * @param ipv6 its first global IPv6 address (not link-local), or null
     */
    public record Underlay(String device, int mtu, InterfaceAddress ipv4, InterfaceAddress ipv6) {}

    /**
     * A VXLAN device and the UDP port it listens on (the kernel opens one socket per port and
     * family and shares it between devices of different VNIs).
     */
    public record VxlanPort(String device, int vni, int port) {}

    /**
     * Finds the underlay.
     *
     * @param device the interface to use; empty to find it: the one holding {@code preferred},
     *     else the one of the IPv4 default route, else the one of the IPv6 default route
     * @param preferred the address other hosts know this one by (the cluster address), or null;
     *     a loopback address is ignored
     * @return the underlay; empty when {@code device} is empty and nothing was found (a single
     *     host without a default route)
     * @throws DataplaneException when {@code device} names no interface, or the state cannot be read
     */
    public static Optional<Underlay> underlay(String device, InetAddress preferred)
            throws DataplaneException {
        try (Rtnetlink rt = new Rtnetlink(NetlinkSocket.open(), "")) {
            List<Link> links = rt.links();
            List<Address> addresses = rt.addresses();
            Link link;
            if (!device.isEmpty()) {
                link =
                        links.stream()
                                .filter(l -> l.name().equals(device))
                                .findFirst()
                                .orElseThrow(
                                        () ->
                                                new DataplaneException(
                                                        "the underlay interface "
                                                                + device
                                                                + " does not exist"));
            } else {
                link = find(links, addresses, rt.mainTableRoutes(), preferred);
                if (link == null) {
                    return Optional.empty();
                }
            }
            int index = link.index();
            List<Address> own =
                    addresses.stream()
                            .filter(
                                    a ->
                                            a.index() == index
                                                    && !a.address().isLinkLocalAddress()
                                                    && !a.address().isLoopbackAddress())
                            .toList();
            return Optional.of(
                    new Underlay(
                            link.name(),
                            link.mtu(),
                            first(own, Inet4Address.class, preferred),
                            first(own, Inet6Address.class, preferred)));
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    /**
     * @param family {@code Inet4Address} or {@code Inet6Address}
     * @return the preferred address when it is among the addresses of that family, else the
     *     first of them; {@code null} when there is none
     */
    private static InterfaceAddress first(
            List<Address> addresses, Class<? extends InetAddress> family, InetAddress preferred) {
        return addresses.stream()
                .filter(a -> family.isInstance(a.address()))
                .sorted(Comparator.comparing((Address a) -> !a.address().equals(preferred)))
                .map(a -> new InterfaceAddress(a.address(), a.prefixLength()))
                .findFirst()
                .orElse(null);
    }

    private static Link find(
            List<Link> links,
            List<Address> addresses,
            List<RouteInfo> routes,
            InetAddress preferred) {
        if (preferred != null && !preferred.isLoopbackAddress()) {
            for (Address a : addresses) {
                if (a.address().equals(preferred)) {
                    Link l = byIndex(links, a.index());
                    if (l != null) {
                        return l;
                    }
                }
            }
        }
        for (boolean v4 : new boolean[] {true, false}) {
            for (RouteInfo r : routes) {
                if (r.destinationLength() == 0
                        && r.type() == LinuxNetlinkAbi.RTN_UNICAST
                        && r.outputIndex() > 0
                        && (r.destination() instanceof Inet4Address) == v4) {
                    Link l = byIndex(links, r.outputIndex());
                    if (l != null) {
                        return l;
                    }
                }
            }
        }
        return null;
    }

    private static Link byIndex(List<Link> links, int index) {
        return links.stream().filter(l -> l.index() == index).findFirst().orElse(null);
    }

    /** @return every VXLAN device here with its VNI and UDP port */
    public static List<VxlanPort> vxlanPorts() throws DataplaneException {
        try (Rtnetlink rt = new Rtnetlink(NetlinkSocket.open(), "")) {
            List<VxlanPort> out = new ArrayList<>();
            for (Link l : rt.links()) {
                if (l.vxlan() != null) {
                    out.add(new VxlanPort(l.name(), l.vxlan().vni(), l.vxlan().port()));
                }
            }
            return out;
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    /**
     * @return the interfaces that hold an IPv6 default route (those that may have learnt it from
     *     router advertisements, whose accept_ra must be 2 once forwarding is on)
     */
    public static List<String> ipv6DefaultRouteDevices() throws DataplaneException {
        try (Rtnetlink rt = new Rtnetlink(NetlinkSocket.open(), "")) {
            List<Link> links = rt.links();
            List<String> out = new ArrayList<>();
            for (RouteInfo r : rt.mainTableRoutes()) {
                if (r.destinationLength() == 0
                        && r.destination() instanceof Inet6Address
                        && r.outputIndex() > 0) {
                    Link l = byIndex(links, r.outputIndex());
                    if (l != null && !out.contains(l.name())) {
                        out.add(l.name());
                    }
                }
            }
            return out;
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }
}
