package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.ipam.Cidr;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.PodNamespaces;
import io.cadastre.testsupport.Topology;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Pods on different hosts reach each other with the routes each agent computes from Cadastre's own
 * state (issue 13): four members on Cassandra with mutual TLS, hosts h1-h3 on one L2 segment and
 * h4 behind a router (so cross-subnet, the default, goes direct between h1-h3 and over VXLAN to
 * h4), no default route anywhere, pods wired by the real plugin, IPv4 and IPv6.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PodMeshTest {
    static final String POOLS =
            """
            cadastre.pools = [
              { name = "mesh-ipv4", cidr = "198.18.0.0/20", block-size = 26 }
              { name = "mesh-ipv6", cidr = "fd00:198:3::/112", block-size = 122 }
              { name = "late-ipv4", cidr = "198.18.64.0/24", block-size = 26 }
              { name = "late-ipv6", cidr = "fd00:198:4::/112", block-size = 122 }
            ]
            cadastre.default-pools = ["mesh-ipv4", "mesh-ipv6"]
            """;
    private static final long DEADLINE_SECONDS = 30;

    /** For what a hint carries to every agent: a third of the 30 s resync that would also do it. */
    private static final long HINTED_SECONDS = 10;

    private static ClusterFixture cluster;
    private static PodNamespaces namespaces;

    /** Pod name → its pod, in ADD order. */
    private static final Map<String, Pod> pods = new LinkedHashMap<>();

    /** A pod: its netns, its host, its container id, its two addresses. */
    private record Pod(
            String name, Member member, String netns, String containerId, String v4, String v6) {}

    @BeforeAll
    static void startCluster() throws Exception {
        assumeTrue(
                Topology.supported(),
                "needs root (network namespaces), iproute2 and scripts/topology.sh");
        assumeTrue(run("busybox", "true").exit() == 0, "needs busybox for ping and wget");
        cluster = ClusterFixture.start("cad-mesh", 3, 1, 4, false, POOLS);
        namespaces = new PodNamespaces(cluster.topology().name() + "-p");
    }

    @AfterAll
    static void stopCluster() throws Exception {
        try {
            if (namespaces != null) {
                namespaces.close();
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    private static Member member(int host) {
        return cluster.members().get(host - 1);
    }

    @Test
    @Order(1)
    void everyPodReachesEveryPodAndEveryHostDirectOrOverVxlan() throws Exception {
        add("p1a", member(1), null);
        add("p1b", member(1), null);
        add("p2", member(2), null);
        add("p3", member(3), null);
        add("p4", member(4), null);
        // An address borrowed from h2's block, living on h3: a host route on every host leads to
        // it.
        Pod p2 = pods.get("p2");
        String borrowedV4 = offset(p2.v4(), 26, 40);
        String borrowedV6 = offset(p2.v6(), 122, 40);
        add(
                "p3b",
                member(3),
                "\"runtimeConfig\":{\"ips\":[\""
                        + borrowedV4
                        + "/32\",\""
                        + borrowedV6
                        + "/128\"]}");
        assertEquals(borrowedV4, pods.get("p3b").v4());

        // Direct on the segment, VXLAN to the routed host, a host route for the borrowed address.
        String h1 = member(1).host.netns();
        String h2Block = block(p2.v4(), 26);
        String h4Block = block(pods.get("p4").v4(), 26);
        awaitRoute(h1, h2Block + " via " + member(2).host.address() + " dev eth0");
        awaitRoute(h1, borrowedV4 + " via " + member(3).host.address() + " dev eth0");
        awaitRoute(h1, h4Block + " via .* dev cadastre.vx4");
        awaitRoute(
                member(2).host.netns(),
                borrowedV4 + " via " + member(3).host.address() + " dev eth0");
        awaitRoute(member(4).host.netns(), borrowedV4 + " via .* dev cadastre.vx4");
        awaitRoute(h1, "blackhole " + block(pods.get("p1a").v4(), 26));
        awaitRoute(h1, "169.254.1.1 dev lo");

        long started = System.nanoTime();
        List<CompletableFuture<Void>> pings = new ArrayList<>();
        for (Pod from : pods.values()) {
            List<String> targets = new ArrayList<>();
            for (Pod to : pods.values()) {
                if (to != from) {
                    targets.add(to.v4());
                    targets.add(to.v6());
                }
            }
            for (Member m : cluster.members()) {
                targets.add(m.host.address());
                targets.add(m.host.address6());
            }
            pings.add(
                    CompletableFuture.runAsync(
                            () -> targets.forEach(t -> awaitPing(from, t, null)),
                            cluster.executor()));
        }
        pings.forEach(CompletableFuture::join);
        System.out.printf(
                "mesh: %d pods on 4 hosts reached every pod and every host, IPv4 and IPv6, in %d ms; pings"
                        + " that needed more than one echo request: %s%n",
                pods.size(), (System.nanoTime() - started) / 1_000_000, retried);
        retried.clear();
        assertTrue(
                mtu(pods.get("p1a")) == 1430, "pods get the underlay's MTU less VXLAN over IPv6");
    }

    /**
     * The router and the db namespace know no route to the pools, as the Internet or a corporate
     * network does not: a pod reaches them only because its host masquerades (outgoing NAT, on
     * by default). Between pods the source is kept: h1's connection tracking has the echo to a
     * pod answered to the pod's own address, the echo to the router answered to h1's.
     */
    @Test
    @Order(2)
    void podsReachNetworksWithoutRoutesToThePoolsThroughOutgoingNatAndKeepTheirAddressToPods()
            throws Exception {
        String routerV4 = "198.19.255.1";
        List<String> outside =
                List.of(
                        routerV4,
                        "fd00:19:255::1",
                        "198.19.254.1",
                        "fd00:19:254::1",
                        cluster.topology().db().address());
        assertFalse(
                run(
                                "ip",
                                "netns",
                                "exec",
                                cluster.topology().db().netns(),
                                "ip",
                                "route",
                                "get",
                                pods.get("p1a").v4())
                        .out()
                        .contains(" via "),
                "the db namespace must not route the pools for this test to mean anything");
        List<CompletableFuture<Void>> pings = new ArrayList<>();
        for (Pod from : List.of(pods.get("p1a"), pods.get("p2"), pods.get("p4"))) {
            pings.add(
                    CompletableFuture.runAsync(
                            () -> outside.forEach(t -> awaitPing(from, t, null)),
                            cluster.executor()));
        }
        pings.forEach(CompletableFuture::join);

        // Fresh entries: an echo's lasts 30 s.
        Pod p1a = pods.get("p1a");
        awaitPing(p1a, routerV4, null);
        awaitPing(p1a, pods.get("p2").v4(), null);
        String conntrack =
                run("ip", "netns", "exec", member(1).host.netns(), "cat", "/proc/net/nf_conntrack")
                        .out();
        assertTrue(
                conntrack
                        .lines()
                        .anyMatch(
                                l ->
                                        l.contains("src=" + p1a.v4() + " dst=" + routerV4 + " ")
                                                && l.contains(
                                                        "src="
                                                                + routerV4
                                                                + " dst="
                                                                + member(1).host.address()
                                                                + " ")),
                "the echo to the router is not answered to h1's address:\n" + conntrack);
        assertTrue(
                conntrack
                        .lines()
                        .anyMatch(
                                l ->
                                        l.contains(
                                                        "src="
                                                                + p1a.v4()
                                                                + " dst="
                                                                + pods.get("p2").v4())
                                                && l.contains(
                                                        "src="
                                                                + pods.get("p2").v4()
                                                                + " dst="
                                                                + p1a.v4()
                                                                + " ")),
                "the echo to p2 is not answered to p1a's own address:\n" + conntrack);
    }

    @Test
    @Order(3)
    void aPodSendingFromAnAddressNotItsOwnReachesNoPodAndNoHost() throws Exception {
        Pod spoofer = pods.get("p1a");
        String fakeV4 = offset(pods.get("p2").v4(), 26, 50);
        String fakeV6 = offset(pods.get("p2").v6(), 122, 50);
        run("ip", "-n", spoofer.netns(), "addr", "add", fakeV4 + "/32", "dev", "eth0");
        run("ip", "-n", spoofer.netns(), "addr", "add", fakeV6 + "/128", "dev", "eth0", "nodad");
        long before = spoofDrops(member(1));
        for (String target :
                List.of(
                        pods.get("p1b").v4(),
                        pods.get("p2").v4(),
                        pods.get("p4").v4(),
                        member(1).host.address(),
                        member(2).host.address())) {
            assertFalse(ping(spoofer.netns(), target, fakeV4), "spoofed IPv4 reached " + target);
        }
        long afterV4 = awaitDrops(member(1), before);
        for (String target :
                List.of(
                        pods.get("p1b").v6(),
                        pods.get("p2").v6(),
                        pods.get("p4").v6(),
                        member(1).host.address6(),
                        member(2).host.address6())) {
            assertFalse(ping(spoofer.netns(), target, fakeV6), "spoofed IPv6 reached " + target);
        }
        long afterV6 = awaitDrops(member(1), afterV4);
        System.out.printf(
                "anti-spoofing: h1 dropped %d spoofed IPv4 and %d spoofed IPv6 packets%n",
                afterV4 - before, afterV6 - afterV4);
        awaitPing(spoofer, pods.get("p2").v4(), null);
        run("ip", "-n", spoofer.netns(), "addr", "del", fakeV4 + "/32", "dev", "eth0");
        run("ip", "-n", spoofer.netns(), "addr", "del", fakeV6 + "/128", "dev", "eth0");
    }

    @Test
    @Order(4)
    void cadastrectlShowsPeersAndRoutesAndTheCheckReportsARouteInTheWay() throws Exception {
        String show = ctl(member(1), "node", "show", member(1).name());
        assertTrue(
                show.contains("Routing of h1 (mode cross-subnet), programmed on this host:"), show);
        assertTrue(Pattern.compile("(?m)^h2 +direct +direct ").matcher(show).find(), show);
        assertTrue(Pattern.compile("(?m)^h4 +vxlan +vxlan ").matcher(show).find(), show);
        assertTrue(
                show.contains(
                        "Outgoing NAT: masquerade 198.18.0.0/20, 198.18.64.0/24, fd00:198:3::/112,"
                                + " fd00:198:4::/112 except to 198.18.0.0/20"),
                show);
        assertTrue(
                Pattern.compile(
                                "(?m)^"
                                        + Pattern.quote(block(pods.get("p3b").v4(), 32))
                                        + " +borrowed +h3 ")
                        .matcher(show)
                        .find(),
                show);
        String remote = ctl(member(1), "node", "show", member(4).name());
        assertTrue(remote.contains("Routing of h4 (mode cross-subnet), as computed on h1"), remote);
        assertTrue(Pattern.compile("(?m)^h1 +vxlan +vxlan ").matcher(remote).find(), remote);

        JsonNode clean = CniExec.JSON.readTree(ctl(member(3), "ipam", "check", "-o", "json"));
        assertEquals("h3", clean.get("routesCheckedOn").asText());
        assertEquals(0, clean.get("routeFindings").size(), clean.toString());

        // Another protocol's route to h4's block, via h2: Cadastre never touches it, the check says
        // so.
        String h4Block = block(pods.get("p4").v4(), 26);
        String ns = member(3).host.netns();
        run(
                "ip",
                "-n",
                ns,
                "route",
                "add",
                h4Block,
                "via",
                member(2).host.address(),
                "dev",
                "eth0",
                "proto",
                "static",
                "metric",
                "10");
        try {
            Run check = runIn(member(3), ctlCommand(member(3), "ipam", "check", "-o", "json"));
            assertEquals(1, check.exit(), check.out());
            JsonNode finding = CniExec.JSON.readTree(check.out()).get("routeFindings").get(0);
            assertEquals(h4Block, finding.get("block").asText());
            assertEquals("h4", finding.get("affinity").asText());
            assertEquals("conflict", finding.get("problem").asText());
            assertTrue(
                    finding.get("actual").asText().contains("via " + member(2).host.address()),
                    finding.toString());
        } finally {
            run("ip", "-n", ns, "route", "del", h4Block, "proto", "static", "metric", "10");
        }
    }

    @Test
    @Order(5)
    void aPodInANewlyClaimedBlockIsReachableFromEveryHostSoonAndItsRoutesGoWithTheBlock()
            throws Exception {
        Pod late =
                add(
                        "late",
                        member(2),
                        "\"runtimeConfig\":{\"pools\":[\"late-ipv4\",\"late-ipv6\"]}");
        long replied = System.nanoTime();
        assertTrue(late.v4().startsWith("198.18.64."), late.toString());
        List<CompletableFuture<Long>> reached = new ArrayList<>();
        for (String from : List.of("p1a", "p3", "p4")) {
            reached.add(
                    CompletableFuture.supplyAsync(
                            () -> {
                                awaitPing(pods.get(from), late.v4(), null);
                                return (System.nanoTime() - replied) / 1_000_000;
                            },
                            cluster.executor()));
        }
        List<Long> millis = reached.stream().map(CompletableFuture::join).toList();
        System.out.printf(
                "a new block on h2 reached from h1, h3, h4 within %s ms of the ADD's reply (polling: each ping"
                        + " waits up to 1 s)%n",
                millis);
        awaitPing(pods.get("p4"), late.v6(), null);

        CniExec.Result del =
                CniExec.run(
                        "DEL",
                        late.containerId(),
                        "/var/run/netns/" + late.netns(),
                        CniExec.full(late.member()));
        assertEquals(0, del.exit(), del.toString());
        pods.remove("late");
        ctl(member(1), "pool", "delete", "late-ipv4");
        ctl(member(1), "pool", "delete", "late-ipv6");
        // Well inside the agents' 30 s resync: the routes go on the hint that the blocks went.
        for (Member m : cluster.members()) {
            awaitNoRoute(m.host.netns(), "198.18.64.", HINTED_SECONDS);
            awaitNoRoute(m.host.netns(), "fd00:198:4:", HINTED_SECONDS);
        }
    }

    @Test
    @Order(6)
    void anAgentRestartedReconcilesStaleDeletedAndForeignRoutes() throws Exception {
        Member h2 = member(2);
        String ns = h2.host.netns();
        String p1Block = block(pods.get("p1a").v4(), 26);
        h2.close();
        // While the agent is down: the dataplane stays; an operator's hand makes a mess.
        awaitPing(pods.get("p2"), pods.get("p1a").v4(), null);
        run(
                "ip",
                "-n",
                ns,
                "route",
                "add",
                "198.18.15.0/26",
                "via",
                member(3).host.address(),
                "dev",
                "eth0",
                "onlink",
                "proto",
                "202");
        run("ip", "-n", ns, "route", "del", p1Block);
        run(
                "ip",
                "-n",
                ns,
                "route",
                "add",
                "198.18.14.0/26",
                "via",
                member(3).host.address(),
                "dev",
                "eth0",
                "proto",
                "static");
        h2.start();
        awaitNoRoute(ns, "198.18.15.0/26", DEADLINE_SECONDS);
        awaitRoute(ns, p1Block + " via " + member(1).host.address() + " dev eth0");
        assertTrue(
                routes(ns).stream()
                        .anyMatch(
                                r ->
                                        r.startsWith(
                                                "198.18.14.0/26 via " + member(3).host.address())),
                "another protocol's route is left alone");
        awaitPing(pods.get("p2"), pods.get("p1a").v4(), null);
        run("ip", "-n", ns, "route", "del", "198.18.14.0/26");
    }

    @Test
    @Order(7)
    void whileAMemberIsKilledPodsOnTheOthersKeepTalkingToEachOtherAndToItsPods() throws Exception {
        Member victim = member(1);
        victim.kill();
        long killed = System.nanoTime();
        int rounds = 0;
        List<String> lost = new ArrayList<>();
        // The failover window: unreachable after ~3.5 s, downed, removed, entities moved by ~10 s.
        while (System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(12)) {
            for (String[] pair :
                    new String[][] {
                        {"p2", "p3"},
                        {"p3", "p4"},
                        {"p4", "p2"},
                        {"p2", "p1a"},
                        {"p4", "p1b"},
                        {"p3b", "p1a"}
                    }) {
                Pod from = pods.get(pair[0]);
                Pod to = pods.get(pair[1]);
                for (String target : List.of(to.v4(), to.v6())) {
                    if (!ping(from.netns(), target, null)) {
                        lost.add(
                                from.name()
                                        + " -> "
                                        + target
                                        + " at +"
                                        + (System.nanoTime() - killed) / 1_000_000
                                        + " ms");
                    }
                }
            }
            rounds++;
        }
        System.out.printf(
                "while h1's member was down: %d rounds of 12 pings, lost: %s%n", rounds, lost);
        assertEquals(List.of(), lost, "the dataplane must not depend on the control plane");
        victim.seeds(
                        cluster.members().stream()
                                .filter(m -> m != victim)
                                .map(m -> Member.address(m.host))
                                .toList())
                .start();
        awaitPing(pods.get("p4"), pods.get("p1a").v4(), null);
    }

    // ---- pods ----

    /**
     * ADDs a pod with the real plugin on the member's socket.
     *
     * @param extra more netconf members (e.g. runtimeConfig), or null
     */
    private static Pod add(String name, Member member, String extra) throws Exception {
        String containerId = name + "-" + Long.toHexString(System.nanoTime() & 0xfffffff);
        Attachment attachment = new Attachment(member.name(), containerId);
        namespaces.create(attachment.containerId());
        String netconf = CniExec.full(member);
        if (extra != null) {
            netconf = netconf.substring(0, netconf.length() - 1) + "," + extra + "}";
        }
        CniExec.Result r =
                CniExec.run(
                        "ADD",
                        containerId,
                        PodNamespaces.path(namespaces.name(attachment.containerId())),
                        netconf);
        assertEquals(0, r.exit(), name + ": " + r);
        String v4 = null;
        String v6 = null;
        for (var ip : r.json().path("ips")) {
            String a = ip.path("address").asText().split("/")[0];
            if (a.contains(":")) {
                v6 = a;
            } else {
                v4 = a;
            }
        }
        Pod pod =
                new Pod(
                        name,
                        member,
                        namespaces.name(attachment.containerId()),
                        containerId,
                        v4,
                        v6);
        pods.put(name, pod);
        return pod;
    }

    private static int mtu(Pod pod) throws Exception {
        Matcher m =
                Pattern.compile("mtu (\\d+)")
                        .matcher(run("ip", "-n", pod.netns(), "link", "show", "eth0").out());
        assertTrue(m.find());
        return Integer.parseInt(m.group(1));
    }

    /** @return the address {@code n} into the block of {@code prefix} bits that holds {@code address} */
    private static String offset(String address, int prefix, int n) {
        return Cidr.parse(block(address, prefix)).addressAt(n);
    }

    /** @return the block of {@code prefix} bits that holds {@code address}, e.g. {@code 198.18.0.64/26} */
    private static String block(String address, int prefix) {
        return Cidr.parse(address.contains(":") ? "::/0" : "0.0.0.0/0")
                .subnetContaining(address, prefix)
                .toString();
    }

    // ---- pings, routes, metrics ----

    private static boolean ping(String netns, String target, String source) {
        List<String> command =
                new ArrayList<>(
                        List.of("ip", "netns", "exec", netns, "busybox", "ping", "-c1", "-W1"));
        if (source != null) {
            command.addAll(List.of("-I", source));
        }
        command.add(target);
        return run(command.toArray(String[]::new)).exit() == 0;
    }

    /** Pings that needed more than one echo request, with how many and how long: printed by the first test. */
    private static final java.util.Queue<String> retried =
            new java.util.concurrent.ConcurrentLinkedQueue<>();

    private static void awaitPing(Pod from, String target, String source) {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        int attempts = 1;
        while (!ping(from.netns(), target, source)) {
            attempts++;
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        from.name()
                                + " ("
                                + from.v4()
                                + ") never reached "
                                + target
                                + " within "
                                + DEADLINE_SECONDS
                                + " s; routes on its host:\n"
                                + String.join("\n", routes(from.member().host.netns())));
            }
        }
        if (attempts > 1) {
            retried.add(
                    from.name()
                            + " -> "
                            + target
                            + ": "
                            + attempts
                            + " attempts, "
                            + (System.nanoTime() - start) / 1_000_000
                            + " ms");
        }
    }

    /** @return the host's main-table routes as {@code ip route} shows them, both families */
    private static List<String> routes(String netns) {
        List<String> out =
                new ArrayList<>(run("ip", "-n", netns, "route", "show").out().lines().toList());
        out.addAll(run("ip", "-n", netns, "-6", "route", "show").out().lines().toList());
        return out;
    }

    private static void awaitRoute(String netns, String regex) {
        Pattern p = Pattern.compile("^" + regex + ".*");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        while (routes(netns).stream().noneMatch(r -> p.matcher(r).matches())) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "no route '"
                                + regex
                                + "' in "
                                + netns
                                + ":\n"
                                + String.join("\n", routes(netns)));
            }
            pause();
        }
    }

    private static void awaitNoRoute(String netns, String prefix, long seconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (routes(netns).stream()
                .anyMatch(r -> r.startsWith(prefix) || r.startsWith("blackhole " + prefix))) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "a route to "
                                + prefix
                                + " is left in "
                                + netns
                                + ":\n"
                                + String.join("\n", routes(netns)));
            }
            pause();
        }
    }

    private static long spoofDrops(Member m) throws Exception {
        String metrics = exec(m, "busybox", "wget", "-qO-", "http://127.0.0.1:9467/metrics");
        Matcher matcher =
                Pattern.compile(
                                "(?m)^cadastre_pod_spoofed_packets_dropped_total\\{node=\""
                                        + m.name()
                                        + "\"} (\\S+)$")
                        .matcher(metrics);
        assertTrue(matcher.find(), "no spoofing counter in:\n" + metrics);
        return (long) Double.parseDouble(matcher.group(1));
    }

    private static long awaitDrops(Member m, long floor) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
        long now;
        while ((now = spoofDrops(m)) <= floor) {
            assertTrue(System.nanoTime() < deadline, "the spoofing counter stayed at " + now);
            pause();
        }
        return now;
    }

    /** Runs cadastrectl against the member's agent, in its host namespace; fails unless it exits 0. @return its output */
    private static String ctl(Member m, String... args) throws Exception {
        return exec(m, ctlCommand(m, args));
    }

    private static String[] ctlCommand(Member m, String... args) {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                "io.cadastre.ctl.Cadastrectl"));
        command.addAll(List.of(args));
        command.addAll(List.of("--token-file", m.adminTokenFile().toString()));
        return command.toArray(String[]::new);
    }

    /** Runs a command in the member's host namespace; fails unless it exits 0. @return its output */
    private static String exec(Member m, String... command) throws Exception {
        Run r = runIn(m, command);
        assertEquals(0, r.exit(), String.join(" ", command) + ":\n" + r.out());
        return r.out();
    }

    private static Run runIn(Member m, String... command) throws Exception {
        Process p =
                cluster.topology()
                        .exec(m.host, List.of(command), pb -> pb.redirectErrorStream(true));
        StringBuilder out = new StringBuilder();
        try (BufferedReader r =
                new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            r.lines().forEach(l -> out.append(l).append('\n'));
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", command) + " did not finish");
        return new Run(p.exitValue(), out.toString());
    }

    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private record Run(int exit, String out) {}

    private static Run run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return new Run(p.waitFor(), out);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
