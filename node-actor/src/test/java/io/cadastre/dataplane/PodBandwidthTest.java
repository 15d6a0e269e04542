package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A pod's bandwidth limits ({@link Bandwidth}) against the real kernel, as root: a node namespace
 * with pods wired by the real {@link NetlinkDataplane} from a thread inside it, the qdiscs and
 * filters read back with {@code tc}, and real TCP traffic between two pods measured by iperf3. A
 * limit holds when the measured rate stays below it with a margin; the unshaped direction shows
 * that the machine is not what held it back.
 */
class PodBandwidthTest {
    private static final long INGRESS_BITS = 40_000_000;
    private static final long EGRESS_BITS = 20_000_000;
    private static final Bandwidth LIMITS =
            new Bandwidth(
                    Bandwidth.Shaping.fromBits(INGRESS_BITS, 0),
                    Bandwidth.Shaping.fromBits(EGRESS_BITS, 0));
    private static final long IPERF_DEADLINE_SECONDS = 30;

    @BeforeAll
    static void requireRootAndTools() {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
        assumeTrue(Ip.tryRunCommand("tc", "-V").exit() == 0, "needs tc to read qdiscs back");
        assumeTrue(Ip.tryRunCommand("iperf3", "-v").exit() == 0, "needs iperf3 for traffic");
    }

    @Test
    void aShapedPodSendsAndReceivesAtItsLimitsAndAnUnshapedOneIsNotHeldBack() throws Exception {
        try (TestNet net = new TestNet()) {
            String nodeNs = net.namespace("node");
            Ip.run("-n", nodeNs, "route", "add", "169.254.1.1/32", "dev", "lo");
            TestNet.Host node = net.host(nodeNs);
            node.call(
                    () -> {
                        new HostSysctls().setIpv4Forwarding(true);
                        return null;
                    });
            String shaped = net.pod(node, "a", LIMITS, "198.18.11.1");
            String other = net.pod(node, "b", "198.18.11.2");
            String hostEnd = HostInterfaceName.of("cadrt", shaped, "eth0");
            String ifb = HostInterfaceName.ifbOf(hostEnd);

            Map<String, Object> ingress = rootQdisc(nodeNs, hostEnd);
            assertEquals("tbf", ingress.get("kind"));
            assertEquals(INGRESS_BITS / 8, options(ingress).get("rate"));
            // tc shows the bucket as the kernel keeps it, in time at the rate: back in bytes,
            // rounding may cost one.
            long burst = (Long) options(ingress).get("burst");
            assertTrue(
                    Math.abs(burst - Bandwidth.Shaping.MIN_DEFAULT_BURST) <= 1,
                    "burst " + burst + " B");
            Map<String, Object> egress = rootQdisc(nodeNs, ifb);
            assertEquals("tbf", egress.get("kind"));
            assertEquals(EGRESS_BITS / 8, options(egress).get("rate"));
            String filters =
                    Ip.runCommand("tc", "-n", nodeNs, "filter", "show", "dev", hostEnd, "ingress");
            assertTrue(
                    filters.contains("pref 2 bpf")
                            && filters.contains("mirred (Egress Redirect to device " + ifb + ")"),
                    filters);
            assertTrue(Ip.run("-n", nodeNs, "link", "show", ifb).contains(",UP"), "IFB up");
            assertFalse(
                    "tbf"
                            .equals(
                                    rootQdisc(nodeNs, HostInterfaceName.of("cadrt", other, "eth0"))
                                            .get("kind")),
                    "the unshaped pod's host end has no TBF");

            // The shaped pod a sends to b, then (-R) receives from b.
            double sent = iperf(other, "198.18.11.2", shaped, false);
            double received = iperf(other, "198.18.11.2", shaped, true);
            assertTrue(
                    sent < EGRESS_BITS * 1.2 && sent > EGRESS_BITS * 0.3,
                    "the shaped pod sent at " + sent + " bit/s, limit " + EGRESS_BITS);
            assertTrue(
                    received < INGRESS_BITS * 1.2 && received > INGRESS_BITS * 0.3,
                    "the shaped pod received at " + received + " bit/s, limit " + INGRESS_BITS);

            // Without its limits the same pair runs far faster: the limits, not the machine.
            node.call(
                    () -> {
                        new NetlinkDataplane().detach(hostEnd);
                        return null;
                    });
            assertFalse(Ip.linkExists(nodeNs, ifb), "detach deletes the IFB device");
            node.call(
                    () ->
                            new NetlinkDataplane()
                                    .attach(attachment(shaped, hostEnd, Bandwidth.NONE)));
            double unshaped = iperf(other, "198.18.11.2", shaped, false);
            System.out.printf(
                    "bandwidth: sent %.1f Mbit/s (limit %d), received %.1f (limit %d), unshaped"
                            + " %.1f%n",
                    sent / 1e6,
                    EGRESS_BITS / 1_000_000,
                    received / 1e6,
                    INGRESS_BITS / 1_000_000,
                    unshaped / 1e6);
            assertTrue(
                    unshaped > EGRESS_BITS * 3,
                    "unshaped, the pod sent at only " + unshaped + " bit/s");
        }
    }

    @Test
    void checkComparesTheLimitsAndARepeatedAddWithOtherLimitsIsRefused() throws Exception {
        try (TestNet net = new TestNet()) {
            String nodeNs = net.namespace("node");
            TestNet.Host node = net.host(nodeNs);
            String shaped = net.pod(node, "a", LIMITS, "198.18.11.1");
            String hostEnd = HostInterfaceName.of("cadrt", shaped, "eth0");
            String ifb = HostInterfaceName.ifbOf(hostEnd);
            PodAttachment planned = attachment(shaped, hostEnd, LIMITS);
            NetlinkDataplane dataplane = node.call(NetlinkDataplane::new);

            assertEquals(List.of(), node.call(() -> dataplane.check(planned)));
            assertEquals(
                    hostEnd,
                    node.call(() -> dataplane.attach(planned)).hostIfname(),
                    "an ADD repeated as planned answers the wiring");

            Bandwidth other =
                    new Bandwidth(
                            Bandwidth.Shaping.fromBits(INGRESS_BITS * 2, 0),
                            Bandwidth.Shaping.fromBits(EGRESS_BITS, 0));
            DataplaneException refused =
                    assertThrows(
                            DataplaneException.class,
                            () ->
                                    node.call(
                                            () ->
                                                    dataplane.attach(
                                                            attachment(shaped, hostEnd, other))));
            assertEquals(DataplaneException.Kind.WIRED_DIFFERENTLY, refused.kind());
            assertTrue(
                    refused.getMessage().contains("what the pod receives"), refused.getMessage());

            Ip.runCommand("tc", "-n", nodeNs, "qdisc", "del", "dev", ifb, "root");
            Ip.runCommand(
                    "tc", "-n", nodeNs, "filter", "del", "dev", hostEnd, "ingress", "pref", "2");
            List<String> differences = node.call(() -> dataplane.check(planned));
            assertEquals(2, differences.size(), differences.toString());
            assertTrue(differences.get(0).contains("does not redirect"), differences.toString());
            assertTrue(
                    differences.get(1).contains("lacks its token bucket"), differences.toString());
            // Planned without limits: the host end's TBF is one too many; the redirect is gone.
            assertEquals(
                    List.of(
                            "host link "
                                    + hostEnd
                                    + " (what the pod receives) is shaped, which is not limited"),
                    node.call(() -> dataplane.check(attachment(shaped, hostEnd, Bandwidth.NONE))));
        }
    }

    @Test
    void theIfbDeviceGoesWithDelEvenWhenTheNetnsWentFirst() throws Exception {
        try (TestNet net = new TestNet()) {
            String nodeNs = net.namespace("node");
            TestNet.Host node = net.host(nodeNs);
            String first = net.pod(node, "a", LIMITS, "198.18.11.1");
            String second = net.pod(node, "b", LIMITS, "198.18.11.2");
            String firstEnd = HostInterfaceName.of("cadrt", first, "eth0");
            String secondEnd = HostInterfaceName.of("cadrt", second, "eth0");
            NetlinkDataplane dataplane = node.call(NetlinkDataplane::new);

            // DEL while the netns exists (kubelet's order): unplug, then the delayed delete.
            OptionalInt index = node.call(() -> dataplane.unplug(firstEnd));
            assertTrue(Ip.linkExists(nodeNs, HostInterfaceName.ifbOf(firstEnd)), "left for later");
            assertTrue(node.call(() -> dataplane.deleteUnplugged(firstEnd, index.getAsInt())));
            assertFalse(Ip.linkExists(nodeNs, HostInterfaceName.ifbOf(firstEnd)));

            // DEL after the runtime removed the netns, and the pair with it.
            Ip.run("netns", "del", second);
            awaitGone(nodeNs, secondEnd);
            assertEquals(OptionalInt.empty(), node.call(() -> dataplane.unplug(secondEnd)));
            assertFalse(Ip.linkExists(nodeNs, HostInterfaceName.ifbOf(secondEnd)));

            // No DEL at all (the agent was down when the netns went): the periodic sweep.
            String third = net.pod(node, "c", LIMITS, "198.18.11.3");
            String fourth = net.pod(node, "d", LIMITS, "198.18.11.4");
            String thirdEnd = HostInterfaceName.of("cadrt", third, "eth0");
            String fourthIfb =
                    HostInterfaceName.ifbOf(HostInterfaceName.of("cadrt", fourth, "eth0"));
            Ip.run("-n", nodeNs, "link", "add", "cbwnotapod", "type", "ifb");
            Ip.run("netns", "del", third);
            awaitGone(nodeNs, thirdEnd);
            assertEquals(
                    List.of(HostInterfaceName.ifbOf(thirdEnd)),
                    node.call(dataplane::deleteOrphanedShapingDevices));
            assertTrue(Ip.linkExists(nodeNs, fourthIfb), "a live pod's device stays");
            assertTrue(Ip.linkExists(nodeNs, "cbwnotapod"), "a name no host end gives stays");
        }
    }

    @Test
    void aBurstNotGivenOrTheRuntimesPlaceholderIsTenMillisecondsAtTheRate() {
        long gigabit = 1_000_000_000L;
        assertEquals(1_250_000, Bandwidth.Shaping.fromBits(gigabit, 0).burst());
        assertEquals(1_250_000, Bandwidth.Shaping.fromBits(gigabit, 0xFFFF_FFFFL).burst());
        assertEquals(1_250_000, Bandwidth.Shaping.fromBits(gigabit, 0xFFFF_FFFFL * 8 - 1).burst());
        assertEquals(65_536, Bandwidth.Shaping.fromBits(1_000_000, 0).burst(), "at least 64 KiB");
        assertEquals(1_000, Bandwidth.Shaping.fromBits(gigabit, 8_000).burst(), "as given");
        Bandwidth.Shaping small = Bandwidth.Shaping.fromBits(gigabit, 8_000);
        assertEquals(1_514, small.bucket(1500), "the bucket holds one frame of the MTU");
        assertEquals(1_514 + 3_125_000, small.limit(1500), "plus 25 ms at the rate");
        assertThrows(IllegalArgumentException.class, () -> Bandwidth.Shaping.fromBits(7, 0));
    }

    private static PodAttachment attachment(String podNs, String hostEnd, Bandwidth bandwidth) {
        return new PodAttachment(
                "/var/run/netns/" + podNs,
                "eth0",
                hostEnd,
                0,
                List.of(new PodAddress(IpPrefix.literal("198.18.11.1"), 32)),
                bandwidth);
    }

    private static Map<String, Object> rootQdisc(String ns, String dev) {
        List<Map<String, Object>> qdiscs =
                MiniJson.parseArrayOfObjects(
                        Ip.runCommand("tc", "-n", ns, "-j", "qdisc", "show", "dev", dev));
        return qdiscs.stream()
                .filter(q -> Boolean.TRUE.equals(q.get("root")))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no root qdisc on " + dev + ": " + qdiscs));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> options(Map<String, Object> qdisc) {
        return (Map<String, Object>) qdisc.get("options");
    }

    private static void awaitGone(String ns, String link) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (Ip.linkExists(ns, link)) {
            assertTrue(System.nanoTime() < deadline, link + " outlived its peer's netns");
            Thread.sleep(20);
        }
    }

    /**
     * Two seconds of TCP from {@code clientNs} to the iperf3 server in {@code serverNs}, or from
     * the server to the client with {@code reverse}.
     *
     * @return the receiver's bits per second
     */
    private static double iperf(
            String serverNs, String serverAddress, String clientNs, boolean reverse)
            throws Exception {
        Process server =
                new ProcessBuilder(
                                "ip",
                                "netns",
                                "exec",
                                serverNs,
                                "iperf3",
                                "-s",
                                "-1",
                                "-B",
                                serverAddress)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(IPERF_DEADLINE_SECONDS);
            while (true) {
                List<String> command =
                        new java.util.ArrayList<>(
                                List.of(
                                        "ip",
                                        "netns",
                                        "exec",
                                        clientNs,
                                        "iperf3",
                                        "-c",
                                        serverAddress,
                                        "-t",
                                        "2",
                                        "-f",
                                        "k"));
                if (reverse) {
                    command.add("-R");
                }
                Process client = new ProcessBuilder(command).redirectErrorStream(true).start();
                String out =
                        new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (client.waitFor() == 0) {
                    Matcher m = RECEIVER.matcher(out);
                    Optional<Double> kbits = Optional.empty();
                    while (m.find()) {
                        kbits = Optional.of(Double.parseDouble(m.group(1)));
                    }
                    return kbits.orElseThrow(() -> new AssertionError("no rate in: " + out)) * 1000;
                }
                assertTrue(
                        System.nanoTime() < deadline,
                        "iperf3 found no server within " + IPERF_DEADLINE_SECONDS + " s: " + out);
                Thread.sleep(50); // the server is still starting
            }
        } finally {
            server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static final Pattern RECEIVER = Pattern.compile("([0-9.]+) Kbits/sec\\s+receiver");
}
