package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.typesafe.config.ConfigFactory;
import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.HostNetwork.InterfaceAddress;
import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostNetwork.VxlanPort;
import io.cadastre.dataplane.IpPrefix;
import io.cadastre.ipam.IpFamily;
import io.cadastre.routing.RoutingMode;
import io.cadastre.routing.RoutingSettings;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * {@code cadastre.routing} and the host preflight: bad settings and hosts the agent cannot route
 * on are refused with a message that says what to do (the agent exits 2 with it), forwarding is
 * enabled after {@code accept_ra = 2} where a host learns its default route from router
 * advertisements. The preflight runs against a fake host and a {@code /proc/sys} laid out in a
 * temporary directory; one agent is started for real in a test namespace and exits 2.
 */
class RoutingSettingsTest {
    private static final Underlay UNDERLAY =
            new Underlay(
                    "eth0",
                    1500,
                    new InterfaceAddress(IpPrefix.literal("198.19.255.11"), 24),
                    new InterfaceAddress(IpPrefix.literal("fd00:19:255::11"), 64));

    /** The fake host's kernel settings, by sysctl name. */
    private final Map<String, String> sys =
            new TreeMap<>(
                    Map.of(
                            "net.ipv4.ip_forward",
                            "0",
                            "net.ipv6.conf.all.forwarding",
                            "0",
                            "net.ipv6.conf.eth0.accept_ra",
                            "1",
                            "net.ipv6.conf.uplink.accept_ra",
                            "1",
                            "net.ipv6.conf.other.accept_ra",
                            "1"));

    private static AgentSettings settings(String forced) {
        return AgentSettings.from(
                AgentMain.loadConfig(
                        null, ConfigFactory.parseString("cadastre.node-name = n\n" + forced)));
    }

    @Test
    void defaultsAndOverrides() {
        assertEquals(
                new RoutingSettings(
                        RoutingMode.CROSS_SUBNET,
                        "",
                        7202,
                        4789,
                        Duration.ofSeconds(30),
                        Duration.ofMillis(10),
                        RoutingSettings.NatOutgoing.ON),
                settings("").routing());
        assertEquals(
                new RoutingSettings(
                        RoutingMode.VXLAN,
                        "bond0",
                        42,
                        8472,
                        Duration.ofSeconds(5),
                        Duration.ZERO,
                        new RoutingSettings.NatOutgoing(
                                true,
                                false,
                                List.of(
                                        IpPrefix.parse("10.0.0.0/8"),
                                        IpPrefix.parse("2001:db8::/32")))),
                settings(
                                "cadastre.routing { mode = vxlan, interface = bond0, vni = 42, port = 8472, resync-interval = 5s,"
                                        + " debounce = 0s, nat-outgoing { ipv6 = off, exempt = [\"10.0.0.0/8\", \" 2001:db8::/32\"] } }")
                        .routing());
        assertEquals(RoutingMode.NONE, settings("cadastre.routing.mode = none").routing().mode());
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertRefused(
                "cadastre.routing.mode = bgp",
                "cadastre.routing.mode: unknown routing mode 'bgp' (known: none, direct,"
                        + " vxlan, cross-subnet)");
        assertRefused("cadastre.routing.vni = 0", "cadastre.routing.vni 0 is out of 1..16777215");
        assertRefused(
                "cadastre.routing.vni = 16777216",
                "cadastre.routing.vni 16777216 is out of 1..16777215");
        assertRefused(
                "cadastre.routing.port = 70000", "cadastre.routing.port 70000 is out of 1..65535");
        assertRefused(
                "cadastre.routing.resync-interval = 0s",
                "cadastre.routing.resync-interval must be positive");
        assertRefused(
                "cadastre.routing.interface = \"a/b\"",
                "cadastre.routing.interface: 'a/b' is no interface name");
        assertRefused(
                "cadastre.routing.nat-outgoing.exempt = [\"10.0.0.1/8\"]",
                "cadastre.routing.nat-outgoing.exempt: host bits set in 10.0.0.1/8");
        assertRefused(
                "cadastre.routing.nat-outgoing.exempt = [\"example.com/24\"]",
                "cadastre.routing.nat-outgoing.exempt: not an IP address literal: example.com");
    }

    /** The sysctl tree: /proc/sys, or where a container has the host's /proc/sys/net mounted. */
    @Test
    void procSysDefaultsToTheKernelsAndMustBeAbsolute() {
        assertEquals(java.nio.file.Path.of("/proc/sys"), settings("").procSys());
        assertEquals(
                java.nio.file.Path.of("/host/proc/sys"),
                settings("cadastre.proc-sys = \"/host/proc/sys/\"").procSys());
        assertRefused(
                "cadastre.proc-sys = \"host/proc/sys\"",
                "cadastre.proc-sys must be an absolute path, not 'host/proc/sys'");
    }

    /** Direct mode on the found underlay, the defaults otherwise. */
    private static RoutingSettings direct() {
        return new RoutingSettings(
                RoutingMode.DIRECT,
                "",
                7202,
                4789,
                Duration.ofSeconds(30),
                Duration.ZERO,
                RoutingSettings.NatOutgoing.ON);
    }

    private static void assertRefused(String setting, String message) {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> settings(setting));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    @Test
    void forwardingIsEnabledAfterAcceptRaTwoOnTheUplinks() {
        FakeHost host = new FakeHost();
        host.defaultRouteDevices = List.of("uplink");
        HostPreflight.Outcome outcome =
                HostPreflight.check(
                        RoutingSettings.defaults(), null, Set.of(IpFamily.V4, IpFamily.V6), host);

        assertEquals(UNDERLAY, outcome.underlay());
        assertEquals(1430, outcome.podMtu());
        assertEquals(
                List.of(
                        "net.ipv4.ip_forward = 1",
                        "net.ipv6.conf.uplink.accept_ra = 2 (keeps router advertisements with forwarding on)",
                        "net.ipv6.conf.eth0.accept_ra = 2 (keeps router advertisements with forwarding on)",
                        "net.ipv6.conf.all.forwarding = 1"),
                outcome.changes());
        assertEquals("1", sys.get("net.ipv4.ip_forward"));
        assertEquals("1", sys.get("net.ipv6.conf.all.forwarding"));
        assertEquals("2", sys.get("net.ipv6.conf.uplink.accept_ra"));
        assertEquals(
                "1",
                sys.get("net.ipv6.conf.other.accept_ra"),
                "an interface without the default route is left alone");
        assertEquals(
                List.of(),
                HostPreflight.check(
                                RoutingSettings.defaults(),
                                null,
                                Set.of(IpFamily.V4, IpFamily.V6),
                                host)
                        .changes(),
                "nothing to change the second time");
    }

    @Test
    void onlyThePoolsFamiliesAreForwarded() {
        HostPreflight.check(RoutingSettings.defaults(), null, Set.of(IpFamily.V4), new FakeHost());
        assertEquals("1", sys.get("net.ipv4.ip_forward"));
        assertEquals("0", sys.get("net.ipv6.conf.all.forwarding"));
    }

    @Test
    void aReadOnlyProcSysStopsTheAgentWithWhatToDo() {
        FakeHost readOnly = new FakeHost();
        readOnly.readOnly = true;
        IllegalArgumentException ro = refused(Set.of(IpFamily.V6), readOnly);
        assertTrue(
                ro.getMessage()
                        .startsWith(
                                "net.ipv6.conf.eth0.accept_ra must be 2 for pods to reach other hosts, and the"
                                        + " agent cannot set it (write 2 to /proc/sys/net/ipv6/conf/eth0/accept_ra: Read-only file system)"),
                ro.getMessage());
        assertTrue(
                ro.getMessage()
                        .endsWith(
                                "set it on the host (sysctl -w net.ipv6.conf.eth0.accept_ra=2, persisted in"
                                        + " /etc/sysctl.d) or give the agent a writable /proc/sys, or use cadastre.routing.mode = none"),
                ro.getMessage());
    }

    @Test
    void anMtuTooSmallForThePodsStopsTheAgent() {
        FakeHost host = new FakeHost();
        host.underlay = new Underlay("eth0", 1300, UNDERLAY.ipv4(), UNDERLAY.ipv6());
        IllegalArgumentException e = refused(Set.of(IpFamily.V4, IpFamily.V6), host);
        assertEquals(
                "the underlay eth0's MTU 1300 leaves 1230 bytes for pods in mode cross-subnet, below the 1280 bytes"
                        + " IPv6 requires: raise its MTU (VXLAN adds 50 bytes over IPv4, 70 over IPv6) or use mode direct",
                e.getMessage());
        RoutingSettings direct = direct();
        assertEquals(
                1300,
                HostPreflight.check(direct, null, Set.of(IpFamily.V4, IpFamily.V6), host).podMtu());
    }

    @Test
    void aPortInUseOrAVniTakenStopsTheAgent() {
        FakeHost host = new FakeHost();
        host.portFree = false;
        IllegalArgumentException e = refused(Set.of(IpFamily.V4), host);
        assertEquals(
                "cadastre.routing.port: UDP port 4789 is in use by another program: free it or choose another port"
                        + " (the same on every agent)",
                e.getMessage());

        host.vxlan.add(new VxlanPort("vxlan.calico", 4096, 4789));
        assertEquals(
                UNDERLAY,
                HostPreflight.check(RoutingSettings.defaults(), null, Set.of(IpFamily.V4), host)
                        .underlay(),
                "another VXLAN device's socket is shared by VNI");
        host.vxlan.add(new VxlanPort("cadastre.vx4", 7202, 4789));
        HostPreflight.check(
                RoutingSettings.defaults(),
                null,
                Set.of(IpFamily.V4),
                host); // our own, from before a restart
        host.vxlan.add(new VxlanPort("other.vx", 7202, 4789));
        IllegalArgumentException vni = refused(Set.of(IpFamily.V4), host);
        assertEquals(
                "cadastre.routing.vni: VNI 7202 on UDP port 4789 is taken by VXLAN device other.vx: choose another VNI"
                        + " (the same on every agent)",
                vni.getMessage());
        RoutingSettings direct = direct();
        HostPreflight.check(
                direct,
                null,
                Set.of(IpFamily.V4),
                host); // no VXLAN in direct mode: the port does not matter
    }

    @Test
    void modeNoneLooksAtNothing() {
        FakeHost host = new FakeHost();
        host.portFree = false;
        host.underlay = null;
        assertEquals(
                new HostPreflight.Outcome(null, 0, List.of()),
                HostPreflight.check(
                        RoutingSettings.none(), null, Set.of(IpFamily.V4, IpFamily.V6), host));
    }

    /** The real agent in a namespace without such an interface: exit 2 before it joins anything. */
    @Test
    void anUnderlayInterfaceThatDoesNotExistIsExitTwo() throws Exception {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates a network namespace");
        Path dir = Files.createTempDirectory("cad-routing");
        String ns = "cadrs-" + Long.toHexString(System.nanoTime());
        run("ip", "netns", "add", ns);
        try {
            run("ip", "-n", ns, "link", "set", "lo", "up");
            AgentProcess agent =
                    new AgentProcess(
                                    dir,
                                    "routing-node",
                                    AgentProcess.TEST_POOLS
                                            + "cadastre.routing.mode = cross-subnet\ncadastre.routing.interface = eth9\n")
                            .inNetns(ns);
            IllegalStateException e = assertThrows(IllegalStateException.class, agent::start);
            assertTrue(e.getMessage().contains("agent exited with 2"), e.getMessage());
            assertTrue(
                    e.getMessage()
                            .contains(
                                    "configuration error: cadastre.routing.interface: the underlay interface eth9"
                                            + " does not exist"),
                    e.getMessage());
        } finally {
            run("ip", "netns", "del", ns);
            try (var paths = Files.walk(dir)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** @return why the preflight with the default settings refuses the host for the families */
    private static IllegalArgumentException refused(Set<IpFamily> families, FakeHost host) {
        return assertThrows(
                IllegalArgumentException.class,
                () -> HostPreflight.check(RoutingSettings.defaults(), null, families, host));
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + ": " + out);
        }
    }

    private final class FakeHost implements HostPreflight.Host {
        Underlay underlay = UNDERLAY;
        List<String> defaultRouteDevices = List.of();
        final List<VxlanPort> vxlan = new ArrayList<>();
        boolean portFree = true;
        boolean readOnly;

        @Override
        public Optional<Underlay> underlay(String device, InetAddress preferred)
                throws DataplaneException {
            return Optional.ofNullable(underlay);
        }

        @Override
        public List<VxlanPort> vxlanPorts() {
            return vxlan;
        }

        @Override
        public List<String> ipv6DefaultRouteDevices() {
            return defaultRouteDevices;
        }

        @Override
        public boolean udpPortFree(int port) {
            return portFree;
        }

        @Override
        public HostPreflight.Sysctls sysctls() {
            return new HostPreflight.Sysctls() {
                @Override
                public boolean forwarding(IpFamily family) {
                    return "1"
                            .equals(
                                    sys.get(
                                            family == IpFamily.V4
                                                    ? "net.ipv4.ip_forward"
                                                    : "net.ipv6.conf.all.forwarding"));
                }

                @Override
                public void enableForwarding(IpFamily family) throws DataplaneException {
                    set(
                            family == IpFamily.V4
                                    ? "net.ipv4.ip_forward"
                                    : "net.ipv6.conf.all.forwarding",
                            "1");
                }

                @Override
                public int acceptRa(String ifname) {
                    return Integer.parseInt(
                            sys.getOrDefault("net.ipv6.conf." + ifname + ".accept_ra", "0"));
                }

                @Override
                public void setAcceptRa(String ifname, int value) throws DataplaneException {
                    set("net.ipv6.conf." + ifname + ".accept_ra", Integer.toString(value));
                }

                private void set(String key, String value) throws DataplaneException {
                    if (readOnly) {
                        throw new DataplaneException(
                                "write "
                                        + value
                                        + " to /proc/sys/"
                                        + key.replace('.', '/')
                                        + ": Read-only file system");
                    }
                    sys.put(key, value);
                }
            };
        }
    }
}
