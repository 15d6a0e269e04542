package io.cadastre.bench.cluster;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Distribution;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.Plot;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.testsupport.AgentLogs;
import io.cadastre.testsupport.CniSocketClient;
import io.cadastre.testsupport.Member;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.concurrent.TimeUnit;

/**
 * Scenario 4 of issue 5: how long ADD is unavailable on a node after SIGKILL of the member that
 * hosts that node's NodeEntity, over several repetitions. Where the NodeEntities live is read
 * from the members' logs (each entity logs its recovery, and lives where it last recovered).
 *
 * <p>A node's entity lives on its own member ({@code EntityHomes}); it lives on another only
 * after its member stopped, until the coordinator's next rebalance (every 10 s) brings it home.
 * The scenario makes that moment: it stops the node's agent, has the entity read through another
 * member (which starts it there) and starts the agent again ({@link #relocate}). The node's agent
 * sends an IPAM-only ADD of a new attachment every {@value #PROBE_PERIOD_MILLIS} ms; after a
 * second, if the entity is still away, its member is killed. The window runs from the SIGKILL to
 * the completion of the first successful ADD sent after it (an ADD caught by the crash is retried
 * by the agent and may complete late rather than fail). A repetition whose entity went home first
 * measures nothing and says so. The killed member is then restarted and the cluster is whole
 * again before the next repetition.
 */
public final class FailoverScenario implements Scenario {
    static final long PROBE_PERIOD_MILLIS = 20;
    private static final int REPETITIONS = 10;

    private final long seed;

    public FailoverScenario(long seed) {
        this.seed = seed;
    }

    @Override
    public String id() {
        return "failover";
    }

    /** A repetition's victim: the member killed and the node measured, and which of the node's entities lived there. */
    private record Target(Member victim, Member node, String entities) {}

    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        List<Member> members = context.members();
        String netns = context.ipamNetns();
        String tag = Long.toString(Math.abs(seed) % 1_679_616, 36);
        int repetitions = context.repetitions(REPETITIONS);
        List<Double> windows = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (int rep = 0; rep < repetitions; rep++) {
            for (Member m : members) {
                add(m, netns, "fo-" + tag + "-warm-" + rep + "-" + m.name(), 60);
            }
            Optional<Target> target = target(members);
            if (target.isEmpty()) {
                relocate(
                        context,
                        members.get(rep % members.size()),
                        members.get((rep + 1) % members.size()),
                        tag,
                        rep);
                target = target(members);
            }
            if (target.isEmpty()) {
                notes.add(
                        "Repetition "
                                + (rep + 1)
                                + ": every node's entities lived on its own member; nothing to measure.");
                continue;
            }
            Target t = target.get();
            OptionalDouble measured = measure(t, members, netns, tag + "-" + rep);
            if (measured.isEmpty()) {
                notes.add(
                        "Repetition "
                                + (rep + 1)
                                + ": node "
                                + t.node().name()
                                + "'s entity went home before the kill; nothing to measure.");
                restart(t.victim(), members, netns, tag, rep);
                continue;
            }
            double window = measured.getAsDouble();
            windows.add(window);
            notes.add(
                    String.format(
                            Locale.ROOT,
                            "Repetition %d: killed %s, which hosted %s of node %s: ADD back after %.0f ms.",
                            rep + 1,
                            t.victim().name(),
                            t.entities(),
                            t.node().name(),
                            window));
            restart(t.victim(), members, netns, tag, rep);
        }
        if (windows.isEmpty()) {
            throw new IllegalStateException(
                    "no repetition found a member hosting another node's entities");
        }
        Distribution d =
                Distribution.of(windows.stream().mapToDouble(Double::doubleValue).toArray());
        Goal goal =
                new Goal(
                        "failover window under 5 s, worst case",
                        String.format(
                                Locale.ROOT,
                                "median %.1f s, p99 %.1f s, worst %.1f s over %d kills",
                                d.median() / 1000,
                                d.p99() / 1000,
                                d.max() / 1000,
                                windows.size()),
                        d.max() < 5_000,
                        d.max() < 5_000
                                ? null
                                : "failure detection (heartbeats every 500 ms, 1 s acceptable pause), the "
                                        + "refused-port check that downs a crashed member at once (CrashedMemberDowning), the leader's "
                                        + "removal and margin, then the entities' recovery on a survivor");
        double[] x = new double[windows.size()];
        double[] y = new double[windows.size()];
        for (int i = 0; i < x.length; i++) {
            x[i] = i + 1;
            y[i] = windows.get(i) / 1000;
        }
        return new ScenarioReport(
                id(),
                "Failover: ADD unavailable after SIGKILL of the member hosting the node's entities",
                String.format(
                        Locale.ROOT,
                        "%d repetitions on the 3-member cluster on Cassandra. In each: an ADD on every "
                                + "member (so every node's entities run), then the members' logs tell where each node's "
                                + "NodeEntity last recovered. A node's entity lives on its own member, and on another only "
                                + "after its member stopped, until the next rebalance (10 s) brings it home: the scenario "
                                + "stops a node's agent, reads its entity through another member and starts the agent "
                                + "again. That member, while it still hosts the entity, is killed with SIGKILL while the "
                                + "node's agent sends an IPAM-only ADD of a new attachment every %d ms. "
                                + "The window: from the SIGKILL to the completion of the first successful ADD sent after it. "
                                + "Then the killed member is restarted and rejoins.",
                        repetitions,
                        PROBE_PERIOD_MILLIS),
                List.of(new Figure("ADD unavailable after SIGKILL", "cadastre", "ms", d)),
                List.of(),
                List.of(goal),
                List.of(
                        new Plot(
                                "failover.png",
                                "ADD unavailable after each SIGKILL",
                                "repetition",
                                "seconds",
                                false,
                                List.of(new Plot.Series("cadastre", x, y)))),
                notes);
    }

    /**
     * Puts node's NodeEntity on another member, as a crash or a rolling restart leaves it: the
     * node's agent is stopped (SIGTERM: it hands its shards off), the NodeEntity is asked for
     * through {@code other}'s admin API (so it starts on a survivor; with the token {@code other}
     * generated in its data directory, read by the shell so that it is on no command line), and the agent is started
     * again (its entity stays where it is until the coordinator's next rebalance moves it home).
     */
    private static void relocate(
            BenchContext context, Member node, Member other, String tag, int rep) throws Exception {
        node.close();
        Process get =
                context.topology()
                        .exec(
                                other.host,
                                List.of(
                                        "bash",
                                        "-c",
                                        "token=$(< \"$0\") && exec 3<>/dev/tcp/127.0.0.1/9467 && printf 'GET /v1/nodes/"
                                                + node.name()
                                                + " HTTP/1.0\\r\\nHost: bench\\r\\nAuthorization: Bearer %s\\r\\n\\r\\n' \"$token\" >&3 && cat <&3",
                                        other.adminTokenFile().toString()),
                                pb -> pb.redirectErrorStream(true));
        String reply =
                new String(
                        get.getInputStream().readAllBytes(),
                        java.nio.charset.StandardCharsets.UTF_8);
        if (!get.waitFor(60, TimeUnit.SECONDS) || !reply.startsWith("HTTP/1.1 200")) {
            throw new IOException(
                    "GET /v1/nodes/" + node.name() + " on " + other.name() + ": " + reply);
        }
        List<String> seeds = List.of(Member.address(other.host));
        node.seeds(seeds).start();
        add(node, context.ipamNetns(), "fo-" + tag + "-moved-" + rep, 120);
    }

    /** Starts the victim again, joining the others, and waits for its first ADD. */
    private static void restart(
            Member victim, List<Member> members, String netns, String tag, int rep)
            throws Exception {
        if (victim.alive()) {
            return;
        }
        List<String> others =
                members.stream().filter(m -> m != victim).map(m -> Member.address(m.host)).toList();
        victim.seeds(others).start();
        add(victim, netns, "fo-" + tag + "-back-" + rep, 120);
    }

    /**
     * Probes the node for a second, checks that its entity still lives on the victim (it goes home
     * at the coordinator's next rebalance, {@code EntityHomes}), then kills the victim.
     *
     * @return the window in milliseconds; empty when the entity had gone home (nobody killed)
     */
    private static OptionalDouble measure(Target t, List<Member> members, String netns, String tag)
            throws Exception {
        CniSocketClient client =
                new CniSocketClient(
                        t.node().socket(),
                        CniSocketClient.ipamOnly(t.node().socket(), BenchContext.CLUSTER_POOL),
                        netns);
        long[] killedAt = {Long.MAX_VALUE};
        long[] backAt = {0};
        Thread probe =
                new Thread(
                        () -> {
                            int n = 0;
                            while (backAt[0] == 0 && !Thread.currentThread().isInterrupted()) {
                                long sent = System.nanoTime();
                                try {
                                    CniSocketClient.Reply r =
                                            client.call("ADD", "fo-" + tag + "-" + n++);
                                    long kill;
                                    synchronized (killedAt) {
                                        kill = killedAt[0];
                                    }
                                    if (r.status() == 200 && sent > kill) {
                                        backAt[0] = System.nanoTime();
                                        return;
                                    }
                                    Thread.sleep(PROBE_PERIOD_MILLIS);
                                } catch (IOException e) {
                                    // The agent answers even in the window (code 11); a broken call
                                    // counts as a failed ADD.
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        },
                        "failover-probe");
        probe.start();
        TimeUnit.SECONDS.sleep(1);
        String home = AgentLogs.nodeEntityHomes(Member.logs(members)).get(t.node().name());
        if (!t.victim().name().equals(home)) {
            probe.interrupt();
            probe.join(TimeUnit.SECONDS.toMillis(10));
            return OptionalDouble.empty();
        }
        t.victim().kill();
        synchronized (killedAt) {
            killedAt[0] = System.nanoTime();
        }
        probe.join(TimeUnit.SECONDS.toMillis(90));
        if (probe.isAlive()) {
            probe.interrupt();
            throw new IllegalStateException(
                    t.node().name()
                            + " had no ADD for 90 s after the kill of "
                            + t.victim().name());
        }
        return OptionalDouble.of((backAt[0] - killedAt[0]) / 1e6);
    }

    /** A member hosting another node's NodeEntity, from the members' logs ({@link AgentLogs#nodeEntityHomes}). */
    private static Optional<Target> target(List<Member> members) throws IOException {
        Map<String, Member> byName = new HashMap<>();
        members.forEach(m -> byName.put(m.name(), m));
        Map<String, String> homes = AgentLogs.nodeEntityHomes(Member.logs(members));
        for (Member n : members) {
            String home = homes.get(n.name());
            if (home != null && !home.equals(n.name()) && byName.containsKey(home)) {
                return Optional.of(new Target(byName.get(home), n, "the NodeEntity"));
            }
        }
        return Optional.empty();
    }

    /** An ADD that must succeed within {@code seconds} (retried on code 11 and errors). */
    private static void add(Member m, String netns, String id, int seconds) throws Exception {
        CniSocketClient client =
                new CniSocketClient(
                        m.socket(),
                        CniSocketClient.ipamOnly(m.socket(), BenchContext.CLUSTER_POOL),
                        netns);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            try {
                if (client.call("ADD", id).status() == 200) {
                    return;
                }
            } catch (IOException e) {
                // the member may still be opening its socket
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        m.name() + ": no ADD within " + seconds + " s:\n" + m.tail());
            }
            TimeUnit.MILLISECONDS.sleep(200);
        }
    }
}
