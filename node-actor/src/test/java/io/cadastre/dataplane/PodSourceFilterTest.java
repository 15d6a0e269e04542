package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.dataplane.HostRouting.Desired;
import io.cadastre.dataplane.HostRouting.Route;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The pods' source filter ({@link PodSourceFilter}): its classic BPF program run by a small
 * interpreter here over crafted frames (table-driven, no root), then wired by the real
 * {@link NetlinkDataplane} into a host namespace, where a pod that adds an address that is not its
 * own and sends from it reaches neither the other pod nor its host, over IPv4 and IPv6, and the
 * drops are counted.
 */
class PodSourceFilterTest {
    private static final InetAddress POD4 = IpPrefix.literal("198.18.6.5");
    private static final InetAddress POD6 = IpPrefix.literal("fd00:198::6:5");

    private record Case(String what, byte[] frame, int expected) {}

    @Test
    void theProgramPassesOnlyThePodsOwnSourcesAndNonIpFrames() {
        byte[] both = PodSourceFilter.program(POD4, POD6);
        byte[] v4Only = PodSourceFilter.program(POD4, null);
        int pass = PodSourceFilter.TC_ACT_UNSPEC;
        int drop = PodSourceFilter.TC_ACT_SHOT;
        List<Case> cases =
                List.of(
                        new Case("IPv4 from the pod", ipv4("198.18.6.5"), pass),
                        new Case("IPv4 from another address", ipv4("198.18.6.6"), drop),
                        new Case("IPv4 from 0.0.0.0", ipv4("0.0.0.0"), drop),
                        new Case("IPv6 from the pod", ipv6("fd00:198::6:5"), pass),
                        new Case(
                                "IPv6 from another address, last word differs",
                                ipv6("fd00:198::6:6"),
                                drop),
                        new Case(
                                "IPv6 from another address, first word differs",
                                ipv6("fd01:198::6:5"),
                                drop),
                        new Case(
                                "IPv6 from link-local (neighbour discovery)",
                                ipv6("fe80::1"),
                                pass),
                        new Case("IPv6 from febf:: (still fe80::/10)", ipv6("febf::1"), pass),
                        new Case("IPv6 from fec0:: (outside fe80::/10)", ipv6("fec0::1"), drop),
                        new Case("IPv6 from :: (duplicate address detection)", ipv6("::"), pass),
                        new Case("IPv6 from ::1", ipv6("::1"), drop),
                        new Case("ARP", frame(0x0806, 28), pass));
        for (Case c : cases) {
            assertEquals(c.expected(), run(both, c.frame()), c.what());
        }
        assertEquals(
                drop, run(v4Only, ipv6("fd00:198::6:5")), "an IPv4-only pod sends no global IPv6");
        assertEquals(pass, run(v4Only, ipv6("fe80::1")), "but keeps neighbour discovery");
        assertEquals(
                drop,
                run(PodSourceFilter.program(null, POD6), ipv4("198.18.6.5")),
                "an IPv6-only pod sends no IPv4");
    }

    @Test
    void aPodSendingFromAnotherAddressReachesNoPodAndNoHostAndTheDropsAreCounted()
            throws Exception {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
        assumeTrue(Ip.tryRunCommand("busybox", "true").exit() == 0, "needs busybox for ping");
        try (TestNet net = new TestNet()) {
            String fabric = net.fabric("fabric");
            TestNet.Host h = net.host("h1", fabric, "198.19.6.11/24", "fd00:19:6::11/64");
            h.call(
                    () -> {
                        new HostSysctls().setIpv4Forwarding(true);
                        new HostSysctls().setIpv6Forwarding(true);
                        return new NetlinkHostRouting()
                                .reconcile(
                                        new Desired(
                                                List.of(
                                                        Route.device(
                                                                IpPrefix.parse("169.254.1.1/32"),
                                                                "lo")),
                                                List.of()));
                    });
            String a = net.pod(h, "a", "198.18.6.5", "fd00:198::6:5");
            String b = net.pod(h, "b", "198.18.6.7", "fd00:198::6:7");
            NetlinkDataplane dataplane = new NetlinkDataplane();
            TestNet.awaitPing(a, "198.18.6.7");
            TestNet.awaitPing(a, "fd00:198::6:7");
            TestNet.awaitPing(a, "198.19.6.11");
            TestNet.awaitPing(a, "fd00:19:6::11");
            long before = h.call(dataplane::spoofedPacketsDropped);

            // The address of nobody on this host; the pod adds it to its own eth0.
            Ip.run("-n", a, "addr", "add", "198.18.6.9/32", "dev", "eth0");
            Ip.run("-n", a, "addr", "add", "fd00:198::6:9/128", "dev", "eth0", "nodad");
            assertFalse(pingFrom(a, "198.18.6.9", "198.18.6.7"), "spoofed IPv4 to the other pod");
            assertFalse(pingFrom(a, "198.18.6.9", "198.19.6.11"), "spoofed IPv4 to the host");
            long afterV4 = awaitDropsAbove(h, dataplane, before);
            assertFalse(
                    pingFrom(a, "fd00:198::6:9", "fd00:198::6:7"), "spoofed IPv6 to the other pod");
            assertFalse(pingFrom(a, "fd00:198::6:9", "fd00:19:6::11"), "spoofed IPv6 to the host");
            awaitDropsAbove(h, dataplane, afterV4);
            assertTrue(pingFrom(a, "198.18.6.5", "198.18.6.7"), "its own IPv4 source still works");
            assertTrue(
                    pingFrom(a, "fd00:198::6:5", "fd00:198::6:7"),
                    "its own IPv6 source still works");

            String hostEnd = HostInterfaceName.of("cadrt", a, "eth0");
            PodAttachment attachment =
                    new PodAttachment(
                            "/var/run/netns/" + a,
                            "eth0",
                            hostEnd,
                            0,
                            List.of(new PodAddress(POD4, 32), new PodAddress(POD6, 128)));
            assertEquals(List.of(), h.call(() -> dataplane.check(attachment)));
            Ip.runCommand("tc", "-n", h.netns(), "filter", "del", "dev", hostEnd, "ingress");
            assertEquals(
                    List.of(
                            "host link "
                                    + hostEnd
                                    + " lacks the pod's source filter (anti-spoofing)"),
                    h.call(() -> dataplane.check(attachment)));
            long counted = h.call(dataplane::spoofedPacketsDropped);
            h.call(
                    () -> {
                        dataplane.detach(hostEnd);
                        return null;
                    });
            assertEquals(
                    counted,
                    (long) h.call(dataplane::spoofedPacketsDropped),
                    "a detached pod's drops stay counted");
        }
    }

    private static long awaitDropsAbove(TestNet.Host h, NetlinkDataplane dataplane, long floor)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            long now = h.call(dataplane::spoofedPacketsDropped);
            if (now > floor) {
                return now;
            }
            assertTrue(System.nanoTime() < deadline, "drops stayed at " + now);
            Thread.sleep(50);
        }
    }

    private static boolean pingFrom(String ns, String source, String target) {
        return Ip.tryRunCommand(
                                "ip", "netns", "exec", ns, "busybox", "ping", "-c1", "-W1", "-I",
                                source, target)
                        .exit()
                == 0;
    }

    // ---- frames and a classic BPF interpreter for the instructions PodSourceFilter emits ----

    private static byte[] frame(int etherType, int payload) {
        ByteBuffer b = ByteBuffer.allocate(14 + payload);
        b.putShort(12, (short) etherType);
        return b.array();
    }

    private static byte[] ipv4(String source) {
        byte[] f = frame(0x0800, 20);
        System.arraycopy(IpPrefix.literal(source).getAddress(), 0, f, 26, 4);
        return f;
    }

    private static byte[] ipv6(String source) {
        byte[] f = frame(0x86dd, 40);
        System.arraycopy(IpPrefix.literal(source).getAddress(), 0, f, 22, 16);
        return f;
    }

    /** Runs the program over the frame as cls_bpf would: A, absolute loads, jeq, and, ret. */
    private static int run(byte[] program, byte[] frame) {
        ByteBuffer p = ByteBuffer.wrap(program).order(ByteOrder.nativeOrder());
        ByteBuffer f = ByteBuffer.wrap(frame);
        int a = 0;
        int pc = 0;
        while (true) {
            int code = Short.toUnsignedInt(p.getShort(pc * 8));
            int jt = Byte.toUnsignedInt(p.get(pc * 8 + 2));
            int jf = Byte.toUnsignedInt(p.get(pc * 8 + 3));
            int k = p.getInt(pc * 8 + 4);
            pc++;
            switch (code) {
                case 0x28 -> a = Short.toUnsignedInt(f.getShort(k));
                case 0x20 -> a = f.getInt(k);
                case 0x54 -> a &= k;
                case 0x15 -> pc += a == k ? jt : jf;
                case 0x06 -> {
                    return k;
                }
                default -> throw new AssertionError("unexpected opcode " + code);
            }
        }
    }
}
