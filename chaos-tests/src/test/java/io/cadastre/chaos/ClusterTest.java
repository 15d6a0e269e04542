package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.Schema;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Three agents, each in its own host namespace, one Pekko cluster on a real Cassandra (in the db
 * namespace, schema created ahead with {@code cadastre-agent schema --execute}): addresses are
 * unique across hosts, blocks stay affine to their node, pods are wired in their own host's
 * namespace, and a member killed with SIGKILL is replaced without losing an allocation. Secured as
 * production should be: the members authenticate each other with mutual TLS, and reach Cassandra
 * with a login (PasswordAuthenticator) over TLS with hostname validation. The cluster is
 * {@link SharedCluster}'s; every member is up again when the class ends.
 */
@Order(2) // a SharedCluster user: see there
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterTest {
    @RegisterExtension static final SharedCluster SHARED = new SharedCluster();

    private static ClusterFixture cluster;

    @BeforeAll
    static void useTheSharedCluster() {
        cluster = SHARED.fixture();
    }

    private static CniExec.Result add(Member m, String id) {
        try {
            return CniExec.run("ADD", id, "/var/run/netns/unused", CniExec.ipamOnly(m));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    @Order(1)
    void addressesAreUniqueAcrossHostsAndEachBlockServesOneNode() {
        Map<String, String> hostOf = new HashMap<>();
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (Member m : cluster.members()) {
            for (int i = 0; i < 30; i++) {
                String id = m.name() + "-u" + i;
                all.add(
                        CompletableFuture.runAsync(
                                () -> {
                                    CniExec.Result r = add(m, id);
                                    assertEquals(0, r.exit(), m.name() + ": " + r);
                                    synchronized (hostOf) {
                                        String previous = hostOf.put(r.firstAddress(), m.name());
                                        assertEquals(
                                                null,
                                                previous,
                                                r.firstAddress() + " handed out twice");
                                    }
                                },
                                cluster.executor()));
            }
        }
        all.forEach(CompletableFuture::join);
        assertEquals(90, hostOf.size());
        Cidr pool = Cidr.parse("198.18.0.0/20");
        Map<Cidr, Set<String>> nodesPerBlock = new HashMap<>();
        hostOf.forEach(
                (address, host) ->
                        nodesPerBlock
                                .computeIfAbsent(
                                        pool.subnetContaining(address, 26), b -> new HashSet<>())
                                .add(host));
        nodesPerBlock.forEach(
                (block, hosts) -> assertEquals(1, hosts.size(), block + " served " + hosts));
    }

    @Test
    @Order(2)
    void aPodIsWiredInItsOwnHostsNamespace() throws Exception {
        String pod = cluster.topology().name() + "-pod";
        Member h2 = cluster.members().get(1);
        String id = "wired-" + UUID.randomUUID().toString().substring(0, 6);
        run("ip", "netns", "add", pod);
        try {
            CniExec.Result r = CniExec.run("ADD", id, "/var/run/netns/" + pod, CniExec.full(h2));
            assertEquals(0, r.exit(), r.toString());
            String hostEnd = r.json().path("interfaces").get(0).path("name").asText();
            assertTrue(
                    run("ip", "-n", h2.host.netns(), "link", "show", hostEnd).contains(hostEnd),
                    "host end in h2");
            assertTrue(run("ip", "-n", pod, "addr", "show", "eth0").contains(r.firstAddress()));
            assertEquals(
                    0, CniExec.run("DEL", id, "/var/run/netns/" + pod, CniExec.full(h2)).exit());
        } finally {
            run("ip", "netns", "del", pod);
        }
    }

    /**
     * SIGKILL of a member: the others keep serving (after at most the failover window), the
     * killed member's node comes back with every allocation it had acknowledged, and nothing is
     * handed out twice.
     */
    @Test
    @Order(3)
    void aKilledMemberIsReplacedAndItsAllocationsSurvive() throws Exception {
        Member victim = cluster.members().get(0);
        Member survivor = cluster.members().get(1);
        Map<String, String> before = new HashMap<>();
        for (int i = 0; i < 10; i++) {
            CniExec.Result r = add(victim, "k" + i);
            assertEquals(0, r.exit(), r.toString());
            before.put("k" + i, r.firstAddress());
        }
        java.time.LocalTime killedAtClock = java.time.LocalTime.now();
        victim.kill();
        long killedAt = System.nanoTime();
        // The survivor keeps answering: errors (code 11) only while the victim's shards move.
        Set<String> seen = new HashSet<>(before.values());
        long lastFailure = killedAt;
        long servedAgain = killedAt;
        int failures = 0;
        long slowestNanos = 0;
        for (int i = 0; i < 40; i++) {
            long invoked = System.nanoTime();
            CniExec.Result r = add(survivor, "s" + i);
            slowestNanos = Math.max(slowestNanos, System.nanoTime() - invoked);
            if (r.exit() == 0) {
                assertTrue(seen.add(r.firstAddress()), r.firstAddress() + " handed out twice");
                if (servedAgain < lastFailure) {
                    servedAgain = System.nanoTime();
                }
            } else {
                assertEquals(11, r.code(), r.toString());
                failures++;
                lastFailure = System.nanoTime();
                i--;
                assertTrue(failures < 200, "the survivor never recovered:\n" + survivor.tail());
            }
        }
        long windowMs = (Math.max(servedAgain, lastFailure) - killedAt) / 1_000_000;
        System.out.printf(
                "failover: survivor failed %d ADDs, served again %d ms after the kill; slowest ADD %d ms"
                        + " (SIGKILL at %s)%n",
                failures, windowMs, slowestNanos / 1_000_000, killedAtClock);
        // What bounds the window: the survivor's view of the failure detector, the downing, the
        // removal and the entities' recovery.
        survivor.logLines(killedAtClock.minusSeconds(1)).stream()
                .filter(
                        l ->
                                l.matches(
                                        ".*(unreachable|Unreachable|SBR|Leader is removing|Marking|Down|removed|recovered node entity|Singleton|singleton|ShardCoordinator|Starting shard|allocat).*"))
                .filter(
                        l ->
                                !l.contains("Retry [")
                                        && !l.contains("Younger observed")
                                        && !l.contains("state change"))
                .limit(40)
                .forEach(l -> System.out.println("  " + l));
        assertTrue(windowMs < 60_000, "failover took " + windowMs + " ms");
        // The victim's port refused connections: a survivor downed it then, not after stable-after.
        assertTrue(
                cluster.members().stream()
                        .filter(m -> m != victim)
                        .anyMatch(
                                m ->
                                        m.logLines(killedAtClock.minusSeconds(1)).stream()
                                                .anyMatch(
                                                        l ->
                                                                l.contains(
                                                                        "its cluster port refused"))),
                "no survivor downed the victim on its refusals");

        // Not seeds = [itself]: a first seed node alone in its list joins itself at once and would
        // form a second cluster on the same journal beside the survivors'.
        victim.seeds(
                        cluster.members().stream()
                                .filter(m -> m != victim)
                                .map(m -> Member.address(m.host))
                                .toList())
                .start();
        for (var e : before.entrySet()) {
            CniExec.Result r = add(victim, e.getKey());
            assertEquals(0, r.exit(), r.toString());
            assertEquals(e.getValue(), r.firstAddress(), "allocation of " + e.getKey() + " lost");
        }
        CniExec.Result fresh = add(victim, "after");
        assertTrue(seen.add(fresh.firstAddress()), "duplicate after restart");
    }

    /**
     * A member stopped with SIGTERM leaves the cluster and hands its shards off: the others keep
     * answering with at most a brief hiccup, far shorter than crash failover, and the member's
     * node gets its allocations back when it returns.
     */
    @Test
    @Order(4)
    void aMemberLeavingCleanlyHandsItsShardsOff() throws Exception {
        Member leaver = cluster.members().get(2);
        Member survivor = cluster.members().get(1);
        CniExec.Result held = add(leaver, "leaver-1");
        assertEquals(0, held.exit(), held.toString());
        long stoppedAt = System.nanoTime();
        leaver.close();
        int failures = 0;
        long slowest = 0;
        for (int i = 0; i < 20; i++) {
            long started = System.nanoTime();
            CniExec.Result r = add(survivor, "after-leave-" + i);
            slowest = Math.max(slowest, System.nanoTime() - started);
            if (r.exit() != 0) {
                assertEquals(11, r.code(), r.toString());
                failures++;
            }
        }
        System.out.printf(
                "graceful leave: %d failed ADDs, slowest ADD %d ms, %d ms after SIGTERM%n",
                failures, slowest / 1_000_000, (System.nanoTime() - stoppedAt) / 1_000_000);
        assertTrue(failures <= 1, failures + " ADDs failed after a graceful leave");
        leaver.start();
        CniExec.Result back = add(leaver, "leaver-1");
        assertEquals(
                held.firstAddress(),
                back.firstAddress(),
                "the leaver's allocation after its return");
    }

    /**
     * The members reached Cassandra with its login over TLS, and Cassandra demands both: the same
     * command without the credentials, or without TLS, is refused.
     */
    @Test
    @Order(5)
    void cassandraIsReachedWithItsLoginOverTlsAndOnlySo() throws Exception {
        for (Member m : cluster.members()) {
            assertTrue(
                    Files.readString(m.log())
                            .contains("Cassandra: as cassandra, TLS (hostname validation on"),
                    m.name() + " did not log its Cassandra login over TLS:\n" + m.tail());
        }
        Map<String, String> env = cluster.cassandra().clientEnvironment();
        Map<String, String> noLogin = new HashMap<>(env);
        noLogin.remove("CADASTRE_CASSANDRA_USERNAME");
        noLogin.remove("CADASTRE_CASSANDRA_PASSWORD_FILE");
        Map<String, String> noTls = new HashMap<>(env);
        noTls.keySet().removeIf(k -> k.startsWith("CADASTRE_CASSANDRA_TLS_"));
        // Side by side: each is a JVM of its own, and the one without TLS waits out its timeout.
        CompletableFuture<Schema.Result> withoutLogin = schema(noLogin, 10);
        CompletableFuture<Schema.Result> withoutTls = schema(noTls, 10);
        CompletableFuture<Schema.Result> secured = schema(env, 60);
        assertEquals(1, withoutLogin.join().exit(), withoutLogin.join().output());
        assertTrue(
                withoutLogin.join().output().contains("Authentication error"),
                withoutLogin.join().output());
        assertEquals(1, withoutTls.join().exit(), withoutTls.join().output());
        assertEquals(0, secured.join().exit(), "the secured schema command");
    }

    /** {@link Schema#execute} on the fixture's executor. */
    private static CompletableFuture<Schema.Result> schema(
            Map<String, String> environment, int timeoutSeconds) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return Schema.execute(cluster.topology(), environment, timeoutSeconds);
                    } catch (Exception e) {
                        throw new CompletionException(e);
                    }
                },
                cluster.executor());
    }

    /**
     * Issue 18, in the store: a stale incarnation's write is refused once a newer incarnation has
     * claimed the entity's epoch in Cassandra (a compare-and-set at its recovery), and no recovery
     * replays the stale rows ({@link JournalFencingProbe}, against this cluster's Cassandra with its
     * login over TLS).
     */
    @Test
    @Order(6)
    void cassandraRefusesAStaleIncarnationsWrite() throws Exception {
        List<String> command =
                List.of(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx256m",
                        "-DCADASTRE_LOG_FORMAT=text",
                        "-cp",
                        System.getProperty("java.class.path"),
                        JournalFencingProbe.class.getName());
        Process p =
                cluster.topology()
                        .exec(
                                cluster.topology().host(1),
                                command,
                                pb -> {
                                    pb.environment()
                                            .putAll(cluster.cassandra().clientEnvironment());
                                    pb.environment().put("CADASTRE_LOG_LEVEL", "WARN");
                                    pb.redirectErrorStream(true);
                                });
        var output =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return new String(p.getInputStream().readAllBytes());
                            } catch (java.io.IOException e) {
                                return "(output unreadable: " + e + ")";
                            }
                        });
        if (!p.waitFor(180, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            p.waitFor();
        }
        String out = output.get(30, TimeUnit.SECONDS);
        assertTrue(out.contains("FENCING OK"), out);
        assertEquals(0, p.exitValue(), out);
    }

    private static String run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + ": " + out);
        }
        return out;
    }
}
