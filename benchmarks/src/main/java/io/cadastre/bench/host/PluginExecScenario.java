package io.cadastre.bench.host;

import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.bench.report.SideBySide;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;

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
        SideBySide results = new SideBySide("cadastre", Set.of("bridge+host-local", "ptp+host-local"));
        try (SingleHostAgent agent = SingleHostAgent.start(context.workDir(id() + "/agent"));
                Netns pods = new Netns("cadbench" + tag + "-")) {
            agent.warmUp(context.plugin(), context.quick() ? 5 : SingleHostAgent.WARM_UP_CYCLES);
            List<Subject> subjects = List.of(
                    Subject.cadastre(context.plugin(), agent.socket()),
                    Subject.bridgeHostLocal(context.referencePlugins(), bridge, "198.19.0.0/24", dir.resolve("bridge-ipam")),
                    Subject.ptpHostLocal(context.referencePlugins(), "198.19.1.0/24", dir.resolve("ptp-ipam")),
                    Subject.cadastreDualStack(context.plugin(), agent.socket()));
            Random random = new Random(seed);
            int pod = 0;
            for (int round = 0; round < warmUp + rounds; round++) {
                List<Subject> order = new ArrayList<>(subjects);
                Collections.shuffle(order, random);
                for (Subject s : order) {
                    String netns = pods.create(pod);
                    String container = "bench-" + tag + "-" + pod++;
                    PluginExec.Run add = PluginExec.run(s.plugin(), "ADD", container, Netns.path(netns),
                            context.referencePlugins(), s.netconf(), null);
                    checkWired(s, add, netns);
                    PluginExec.Run del = PluginExec.run(s.plugin(), "DEL", container, Netns.path(netns),
                            context.referencePlugins(), s.netconf(), null);
                    if (del.exit() != 0) {
                        throw new IOException(s.name() + " DEL failed: " + del.stdout());
                    }
                    pods.remove(netns);
                    if (round >= warmUp) {
                        results.record(ADD, s.name(), add.nanos());
                        results.record(DEL, s.name(), del.nanos());
                    }
                }
            }
        } finally {
            removeLink(bridge);
        }
        double ratio = results.ratio(ADD, "bridge+host-local");
        Goal goal = new Goal("plugin ADD median no slower than bridge+host-local in the same run",
                String.format(Locale.ROOT, "%.2f× bridge+host-local's median", ratio), ratio <= 1,
                ratio <= 1 ? null : "see the notes: the ADD's time is the agent's (two journal writes and the netlink work)");
        return new ScenarioReport(id(), "Plugin exec: one ADD and one DEL end to end",
                String.format(Locale.ROOT, "The agent is first warmed up with %d IPAM-only ADD/DEL cycles, as a running node's agent is warm. "
                        + "Each of %d rounds (after %d warm-up rounds) runs every subject once in a "
                        + "random order (seed %d): a fresh network namespace, then the plugin exec'd with the "
                        + "CNI environment and the network configuration on stdin, ADD then DEL, each timed from "
                        + "process start to exit. Every ADD is checked outside the timed part: exit 0 and the "
                        + "result's address on the pod's eth0. Cadastre's agent runs on this host with the embedded "
                        + "journal (%s); the reference plugins are Debian's containernetworking-plugins, host-local "
                        + "keeping its state in files. IPv4 only for all, plus Cadastre dual-stack (no peer).",
                        context.quick() ? 5 : SingleHostAgent.WARM_UP_CYCLES, rounds, warmUp, seed, String.join(" ", SingleHostAgent.JVM_FLAGS)),
                results.figures(), results.comparisons(), List.of(goal),
                List.of(results.plot(ADD, "plugin-exec-add.png", "Plugin ADD, exec to exit"),
                        results.plot(DEL, "plugin-exec-del.png", "Plugin DEL, exec to exit")),
                List.of("A Cadastre ADD is the C plugin's exec, one HTTP request over the agent's Unix socket, "
                        + "the NodeEntity and BlockEntity each persisting before they answer (H2, synchronous), "
                        + "and the veth, address and routes over rtnetlink; host-local writes a file under a lock.",
                        "Ratios are Cadastre's median over the peer's: below 1 is faster."));
    }

    /** Exit 0, and the result's first address present on the pod's eth0. */
    static void checkWired(Subject s, PluginExec.Run add, String netns) throws IOException, InterruptedException {
        if (add.exit() != 0 || add.addresses().isEmpty()) {
            throw new IOException(s.name() + " ADD failed (exit " + add.exit() + "): " + add.stdout());
        }
        String onEth0 = Netns.addresses(netns, "eth0");
        if (!onEth0.contains(" " + add.addresses().get(0) + "/")) {
            throw new IOException(s.name() + " ADD answered " + add.addresses() + " but eth0 has: " + onEth0);
        }
    }

    /** Removes the reference bridge plugin's bridge, which its DEL leaves behind by design. */
    static void removeLink(String name) throws IOException, InterruptedException {
        try {
            Netns.ip("link", "show", "dev", name);
        } catch (IOException absent) {
            return;
        }
        Netns.ip("link", "del", "dev", name);
    }
}
