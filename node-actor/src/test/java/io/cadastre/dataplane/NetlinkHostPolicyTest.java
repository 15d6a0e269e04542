package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.dataplane.HostRouting.Change;
import io.cadastre.dataplane.PolicyRules.Direction;
import io.cadastre.dataplane.PolicyRules.Peer;
import io.cadastre.dataplane.PolicyRules.PodPolicy;
import io.cadastre.dataplane.PolicyRules.Ports;
import io.cadastre.dataplane.PolicyRules.Rule;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link NetlinkHostPolicy} against the real kernel, as root: a node namespace with three pods
 * wired by the real {@link NetlinkDataplane} (routed, no bridge), the policy table written from a
 * thread inside the node's namespace, and real TCP connections and pings between the pods to see
 * what passes. A connection that should pass is awaited up to a deadline; one that should not is
 * given {@link #REFUSED_WAIT_MS}: a dropped SYN gets no answer at all, and an allowed one is
 * answered over a veth in well under a millisecond, so a slow machine can only make a connection
 * that passes look dropped (a check missed), never a dropped one look passed.
 */
class NetlinkHostPolicyTest {
    private static final int X = 8080;
    private static final int Y = 9090;
    private static final int RANGE_FIRST = 9000;
    private static final int RANGE_LAST = 9010;
    private static final int PAST_RANGE = 9011;
    private static final int REFUSED_WAIT_MS = 300;
    private static final long PASS_DEADLINE_SECONDS = 10;

    /** A pod: its namespace, a thread inside it for sockets, its IPv4 and IPv6 address. */
    private record Pod(
            String name, String netns, TestNet.Host inside, InetAddress v4, InetAddress v6) {
        List<InetAddress> addresses() {
            return List.of(v4, v6);
        }

        PodPolicy policy(Direction ingress, Direction egress) {
            return new PodPolicy("default/" + name, addresses(), ingress, egress);
        }
    }

    @Test
    void theTableLetsThroughWhatTheRulesAllowAndRepliesAndIsRewrittenWhenTamperedWith()
            throws Exception {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
        assumeTrue(Ip.tryRunCommand("busybox", "true").exit() == 0, "needs busybox for ping");
        List<ServerSocket> listeners = new ArrayList<>();
        try (TestNet net = new TestNet()) {
            String nodeNs = net.namespace("node");
            // The pods' gateway: proxy ARP answers for it when the node has a route to it.
            Ip.run("-n", nodeNs, "route", "add", "169.254.1.1/32", "dev", "lo");
            TestNet.Host node = net.host(nodeNs);
            node.call(
                    () -> {
                        new HostSysctls().setIpv4Forwarding(true);
                        new HostSysctls().setIpv6Forwarding(true);
                        return null;
                    });
            List<Pod> pods = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                String name = String.valueOf((char) ('a' + i - 1));
                String v4 = "198.18.9." + i;
                String v6 = "fd00:198::9:" + i;
                String ns = net.pod(node, name, v4, v6);
                pods.add(
                        new Pod(
                                name,
                                ns,
                                net.host(ns),
                                IpPrefix.literal(v4),
                                IpPrefix.literal(v6)));
            }
            Pod a = pods.get(0);
            Pod b = pods.get(1);
            Pod c = pods.get(2);
            for (Pod p : pods) {
                listeners.add(listen(p, X));
            }
            for (int port : new int[] {Y, RANGE_FIRST, RANGE_LAST, PAST_RANGE}) {
                listeners.add(listen(b, port));
            }
            HostPolicy policy = new NetlinkHostPolicy();

            // No policy: no table, everything passes.
            assertEquals(Optional.empty(), reconcile(node, policy, PolicyRules.NONE));
            assertFalse(tableExists(node));
            for (int port : new int[] {X, Y, RANGE_FIRST, RANGE_LAST, PAST_RANGE}) {
                awaitConnect(a, b.v4(), port);
                awaitConnect(a, b.v6(), port);
            }
            awaitConnect(a, c.v4(), X);
            TestNet.awaitPing(a.netns(), Rtnetlink.text(c.v4()));
            TestNet.awaitPing(a.netns(), Rtnetlink.text(c.v6()));

            // b isolated for ingress: only a's IPv4 address, on TCP port X.
            PolicyRules onlyAOnX = ingressOnX(b, List.of(Peer.host(a.v4())));
            Change written = reconcile(node, policy, onlyAOnX).orElseThrow();
            assertEquals(HostRouting.Kind.POLICY, written.kind());
            assertTrue(
                    written.what().contains("written: 1 pods isolated, 5 rules"), written.what());
            assertEquals(Optional.empty(), reconcile(node, policy, onlyAOnX));
            String listed = nft(node, "list", "table", "inet", HostPolicy.TABLE);
            for (String line :
                    List.of(
                            "comment \"" + NetlinkHostPolicy.comment(onlyAOnX) + "\"",
                            "type filter hook forward priority filter; policy accept;",
                            "ct state established,related accept",
                            "ip daddr 198.18.9.2 jump ingress-0 comment \"default/b\"",
                            "ip6 daddr fd00:198::9:2 jump ingress-0 comment \"default/b\"",
                            "ip saddr 198.18.9.1 tcp dport 8080 accept",
                            "drop")) {
                assertTrue(listed.contains(line), "no '" + line + "' in:\n" + listed);
            }
            awaitConnect(a, b.v4(), X);
            assertNoConnect(a, b.v4(), Y);
            assertNoConnect(a, b.v6(), X); // the peer is a's IPv4 address only
            assertNoConnect(c, b.v4(), X);
            assertFalse(TestNet.ping(c.netns(), Rtnetlink.text(b.v4())), "c pinged b");
            assertFalse(TestNet.ping(a.netns(), Rtnetlink.text(b.v4())), "ICMP is no TCP port");
            // b's own connections are not filtered, and their replies pass b's ingress.
            awaitConnect(b, a.v4(), X);
            awaitConnect(b, c.v6(), X);
            TestNet.awaitPing(b.netns(), Rtnetlink.text(c.v4()));
            awaitConnect(a, c.v4(), X);

            // What was refused is counted, as b's ingress: what nft shows between two readings.
            long shownBefore = packetsCounted(node, "ingress-0");
            HostPolicy.Drops dropped = node.call(policy::dropped);
            long shownAfter = packetsCounted(node, "ingress-0");
            assertTrue(
                    shownBefore > 0
                            && shownBefore <= dropped.ingress()
                            && dropped.ingress() <= shownAfter,
                    shownBefore + " <= " + dropped + " <= " + shownAfter);
            assertEquals(0, dropped.egress(), "no pod is isolated for egress");

            // Tampered with: deleted, or a chain flushed (fewer rules): written again. The count
            // never goes back: what a table held when it went stays counted.
            nft(node, "delete", "table", "inet", HostPolicy.TABLE);
            awaitConnect(c, b.v4(), X);
            assertTrue(reconcile(node, policy, onlyAOnX).isPresent());
            assertNoConnect(c, b.v4(), X);
            dropped = atLeast(node, policy, dropped);
            nft(node, "flush", "chain", "inet", HostPolicy.TABLE, "ingress-0");
            awaitConnect(c, b.v4(), X);
            Change mended = reconcile(node, policy, onlyAOnX).orElseThrow();
            assertTrue(mended.what().contains("(was 3 rules, managed by"), mended.what());
            assertEquals(Optional.empty(), reconcile(node, policy, onlyAOnX));
            assertNoConnect(c, b.v4(), X);
            awaitConnect(a, b.v4(), X);
            dropped = atLeast(node, policy, dropped);

            // An ipBlock with an exception and a port range, in both families; a denied all egress.
            Rule blockOnRange =
                    new Rule(
                            List.of(
                                    new Peer(
                                            IpPrefix.parse("198.18.9.0/24"),
                                            List.of(IpPrefix.parse("198.18.9.3/32"))),
                                    new Peer(
                                            IpPrefix.parse("fd00:198::9:0/112"),
                                            List.of(IpPrefix.parse("fd00:198::9:3/128")))),
                            List.of(new Ports(Ports.TCP, RANGE_FIRST, RANGE_LAST)));
            PolicyRules ranges =
                    new PolicyRules(
                            List.of(
                                    b.policy(
                                            new Direction(true, List.of(blockOnRange)),
                                            Direction.OPEN)));
            assertTrue(reconcile(node, policy, ranges).isPresent());
            for (InetAddress to : b.addresses()) {
                awaitConnect(a, to, RANGE_FIRST);
                awaitConnect(a, to, RANGE_LAST);
                assertNoConnect(a, to, PAST_RANGE);
                assertNoConnect(a, to, X);
                assertNoConnect(c, to, RANGE_FIRST); // the exception
            }
            PolicyRules aDenied =
                    new PolicyRules(
                            List.of(
                                    ranges.pods().get(0),
                                    a.policy(Direction.OPEN, Direction.DENY_ALL)));
            assertTrue(reconcile(node, policy, aDenied).isPresent());
            assertNotEquals(NetlinkHostPolicy.comment(ranges), NetlinkHostPolicy.comment(aDenied));
            for (InetAddress to : List.of(b.v4(), b.v6(), c.v4(), c.v6())) {
                assertNoConnect(a, to, to.equals(b.v4()) || to.equals(b.v6()) ? RANGE_FIRST : X);
            }
            assertFalse(TestNet.ping(a.netns(), Rtnetlink.text(c.v4())), "a pinged c");
            HostPolicy.Drops afterEgress = atLeast(node, policy, dropped);
            assertTrue(afterEgress.egress() > 0, "a's refused egress is counted: " + afterEgress);
            dropped = afterEgress;
            for (InetAddress to : a.addresses()) {
                awaitConnect(c, to, X);
                awaitConnect(b, to, X);
                TestNet.awaitPing(c.netns(), Rtnetlink.text(to));
            }
            System.out.println(nft(node, "list", "table", "inet", HostPolicy.TABLE));

            // a's egress allows everything to b, which returns to the forward chain: b's ingress
            // still decides. c accepts TCP port X from anyone, in both families.
            PolicyRules egressThenIngress =
                    new PolicyRules(
                            List.of(
                                    ranges.pods().get(0),
                                    a.policy(
                                            Direction.OPEN,
                                            new Direction(
                                                    true,
                                                    List.of(
                                                            new Rule(
                                                                    List.of(
                                                                            Peer.host(b.v4()),
                                                                            Peer.host(b.v6()),
                                                                            Peer.host(c.v4()),
                                                                            Peer.host(c.v6())),
                                                                    List.of())))),
                                    c.policy(
                                            new Direction(
                                                    true,
                                                    List.of(
                                                            new Rule(
                                                                    List.of(),
                                                                    List.of(
                                                                            new Ports(
                                                                                    Ports.TCP, X,
                                                                                    X))))),
                                            Direction.OPEN)));
            assertTrue(reconcile(node, policy, egressThenIngress).isPresent());
            for (InetAddress to : b.addresses()) {
                awaitConnect(a, to, RANGE_FIRST);
                assertNoConnect(a, to, X);
            }
            for (InetAddress to : c.addresses()) {
                awaitConnect(a, to, X);
                awaitConnect(b, to, X);
                assertFalse(TestNet.ping(a.netns(), Rtnetlink.text(to)), "a pinged c");
            }

            // Pods selected in numbers (a namespace selector): one set per family, looked up.
            List<Peer> selected = new ArrayList<>();
            for (InetAddress address : a.addresses()) {
                selected.add(Peer.host(address));
            }
            for (int i = 0; i < NetlinkHostPolicy.SET_MIN; i++) {
                selected.add(Peer.host(IpPrefix.literal("198.18.9." + (100 + i))));
                selected.add(Peer.host(IpPrefix.literal("fd00:198::9:" + (100 + i))));
            }
            PolicyRules fromSelected = ingressOnX(b, selected);
            Change withSets = reconcile(node, policy, fromSelected).orElseThrow();
            assertTrue(withSets.what().contains(" 6 rules"), withSets.what());
            assertEquals(Optional.empty(), reconcile(node, policy, fromSelected));
            String setTable = nft(node, "list", "table", "inet", HostPolicy.TABLE);
            for (String line :
                    List.of(
                            "ip saddr @peers-0 tcp dport 8080 accept",
                            "ip6 saddr @peers-1 tcp dport 8080 accept",
                            "type ipv4_addr",
                            "type ipv6_addr",
                            "198.18.9.1,",
                            "fd00:198::9:1,")) {
                assertTrue(setTable.contains(line), "no '" + line + "' in:\n" + setTable);
            }
            for (InetAddress to : b.addresses()) {
                awaitConnect(a, to, X);
                assertNoConnect(c, to, X);
                assertNoConnect(a, to, Y);
            }

            // No pod isolated: the table goes, everything passes again.
            Change removed = reconcile(node, policy, PolicyRules.NONE).orElseThrow();
            assertEquals("table inet cadastre-policy removed", removed.what());
            assertFalse(tableExists(node));
            assertEquals(Optional.empty(), reconcile(node, policy, PolicyRules.NONE));
            awaitConnect(c, b.v4(), X);
            TestNet.awaitPing(a.netns(), Rtnetlink.text(c.v6()));
            atLeast(node, policy, dropped);
        } finally {
            for (ServerSocket s : listeners) {
                s.close();
            }
        }
    }

    /**
     * A table far beyond one default netlink send buffer (208 KiB: a few thousand rules), as a
     * node with a hundred isolated pods and policies of many peers has: written in one batch, all
     * of it (the second reconcile counts the same rules and finds nothing to do), and removed.
     */
    @Test
    void aTableOfTwentyThousandRulesIsWrittenInOneTransactionAndAPodIsolatedAheadOfIt()
            throws Exception {
        assumeTrue(
                "root".equals(System.getProperty("user.name")),
                "needs root: creates network namespaces");
        try (TestNet net = new TestNet()) {
            TestNet.Host node = net.host(net.namespace("node"));
            List<Peer> peers = new ArrayList<>(); // networks (ipBlocks): a rule each
            for (int i = 0; i < 10_000; i++) {
                peers.add(
                        new Peer(
                                IpPrefix.parse("198.18." + (i / 128) + "." + (i % 128 * 2) + "/31"),
                                List.of()));
            }
            List<PodPolicy> pods = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                pods.add(ingressOn8080("default/big-" + p, "198.19.255." + (1 + p), peers));
            }
            PolicyRules big = new PolicyRules(pods);
            HostPolicy policy = new NetlinkHostPolicy();
            Change written = reconcile(node, policy, big).orElseThrow();
            assertTrue(written.what().contains("20005 rules"), written.what());
            assertEquals(Optional.empty(), reconcile(node, policy, big), "every rule is there");

            // A pod isolated ahead of the next write: its chain and jump added to the table as
            // it is; the next reconcile rewrites the table whole (the count no longer matches).
            PodPolicy fresh =
                    new PodPolicy(
                            "default/fresh",
                            List.of(IpPrefix.literal("198.19.255.9")),
                            Direction.DENY_ALL,
                            Direction.OPEN);
            Change isolated = node.call(() -> policy.isolate(fresh)).orElseThrow();
            assertTrue(isolated.what().contains("default/fresh isolated"), isolated.what());
            String table = nft(node, "list", "table", "inet", HostPolicy.TABLE);
            assertTrue(table.contains("ip daddr 198.19.255.9 jump new-ingress-"), table);
            assertTrue(reconcile(node, policy, big).isPresent(), "rewritten after the addition");
            assertFalse(
                    nft(node, "list", "table", "inet", HostPolicy.TABLE).contains("new-ingress-"));
            assertTrue(reconcile(node, policy, PolicyRules.NONE).isPresent());
            // With no table, the pod alone is the table.
            assertTrue(node.call(() -> policy.isolate(fresh)).isPresent());
            assertEquals(
                    Optional.empty(),
                    reconcile(node, policy, new PolicyRules(List.of(fresh))),
                    "written whole, with its comment");
            assertTrue(reconcile(node, policy, PolicyRules.NONE).isPresent());
            assertFalse(tableExists(node));

            // Pods as peers instead, 10,000 for each of two pods: two sets of 10,000 addresses
            // (20,000 elements, beyond one send buffer too) and seven rules, in one transaction.
            List<PodPolicy> selecting = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                List<Peer> selected = new ArrayList<>();
                for (int i = 0; i < 10_000; i++) {
                    selected.add(
                            Peer.host(
                                    IpPrefix.literal(
                                            "198.18."
                                                    + (100 * p + i / 250)
                                                    + "."
                                                    + (1 + i % 250))));
                }
                selecting.add(
                        ingressOn8080("default/selecting-" + p, "198.19.255." + (1 + p), selected));
            }
            PolicyRules bySets = new PolicyRules(selecting);
            Change sets = reconcile(node, policy, bySets).orElseThrow();
            assertTrue(sets.what().contains(" 7 rules"), sets.what());
            assertEquals(Optional.empty(), reconcile(node, policy, bySets), "every rule is there");
            for (String set : List.of("peers-0", "peers-1")) {
                Matcher element =
                        Pattern.compile("198\\.18\\.\\d+\\.\\d+")
                                .matcher(nft(node, "list", "set", "inet", HostPolicy.TABLE, set));
                int elements = 0;
                while (element.find()) {
                    elements++;
                }
                assertEquals(10_000, elements, set);
            }
            assertTrue(reconcile(node, policy, PolicyRules.NONE).isPresent());
            assertFalse(tableExists(node));
        }
    }

    private static Optional<Change> reconcile(
            TestNet.Host node, HostPolicy policy, PolicyRules rules) throws Exception {
        return node.call(() -> policy.reconcile(rules));
    }

    private static boolean tableExists(TestNet.Host node) {
        return Ip.tryRunCommand(
                                "ip",
                                "netns",
                                "exec",
                                node.netns(),
                                "nft",
                                "list",
                                "table",
                                "inet",
                                HostPolicy.TABLE)
                        .exit()
                == 0;
    }

    /** Runs {@code nft} in the node's namespace; its output ("" for a change). */
    /** @return a pod of one IPv4 address isolated for ingress, open to {@code peers} on TCP 8080 */
    private static PodPolicy ingressOn8080(String name, String address, List<Peer> peers) {
        Rule rule = new Rule(peers, List.of(new Ports(Ports.TCP, 8080, 8080)));
        return new PodPolicy(
                name,
                List.of(IpPrefix.literal(address)),
                new Direction(true, List.of(rule)),
                Direction.OPEN);
    }

    /** @return {@code pod} alone isolated for ingress, open to {@code peers} on TCP port X */
    private static PolicyRules ingressOnX(Pod pod, List<Peer> peers) {
        Rule rule = new Rule(peers, List.of(new Ports(Ports.TCP, X, X)));
        return new PolicyRules(
                List.of(pod.policy(new Direction(true, List.of(rule)), Direction.OPEN)));
    }

    /** @return the policy's drops, after asserting that neither direction went below {@code before} */
    private static HostPolicy.Drops atLeast(
            TestNet.Host node, HostPolicy policy, HostPolicy.Drops before) throws Exception {
        HostPolicy.Drops now = node.call(policy::dropped);
        assertTrue(
                now.ingress() >= before.ingress() && now.egress() >= before.egress(),
                "the drops went back from " + before + " to " + now);
        return now;
    }

    /** @return the packets of the counter in {@code chain}, as {@code nft list chain} shows them */
    private static long packetsCounted(TestNet.Host node, String chain) {
        String listed = nft(node, "list", "chain", "inet", HostPolicy.TABLE, chain);
        Matcher m = Pattern.compile("counter packets (\\d+)").matcher(listed);
        assertTrue(m.find(), "no counter in:\n" + listed);
        return Long.parseLong(m.group(1));
    }

    private static String nft(TestNet.Host node, String... args) {
        List<String> command = new ArrayList<>(List.of("ip", "netns", "exec", node.netns(), "nft"));
        command.addAll(List.of(args));
        return Ip.runCommand(command.toArray(String[]::new));
    }

    /**
     * A listener on {@code port} of every address of {@code pod} (created inside its namespace),
     * accepting and closing connections on a thread of its own until it is closed.
     */
    private static ServerSocket listen(Pod pod, int port) throws Exception {
        ServerSocket server = pod.inside().call(() -> new ServerSocket(port, 50));
        Thread accepter =
                new Thread(
                        () -> {
                            while (true) {
                                try {
                                    server.accept().close();
                                } catch (IOException e) {
                                    return; // closed
                                }
                            }
                        },
                        "accept-" + pod.name() + "-" + port);
        accepter.setDaemon(true);
        accepter.start();
        return server;
    }

    /** @return whether a TCP connection from {@code from} to {@code to}:{@code port} was set up within {@code timeoutMs} */
    private static boolean connects(Pod from, InetAddress to, int port, int timeoutMs)
            throws Exception {
        return from.inside()
                .call(
                        () -> {
                            try (Socket s = new Socket()) {
                                s.connect(new InetSocketAddress(to, port), timeoutMs);
                                return true;
                            } catch (IOException e) {
                                return false;
                            }
                        });
    }

    private static void awaitConnect(Pod from, InetAddress to, int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PASS_DEADLINE_SECONDS);
        while (!connects(from, to, port, 1000)) {
            assertTrue(
                    System.nanoTime() < deadline,
                    from.name() + " cannot connect to " + Rtnetlink.text(to) + ":" + port);
            Thread.sleep(50); // a refusal comes back at once: no busy loop
        }
    }

    private static void assertNoConnect(Pod from, InetAddress to, int port) throws Exception {
        assertFalse(
                connects(from, to, port, REFUSED_WAIT_MS),
                from.name() + " connected to " + Rtnetlink.text(to) + ":" + port);
    }
}
