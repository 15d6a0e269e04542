package io.cadastre.agent;

import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.HostNetwork;
import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostNetwork.VxlanPort;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.HostSysctls;
import io.cadastre.ipam.IpFamily;
import io.cadastre.routing.RoutingMode;
import io.cadastre.routing.RoutingSettings;
import java.io.IOException;
import java.net.BindException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What the host must be for the pod network, checked and set once at start, before the actor
 * system exists (so that a host the agent cannot route on never joins the cluster). Every refusal
 * is an {@link IllegalArgumentException} with a message for the operator; {@link AgentMain} exits
 * 2 with it. In mode none nothing is looked at and nothing changed.
 *
 * <ul>
 *   <li>the underlay: the interface named by {@code cadastre.routing.interface} must exist; found
 *       otherwise ({@link HostNetwork#underlay}), or none on a host without a default route;
 *   <li>the pods' MTU ({@link RoutingSettings#podMtu}) must be at least 1280 with IPv6 pools (IPv6's
 *       minimum link MTU) or 576: an underlay of 1300 bytes leaves 1230 over VXLAN on IPv6;
 *   <li>the VXLAN UDP port (vxlan and cross-subnet modes) must be free, or held by a VXLAN device
 *       (the kernel shares one socket between devices of different VNIs), and the VNI not taken on
 *       it by another program's device;
 *   <li>forwarding, for the families of the configured pools ({@code net.ipv4.ip_forward},
 *       {@code net.ipv6.conf.all.forwarding}; felix does the same), after {@code accept_ra = 2} on
 *       every interface with {@code accept_ra = 1} that holds the host's IPv6 default route or is
 *       the underlay: with forwarding on, the kernel ignores router advertisements unless
 *       {@code accept_ra} is 2, and a host learning its default route from them would lose it.
 *       Where {@code /proc/sys} may not be written (a read-only mount in a container), the agent
 *       refuses to start, naming the setting to make on the host.
 * </ul>
 */
final class HostPreflight {
    private HostPreflight() {}

    /**
     * What the preflight found and did.
     *
     * @param underlay the host's underlay, or null (mode none, or a host without one)
     * @param podMtu the pods' MTU when the netconf gives none (0: the kernel's default)
     * @param changes the kernel settings it changed, one line each (logged)
     */
    record Outcome(Underlay underlay, int podMtu, List<String> changes) {}

    /** The host, behind an interface so that tests can give another. */
    interface Host {
        Optional<Underlay> underlay(String device, InetAddress preferred) throws DataplaneException;

        List<VxlanPort> vxlanPorts() throws DataplaneException;

        List<String> ipv6DefaultRouteDevices() throws DataplaneException;

        /** @return whether a UDP socket can bind {@code port} on every address (both families) */
        boolean udpPortFree(int port);

        /** The host's kernel settings ({@link HostSysctls} for the real one). */
        Sysctls sysctls();

        /**
         * This process's network namespace, through rtnetlink and the sysctl tree at {@code procSys}
         * ({@code cadastre.proc-sys}: {@code /proc/sys}, or where a container has the host's
         * {@code /proc/sys/net} mounted writable).
         */
        static Host real(Path procSys) {
            return new Host() {
                @Override
                public Optional<Underlay> underlay(String device, InetAddress preferred)
                        throws DataplaneException {
                    return HostNetwork.underlay(device, preferred);
                }

                @Override
                public List<VxlanPort> vxlanPorts() throws DataplaneException {
                    return HostNetwork.vxlanPorts();
                }

                @Override
                public List<String> ipv6DefaultRouteDevices() throws DataplaneException {
                    return HostNetwork.ipv6DefaultRouteDevices();
                }

                @Override
                public boolean udpPortFree(int port) {
                    // The wildcard of a dual-stack socket conflicts with a socket of either family.
                    try (DatagramSocket s = new DatagramSocket(null)) {
                        s.setReuseAddress(false);
                        s.bind(new InetSocketAddress(port));
                        return true;
                    } catch (BindException e) {
                        return false;
                    } catch (IOException e) {
                        return true; // not a conflict; the device's creation will say what is wrong
                    }
                }

                @Override
                public Sysctls sysctls() {
                    HostSysctls real = new HostSysctls(procSys);
                    return new Sysctls() {
                        @Override
                        public boolean forwarding(IpFamily family) throws DataplaneException {
                            return family == IpFamily.V4
                                    ? real.ipv4Forwarding()
                                    : real.ipv6Forwarding();
                        }

                        @Override
                        public void enableForwarding(IpFamily family) throws DataplaneException {
                            if (family == IpFamily.V4) {
                                real.setIpv4Forwarding(true);
                            } else {
                                real.setIpv6Forwarding(true);
                            }
                        }

                        @Override
                        public int acceptRa(String ifname) throws DataplaneException {
                            return real.acceptRa(ifname);
                        }

                        @Override
                        public void setAcceptRa(String ifname, int value)
                                throws DataplaneException {
                            real.setAcceptRa(ifname, value);
                        }
                    };
                }
            };
        }
    }

    /** The kernel settings the preflight reads and writes. */
    interface Sysctls {
        boolean forwarding(IpFamily family) throws DataplaneException;

        void enableForwarding(IpFamily family) throws DataplaneException;

        int acceptRa(String ifname) throws DataplaneException;

        void setAcceptRa(String ifname, int value) throws DataplaneException;
    }

    /**
     * @param clusterAddress the address other members reach this one on (finds the underlay), or null
     * @param families the families of the configured pools
     * @throws IllegalArgumentException with the operator's message when the host does not do
     */
    static Outcome check(
            RoutingSettings routing,
            InetAddress clusterAddress,
            Set<IpFamily> families,
            Host host) {
        if (routing.mode() == RoutingMode.NONE) {
            return new Outcome(null, 0, List.of());
        }
        Underlay underlay;
        try {
            underlay = host.underlay(routing.device(), clusterAddress).orElse(null);
        } catch (DataplaneException e) {
            throw new IllegalArgumentException("cadastre.routing.interface: " + e.getMessage(), e);
        }
        boolean v6 = families.contains(IpFamily.V6);
        int podMtu = routing.podMtu(underlay, v6);
        int minimum = RoutingSettings.minimumPodMtu(v6);
        if (underlay != null && podMtu < minimum) {
            throw new IllegalArgumentException(
                    "the underlay "
                            + underlay.device()
                            + "'s MTU "
                            + underlay.mtu()
                            + " leaves "
                            + podMtu
                            + " bytes for pods in mode "
                            + routing.mode()
                            + ", below the "
                            + minimum
                            + " bytes "
                            + (v6 ? "IPv6 requires" : "IPv4 pods need")
                            + ": raise its MTU"
                            + (routing.mode().overlay()
                                    ? " (VXLAN adds 50 bytes over IPv4, 70 over IPv6) or use mode direct"
                                    : ""));
        }
        if (routing.mode().overlay()) {
            checkPort(routing, host);
        }
        List<String> changes = new ArrayList<>();
        try {
            forwarding(underlay, families, host, changes);
        } catch (DataplaneException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        return new Outcome(underlay, podMtu, changes);
    }

    private static void checkPort(RoutingSettings routing, Host host) {
        if (host.udpPortFree(routing.port())) {
            return;
        }
        List<VxlanPort> devices;
        try {
            devices = host.vxlanPorts().stream().filter(d -> d.port() == routing.port()).toList();
        } catch (DataplaneException e) {
            throw new IllegalArgumentException(
                    "cadastre.routing.port: cannot list VXLAN devices: " + e.getMessage(), e);
        }
        if (devices.isEmpty()) {
            throw new IllegalArgumentException(
                    "cadastre.routing.port: UDP port "
                            + routing.port()
                            + " is in use by"
                            + " another program: free it or choose another port (the same on every agent)");
        }
        for (VxlanPort d : devices) {
            if (d.vni() == routing.vni() && !d.device().startsWith(HostRouting.DEVICE_PREFIX)) {
                throw new IllegalArgumentException(
                        "cadastre.routing.vni: VNI "
                                + d.vni()
                                + " on UDP port "
                                + d.port()
                                + " is taken by VXLAN device "
                                + d.device()
                                + ": choose another VNI (the same on every agent)");
            }
        }
    }

    private static void forwarding(
            Underlay underlay, Set<IpFamily> families, Host host, List<String> changes)
            throws DataplaneException {
        Sysctls sysctls = host.sysctls();
        if (families.contains(IpFamily.V4) && !sysctls.forwarding(IpFamily.V4)) {
            write("net.ipv4.ip_forward", 1, () -> sysctls.enableForwarding(IpFamily.V4));
            changes.add("net.ipv4.ip_forward = 1");
        }
        if (families.contains(IpFamily.V6) && !sysctls.forwarding(IpFamily.V6)) {
            Set<String> uplinks = new LinkedHashSet<>(host.ipv6DefaultRouteDevices());
            if (underlay != null) {
                uplinks.add(underlay.device());
            }
            for (String uplink : uplinks) {
                if (sysctls.acceptRa(uplink) == 1) {
                    write(
                            "net.ipv6.conf." + uplink + ".accept_ra",
                            2,
                            () -> sysctls.setAcceptRa(uplink, 2));
                    changes.add(
                            "net.ipv6.conf."
                                    + uplink
                                    + ".accept_ra = 2 (keeps router advertisements with forwarding on)");
                }
            }
            write("net.ipv6.conf.all.forwarding", 1, () -> sysctls.enableForwarding(IpFamily.V6));
            changes.add("net.ipv6.conf.all.forwarding = 1");
        }
    }

    private interface Write {
        void run() throws DataplaneException;
    }

    private static void write(String setting, int value, Write write) throws DataplaneException {
        try {
            write.run();
        } catch (DataplaneException e) {
            throw new DataplaneException(
                    setting
                            + " must be "
                            + value
                            + " for pods to reach other hosts, and the agent cannot"
                            + " set it ("
                            + e.getMessage()
                            + "): set it on the host (sysctl -w "
                            + setting
                            + "="
                            + value
                            + ", persisted in"
                            + " /etc/sysctl.d) or give the agent a writable /proc/sys, or use cadastre.routing.mode = none",
                    false,
                    e);
        }
    }
}
