package io.cadastre.bench.host;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.bench.report.SideBySide;
import io.cadastre.testcri.Containerd;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.PodSandboxState;
import io.cadastre.testcri.v1.PodSandboxStatus;
import io.cadastre.testsupport.CniExec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * Kubelet's path, timed (issue 14): RunPodSandbox until PodSandboxStatus reports the sandbox
 * ready with its IP, and StopPodSandbox + RemovePodSandbox, through one real containerd 1.6,
 * Cadastre against the reference {@code bridge}+{@code host-local}. Both networks live on the same
 * containerd: each subject is a runtime handler (a RuntimeClass) with a CNI conf dir of its own,
 * so everything but the network (image, snapshots, runc, the pause process, the {@code loopback}
 * plugin) is the same work. Interleaved: 200 sandboxes one at a time, each round both subjects in
 * a fresh random order; then rounds of 20 sandboxes started at once per subject, the subjects
 * taking turns. Every sandbox is checked outside the timed part: ready, its IP in the subject's
 * range and on {@code eth0} inside its network namespace. IPv4 only for both. Then sandboxes with
 * bandwidth annotations one at a time, on two more handlers: Cadastre with the {@code bandwidth}
 * capability, and the reference chained with the reference {@code bandwidth} plugin.
 */
public final class CriSandboxScenario implements Scenario {
    static final String RUN = "RunPodSandbox → ready";
    static final String STOP = "StopPodSandbox + RemovePodSandbox";
    static final String RUN_PARALLEL = "RunPodSandbox → ready, 20 at once";
    static final String STOP_PARALLEL = "Stop + Remove, 20 at once";
    static final String RUN_SHAPED = "RunPodSandbox → ready, bandwidth limited";
    static final String STOP_SHAPED = "Stop + Remove, bandwidth limited";

    /**
     * The annotations of a limited pod: kubelet copies them to the sandbox, and containerd passes
     * them to the networks that declare the {@code bandwidth} capability.
     */
    static final Map<String, String> LIMITED =
            Map.of(
                    "kubernetes.io/ingress-bandwidth", "100M",
                    "kubernetes.io/egress-bandwidth", "50M");

    /** Limited sandboxes one at a time, per subject: a p99 from 100 samples. */
    private static final int SHAPED = 100;

    static final String CADASTRE = "cadastre";
    static final String REFERENCE = "bridge+host-local";
    private static final int SEQUENTIAL = 200;
    private static final int PARALLEL = 20;

    /** 20 rounds: a p99 from 400 samples (from 200 it moved by ±5% between runs of the same code). */
    private static final int PARALLEL_ROUNDS = 20;

    /** Rounds of parallel sandboxes run and discarded first: the agent's first burst grows pools and compiles new paths. */
    private static final int PARALLEL_WARM_UP_ROUNDS = 1;

    private static final int WARM_UP_ROUNDS = 5;

    /**
     * A network under test: its runtime handler, the IPv4 range its addresses come from, and its
     * pods' annotations.
     */
    private record Network(
            String name, String handler, String prefix, Map<String, String> annotations) {
        Network(String name, String handler, String prefix) {
            this(name, handler, prefix, Map.of());
        }
    }

    private final long seed;

    /** @param seed orders the subjects in each round and names the links */
    public CriSandboxScenario(long seed) {
        this.seed = seed;
    }

    @Override
    public String id() {
        return "cri-sandbox";
    }

    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        Path dir = context.workDir(id());
        String tag = Long.toString(Math.abs(seed) % 46_656, 36);
        String bridge = "cadcb" + tag;
        String shapedBridge = "cadcs" + tag;
        int sequential = context.repetitions(SEQUENTIAL);
        int parallel = context.quick() ? 3 : PARALLEL;
        int parallelRounds = context.quick() ? 1 : PARALLEL_ROUNDS;
        int warmUp = context.quick() ? 1 : WARM_UP_ROUNDS;
        int parallelWarmUp = context.quick() ? 0 : PARALLEL_WARM_UP_ROUNDS;
        SideBySide results = new SideBySide(CADASTRE, Set.of(REFERENCE));
        int shapedCount = context.repetitions(SHAPED);
        List<Network> networks =
                List.of(
                        new Network(CADASTRE, "cadastre", "198.18."),
                        new Network(REFERENCE, "reference", "198.19.2."));
        List<Network> shaped =
                List.of(
                        new Network(CADASTRE, "cadastre-shaped", "198.18.", LIMITED),
                        new Network(REFERENCE, "reference-shaped", "198.19.3.", LIMITED));
        try (SingleHostAgent agent = SingleHostAgent.startWarm(context, id())) {
            Path bin = Files.createDirectories(dir.resolve("cni-bin"));
            for (String name : List.of("cadastre", "cadastre-ipam")) {
                Files.copy(context.plugin(), bin.resolve(name));
                Files.setPosixFilePermissions(
                        bin.resolve(name), PosixFilePermissions.fromString("rwxr-xr-x"));
            }
            for (String reference : List.of("loopback", "bridge", "host-local", "bandwidth")) {
                Files.copy(context.referencePlugins().resolve(reference), bin.resolve(reference));
            }
            Path cadastreConf = Files.createDirectories(dir.resolve("conf-cadastre"));
            Files.writeString(
                    cadastreConf.resolve("10-cadastre.conflist"),
                    """
                    {"cniVersion":"1.0.0","name":"bench-cri","plugins":[{"type":"cadastre","agentSocket":"%s",\
                    "ipam":{"pools":["%s"]}}]}"""
                            .formatted(agent.socket(), SingleHostAgent.IPV4_POOL));
            Path referenceConf = Files.createDirectories(dir.resolve("conf-reference"));
            Files.writeString(
                    referenceConf.resolve("10-bridge.conflist"),
                    """
                    {"cniVersion":"1.0.0","name":"bench-cri-bridge","plugins":[{"type":"bridge","bridge":"%s",\
                    "isGateway":true,"ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.2.0/24"}]],\
                    "dataDir":"%s"}}]}"""
                            .formatted(bridge, dir.resolve("host-local")));
            // The same networks, limited: Cadastre's conflist declares the capability (as the
            // installed one does), the reference chains its bandwidth plugin.
            Path cadastreShapedConf = Files.createDirectories(dir.resolve("conf-cadastre-shaped"));
            Files.writeString(
                    cadastreShapedConf.resolve("10-cadastre.conflist"),
                    """
                    {"cniVersion":"1.0.0","name":"bench-cri-shaped","plugins":[{"type":"cadastre","agentSocket":"%s",                    "ipam":{"pools":["%s"]},"capabilities":{"bandwidth":true}}]}"""
                            .formatted(agent.socket(), SingleHostAgent.IPV4_POOL));
            Path referenceShapedConf =
                    Files.createDirectories(dir.resolve("conf-reference-shaped"));
            Files.writeString(
                    referenceShapedConf.resolve("10-bridge.conflist"),
                    """
                    {"cniVersion":"1.0.0","name":"bench-cri-bridge-shaped","plugins":[{"type":"bridge","bridge":"%s",                    "isGateway":true,"ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"198.19.3.0/24"}]],                    "dataDir":"%s"}},{"type":"bandwidth","capabilities":{"bandwidth":true}}]}"""
                            .formatted(shapedBridge, dir.resolve("host-local-shaped")));
            try (Containerd containerd =
                    Containerd.start(
                            dir.resolve("ctrd"),
                            bin,
                            cadastreConf,
                            1,
                            Map.of(
                                    "cadastre",
                                    cadastreConf,
                                    "reference",
                                    referenceConf,
                                    "cadastre-shaped",
                                    cadastreShapedConf,
                                    "reference-shaped",
                                    referenceShapedConf))) {
                containerd.awaitNetworkReady(Duration.ofSeconds(60));
                CriClient cri = containerd.cri();
                Random random = new Random(seed);
                int pod = 0;
                pod =
                        oneAtATime(
                                cri,
                                networks,
                                warmUp,
                                sequential,
                                random,
                                "seq-",
                                pod,
                                dir,
                                results,
                                RUN,
                                STOP);
                pod =
                        oneAtATime(
                                cri,
                                shaped,
                                warmUp,
                                shapedCount,
                                random,
                                "lim-",
                                pod,
                                dir,
                                results,
                                RUN_SHAPED,
                                STOP_SHAPED);
                ExecutorService kubelet = Executors.newFixedThreadPool(parallel);
                try {
                    for (int round = 0; round < parallelWarmUp + parallelRounds; round++) {
                        boolean measured = round >= parallelWarmUp;
                        List<Network> order = new ArrayList<>(networks);
                        Collections.shuffle(order, random);
                        for (Network n : order) {
                            List<PodSandboxConfig> configs = new ArrayList<>();
                            for (int i = 0; i < parallel; i++) {
                                configs.add(
                                        KubeletPods.sandbox(
                                                "bench", "par-" + pod++, dir.resolve("pods")));
                            }
                            List<Sandbox> started =
                                    atOnce(kubelet, configs, config -> runToReady(cri, n, config));
                            for (Sandbox s : started) {
                                check(cri, n, s);
                                if (measured) {
                                    results.record(RUN_PARALLEL, n.name(), s.nanos());
                                }
                            }
                            List<Long> stops =
                                    atOnce(kubelet, started, s -> stopAndRemove(cri, s.id()));
                            if (measured) {
                                stops.forEach(
                                        nanos -> results.record(STOP_PARALLEL, n.name(), nanos));
                            }
                        }
                    }
                } finally {
                    kubelet.shutdownNow();
                }
            }
        } finally {
            PluginExecScenario.removeLink(bridge);
            PluginExecScenario.removeLink(shapedBridge);
        }
        List<Goal> goals =
                List.of(
                        goal(results, RUN, "one at a time"),
                        goal(results, RUN_PARALLEL, parallel + " at once"),
                        goal(results, STOP, "one at a time"),
                        goal(results, STOP_PARALLEL, parallel + " at once"));
        return new ScenarioReport(
                id(),
                "Kubelet's path: RunPodSandbox to ready, and Stop + Remove, through containerd",
                String.format(
                        Locale.ROOT,
                        "One containerd 1.6 (Debian's, private root and state, overlayfs, runc) with two "
                                + "runtime handlers, each taking its pods' network from a CNI conf dir of its own: Cadastre "
                                + "(IPv4 from its agent's pool, the agent warmed up with %d IPAM-only cycles) and the reference "
                                + "bridge+host-local. The test plays kubelet over CRI (a Java gRPC client on containerd's socket): "
                                + "RunPodSandbox with a kubelet-shaped config, timed until PodSandboxStatus reports it ready with "
                                + "its IP; then StopPodSandbox + RemovePodSandbox, timed together. %d sandboxes one at a time "
                                + "(after %d warm-up rounds), each round both subjects in a random order (seed %d); then %d "
                                + "rounds of %d sandboxes started at once per subject (after %d discarded), the subjects taking "
                                + "turns in a random order, each sandbox's own time recorded. Every sandbox is checked outside "
                                + "the timed part: ready, its IP in the subject's range and on eth0 in its network namespace. "
                                + "Then %d limited sandboxes one at a time per subject (annotations kubernetes.io/ingress-bandwidth "
                                + "100M and egress-bandwidth 50M): two more handlers, Cadastre's conflist with the bandwidth "
                                + "capability and bridge+host-local chained with the reference bandwidth plugin; each sandbox "
                                + "checked to be shaped both ways (a token bucket filter on its host end, and one on the device "
                                + "its host end's ingress redirects to).",
                        SingleHostAgent.warmUpCycles(context),
                        sequential,
                        warmUp,
                        seed,
                        parallelRounds,
                        parallel,
                        parallelWarmUp,
                        shapedCount),
                results.figures(),
                results.comparisons(),
                goals,
                List.of(
                        results.plot(RUN, "cri-run.png", "RunPodSandbox to ready, one at a time"),
                        results.plot(
                                RUN_PARALLEL,
                                "cri-run-parallel.png",
                                "RunPodSandbox to ready, " + parallel + " at once")),
                List.of(
                        "Most of a sandbox's time is containerd's own and the same for both subjects: the snapshot, "
                                + "runc starting the pause process, the network namespace, the loopback plugin. The difference "
                                + "is the CNI ADD (DEL): Cadastre's plugin exec, its agent's two journal writes and the veth "
                                + "over rtnetlink, against the bridge plugin's veth and bridge port and host-local's file under "
                                + "a lock.",
                        "Ratios are Cadastre's median over the peer's: below 1 is faster. The goal asks for the p99 too."));
    }

    /**
     * Rounds of sandboxes one at a time, each round every network once in a random order; the
     * rounds after {@code warmUp} recorded. A network whose pods carry annotations (bandwidth
     * limits) is checked to be shaped too.
     *
     * @return the next pod number
     */
    private static int oneAtATime(
            CriClient cri,
            List<Network> networks,
            int warmUp,
            int measured,
            Random random,
            String prefix,
            int pod,
            Path dir,
            SideBySide results,
            String runMetric,
            String stopMetric)
            throws Exception {
        for (int round = 0; round < warmUp + measured; round++) {
            List<Network> order = new ArrayList<>(networks);
            Collections.shuffle(order, random);
            for (Network n : order) {
                String name = prefix + pod++;
                Sandbox s =
                        runToReady(
                                cri,
                                n,
                                KubeletPods.sandbox(
                                        "bench",
                                        name,
                                        UUID.randomUUID().toString(),
                                        dir.resolve("pods"),
                                        Map.of("app", name),
                                        n.annotations()));
                check(cri, n, s);
                if (!n.annotations().isEmpty()) {
                    checkShaped(cri, n, s);
                }
                long stop = stopAndRemove(cri, s.id());
                if (round >= warmUp) {
                    results.record(runMetric, n.name(), s.nanos());
                    results.record(stopMetric, n.name(), stop);
                }
            }
        }
        return pod;
    }

    /** One sandbox that became ready: its ID, its IP, and the time from RunPodSandbox to the ready status. */
    private record Sandbox(String id, String ip, long nanos) {}

    private static Sandbox runToReady(CriClient cri, Network n, PodSandboxConfig config)
            throws IOException {
        long t0 = System.nanoTime();
        String id = cri.runPodSandbox(config, n.handler());
        PodSandboxStatus status = cri.podSandboxStatus(id);
        long nanos = System.nanoTime() - t0;
        if (status.getState() != PodSandboxState.SANDBOX_READY
                || status.getNetwork().getIp().isEmpty()) {
            throw new IOException(
                    n.name() + " sandbox " + id + " is not ready with an IP: " + status);
        }
        return new Sandbox(id, status.getNetwork().getIp(), nanos);
    }

    private static long stopAndRemove(CriClient cri, String id) {
        long t0 = System.nanoTime();
        cri.stopPodSandbox(id);
        cri.removePodSandbox(id);
        return System.nanoTime() - t0;
    }

    /** The IP is the subject's and is on eth0 in the sandbox's network namespace (not timed). */
    private static void check(CriClient cri, Network n, Sandbox s)
            throws IOException, InterruptedException {
        if (!s.ip().startsWith(n.prefix())) {
            throw new IOException(
                    n.name()
                            + " sandbox got "
                            + s.ip()
                            + ", not an address of "
                            + n.prefix()
                            + "*");
        }
        String netns = cri.networkNamespace(s.id());
        Process p =
                new ProcessBuilder(
                                "nsenter",
                                "--net=" + netns,
                                "ip",
                                "-o",
                                "-4",
                                "addr",
                                "show",
                                "dev",
                                "eth0")
                        .redirectErrorStream(true)
                        .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || !out.contains(" " + s.ip() + "/")) {
            throw new IOException(
                    n.name()
                            + " sandbox "
                            + s.id()
                            + " reports "
                            + s.ip()
                            + " but its eth0 has: "
                            + out);
        }
    }

    /**
     * The limited sandbox is shaped both ways, whichever plugin made it (not timed): the host end
     * of its {@code eth0} (found by the peer's ifindex) has a token bucket filter as its root
     * qdisc, for what the pod receives, and a filter on its ingress hook redirects what the pod
     * sends to a device that has one too.
     */
    private static void checkShaped(CriClient cri, Network n, Sandbox s)
            throws IOException, InterruptedException {
        String netns = cri.networkNamespace(s.id());
        int hostIndex =
                json("nsenter", "--net=" + netns, "ip", "-j", "link", "show", "eth0")
                        .path(0)
                        .path("link_index")
                        .asInt(-1);
        String hostEnd = null;
        for (JsonNode link : json("ip", "-j", "link", "show")) {
            if (link.path("ifindex").asInt() == hostIndex) {
                hostEnd = link.path("ifname").asText();
            }
        }
        String redirectedTo = null;
        if (hostEnd != null) {
            for (JsonNode filter : json("tc", "-j", "filter", "show", "dev", hostEnd, "ingress")) {
                for (JsonNode action : filter.path("options").path("actions")) {
                    if ("mirred".equals(action.path("kind").asText())) {
                        redirectedTo = action.path("to_dev").asText();
                    }
                }
            }
        }
        if (hostEnd == null
                || redirectedTo == null
                || !rootTbf(hostEnd)
                || !rootTbf(redirectedTo)) {
            throw new IOException(
                    n.name()
                            + " sandbox "
                            + s.id()
                            + " is not shaped both ways: host end "
                            + hostEnd
                            + ", what it sends redirected to "
                            + redirectedTo);
        }
    }

    private static boolean rootTbf(String dev) throws IOException, InterruptedException {
        for (JsonNode q : json("tc", "-j", "qdisc", "show", "dev", dev)) {
            if (q.path("root").asBoolean(false) && "tbf".equals(q.path("kind").asText())) {
                return true;
            }
        }
        return false;
    }

    /** @return what a command printed as JSON (ip -j, tc -j) */
    private static JsonNode json(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out);
        }
        return CniExec.JSON.readTree(out.isBlank() ? "[]" : out);
    }

    private interface Step<T, R> {
        R apply(T item) throws Exception;
    }

    /** Runs the step on every item at once (released together), and waits for all; the first failure is thrown. */
    private static <T, R> List<R> atOnce(ExecutorService pool, List<T> items, Step<T, R> step)
            throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<R>> futures = new ArrayList<>();
        for (T item : items) {
            futures.add(
                    pool.submit(
                            () -> {
                                go.await();
                                return step.apply(item);
                            }));
        }
        go.countDown();
        List<R> out = new ArrayList<>();
        for (Future<R> f : futures) {
            out.add(f.get(300, TimeUnit.SECONDS));
        }
        return out;
    }

    /** Goal of issue 14: no slower than the reference at the median and at the 99th percentile. */
    private static Goal goal(SideBySide results, String metric, String how) {
        String call =
                metric.startsWith("Stop")
                        ? "StopPodSandbox + RemovePodSandbox"
                        : "RunPodSandbox → ready";
        String difference = metric.startsWith("Stop") ? "DEL" : "ADD";
        Histogram mine = results.histogram(metric, CADASTRE);
        Histogram peer = results.histogram(metric, REFERENCE);
        double median = (double) mine.getValueAtPercentile(50) / peer.getValueAtPercentile(50);
        double p99 = (double) mine.getValueAtPercentile(99) / peer.getValueAtPercentile(99);
        boolean met = median <= 1 && p99 <= 1;
        return new Goal(
                call + ", " + how + ": ≤ 1.0× bridge+host-local at the median and p99",
                String.format(Locale.ROOT, "median %.2f×, p99 %.2f×", median, p99),
                met,
                met
                        ? null
                        : "see the notes: the difference is the CNI "
                                + difference
                                + "; containerd's own work is the same for both");
    }
}
