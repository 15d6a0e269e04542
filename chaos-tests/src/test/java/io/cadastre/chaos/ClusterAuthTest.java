package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.testsupport.AgentExec;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.TestPki;
import io.cadastre.testsupport.Topology;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 12, hole 6: anyone who could reach the cluster port joined the cluster. The members of
 * {@link SharedCluster} (h1 to h3) form a cluster on a real Cassandra with mutual TLS, as by
 * default; strangers in its free host h4 — a plain
 * Pekko node without credentials, one presenting a certificate from another CA that carries the
 * members' own names, one presenting a certificate from the cluster's CA that shares no name with
 * theirs, the latter two trusting anything themselves ({@link Stranger.Permissive}) — try to join
 * and to reach an entity's shard region. None becomes a member or gets an
 * answer, and the members stay up and keep serving ADDs; a stranger with a member's certificate
 * (the control) does join, which shows the attempts were real. An agent whose cluster port is
 * beyond loopback refuses to start without TLS files (exit 2) unless the insecure switch is on,
 * which it logs as a warning — and then the plain stranger joins it, as in the issue.
 */
@Order(1) // a SharedCluster user: see there
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterAuthTest {
    /** How long a stranger that should fail keeps trying: six join retries (every 2 s) and probes. */
    private static final int STRANGER_SECONDS = 12;

    /** How long a stranger that should succeed may take. */
    private static final int JOIN_SECONDS = 90;

    private static final Pattern RESULT =
            Pattern.compile("RESULT up=(true|false) identified=(true|false) members=(\\d+)");

    @RegisterExtension static final SharedCluster SHARED = new SharedCluster();

    private static ClusterFixture cluster;

    @BeforeAll
    static void useTheSharedCluster() {
        cluster = SHARED.fixture();
    }

    /** What a {@link Stranger} reported. */
    record Outcome(
            String name, int port, boolean up, boolean identified, int members, String output) {}

    @Test
    @Order(1)
    void strangersNeitherJoinNorReachAnEntityAndTheMembersStayUp() throws Exception {
        Topology.Host h4 = SHARED.freeHost();
        Member h1 = cluster.members().get(0);
        TestPki ca = cluster.ca();
        ExecutorService runtime = cluster.executor();
        // The same CA name as the cluster's, another key; and a member's names on the certificate.
        TestPki otherCa = TestPki.authority(ClusterFixture.CA_NAME);
        TestPki.PemFiles foreign =
                otherCa.write(
                        otherCa.member("cadastre-h4", h4.address()),
                        cluster.dir().resolve("stranger-other-ca"));
        TestPki.PemFiles nameless =
                ca.write(
                        ca.issue(
                                TestPki.Spec.member("stranger", h4.address())
                                        .withDnsNames(List.of("another-cluster"))),
                        cluster.dir().resolve("stranger-no-shared-name"));

        List<CompletableFuture<Outcome>> attempts =
                List.of(
                        CompletableFuture.supplyAsync(
                                () -> stranger("plain-tcp", 2601, h1, false, null), runtime),
                        CompletableFuture.supplyAsync(
                                () -> stranger("other-ca", 2602, h1, false, foreign), runtime),
                        CompletableFuture.supplyAsync(
                                () -> stranger("no-shared-name", 2603, h1, false, nameless),
                                runtime));
        for (CompletableFuture<Outcome> attempt : attempts) {
            Outcome o = attempt.get(STRANGER_SECONDS + 180, TimeUnit.SECONDS);
            System.out.printf(
                    "stranger %s: up=%s identified=%s members=%d%n",
                    o.name(), o.up(), o.identified(), o.members());
            // How it failed as the stranger saw it (the member's alert, or no Artery handshake),
            // for the record.
            o.output()
                    .lines()
                    .filter(l -> l.matches("(?i).*(ssl|handshake|certificate|subject names).*"))
                    .limit(2)
                    .forEach(
                            l ->
                                    System.out.println(
                                            "  " + l.substring(0, Math.min(l.length(), 300))));
            assertFalse(o.up(), o.name() + " became a member:\n" + o.output());
            assertFalse(o.identified(), o.name() + " reached a shard region:\n" + o.output());
            assertEquals(0, o.members(), o.name() + " saw members:\n" + o.output());
            for (Member m : cluster.members()) {
                assertFalse(
                        joinLogged(m, h4, o.port()),
                        m.name() + " took a join from " + o.name() + ":\n" + m.tail());
            }
        }
        membersServe("after the strangers");

        // The control: the same stranger with a member's certificate from the cluster's CA joins.
        TestPki.PemFiles memberCert =
                ca.write(
                        ca.member("cadastre-h4", h4.address()),
                        cluster.dir().resolve("stranger-member-cert"));
        Outcome control = stranger("member-cert", 2604, h1, true, memberCert);
        System.out.printf(
                "control %s: up=%s identified=%s members=%d%n",
                control.name(), control.up(), control.identified(), control.members());
        assertTrue(
                control.up() && control.identified(),
                "the control did not join:\n" + control.output());
        assertTrue(
                joinLogged(h1, h4, control.port()),
                "h1 logged no join from the control:\n" + h1.tail());
        membersServe("after the control left");
    }

    @Test
    @Order(2)
    void anExposedPortWithoutTlsIsRefusedUnlessTheInsecureSwitchSaysSo() throws Exception {
        Topology.Host h4 = SHARED.freeHost();
        Path agentDir = Files.createDirectories(cluster.dir().resolve("h4-agent"));
        Path log = agentDir.resolve("agent.log");
        Process refused = agent(h4, agentDir, log, false);
        assertTrue(refused.waitFor(60, TimeUnit.SECONDS), "the agent did not exit");
        String refusal = Files.readString(log);
        assertEquals(2, refused.exitValue(), refusal);
        assertTrue(
                refusal.contains(
                        "cadastre-agent: configuration error: cadastre.cluster.hostname \""
                                + h4.address()
                                + "\" is not a loopback address and no TLS credentials are set"),
                refusal);
        assertTrue(
                refusal.contains("CADASTRE_CLUSTER_TLS_CERT_FILE")
                        && refusal.contains("CADASTRE_CLUSTER_INSECURE_PLAINTEXT"),
                refusal);
        Files.delete(log);

        Process insecure = agent(h4, agentDir, log, true);
        try {
            awaitSocket(insecure, agentDir.resolve("cni.sock"), log);
            String started = Files.readString(log);
            assertTrue(
                    started.lines()
                            .anyMatch(
                                    l ->
                                            l.contains(" WARN ")
                                                    && l.contains(
                                                            "cluster port "
                                                                    + h4.address()
                                                                    + ":2552: plain TCP WITHOUT AUTHENTICATION (cadastre.cluster.insecure-plaintext = on)")),
                    started);
            // The hole as the issue found it, now only behind the named switch: a stranger joins.
            Outcome joined =
                    stranger(
                            "plain-tcp-vs-insecure",
                            2605,
                            "pekko://cadastre@" + h4.address() + ":2552",
                            true,
                            null);
            assertTrue(
                    joined.up() && joined.identified(),
                    "the plain stranger did not join the insecure agent:\n" + joined.output());
        } finally {
            insecure.destroy();
            assertTrue(insecure.waitFor(60, TimeUnit.SECONDS), "the insecure agent did not stop");
        }
    }

    /**
     * A single-host agent's port is on loopback, which every local user reaches: a plain stranger
     * on the same host neither joins it nor reaches its shard region, and the agent keeps serving.
     */
    @Test
    @Order(3)
    void aLoopbackPortLetsNoOtherLocalProcessJoin() throws Exception {
        Topology.Host h4 = SHARED.freeHost();
        Path agentDir = Files.createDirectories(cluster.dir().resolve("h4-loopback"));
        Path log = agentDir.resolve("agent.log");
        Process agent = agent(h4, agentDir, log, "127.0.0.1", 2553, false);
        try {
            awaitSocket(agent, agentDir.resolve("cni.sock"), log);
            Outcome refused =
                    stranger(
                            "plain-tcp-vs-loopback",
                            "127.0.0.1",
                            2606,
                            "pekko://cadastre@127.0.0.1:2553",
                            false,
                            null);
            System.out.printf(
                    "stranger %s: up=%s identified=%s members=%d%n",
                    refused.name(), refused.up(), refused.identified(), refused.members());
            assertFalse(
                    refused.up() || refused.identified(),
                    "a local stranger reached the loopback agent:\n" + refused.output());
            assertTrue(agent.isAlive(), "the agent exited:\n" + Files.readString(log));
            assertTrue(
                    Files.readString(log).contains("plain TCP on loopback in untrusted mode"),
                    Files.readString(log));
        } finally {
            agent.destroy();
            assertTrue(agent.waitFor(60, TimeUnit.SECONDS), "the agent did not stop");
        }
    }

    private static void awaitSocket(Process agent, Path socket, Path log) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!Files.exists(socket)) {
            assertTrue(agent.isAlive(), "the agent exited:\n" + Files.readString(log));
            assertTrue(
                    System.nanoTime() < deadline,
                    "the agent opened no socket:\n" + Files.readString(log));
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /** Starts an agent in {@code host} with the embedded journal, its cluster port on the host's fabric address. */
    private static Process agent(Topology.Host host, Path agentDir, Path log, boolean insecure) {
        return agent(host, agentDir, log, host.address(), 2552, insecure);
    }

    /** Starts an agent in {@code host} with the embedded journal, its cluster port on {@code address:port}. */
    private static Process agent(
            Topology.Host host,
            Path agentDir,
            Path log,
            String address,
            int port,
            boolean insecure) {
        List<String> command = AgentExec.command();
        return cluster.topology()
                .exec(
                        host,
                        command,
                        pb -> {
                            pb.environment().put("CADASTRE_NODE_NAME", "h4-alone");
                            pb.environment()
                                    .put("CADASTRE_DATA_DIR", agentDir.resolve("data").toString());
                            pb.environment()
                                    .put(
                                            "CADASTRE_CNI_SOCKET",
                                            agentDir.resolve("cni.sock").toString());
                            pb.environment().put("CADASTRE_CLUSTER_HOSTNAME", address);
                            pb.environment().put("CADASTRE_CLUSTER_PORT", Integer.toString(port));
                            if (insecure) {
                                pb.environment().put("CADASTRE_CLUSTER_INSECURE_PLAINTEXT", "on");
                            }
                            pb.redirectErrorStream(true)
                                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
                        });
    }

    private static Outcome stranger(
            String name, int port, Member seed, boolean untilJoined, TestPki.PemFiles files) {
        return stranger(name, port, Member.address(seed.host), untilJoined, files);
    }

    /**
     * Runs a {@link Stranger} in h4 until it reports (at most {@link #STRANGER_SECONDS}, or
     * {@link #JOIN_SECONDS} for one that should join) and exits.
     */
    private static Outcome stranger(
            String name, int port, String seed, boolean untilJoined, TestPki.PemFiles files) {
        return stranger(name, SHARED.freeHost().address(), port, seed, untilJoined, files);
    }

    /** As above, the stranger bound to {@code address} in h4. */
    private static Outcome stranger(
            String name,
            String address,
            int port,
            String seed,
            boolean untilJoined,
            TestPki.PemFiles files) {
        Topology.Host h4 = SHARED.freeHost();
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-Xmx128m",
                                "-XX:+UseSerialGC",
                                "-XX:TieredStopAtLevel=1",
                                "-DCADASTRE_LOG_FORMAT=text",
                                "-cp",
                                System.getProperty("java.class.path"),
                                Stranger.class.getName(),
                                address,
                                Integer.toString(port),
                                seed,
                                Integer.toString(untilJoined ? JOIN_SECONDS : STRANGER_SECONDS)));
        if (untilJoined) {
            command.add("--until-joined");
        }
        if (files != null) {
            command.addAll(List.of(files.cert().toString(), files.key().toString()));
        }
        Path log = cluster.dir().resolve("stranger-" + name + ".log");
        Path stdout = cluster.dir().resolve("stranger-" + name + ".out");
        Process p =
                cluster.topology()
                        .exec(
                                h4,
                                command,
                                pb ->
                                        pb.redirectOutput(stdout.toFile())
                                                .redirectError(
                                                        ProcessBuilder.Redirect.appendTo(
                                                                log.toFile())));
        try {
            // Its window, then leaving the cluster (30 s at most) and stopping the actor system (15
            // s).
            if (!p.waitFor(
                    (untilJoined ? JOIN_SECONDS : STRANGER_SECONDS) + 90, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(
                        "stranger " + name + " did not exit:\n" + tail(log));
            }
            String out = Files.readString(stdout);
            String output = out + "\n---- stderr ----\n" + tail(log);
            Matcher m = RESULT.matcher(out);
            if (!m.find()) {
                throw new IllegalStateException(
                        "stranger "
                                + name
                                + " exited "
                                + p.exitValue()
                                + " without a result:\n"
                                + output);
            }
            return new Outcome(
                    name,
                    port,
                    Boolean.parseBoolean(m.group(1)),
                    Boolean.parseBoolean(m.group(2)),
                    Integer.parseInt(m.group(3)),
                    output);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** @return whether the member's log shows a join request from {@code host:port} (Pekko logs it as JOINING) */
    private static boolean joinLogged(Member member, Topology.Host host, int port)
            throws IOException {
        String joining = "pekko://cadastre@" + host.address() + ":" + port + "] is JOINING";
        return Files.readAllLines(member.log()).stream().anyMatch(l -> l.contains(joining));
    }

    /** Both members are alive and answer an IPAM ADD (then DEL) through the real plugin. */
    private static void membersServe(String when) throws Exception {
        for (Member m : cluster.members()) {
            assertTrue(m.alive(), m.name() + " died " + when + ":\n" + m.tail());
            String id = "auth-" + m.name() + "-" + System.nanoTime();
            CniExec.Result add =
                    CniExec.run("ADD", id, "/var/run/netns/unused", CniExec.ipamOnly(m));
            assertEquals(0, add.exit(), m.name() + " " + when + ": " + add);
            assertEquals(
                    0,
                    CniExec.run("DEL", id, "/var/run/netns/unused", CniExec.ipamOnly(m)).exit(),
                    m.name() + " DEL " + when);
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
