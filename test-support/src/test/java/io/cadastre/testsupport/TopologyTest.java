package io.cadastre.testsupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cadastre.testsupport.Topology.Host;
import io.cadastre.testsupport.Topology.Member;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The topology itself: addresses, reachability over the fabric, partition and heal (of a host and
 * of the db), and that nothing is left behind. Connectivity is a TCP connect plus one reply line
 * from a {@link TcpHello} listener, so a success also says which member answered.
 */
class TopologyTest {
    private static final int PORT = 7070;

    /** One connection attempt; a partitioned peer is never answered, so this bounds a failing probe. */
    private static final int PROBE_SECONDS = 1;

    /** How long a reachable peer may take to answer (ARP after a heal, first use). */
    private static final Duration CONVERGE = Duration.ofSeconds(10);

    private static final Duration LISTENER_START = Duration.ofSeconds(30);

    @BeforeAll
    static void needsRootAndIproute2() {
        assumeTrue(
                Topology.supported(),
                "needs root (network namespaces), iproute2 and scripts/topology.sh");
    }

    @Test
    void hostsReachEachOtherExceptAcrossAPartition() throws Exception {
        String name = Topology.randomName();
        try (Topology topology = Topology.up(name, 3)) {
            List<Host> hosts = topology.hosts();
            assertEquals(3, hosts.size());
            for (int i = 1; i <= 3; i++) {
                Host host = topology.host(i);
                assertEquals(
                        new Host(
                                i,
                                name + "-h" + i,
                                "198.19.255." + (10 + i),
                                "fd00:19:255::" + (10 + i)),
                        host);
                assertEquals(host, hosts.get(i - 1));
            }
            assertEquals(new Topology.Db(name + "-db", "198.19.255.9"), topology.db());
            List<String> namespaces = namespacesOf(name);
            for (Member member : members(topology)) {
                assertTrue(namespaces.contains(member.netns()), member + " not in " + namespaces);
                String addresses =
                        output(
                                topology.exec(
                                        member, "ip", "-o", "-4", "addr", "show", "dev", "eth0"));
                assertTrue(
                        addresses.contains("inet " + member.address() + "/24"),
                        member + ": " + addresses);
            }
            assertTrue(namespaces.contains(topology.fabricNetns()), namespaces.toString());

            for (Host host : hosts) {
                startListener(topology, host);
            }
            assertAllReachable(topology, hosts);

            Host h1 = topology.host(1);
            Host h2 = topology.host(2);
            Host h3 = topology.host(3);
            topology.partition(h3);
            assertUnreachable(topology, Map.of(h1, h3, h3, h1, h2, h3));
            assertReachable(topology, h1, h2);
            assertReachable(topology, h2, h1);

            topology.heal(h3);
            assertAllReachable(topology, hosts);
        }
        assertEquals(List.of(), namespacesOf(name), "left behind by close()");
    }

    /** A host behind the router: reached through it from both subnets' hosts and the db, and cut off and back. */
    @Test
    void aRoutedHostIsReachedThroughTheRouterAndHealsOntoItsOwnBridge() throws Exception {
        String name = Topology.randomName();
        try (Topology topology = Topology.up(name, 2, 1)) {
            Host h1 = topology.host(1);
            Host h3 = topology.host(3);
            assertEquals(new Host(3, name + "-h3", "198.19.254.13", "fd00:19:254::13"), h3);
            assertTrue(h3.routed() && !h1.routed());
            assertTrue(
                    namespacesOf(name).contains(name + "-router"), namespacesOf(name).toString());
            assertTrue(
                    output(topology.exec(h1, "ip", "route"))
                            .lines()
                            .noneMatch(l -> l.startsWith("default")),
                    "no default route");
            startListener(topology, h3);
            startListener(topology, h1);
            assertReachable(topology, h1, h3);
            assertReachable(topology, h3, h1);
            assertReachable(topology, topology.db(), h3);
            topology.partition(h3);
            assertUnreachable(topology, Map.of(h1, h3));
            topology.heal(h3);
            assertReachable(topology, h1, h3);
            assertTrue(
                    output(topology.exec(h3, "ip", "-o", "-6", "addr", "show", "dev", "eth0"))
                            .contains("fd00:19:254::13/64"));
        }
        assertEquals(List.of(), namespacesOf(name));
    }

    @Test
    void theDbCanBeCutOffToo() throws Exception {
        String name = Topology.randomName();
        try (Topology topology = Topology.up(name, 1)) {
            Host h1 = topology.host(1);
            Member db = topology.db();
            startListener(topology, db);
            assertReachable(topology, h1, db);

            topology.partition(db);
            assertUnreachable(topology, Map.of(h1, db));

            topology.heal(db);
            assertReachable(topology, h1, db);
        }
        assertEquals(List.of(), namespacesOf(name));
    }

    @Test
    void closeStopsWhatRunsInsideAndRemovesEverything() throws Exception {
        String name = Topology.randomName();
        Topology topology = Topology.up(name, 2);
        Process sleeper;
        try {
            sleeper = topology.exec(topology.host(2), "sleep", "600");
            assertTrue(sleeper.isAlive());
        } finally {
            topology.close();
        }
        assertTrue(sleeper.onExit().get(10, TimeUnit.SECONDS) != null && !sleeper.isAlive());
        assertEquals(List.of(), namespacesOf(name));
        topology.close(); // twice is fine
        assertThrows(IllegalStateException.class, () -> topology.partition(topology.host(1)));
    }

    @Test
    void upRefusesATakenNameAndLeavesItsOwnerAlone() throws Exception {
        String name = Topology.randomName();
        try (Topology topology = Topology.up(name, 1)) {
            IllegalStateException taken =
                    assertThrows(IllegalStateException.class, () -> Topology.up(name, 2));
            assertTrue(taken.getMessage().contains("already exists"), taken.getMessage());
            assertEquals(
                    3,
                    namespacesOf(name).size(),
                    "the first topology must be intact: " + namespacesOf(name));
            startListener(topology, topology.db());
            assertReachable(topology, topology.host(1), topology.db());
        }
        assertEquals(List.of(), namespacesOf(name));
    }

    private static List<Member> members(Topology topology) {
        List<Member> members = new ArrayList<>(topology.hosts());
        members.add(topology.db());
        return members;
    }

    /** Starts a TcpHello on the member's address that answers with the member's name; waits until it listens. */
    private static void startListener(Topology topology, Member member) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path classes =
                Path.of(TcpHello.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Process listener =
                topology.exec(
                        member,
                        List.of(
                                java.toString(),
                                "-Xshare:auto",
                                "-XX:TieredStopAtLevel=1",
                                "-XX:+UseSerialGC",
                                "-Xmx32m",
                                "-cp",
                                classes.toString(),
                                TcpHello.class.getName(),
                                member.address(),
                                Integer.toString(PORT),
                                member.name()),
                        builder -> builder.redirectErrorStream(true));
        BufferedReader out =
                new BufferedReader(
                        new InputStreamReader(listener.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> first =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return out.readLine();
                            } catch (IOException e) {
                                return "read failed: " + e;
                            }
                        });
        String line = first.get(LISTENER_START.toSeconds(), TimeUnit.SECONDS);
        assertEquals(
                "listening",
                line,
                "listener in " + member.netns() + " (alive: " + listener.isAlive() + ")");
    }

    /** Starts one connection attempt from {@code from} to {@code to}'s listener; prints its reply line. */
    private static Process probe(Topology topology, Member from, Member to) {
        String connect =
                "exec 3<>/dev/tcp/"
                        + to.address()
                        + "/"
                        + PORT
                        + " || exit 1; "
                        + "IFS= read -r line <&3 || exit 1; printf '%s\\n' \"$line\"";
        return topology.exec(
                from,
                List.of("timeout", Integer.toString(PROBE_SECONDS), "bash", "-c", connect),
                builder -> builder.redirectErrorStream(true));
    }

    /** Exit code 0 and the reply, or why not. */
    private static String outcome(Process probe) throws Exception {
        if (!probe.waitFor(
                PROBE_SECONDS + 5L, TimeUnit.SECONDS)) { // timeout(1) bounds it; this is a backstop
            probe.destroyForcibly();
            return "probe did not end";
        }
        String output =
                new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        return probe.exitValue() == 0
                ? output
                : "exit " + probe.exitValue() + (output.isEmpty() ? "" : ": " + output);
    }

    private static void assertReachable(Topology topology, Member from, Member to)
            throws Exception {
        long deadline = System.nanoTime() + CONVERGE.toNanos();
        String last;
        do {
            last = outcome(probe(topology, from, to));
            if (last.equals(to.name())) {
                return;
            }
        } while (System.nanoTime() < deadline);
        fail(from.name() + " cannot reach " + to.name() + " within " + CONVERGE + ": " + last);
    }

    private static void assertAllReachable(Topology topology, List<Host> hosts) throws Exception {
        for (Host from : hosts) {
            for (Host to : hosts) {
                if (!from.equals(to)) {
                    assertReachable(topology, from, to);
                }
            }
        }
    }

    /** Each from -> to fails (all probed at once: each failure takes the full probe timeout). */
    private static void assertUnreachable(
            Topology topology, Map<? extends Member, ? extends Member> pairs) throws Exception {
        Map<String, Process> probes = new LinkedHashMap<>();
        pairs.forEach(
                (from, to) ->
                        probes.put(from.name() + " -> " + to.name(), probe(topology, from, to)));
        for (Map.Entry<String, Process> probe : probes.entrySet()) {
            String outcome = outcome(probe.getValue());
            String target = probe.getKey().substring(probe.getKey().indexOf("-> ") + 3);
            assertFalse(
                    outcome.equals(target),
                    probe.getKey() + " still connects across the partition");
        }
    }

    private static String output(Process process) throws Exception {
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(10, TimeUnit.SECONDS), "did not end");
        assertEquals(
                0,
                process.exitValue(),
                out + new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
        return out;
    }

    /** Namespaces named NAME-something, from the root namespace's point of view. */
    private static List<String> namespacesOf(String name) throws Exception {
        Process list = new ProcessBuilder("ip", "netns", "list").redirectErrorStream(true).start();
        String out = new String(list.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(list.waitFor(10, TimeUnit.SECONDS), "ip netns list did not end");
        assertEquals(0, list.exitValue(), out);
        return Arrays.stream(out.split("\n"))
                .map(line -> line.strip().split("\\s+")[0])
                .filter(ns -> ns.startsWith(name + "-"))
                .sorted()
                .toList();
    }
}
