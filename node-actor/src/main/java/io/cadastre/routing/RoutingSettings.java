package io.cadastre.routing;

import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.IpPrefix;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * {@code cadastre.routing}: how this host reaches other hosts' pods.
 *
 * @param mode the routing mode
 * @param device the underlay interface; "" to find it (the interface of the cluster address, else
 *     of the default route)
 * @param vni the VXLAN network identifier of Cadastre's devices, 1 to 2^24-1; every agent of a
 *     cluster must use the same
 * @param port the VXLAN UDP port, 1 to 65535 (IANA's 4789 by default); the same on every agent
 * @param resync how often everything is read again from the entities and reconciled (the hints
 *     make changes arrive within milliseconds; this catches what a lost hint or a hand-made change
 *     would leave)
 * @param debounce how long a change waits for others before the reconcile that applies them all
 * @param natOutgoing which pods' packets to outside every pool are masqueraded
 */
public record RoutingSettings(
        RoutingMode mode,
        String device,
        int vni,
        int port,
        Duration resync,
        Duration debounce,
        NatOutgoing natOutgoing) {
    /**
     * The default VNI: neither Flannel's 1 nor Calico's 4096 (4097 for IPv6), so that Cadastre's
     * devices can share UDP port 4789 with theirs (the kernel multiplexes one socket by VNI).
     */
    public static final int DEFAULT_VNI = 7202;

    public static final int DEFAULT_PORT = 4789;

    /** IPv6 requires every link to carry 1280 bytes (RFC 8200, section 5). */
    public static final int IPV6_MIN_MTU = 1280;

    /** The smallest pod MTU accepted for IPv4 alone (RFC 791's 576-byte datagram every host takes). */
    public static final int IPV4_MIN_MTU = 576;

    /**
     * {@code cadastre.routing.nat-outgoing}: outgoing NAT per family (Calico's {@code natOutgoing},
     * Cilium's {@code enable-ipv4-masquerade} and {@code enable-ipv6-masquerade}).
     *
     * @param ipv4 whether pods' IPv4 packets to destinations outside every pool are masqueraded
     * @param ipv6 likewise for IPv6
     * @param exempt destinations, beyond the pools, that keep the pods' addresses (networks that
     *     route the pools back)
     */
    public record NatOutgoing(boolean ipv4, boolean ipv6, List<IpPrefix> exempt) {
        /** Both families, nothing exempt beyond the pools: what Calico's and Cilium's installs do. */
        public static final NatOutgoing ON = new NatOutgoing(true, true, List.of());

        public static final NatOutgoing OFF = new NatOutgoing(false, false, List.of());

        public NatOutgoing {
            exempt = List.copyOf(exempt);
        }

        /** @return whether packets of the family of {@code prefix} are masqueraded */
        public boolean covers(IpPrefix prefix) {
            return prefix.v4() ? ipv4 : ipv6;
        }
    }

    /** @throws IllegalArgumentException naming the setting for a VNI, port or duration out of range */
    public RoutingSettings {
        Objects.requireNonNull(natOutgoing, "natOutgoing");
        if (vni < 1 || vni > 0xffffff) {
            throw new IllegalArgumentException(
                    "cadastre.routing.vni " + vni + " is out of 1.." + 0xffffff);
        }
        if (port < 1 || port > 0xffff) {
            throw new IllegalArgumentException(
                    "cadastre.routing.port " + port + " is out of 1..65535");
        }
        if (resync.isNegative() || resync.isZero()) {
            throw new IllegalArgumentException(
                    "cadastre.routing.resync-interval must be positive, not " + resync);
        }
        if (debounce.isNegative()) {
            throw new IllegalArgumentException(
                    "cadastre.routing.debounce must not be negative, not " + debounce);
        }
    }

    /**
     * Cross-subnet on the found underlay, VNI {@value #DEFAULT_VNI}, port 4789, resync 30 s,
     * debounce 10 ms, outgoing NAT on for both families.
     */
    public static RoutingSettings defaults() {
        return new RoutingSettings(
                RoutingMode.CROSS_SUBNET,
                "",
                DEFAULT_VNI,
                DEFAULT_PORT,
                Duration.ofSeconds(30),
                Duration.ofMillis(10),
                NatOutgoing.ON);
    }

    /** No routing: the agent changes nothing host-wide. */
    public static RoutingSettings none() {
        return new RoutingSettings(
                RoutingMode.NONE,
                "",
                DEFAULT_VNI,
                DEFAULT_PORT,
                Duration.ofSeconds(30),
                Duration.ofMillis(10),
                NatOutgoing.OFF);
    }

    /**
     * The MTU of the pods' interfaces when the netconf gives none: the underlay's in direct mode,
     * less VXLAN's headers where traffic may be encapsulated (50 bytes over IPv4, 70 over IPv6,
     * when the host has an IPv6 underlay and pods get IPv6 addresses); 0 (the kernel's default)
     * without routing or without an underlay.
     *
     * @param underlay the host's underlay, or null
     * @param ipv6Pods whether pods get IPv6 addresses (some pool is IPv6)
     */
    public int podMtu(Underlay underlay, boolean ipv6Pods) {
        if (mode == RoutingMode.NONE || underlay == null) {
            return 0;
        }
        if (mode == RoutingMode.DIRECT) {
            return underlay.mtu();
        }
        boolean v6Overlay = ipv6Pods && underlay.ipv6() != null;
        return underlay.mtu()
                - (v6Overlay ? HostRouting.VXLAN_IPV6_OVERHEAD : HostRouting.VXLAN_IPV4_OVERHEAD);
    }

    /** @return the smallest pod MTU that works: {@value #IPV6_MIN_MTU} with IPv6 pods, else {@value #IPV4_MIN_MTU} */
    public static int minimumPodMtu(boolean ipv6Pods) {
        return ipv6Pods ? IPV6_MIN_MTU : IPV4_MIN_MTU;
    }
}
