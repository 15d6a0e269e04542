package io.cadastre.bench.host;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Comparison;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.bench.report.SideBySide;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Ip;
import io.cadastre.testsupport.PodNamespaces;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import org.HdrHistogram.Histogram;

/**
 * Scenario 1 of issue 5: one ADD and one DEL end to end, as the kubelet's runtime does them (exec
 * the plugin, the interface configured in a fresh network namespace, exit), Cadastre against the
 * reference {@code bridge}+{@code host-local} and {@code ptp}+{@code host-local} plugins,
 * interleaved: each round runs every subject once, in a fresh random order, so that drifts of the
 * machine hit all of them alike. Every ADD is checked (exit 0, the result's address on the pod's
 * {@code eth0}) outside the timed part.
 */
public final class PluginExecScenario implements Scenario {
    static final String ADD = "plugin ADD";
    static final String DEL = "plugin DEL";
    static final String DUAL_STACK = "cadastre dual-stack";
    static final String DUAL_STACK_PEER = "bridge+host-local dual-stack";
    private static final int ROUNDS = 200;
    private static final int WARM_UP_ROUNDS = 20;

    private final long seed;

    /** @param seed orders the subjects in each round */
    public PluginExecScenario(long seed) {
        this.seed = seed;
    }

    @Override
    public String id() {
        return "plugin-exec";
    }

    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        Path dir = context.workDir(id());
        String tag = Long.toString(Math.abs(seed) % 46_656, 36);
        String bridge = "cadbr" + tag;
        int rounds = context.repetitions(ROUNDS);
        int warmUp = context.quick() ? 1 : WARM_UP_ROUNDS;
        SideBySide results = new SideBySide("cadastre", Subject.IPV4_PEERS);
        SideBySide dualStack = new SideBySide(DUAL_STACK, Set.of(DUAL_STACK_PEER));
        try (SingleHostAgent agent = SingleHostAgent.startWarm(context, id());
                PodNamespaces pods = new PodNamespaces("cadbench" + tag + "-")) {
            List<Subject> subjects =
                    new ArrayList<>(
                            Subject.ipv4(
                                    context, agent, bridge, "198.19.0.0/24", "198.19.1.0/24", dir));
            subjects.add(Subject.cadastreDualStack(context.plugin(), agent.socket()));
            subjects.add(
                    Subject.bridgeHostLocalDualStack(
                            context.referencePlugins(),
                            bridge + "d",
                            "198.19.4.0/24",
                            "fd00:198:19:4::/64",
                            dir.resolve("bridge-ds-ipam")));
            Random random = new Random(seed);
            int pod = 0;
            for (int round = 0; round < warmUp + rounds; round++) {
                List<Subject> order = new ArrayList<>(subjects);
                Collections.shuffle(order, random);
                for (Subject s : order) {
                    String netns = pods.create(pod);
                    String container = "bench-" + tag + "-" + pod++;
                    CniExec.Result add =
                            CniExec.run(
                                    s.plugin(),
                                    "ADD",
                                    container,
                                    PodNamespaces.path(netns),
                                    context.referencePlugins(),
                                    s.netconf(),
                                    null);
                    checkWired(s, add, netns);
                    CniExec.Result del =
                            CniExec.run(
                                    s.plugin(),
                                    "DEL",
                                    container,
                                    PodNamespaces.path(netns),
                                    context.referencePlugins(),
                                    s.netconf(),
                                    null);
                    if (del.exit() != 0) {
                        throw new IOException(s.name() + " DEL failed: " + del.stdout());
                    }
                    pods.remove(netns);
                    if (round >= warmUp) {
                        SideBySide into = s.name().endsWith("dual-stack") ? dualStack : results;
                        into.record(ADD, s.name(), add.nanos());
                        into.record(DEL, s.name(), del.nanos());
                    }
                }
            }
        } finally {
            removeLink(bridge);
            removeLink(bridge + "d");
        }
        List<Goal> goals = List.of(goal(dualStack, ADD), goal(dualStack, DEL));
        List<Figure> figures = new ArrayList<>(results.figures());
        figures.addAll(dualStack.figures());
        List<Comparison> comparisons = new ArrayList<>(results.comparisons());
        comparisons.addAll(dualStack.comparisons());
        return new ScenarioReport(
                id(),
                "Plugin exec: one ADD and one DEL end to end",
                String.format(
                        Locale.ROOT,
                        "The agent is first warmed up with %d IPAM-only ADD/DEL cycles, as a running node's agent is warm. "
                                + "Each of %d rounds (after %d warm-up rounds) runs every subject once in a "
                                + "random order (seed %d): a fresh network namespace, then the plugin exec'd with the "
                                + "CNI environment and the network configuration on stdin, ADD then DEL, each timed from "
                                + "process start to exit. Every ADD is checked outside the timed part: exit 0 and the "
                                + "result's address on the pod's eth0. Cadastre's agent runs on this host with the embedded "
                                + "journal (%s); the reference plugins are Debian's containernetworking-plugins, host-local "
                                + "keeping its state in files. IPv4 only for Cadastre, bridge+host-local and ptp+host-local; "
                                + "dual-stack (an IPv4 and an IPv6 address) for Cadastre and bridge+host-local, the pair the "
                                + "goals compare. DEL runs while the pod's network namespace still exists, as in kubelet's order.",
                        SingleHostAgent.warmUpCycles(context),
                        rounds,
                        warmUp,
                        seed,
                        String.join(" ", SingleHostAgent.JVM_FLAGS)),
                figures,
                comparisons,
                goals,
                List.of(
                        results.plot(ADD, "plugin-exec-add.png", "Plugin ADD, exec to exit"),
                        results.plot(DEL, "plugin-exec-del.png", "Plugin DEL, exec to exit"),
                        dualStack.plot(
                                ADD,
                                "plugin-exec-add-dual-stack.png",
                                "Plugin ADD, dual-stack, exec to exit"),
                        dualStack.plot(
                                DEL,
                                "plugin-exec-del-dual-stack.png",
                                "Plugin DEL, dual-stack, exec to exit")),
                List.of(
                        "A Cadastre ADD is the C plugin's exec, one HTTP request over the agent's Unix socket, "
                                + "the NodeEntity and BlockEntity each persisting before they answer (the embedded journal), "
                                + "and the veth, address and routes over rtnetlink; host-local writes a file under a lock.",
                        "Ratios are Cadastre's median over the peer's: below 1 is faster."));
    }

    /** Issue 17's goal for a metric: dual-stack against dual-stack, median ≤ 0.6× and p99 ≤ 1.0×. */
    private static Goal goal(SideBySide dualStack, String metric) {
        Histogram mine = dualStack.histogram(metric, DUAL_STACK);
        Histogram peer = dualStack.histogram(metric, DUAL_STACK_PEER);
        double median = (double) mine.getValueAtPercentile(50) / peer.getValueAtPercentile(50);
        double p99 = (double) mine.getValueAtPercentile(99) / peer.getValueAtPercentile(99);
        boolean met = median <= 0.6 && p99 <= 1.0;
        return new Goal(
                metric + ", dual-stack both: median ≤ 0.6× and p99 ≤ 1.0× bridge+host-local",
                String.format(Locale.ROOT, "median %.2f×, p99 %.2f×", median, p99),
                met,
                met
                        ? null
                        : "see the notes and agent-cost's profile: the agent's work per call and its journal writes");
    }

    /** Exit 0, and the result's first address present on the pod's eth0. */
    static void checkWired(Subject s, CniExec.Result add, String netns)
            throws IOException, InterruptedException {
        if (add.exit() != 0 || add.addresses().isEmpty()) {
            throw new IOException(
                    s.name() + " ADD failed (exit " + add.exit() + "): " + add.stdout());
        }
        String onEth0 = PodNamespaces.addresses(netns, "eth0");
        if (!onEth0.contains(" " + add.addresses().get(0) + "/")) {
            throw new IOException(
                    s.name() + " ADD answered " + add.addresses() + " but eth0 has: " + onEth0);
        }
    }

    /** Removes the reference bridge plugin's bridge, which its DEL leaves behind by design. */
    static void removeLink(String name) throws IOException, InterruptedException {
        try {
            Ip.run("link", "show", "dev", name);
        } catch (IOException absent) {
            return;
        }
        Ip.run("link", "del", "dev", name);
    }
}
