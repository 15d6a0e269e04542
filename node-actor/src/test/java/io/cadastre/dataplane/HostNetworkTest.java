package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.dataplane.HostNetwork.InterfaceAddress;
import io.cadastre.dataplane.HostNetwork.Underlay;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@link HostNetwork} against the real kernel in test namespaces ({@link TestNet}). */
class HostNetworkTest {

    @Test
    void onLinkComparesThePrefix() {
        InterfaceAddress a = new InterfaceAddress(IpPrefix.literal("198.19.255.11"), 24);
        assertTrue(a.onLink(IpPrefix.literal("198.19.255.14")));
        assertFalse(a.onLink(IpPrefix.literal("198.19.254.14")));
        assertFalse(a.onLink(IpPrefix.literal("fd00:19:255::14")), "another family");
        InterfaceAddress b = new InterfaceAddress(IpPrefix.literal("fd00:19:255::11"), 64);
        assertTrue(b.onLink(IpPrefix.literal("fd00:19:255::1:14")));
        assertFalse(b.onLink(IpPrefix.literal("fd00:19:254::14")));
        assertEquals("fd00:19:255::11/64", b.toString());
    }

    @Test
    void theUnderlayIsTheInterfaceOfTheClusterAddressElseOfTheDefaultRoute() throws Exception {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
        try (TestNet net = new TestNet()) {
            String fabric = net.fabric("fabric");
            TestNet.Host h = net.host("h1", fabric, "198.19.7.11/24", "fd00:19:7::11/64");
            net.wire(h.netns(), "uplink", net.namespace("out"), "eth0");
            TestNet.addresses(h.netns(), "uplink", "198.19.8.11/24", "fd00:19:8::11/64");
            Ip.run("-n", h.netns(), "link", "set", "eth0", "mtu", "1400");

            Underlay byAddress =
                    h.call(() -> HostNetwork.underlay("", IpPrefix.literal("198.19.7.11")))
                            .orElseThrow();
            assertEquals(
                    new Underlay(
                            "eth0",
                            1400,
                            new InterfaceAddress(IpPrefix.literal("198.19.7.11"), 24),
                            new InterfaceAddress(IpPrefix.literal("fd00:19:7::11"), 64)),
                    byAddress);

            assertEquals(
                    Optional.empty(),
                    h.call(() -> HostNetwork.underlay("", IpPrefix.literal("127.0.0.1"))),
                    "no cluster address beyond loopback, no default route");
            Ip.run(
                    "-n",
                    h.netns(),
                    "route",
                    "add",
                    "default",
                    "via",
                    "198.19.8.1",
                    "dev",
                    "uplink");
            assertEquals(
                    "uplink",
                    h.call(() -> HostNetwork.underlay("", IpPrefix.literal("127.0.0.1")))
                            .orElseThrow()
                            .device());
            assertEquals(
                    "eth0",
                    h.call(() -> HostNetwork.underlay("eth0", null)).orElseThrow().device());
            DataplaneException missing =
                    assertThrows(
                            DataplaneException.class,
                            () -> h.call(() -> HostNetwork.underlay("eth9", null)));
            assertEquals("the underlay interface eth9 does not exist", missing.getMessage());

            assertEquals(List.of(), h.call(HostNetwork::ipv6DefaultRouteDevices));
            Ip.run(
                    "-n",
                    h.netns(),
                    "-6",
                    "route",
                    "add",
                    "default",
                    "via",
                    "fd00:19:8::1",
                    "dev",
                    "uplink");
            assertEquals(List.of("uplink"), h.call(HostNetwork::ipv6DefaultRouteDevices));

            Ip.run(
                    "-n",
                    h.netns(),
                    "link",
                    "add",
                    "other.vx",
                    "type",
                    "vxlan",
                    "id",
                    "4096",
                    "local",
                    "198.19.7.11",
                    "dev",
                    "eth0",
                    "dstport",
                    "4789");
            assertEquals(
                    List.of(new HostNetwork.VxlanPort("other.vx", 4096, 4789)),
                    h.call(HostNetwork::vxlanPorts));
        }
    }
}
