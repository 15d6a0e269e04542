package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link NetlinkDataplane} against the real kernel, as root: each test gets a fresh network
 * namespace {@code cadtest-<random>} and removes it, every host link and every host route it may
 * have created, pass or fail. Pod addresses come from 198.18.0.0/15 and fd00:198::/48.
 */
class NetlinkDataplaneTest {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String NETNS_DIR = "/var/run/netns/";

    private final Dataplane dataplane = new NetlinkDataplane();
    private final List<String> namespaces = new ArrayList<>();
    private final List<String> hostLinks = new ArrayList<>();
    private final List<String[]> undo = new ArrayList<>();
    private final Set<String> usedAddresses = new HashSet<>();
    private String ns;

    @BeforeAll
    static void requireRootAndIproute2() {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
        assumeTrue(Ip.tryRun("-V").exit() == 0, "needs iproute2 to set up and inspect namespaces");
    }

    @BeforeEach
    void createNamespace() {
        ns = newNamespace();
    }

    @AfterEach
    void removeEverything() {
        for (String link : hostLinks) {
            Ip.tryRun("link", "del", link);
        }
        for (String n : namespaces) {
            Ip.tryRun("netns", "del", n);
        }
        for (String[] command : undo) {
            Ip.tryRun(command);
        }
    }

    @Test
    void attachConfiguresExactlyTheSpec() throws Exception {
        String v4 = randomV4();
        String v6 = randomV6();
        PodAttachment a = attachment(ns, "eth0", 1400, v4 + "/32", v6 + "/128");

        WiredPod wired = dataplane.attach(a);

        assertEquals(a.hostIfname(), wired.hostIfname());
        assertEquals(Dataplane.HOST_MAC, wired.hostMac());
        assertEquals("eth0", wired.podIfname());
        assertEquals(a.netnsPath(), wired.netnsPath());
        assertEquals(a.addresses(), wired.addresses());
        assertEquals(
                List.of(
                        new PodRoute("169.254.1.1/32", null),
                        new PodRoute("0.0.0.0/0", "169.254.1.1"),
                        new PodRoute("::/0", "fe80::ecee:eeff:feee:eeee")),
                wired.routes());

        Map<String, Object> pod = Ip.link(ns, "eth0");
        Map<String, Object> host = Ip.link(null, a.hostIfname());
        assertEquals(1400L, pod.get("mtu"));
        assertEquals(1400L, host.get("mtu"));
        assertEquals(wired.podMac(), pod.get("address"));
        assertTrue(wired.podMac().matches("[0-9a-f]{2}(:[0-9a-f]{2}){5}"), wired.podMac());
        assertEquals(Dataplane.HOST_MAC, host.get("address"));
        assertUp(pod);
        assertUp(host);
        assertEquals(
                host.get("ifindex"), pod.get("link_index"), "the pod end is the host end's peer");
        assertUp(Ip.link(ns, "lo"));

        assertEquals(Set.of(v4 + "/32", v6 + "/128"), Ip.globalAddresses(ns, "eth0"));
        assertEquals(
                Set.of("default via 169.254.1.1 dev eth0", "169.254.1.1 dev eth0 scope link"),
                Ip.routes(ns, "-4", "eth0"));
        assertEquals(
                Set.of("default via fe80::ecee:eeff:feee:eeee dev eth0"),
                Ip.routes(ns, "-6", "eth0"));
        assertEquals(
                Set.of(v4 + " dev " + a.hostIfname() + " scope link"),
                Ip.routes(null, "-4", a.hostIfname()));
        assertEquals(Set.of(v6 + " dev " + a.hostIfname()), Ip.routes(null, "-6", a.hostIfname()));

        awaitGatewayAddress(a.hostIfname());
        assertEquals("1", sysctl("ipv4/conf/" + a.hostIfname() + "/proxy_arp"));
        assertEquals("0", sysctl("ipv4/neigh/" + a.hostIfname() + "/proxy_delay"));
        assertEquals("0", sysctl("ipv6/conf/" + a.hostIfname() + "/disable_ipv6"));
    }

    /**
     * The host knows each pod address's MAC before the first packet to the pod: no ARP or NDP on
     * that packet's path, whose first request, when unanswered, cost a 1 s retransmit.
     */
    @Test
    void attachSeedsTheHostEndsNeighbourOfEachPodAddress() throws Exception {
        String v4 = randomV4();
        String v6 = randomV6();
        PodAttachment a = attachment(ns, "eth0", 1400, v4 + "/32", v6 + "/128");

        WiredPod wired = dataplane.attach(a);

        Map<String, String> macs = new HashMap<>();
        for (Map<String, Object> n : Ip.json("neigh", "show", "dev", a.hostIfname())) {
            String dst = String.valueOf(n.get("dst"));
            // Not the pod's link-local address, which the host may learn from the pod's NDP.
            if (dst.equals(v4) || dst.equals(v6)) {
                macs.put(dst, String.valueOf(n.get("lladdr")));
            }
        }
        assertEquals(Map.of(v4, wired.podMac(), v6, wired.podMac()), macs);
    }

    @Test
    void attachIpv4Only() throws Exception {
        String v4 = randomV4();
        PodAttachment a = attachment(ns, "eth0", 0, v4 + "/32");

        WiredPod wired = dataplane.attach(a);

        assertEquals(
                List.of(
                        new PodRoute("169.254.1.1/32", null),
                        new PodRoute("0.0.0.0/0", "169.254.1.1")),
                wired.routes());
        assertEquals(1500L, Ip.link(ns, "eth0").get("mtu"), "mtu 0 keeps the kernel default");
        assertEquals(Set.of(v4 + "/32"), Ip.globalAddresses(ns, "eth0"));
        assertEquals(2, Ip.routes(ns, "-4", "eth0").size());
        assertEquals(Set.of(), Ip.routes(ns, "-6", "eth0"));
        assertEquals(
                Set.of(v4 + " dev " + a.hostIfname() + " scope link"),
                Ip.routes(null, "-4", a.hostIfname()));
        assertEquals(Set.of(), Ip.routes(null, "-6", a.hostIfname()));
        assertEquals(List.of(), dataplane.check(a));
    }

    @Test
    void attachIpv6Only() throws Exception {
        String v6 = randomV6();
        PodAttachment a = attachment(ns, "net1", 9000, v6 + "/128");

        WiredPod wired = dataplane.attach(a);

        assertEquals(List.of(new PodRoute("::/0", "fe80::ecee:eeff:feee:eeee")), wired.routes());
        assertEquals(9000L, Ip.link(ns, "net1").get("mtu"));
        assertEquals(Set.of(v6 + "/128"), Ip.globalAddresses(ns, "net1"));
        assertEquals(Set.of(), Ip.routes(ns, "-4", "net1"));
        assertEquals(
                Set.of("default via fe80::ecee:eeff:feee:eeee dev net1"),
                Ip.routes(ns, "-6", "net1"));
        assertEquals(Set.of(), Ip.routes(null, "-4", a.hostIfname()));
        assertEquals(Set.of(v6 + " dev " + a.hostIfname()), Ip.routes(null, "-6", a.hostIfname()));
        assertEquals(List.of(), dataplane.check(a));
    }

    @Test
    void podIfnameMayEqualTheNameOfAHostLink() throws Exception {
        String hostOnly;
        try (Stream<Path> links = Files.list(Path.of("/sys/class/net"))) {
            hostOnly =
                    links.map(p -> p.getFileName().toString())
                            .filter(n -> !n.equals("lo") && !n.startsWith(HostInterfaceName.PREFIX))
                            .findFirst()
                            .orElse(null);
        }
        assumeTrue(hostOnly != null, "needs a host link other than lo");
        Object index = Ip.link(null, hostOnly).get("ifindex");
        PodAttachment a = attachment(ns, hostOnly, 0, randomV4() + "/32");

        dataplane.attach(a);

        assertEquals(
                index, Ip.link(null, hostOnly).get("ifindex"), "the host's own link is untouched");
        assertTrue(Ip.linkExists(ns, hostOnly));
        assertEquals(List.of(), dataplane.check(a));
    }

    @Test
    void checkIsEmptyAfterAttach() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 1400, randomV4() + "/32", randomV6() + "/128");
        dataplane.attach(a);

        assertEquals(List.of(), dataplane.check(a));
    }

    @Test
    void checkReportsARemovedAddressAndRemovedRoutes() throws Exception {
        String v4 = randomV4();
        String v6 = randomV6();
        PodAttachment a = attachment(ns, "eth0", 0, v4 + "/32", v6 + "/128");
        dataplane.attach(a);
        Ip.run("-n", ns, "addr", "del", v6 + "/128", "dev", "eth0");
        Ip.run("-n", ns, "-4", "route", "del", "default");
        Ip.run("route", "del", v4 + "/32", "dev", a.hostIfname());

        assertEquals(
                List.of(
                        "link eth0 in netns " + a.netnsPath() + " lacks address " + v6 + "/128",
                        "route 0.0.0.0/0 via 169.254.1.1 dev eth0 missing in netns "
                                + a.netnsPath(),
                        "host route " + v4 + "/32 dev " + a.hostIfname() + " missing"),
                dataplane.check(a));
    }

    @Test
    void checkReportsALinkThatIsDown() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV6() + "/128");
        dataplane.attach(a);
        Ip.run("-n", ns, "link", "set", "eth0", "down");

        List<String> differences = dataplane.check(a);

        assertTrue(
                differences.contains("link eth0 in netns " + a.netnsPath() + " is down"),
                differences.toString());
    }

    @Test
    void checkAfterDetachReportsBothEndsMissing() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        dataplane.attach(a);
        dataplane.detach(a.hostIfname());

        assertEquals(
                List.of(
                        "link eth0 missing in netns " + a.netnsPath(),
                        "host link " + a.hostIfname() + " missing"),
                dataplane.check(a));
    }

    @Test
    void checkOfAMissingNetnsSaysSo() {
        PodAttachment a =
                attachment("cadtest-absent-" + randomHex(4), "eth0", 0, randomV4() + "/32");

        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.check(a));
        assertTrue(e.netnsMissing(), e.getMessage());
    }

    @Test
    void detachRemovesBothEndsAndTheHostRoutes() throws Exception {
        String v4 = randomV4();
        PodAttachment a = attachment(ns, "eth0", 0, v4 + "/32", randomV6() + "/128");
        dataplane.attach(a);

        dataplane.detach(a.hostIfname());

        assertFalse(Ip.linkExists(null, a.hostIfname()));
        assertFalse(Ip.linkExists(ns, "eth0"));
        assertFalse(Ip.run("-4", "route", "show", "table", "main").contains(v4), "host route gone");
    }

    @Test
    void unplugLeavesNoHostRouteToThePodAndDeleteUnpluggedThenDeletesThePair() throws Exception {
        String v4 = randomV4();
        String v6 = randomV6();
        PodAttachment a = attachment(ns, "eth0", 0, v4 + "/32", v6 + "/128");
        dataplane.attach(a);
        assertTrue(Ip.run("-6", "route", "show", "table", "main").contains(v6), "routed before");

        OptionalInt index = dataplane.unplug(a.hostIfname());

        assertTrue(index.isPresent());
        assertTrue(Ip.linkExists(null, a.hostIfname()), "the pair is left for later");
        assertFalse(Ip.run("link", "show", a.hostIfname()).contains(",UP"), "host end down");
        assertFalse(
                Ip.run("-4", "route", "show", "table", "main").contains(v4), "no IPv4 host route");
        assertFalse(
                Ip.run("-6", "route", "show", "table", "main").contains(v6), "no IPv6 host route");
        assertEquals(index, dataplane.unplug(a.hostIfname()), "again: still there, still down");
        assertFalse(
                dataplane.deleteUnplugged(a.hostIfname(), index.getAsInt() + 1),
                "another index: not that pair");
        assertTrue(Ip.linkExists(null, a.hostIfname()));
        assertTrue(dataplane.deleteUnplugged(a.hostIfname(), index.getAsInt()));
        assertFalse(Ip.linkExists(null, a.hostIfname()));
        assertFalse(Ip.linkExists(ns, "eth0"));
        assertEquals(OptionalInt.empty(), dataplane.unplug(a.hostIfname()), "gone");
        assertFalse(dataplane.deleteUnplugged(a.hostIfname(), index.getAsInt()), "gone");
    }

    @Test
    void deleteUnpluggedSparesAPairWiredAnewUnderTheSameName() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        dataplane.attach(a);
        int old = dataplane.unplug(a.hostIfname()).getAsInt();
        dataplane.detach(a.hostIfname()); // what the attachment's next ADD does first
        dataplane.attach(a);

        assertFalse(dataplane.deleteUnplugged(a.hostIfname(), old));

        assertTrue(
                Ip.run("link", "show", a.hostIfname()).contains(",UP"),
                "the new pair is untouched");
    }

    @Test
    void unplugRefusesALinkThatIsNotAVeth() {
        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.unplug("lo"));
        assertTrue(e.getMessage().contains("not a veth"), e.getMessage());
        assertTrue(Ip.run("link", "show", "lo").contains(",UP"), "lo untouched");
    }

    @Test
    void detachTwiceAndDetachOfAnUnknownLinkSucceed() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        dataplane.attach(a);

        dataplane.detach(a.hostIfname());
        dataplane.detach(a.hostIfname());
        dataplane.detach(HostInterfaceName.of("cadtest", "never-attached", "eth0"));
    }

    @Test
    void detachAfterTheNetnsIsGoneSucceeds() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        dataplane.attach(a);
        Ip.run("netns", "del", ns);

        dataplane.detach(a.hostIfname());

        assertFalse(Ip.linkExists(null, a.hostIfname()));
    }

    @Test
    void detachRefusesALinkThatIsNotAVeth() {
        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.detach("lo"));
        assertTrue(e.getMessage().contains("not a veth"), e.getMessage());
        assertTrue(Ip.linkExists(null, "lo"));
    }

    @Test
    void attachIntoAMissingNetnsSaysSoAndLeavesNoHostLink() {
        PodAttachment a =
                attachment("cadtest-absent-" + randomHex(4), "eth0", 0, randomV4() + "/32");

        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.attach(a));

        assertTrue(e.netnsMissing(), e.getMessage());
        assertFalse(Ip.linkExists(null, a.hostIfname()));
    }

    @Test
    void attachIntoAFileThatIsNoNetnsSaysNetnsMissing() throws Exception {
        Path notNetns = Files.createTempFile("cadtest-", ".netns");
        try {
            PodAttachment a =
                    new PodAttachment(
                            notNetns.toString(),
                            "eth0",
                            host(HostInterfaceName.of("cadtest", notNetns.toString(), "eth0")),
                            0,
                            List.of(address(randomV4() + "/32")));

            DataplaneException e =
                    assertThrows(DataplaneException.class, () -> dataplane.attach(a));

            assertTrue(e.netnsMissing(), e.getMessage());
            assertFalse(Ip.linkExists(null, a.hostIfname()));
        } finally {
            Files.delete(notNetns);
        }
    }

    @Test
    void attachWhosePodIfnameIsTakenLeavesNoHostLink() throws Exception {
        Ip.run("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1");
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");

        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.attach(a));

        assertFalse(e.netnsMissing());
        assertTrue(e.getMessage().contains("eth0 already exists"), e.getMessage());
        assertFalse(Ip.linkExists(null, a.hostIfname()));
    }

    @Test
    void attachWhoseAddressTheKernelRefusesRollsBack() throws Exception {
        // New links in this netns get IPv6 disabled: the IPv4 address goes on, the IPv6 one fails.
        Ip.run("netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1");
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32", randomV6() + "/128");

        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.attach(a));

        assertFalse(e.netnsMissing());
        assertTrue(e.getMessage().startsWith("RTM_NEWADDR fd00:198:"), e.getMessage());
        assertTrue(e.getMessage().contains("(errno "), e.getMessage());
        assertFalse(Ip.linkExists(null, a.hostIfname()));
        assertFalse(Ip.linkExists(ns, "eth0"));
    }

    @Test
    void attachWhoseHostRouteClashesRollsBackAfterThePodIsConfigured() throws Exception {
        String v4 = randomV4();
        Ip.run("route", "add", "blackhole", v4 + "/32");
        undo.add(new String[] {"route", "del", "blackhole", v4 + "/32"});
        PodAttachment a = attachment(ns, "eth0", 0, v4 + "/32");

        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.attach(a));

        assertTrue(
                e.getMessage().startsWith("RTM_NEWROUTE " + v4 + "/32 dev " + a.hostIfname()),
                e.getMessage());
        assertTrue(e.getMessage().contains("File exists (errno 17)"), e.getMessage());
        assertFalse(Ip.linkExists(null, a.hostIfname()));
        assertFalse(Ip.linkExists(ns, "eth0"));
    }

    @Test
    void attachOfAnExistingHostLinkFailsAndKeepsIt() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        dataplane.attach(a);
        String other = newNamespace();
        PodAttachment again =
                new PodAttachment(NETNS_DIR + other, "eth0", a.hostIfname(), 0, a.addresses());

        DataplaneException e =
                assertThrows(DataplaneException.class, () -> dataplane.attach(again));

        assertTrue(e.getMessage().contains("already exists"), e.getMessage());
        assertEquals(DataplaneException.Kind.WIRED_DIFFERENTLY, e.kind());
        assertEquals(List.of(), dataplane.check(a), "the first attachment is intact");
        assertFalse(Ip.linkExists(other, "eth0"));
    }

    @Test
    void attachRepeatedForAPodWiredAsAskedChangesNothingAndAnswersTheWiring() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 1400, randomV4() + "/32", randomV6() + "/128");
        WiredPod first = dataplane.attach(a);
        String hostBefore = Ip.run("-j", "link", "show", "dev", a.hostIfname());
        String podBefore = Ip.run("-n", ns, "-j", "link", "show", "dev", "eth0");

        WiredPod again = dataplane.attach(a);

        assertEquals(first, again);
        assertEquals(
                hostBefore,
                Ip.run("-j", "link", "show", "dev", a.hostIfname()),
                "same ifindex and MAC: not recreated");
        assertEquals(podBefore, Ip.run("-n", ns, "-j", "link", "show", "dev", "eth0"));
    }

    @Test
    void attachRepeatedWithOtherAddressesIsRefusedAndChangesNothing() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        dataplane.attach(a);
        PodAttachment other =
                new PodAttachment(
                        a.netnsPath(),
                        "eth0",
                        a.hostIfname(),
                        0,
                        List.of(address(randomV4() + "/32")));

        DataplaneException e =
                assertThrows(DataplaneException.class, () -> dataplane.attach(other));

        assertEquals(DataplaneException.Kind.WIRED_DIFFERENTLY, e.kind(), e.getMessage());
        assertEquals(List.of(), dataplane.check(a), "the first attachment is intact");
    }

    @Test
    void theHostsOwnNamespacesAreNoPodsNamespace() throws Exception {
        List<String> hostPaths =
                new ArrayList<>(List.of("/proc/self/ns/net", "/proc/thread-self/ns/net"));
        try (var pid1 = new java.io.FileInputStream("/proc/1/ns/net")) {
            hostPaths.add("/proc/1/ns/net");
        } catch (java.io.IOException e) {
            // PID 1 hidden, or its namespace closed to this process (a sandbox): nothing to compare
            // with.
        }
        for (String path : hostPaths) {
            DataplaneException e =
                    assertThrows(
                            DataplaneException.class, () -> dataplane.checkPodNetns(path), path);
            assertEquals(
                    DataplaneException.Kind.INVALID_NETNS, e.kind(), path + ": " + e.getMessage());
        }
        dataplane.checkPodNetns(NETNS_DIR + ns);
        for (String path :
                List.of(NETNS_DIR + "cadtest-missing", "/etc/hostname", "/proc/self/ns/uts")) {
            DataplaneException e =
                    assertThrows(
                            DataplaneException.class, () -> dataplane.checkPodNetns(path), path);
            assertEquals(
                    DataplaneException.Kind.NETNS_MISSING, e.kind(), path + ": " + e.getMessage());
        }
    }

    @Test
    void aPathNoFileCanHaveIsABadNetnsShownCut() throws Exception {
        Path dir = Files.createTempDirectory("cadtest-netns-paths");
        try {
            Path loop = dir.resolve("loop");
            Files.createSymbolicLink(loop, loop);
            String longName = dir.resolve("n".repeat(300)).toString();
            for (String path : List.of(loop.toString(), longName)) {
                DataplaneException e =
                        assertThrows(
                                DataplaneException.class,
                                () -> dataplane.checkPodNetns(path),
                                path);
                assertEquals(
                        DataplaneException.Kind.INVALID_NETNS,
                        e.kind(),
                        path + ": " + e.getMessage());
            }
            DataplaneException cut =
                    assertThrows(DataplaneException.class, () -> dataplane.checkPodNetns(longName));
            assertTrue(
                    cut.getMessage().contains("… (" + longName.length() + " characters)"),
                    cut.getMessage());
            assertFalse(cut.getMessage().contains(longName), cut.getMessage());
        } finally {
            Files.deleteIfExists(dir.resolve("loop"));
            Files.delete(dir);
        }
    }

    @Test
    void aPreparedPairIsConfiguredByAttachAsAFreshOne() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 1400, randomV4() + "/32", randomV6() + "/128");

        OptionalInt prepared =
                dataplane.prepare(a.netnsPath(), a.hostIfname(), a.podIfname(), a.mtu());

        assertTrue(prepared.isPresent());
        assertTrue(Ip.linkExists(ns, "eth0"));
        assertFalse(
                Ip.run("link", "show", a.hostIfname()).contains(",UP"), "prepared: host end down");
        assertEquals(
                OptionalInt.empty(),
                dataplane.prepare(a.netnsPath(), a.hostIfname(), a.podIfname(), a.mtu()),
                "the names are taken now: nothing made");
        WiredPod wired = dataplane.attach(a, prepared);
        assertEquals(a.addresses(), wired.addresses());
        assertEquals(List.of(), dataplane.check(a));
    }

    @Test
    void aPreparedPairGoesWithAnAttachmentRefusedBeforeItsWiring() throws Exception {
        // An MTU below IPv6's minimum with an IPv6 address: refused before any address is set.
        PodAttachment a = attachment(ns, "eth0", 1279, randomV6() + "/128");
        OptionalInt prepared =
                dataplane.prepare(a.netnsPath(), a.hostIfname(), a.podIfname(), a.mtu());
        assertTrue(prepared.isPresent());

        DataplaneException e =
                assertThrows(DataplaneException.class, () -> dataplane.attach(a, prepared));

        assertTrue(e.getMessage().contains("below IPv6's minimum of 1280"), e.getMessage());
        assertFalse(Ip.linkExists(null, a.hostIfname()), "the prepared host end is deleted");
        assertFalse(Ip.linkExists(ns, "eth0"), "and the pod end with it");
    }

    @Test
    void aPreparedPairThatIsNotConfiguredIsDeletedAsAnUnpluggedOne() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        int prepared =
                dataplane.prepare(a.netnsPath(), a.hostIfname(), a.podIfname(), 0).getAsInt();

        assertTrue(dataplane.deleteUnplugged(a.hostIfname(), prepared));

        assertFalse(Ip.linkExists(null, a.hostIfname()));
        assertFalse(Ip.linkExists(ns, "eth0"));
    }

    @Test
    void aHostEndThatIsNotThePreparedOneIsComparedWithThePlan() throws Exception {
        PodAttachment a = attachment(ns, "eth0", 0, randomV4() + "/32");
        int prepared =
                dataplane.prepare(a.netnsPath(), a.hostIfname(), a.podIfname(), 0).getAsInt();

        DataplaneException e =
                assertThrows(
                        DataplaneException.class,
                        () -> dataplane.attach(a, OptionalInt.of(prepared + 1)));

        assertEquals(DataplaneException.Kind.WIRED_DIFFERENTLY, e.kind(), e.getMessage());
    }

    @Test
    void prepareRefusesTheHostsNamespaceAndCreatesNothing() {
        String hostEnd = host("cadhost" + randomHex(4));
        DataplaneException e =
                assertThrows(
                        DataplaneException.class,
                        () ->
                                dataplane.prepare(
                                        "/proc/self/ns/net", hostEnd, "cadpod" + randomHex(4), 0));
        assertEquals(DataplaneException.Kind.INVALID_NETNS, e.kind(), e.getMessage());
        assertFalse(Ip.linkExists(null, hostEnd));
    }

    @Test
    void attachIntoTheHostsNamespaceIsRefusedBeforeAnythingIsCreated() {
        // No addresses and a pod ifname of its own: even a regression would only add a veth pair,
        // which removeEverything deletes with its host end.
        PodAttachment a =
                new PodAttachment(
                        "/proc/self/ns/net",
                        "cadpod" + randomHex(4),
                        host("cadhost" + randomHex(4)),
                        0,
                        List.of());
        DataplaneException e = assertThrows(DataplaneException.class, () -> dataplane.attach(a));
        assertEquals(DataplaneException.Kind.INVALID_NETNS, e.kind(), e.getMessage());
        assertFalse(Ip.linkExists(null, a.hostIfname()));
    }

    @Test
    void attachRejectsAnInvalidAttachmentBeforeTouchingAnything() {
        for (PodAttachment bad :
                List.of(
                        new PodAttachment(
                                NETNS_DIR + ns, "eth0", host("cad0123456789abc"), 0, List.of()),
                        new PodAttachment(
                                NETNS_DIR + ns,
                                "eth/0",
                                host(HostInterfaceName.of("t", ns, "a")),
                                0,
                                List.of()),
                        new PodAttachment(
                                NETNS_DIR + ns,
                                "eth0",
                                host(HostInterfaceName.of("t", ns, "b")),
                                0,
                                List.of(address("198.18.0.0/24"))),
                        new PodAttachment(
                                NETNS_DIR + ns,
                                "eth0",
                                host(HostInterfaceName.of("t", ns, "c")),
                                0,
                                List.of(address(randomV4() + "/32"), address(randomV4() + "/32"))),
                        new PodAttachment(
                                NETNS_DIR + ns,
                                "eth0",
                                host(HostInterfaceName.of("t", ns, "d")),
                                1279,
                                List.of(address(randomV6() + "/128"))))) {
            DataplaneException e =
                    assertThrows(DataplaneException.class, () -> dataplane.attach(bad));
            assertTrue(e.getMessage().startsWith("invalid attachment: "), e.getMessage());
            assertFalse(Ip.linkExists(null, bad.hostIfname()));
        }
        assertFalse(Ip.linkExists(ns, "eth0"));
    }

    @Test
    void concurrentAttachesIntoSeparateNamespacesAllSucceed() throws Exception {
        int pods = 6;
        List<PodAttachment> attachments = new ArrayList<>();
        for (int i = 0; i < pods; i++) {
            String n = i == 0 ? ns : newNamespace();
            attachments.add(attachment(n, "eth0", 1400, randomV4() + "/32", randomV6() + "/128"));
        }
        CyclicBarrier start = new CyclicBarrier(pods);
        ExecutorService pool = Executors.newFixedThreadPool(pods);
        try {
            List<Future<WiredPod>> wired = new ArrayList<>();
            for (PodAttachment a : attachments) {
                Callable<WiredPod> attach =
                        () -> {
                            start.await();
                            return dataplane.attach(a);
                        };
                wired.add(pool.submit(attach));
            }
            for (int i = 0; i < pods; i++) {
                assertEquals(attachments.get(i).hostIfname(), wired.get(i).get().hostIfname());
            }
            for (PodAttachment a : attachments) {
                assertEquals(List.of(), dataplane.check(a), a.toString());
            }

            List<Future<Void>> detached = new ArrayList<>();
            for (PodAttachment a : attachments) {
                detached.add(
                        pool.submit(
                                () -> {
                                    dataplane.detach(a.hostIfname());
                                    return null;
                                }));
            }
            for (Future<Void> f : detached) {
                f.get();
            }
            for (PodAttachment a : attachments) {
                assertFalse(Ip.linkExists(null, a.hostIfname()));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private String newNamespace() {
        String name = "cadtest-" + randomHex(4);
        namespaces.add(name);
        Ip.run("netns", "add", name);
        return name;
    }

    /** A pod in {@code netns} whose host end is registered for removal after the test. */
    private PodAttachment attachment(String netns, String podIfname, int mtu, String... cidrs) {
        List<PodAddress> addresses = new ArrayList<>();
        for (String cidr : cidrs) {
            addresses.add(address(cidr));
        }
        return new PodAttachment(
                NETNS_DIR + netns,
                podIfname,
                host(HostInterfaceName.of("cadtest", netns, podIfname)),
                mtu,
                addresses);
    }

    private String host(String hostIfname) {
        hostLinks.add(hostIfname);
        return hostIfname;
    }

    private static PodAddress address(String cidr) {
        String[] parts = cidr.split("/");
        try {
            return new PodAddress(InetAddress.getByName(parts[0]), Integer.parseInt(parts[1]));
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(cidr, e);
        }
    }

    /** In 198.18.0.0/15, distinct within the test (host routes must not clash). */
    private String randomV4() {
        return unique(
                () ->
                        "198."
                                + (18 + RANDOM.nextInt(2))
                                + "."
                                + RANDOM.nextInt(256)
                                + "."
                                + (1 + RANDOM.nextInt(254)));
    }

    /** In fd00:198::/48, distinct within the test, in the compressed form ip prints. */
    private String randomV6() {
        return unique(() -> "fd00:198::" + Integer.toHexString(1 + RANDOM.nextInt(0xfffe)));
    }

    private String unique(Supplier<String> candidates) {
        while (true) {
            String candidate = candidates.get();
            if (usedAddresses.add(candidate)) {
                return candidate;
            }
        }
    }

    private static String randomHex(int bytes) {
        byte[] b = new byte[bytes];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private static String sysctl(String key) throws IOException {
        return Files.readString(Path.of("/proc/sys/net", key)).trim();
    }

    /**
     * The pod's IPv6 gateway is the host end's EUI-64 link-local address, which the kernel adds
     * once the pair's carrier is up; linkwatch reports that from a workqueue, so it may trail
     * attach() by a moment. Waits for it (not tentative: DAD is off), bounded by a deadline.
     */
    @SuppressWarnings("unchecked")
    private static void awaitGatewayAddress(String hostIfname) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            for (Map<String, Object> link : Ip.json("-6", "addr", "show", "dev", hostIfname)) {
                for (Map<String, Object> a : (List<Map<String, Object>>) link.get("addr_info")) {
                    if (Dataplane.IPV6_GATEWAY.equals(a.get("local"))
                            && Long.valueOf(64).equals(a.get("prefixlen"))
                            && !a.containsKey("tentative")) {
                        return;
                    }
                }
            }
            assertTrue(
                    System.nanoTime() < deadline,
                    "no usable " + Dataplane.IPV6_GATEWAY + " on " + hostIfname);
        }
    }

    @SuppressWarnings("unchecked")
    private static void assertUp(Map<String, Object> link) {
        assertTrue(((List<Object>) link.get("flags")).contains("UP"), link.toString());
    }
}
