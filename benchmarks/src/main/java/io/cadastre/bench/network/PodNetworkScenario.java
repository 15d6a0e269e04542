package io.cadastre.bench.network;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.bench.BenchContext;
import io.cadastre.bench.Scenario;
import io.cadastre.bench.report.Comparison;
import io.cadastre.bench.report.Distribution;
import io.cadastre.bench.report.Figure;
import io.cadastre.bench.report.Goal;
import io.cadastre.bench.report.Plot;
import io.cadastre.bench.report.ScenarioReport;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Member;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The pod network between hosts (issue 13), {@code pod-network}: on the fabric's cluster (hosts
 * h1-h3 on one L2 segment), with the agents first in mode {@code direct}, then in mode
 * {@code vxlan} (every member restarted with {@code CADASTRE_ROUTING_MODE}; the default is put
 * back at the end), a pod on h1 and a pod on h2 wired by the real plugin:
 *
 * <ul>
 *   <li>TCP throughput pod-to-pod against host-to-host (h1's underlay address to h2's) with
 *       iperf3, the two interleaved in a seeded random order within each mode's rounds;
 *   <li>round-trip latency the same way (busybox ping, one echo every 10 ms);
 *   <li>route convergence: a pod ADDed on h2 (h3 in the vxlan block) in the {@code bench-claims}
 *       pool (/32 blocks: every ADD claims a new block while none is freed, whose route h1 must
 *       learn) while the pod on h1 pings its address every 5 ms; from the ADD's reply (the plugin's
 *       exit) to the first echo;
 *   <li>entries per host as the cluster grows: {@link RoutingScaleProbe} in a scratch namespace
 *       reconciles for real what {@code MeshPlan} computes for N nodes behind a router (VXLAN to
 *       all, 2 blocks per family each), and times it; plus what h1 holds in vxlan mode.
 * </ul>
 */
public final class PodNetworkScenario implements Scenario {
    private static final int ROUNDS = 3;
    private static final int IPERF_SECONDS = 5;
    private static final int PINGS = 100;
    private static final int CONVERGENCE_SAMPLES = 25;
    private static final int PORT = 5201;
    private static final int[] SCALE_NODES = {3, 10, 30, 100, 300, 1000};
    private static final int[] QUICK_SCALE_NODES = {3, 10, 100};

    /** Pods of the cluster for {@link PolicyScaleProbe}, of which {@link #POLICY_LOCAL_PODS} on the host. */
    private static final int[] POLICY_PODS = {1_000, 3_000, 10_000};

    private static final int[] QUICK_POLICY_PODS = {1_000};

    /** Kubernetes' default pod limit per node. */
    private static final int POLICY_LOCAL_PODS = 110;

    private static final Pattern RTT = Pattern.compile("time=([0-9.]+) ms");

    private final long seed;
    private int nextClaim;

    public PodNetworkScenario(long seed) {
        this.seed = seed;
    }

    @Override
    public String id() {
        return "pod-network";
    }

    /** What one mode's block measured. */
    private record Block(
            String mode,
            List<Double> hostGbps,
            List<Double> podGbps,
            List<Double> hostRtt,
            List<Double> podRtt,
            List<Double> convergence,
            String entries) {}

    @Override
    public ScenarioReport run(BenchContext context) throws Exception {
        List<Member> members = context.members();
        Random random = new Random(seed);
        List<String> notes = new ArrayList<>();
        List<Block> blocks = new ArrayList<>();
        try {
            for (String mode : List.of("direct", "vxlan")) {
                restart(members, mode);
                blocks.add(measure(context, members, mode, random, notes));
            }
        } finally {
            restart(members, null);
        }
        int[] scale = context.quick() ? QUICK_SCALE_NODES : SCALE_NODES;
        List<double[]> sizes = scale(context, scale);
        int[] policyPods = context.quick() ? QUICK_POLICY_PODS : POLICY_PODS;
        List<double[]> policy =
                probe(
                        PolicyScaleProbe.class,
                        List.of(Integer.toString(POLICY_LOCAL_PODS)),
                        policyPods[0],
                        policyPods);
        return report(context, blocks, sizes, policy, notes);
    }

    /**
     * Restarts every member with the routing mode given (null: the default), and waits until all
     * serve. The first forms the cluster again and the others join it, whatever seeds an earlier
     * scenario left them (the failover scenario restarts a victim with the others as its seeds,
     * and a first member with those would wait for a cluster that is not there).
     */
    private static void restart(List<Member> members, String mode)
            throws IOException, InterruptedException {
        for (Member m : members) {
            m.close();
        }
        List<String> first = List.of(Member.address(members.get(0).host));
        members.forEach(m -> m.seeds(first).env("CADASTRE_ROUTING_MODE", mode));
        Member.startTogether(members, start -> new Thread(start, "member-start").start());
    }

    private Block measure(
            BenchContext context,
            List<Member> members,
            String mode,
            Random random,
            List<String> notes)
            throws Exception {
        Member h1 = members.get(0);
        Member h2 = members.get(1);
        // The new blocks' host: one that has none in the claims pool yet, so that every ADD claims
        // one.
        Member claimer = members.get(mode.equals("direct") ? 1 : 2);
        String tag = "cadbench-net-" + mode + "-";
        List<String> namespaces = new java.util.concurrent.CopyOnWriteArrayList<>();
        // A suite stopped with SIGTERM runs no finally: the pods' namespaces go in a shutdown hook
        // then.
        Thread cleanup =
                new Thread(
                        () -> namespaces.forEach(ns -> run("ip", "netns", "del", ns)),
                        "pod-network-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try {
            Pod a = add(h1, tag + "a", null, namespaces);
            Pod b = add(h2, tag + "b", null, namespaces);
            awaitPing(a.netns(), b.address(), 60);
            awaitPing(h1.host.netns(), h2.host.address(), 60);
            String via = routeTo(h1.host.netns(), b.address());
            if (!via.contains(mode.equals("vxlan") ? "dev cadastre.vx4" : "dev eth0")) {
                throw new IllegalStateException(
                        "mode " + mode + ": h1 reaches " + b.address() + " by " + via);
            }
            List<Double> hostGbps = new ArrayList<>();
            List<Double> podGbps = new ArrayList<>();
            List<Double> hostRtt = new ArrayList<>();
            List<Double> podRtt = new ArrayList<>();
            int seconds = context.quick() ? 2 : IPERF_SECONDS;
            int pings = context.quick() ? 20 : PINGS;
            for (int round = 0; round < context.repetitions(ROUNDS); round++) {
                List<Runnable> work = new ArrayList<>();
                work.add(
                        () ->
                                hostGbps.add(
                                        iperf(
                                                h2.host.netns(),
                                                h2.host.address(),
                                                h1.host.netns(),
                                                seconds)));
                work.add(() -> podGbps.add(iperf(b.netns(), b.address(), a.netns(), seconds)));
                work.add(() -> hostRtt.addAll(pings(h1.host.netns(), h2.host.address(), pings)));
                work.add(() -> podRtt.addAll(pings(a.netns(), b.address(), pings)));
                Collections.shuffle(work, random);
                work.forEach(Runnable::run);
            }
            List<Double> convergence = new ArrayList<>();
            List<Pod> claimed = new ArrayList<>();
            int samples = context.quick() ? 3 : CONVERGENCE_SAMPLES;
            for (int i = 0; i < samples; i++) {
                convergence(a, claimer, tag + "c" + i, namespaces, claimed, notes)
                        .ifPresent(convergence::add);
            }
            // Deleted only now: a pod deleted at once would leave its /32 block free for the next
            // ADD.
            for (Pod p : claimed) {
                CniExec.run(
                        "DEL",
                        p.containerId(),
                        "/var/run/netns/" + p.netns(),
                        CniExec.full(p.member()));
            }
            String entries = entries(h1.host.netns());
            notes.add(
                    "mode "
                            + mode
                            + ": h1 holds "
                            + entries
                            + "; h1 reaches the pod on h2 by "
                            + via);
            for (Pod p : List.of(a, b)) {
                CniExec.run(
                        "DEL",
                        p.containerId(),
                        "/var/run/netns/" + p.netns(),
                        CniExec.full(p.member()));
            }
            return new Block(mode, hostGbps, podGbps, hostRtt, podRtt, convergence, entries);
        } finally {
            Runtime.getRuntime().removeShutdownHook(cleanup);
            for (String ns : namespaces) {
                run("ip", "netns", "del", ns);
            }
        }
    }

    /** A pod wired by the real plugin. */
    private record Pod(Member member, String netns, String containerId, String address) {}

    /** ADDs a pod on the member; {@code pool} null for the default pool. */
    private static Pod add(Member m, String netns, String pool, List<String> namespaces)
            throws Exception {
        run("ip", "netns", "add", netns);
        namespaces.add(netns);
        String conf = CniExec.full(m);
        if (pool != null) {
            conf =
                    conf.substring(0, conf.length() - 1)
                            + ",\"runtimeConfig\":{\"pools\":[\""
                            + pool
                            + "\"]}}";
        }
        CniExec.Result r = CniExec.run("ADD", netns, "/var/run/netns/" + netns, conf);
        if (r.exit() != 0) {
            throw new IllegalStateException("ADD of " + netns + " on " + m.name() + ": " + r);
        }
        return new Pod(m, netns, netns, r.firstAddress());
    }

    /**
     * One convergence sample: the pod on h1 pings the address the next ADD in the claims pool will
     * get (the pool's next /32 block) every 5 ms; the ADD on h2 claims that block.
     *
     * @return ms from the ADD's reply to the first echo (negative: the route was there before the
     *     plugin exited); empty when the address was not the one predicted
     */
    private java.util.Optional<Double> convergence(
            Pod from,
            Member on,
            String netns,
            List<String> namespaces,
            List<Pod> claimed,
            List<String> notes)
            throws Exception {
        String predicted = "198.18.200." + nextClaim;
        Process ping =
                new ProcessBuilder(
                                "ip",
                                "netns",
                                "exec",
                                from.netns(),
                                "busybox",
                                "ping",
                                "-i",
                                "0.005",
                                "-w",
                                "8",
                                predicted)
                        .redirectErrorStream(true)
                        .start();
        CompletableFuture<Long> first = new CompletableFuture<>();
        Thread reader =
                new Thread(
                        () -> {
                            try (BufferedReader r =
                                    new BufferedReader(
                                            new InputStreamReader(
                                                    ping.getInputStream(),
                                                    StandardCharsets.UTF_8))) {
                                String line;
                                while ((line = r.readLine()) != null) {
                                    if (line.contains("bytes from")) {
                                        first.complete(System.nanoTime());
                                    }
                                }
                            } catch (IOException e) {
                                first.completeExceptionally(e);
                            }
                            first.complete(-1L);
                        },
                        "convergence-ping");
        reader.start();
        try {
            TimeUnit.MILLISECONDS.sleep(100); // the pinger runs before the ADD
            long asked = System.nanoTime();
            Pod pod = add(on, netns, BenchContext.CLAIM_POOL, namespaces);
            long replied = System.nanoTime();
            claimed.add(pod);
            nextClaim++;
            if (!predicted.equals(pod.address())) {
                notes.add(
                        "a convergence sample got "
                                + pod.address()
                                + ", not "
                                + predicted
                                + ": skipped");
                nextClaim =
                        Integer.parseInt(
                                        pod.address().substring(pod.address().lastIndexOf('.') + 1))
                                + 1;
                return java.util.Optional.empty();
            }
            long echo = first.get(10, TimeUnit.SECONDS);
            if (echo < 0) {
                throw new IllegalStateException(
                        "no echo from "
                                + predicted
                                + " within 8 s of its ADD on "
                                + on.name()
                                + " (the ADD took "
                                + (replied - asked) / 1_000_000
                                + " ms; the pinger stops 8 s after its start, 100 ms before the ADD)"
                                + "; "
                                + dataplane(from.member().host.netns(), from.member().name())
                                + dataplane(on.host.netns(), on.name()));
            }
            return java.util.Optional.of((echo - replied) / 1e6);
        } finally {
            ping.destroy();
            ping.waitFor(5, TimeUnit.SECONDS);
        }
    }

    /** @return Gbit/s received by the iperf3 server in {@code serverNs} from a client in {@code clientNs} */
    private static double iperf(String serverNs, String address, String clientNs, int seconds) {
        try {
            // --forceflush: its "Server listening" line arrives now, not when it exits.
            Process server =
                    new ProcessBuilder(
                                    "ip",
                                    "netns",
                                    "exec",
                                    serverNs,
                                    "iperf3",
                                    "-s",
                                    "-1",
                                    "--forceflush",
                                    "-p",
                                    Integer.toString(PORT))
                            .redirectErrorStream(true)
                            .start();
            try {
                BufferedReader out =
                        new BufferedReader(
                                new InputStreamReader(
                                        server.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = out.readLine()) != null && !line.contains("Server listening")) {
                    // wait for it to listen
                }
                Process client =
                        new ProcessBuilder(
                                        "ip",
                                        "netns",
                                        "exec",
                                        clientNs,
                                        "iperf3",
                                        "-c",
                                        address,
                                        "-p",
                                        Integer.toString(PORT),
                                        "-t",
                                        Integer.toString(seconds),
                                        "-J")
                                .redirectErrorStream(true)
                                .start();
                String json =
                        new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!client.waitFor(seconds + 30, TimeUnit.SECONDS) || client.exitValue() != 0) {
                    throw new IllegalStateException("iperf3 to " + address + ": " + json);
                }
                JsonNode result = CniExec.JSON.readTree(json);
                return result.path("end").path("sum_received").path("bits_per_second").asDouble()
                        / 1e9;
            } finally {
                server.destroy();
                server.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** @return the round-trip times (ms) of {@code count} echoes, one every 10 ms */
    private static List<Double> pings(String netns, String address, int count) {
        String out =
                run(
                        "ip",
                        "netns",
                        "exec",
                        netns,
                        "busybox",
                        "ping",
                        "-c",
                        Integer.toString(count),
                        "-i",
                        "0.01",
                        address);
        List<Double> rtt = new ArrayList<>();
        Matcher m = RTT.matcher(out);
        while (m.find()) {
            rtt.add(Double.parseDouble(m.group(1)));
        }
        if (rtt.size() < count * 9 / 10) {
            throw new IllegalStateException(
                    "ping " + address + " from " + netns + " lost more than 10%: " + out);
        }
        return rtt;
    }

    private static void awaitPing(String netns, String address, int seconds)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!run("ip", "netns", "exec", netns, "busybox", "ping", "-c1", "-W1", address)
                .contains("bytes from")) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        netns + " never reached " + address + " in " + seconds + " s");
            }
        }
    }

    /** @return {@code ip route get ADDRESS} in the namespace, e.g. {@code "... via 198.19.255.12 dev eth0 ..."} */
    private static String routeTo(String netns, String address) {
        return run("ip", "-n", netns, "route", "get", address)
                .lines()
                .findFirst()
                .orElse("")
                .strip();
    }

    /** @return what the host holds of Cadastre's: routes of protocol 202, FDB and permanent neighbour entries */
    private static String entries(String netns) {
        long routes =
                run("ip", "-n", netns, "route", "show", "proto", "202").lines().count()
                        + run("ip", "-n", netns, "-6", "route", "show", "proto", "202")
                                .lines()
                                .count();
        long fdb = 0;
        long neighbours = 0;
        for (String dev : List.of("cadastre.vx4", "cadastre.vx6")) {
            if (run("ip", "-n", netns, "-o", "link", "show", "dev", dev).matches("(?s)\\d+: .*")) {
                fdb +=
                        run("bridge", "-n", netns, "fdb", "show", "dev", dev)
                                .lines()
                                .filter(l -> l.contains("dst"))
                                .count();
                neighbours +=
                        run("ip", "-n", netns, "neigh", "show", "dev", dev, "nud", "permanent")
                                .lines()
                                .count();
            }
        }
        return routes + " routes, " + fdb + " FDB entries, " + neighbours + " neighbour entries";
    }

    /** @return per node count: {nodes, routes, fdb, neighbours, reconcile-all ms, reconcile-idle ms} */
    private static List<double[]> scale(BenchContext context, int[] nodes) throws Exception {
        return probe(RoutingScaleProbe.class, List.of("2"), nodes[0], nodes);
    }

    /**
     * Runs a probe's {@code main} in a scratch namespace whose {@code eth0} is 198.19.4.11/24 and
     * fd00:19:4::11/64, with {@code args}, a first size that warms the JIT up (its line is
     * discarded), then {@code sizes}.
     *
     * @return per size, the numbers of the probe's line
     */
    private static List<double[]> probe(Class<?> probe, List<String> args, int warmUp, int[] sizes)
            throws Exception {
        String ns = "cadbench-scale-" + Long.toHexString(System.nanoTime() & 0xffffff);
        run("ip", "netns", "add", ns);
        try {
            run("ip", "-n", ns, "link", "set", "lo", "up");
            run("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0");
            run("ip", "-n", ns, "addr", "add", "198.19.4.11/24", "dev", "eth0");
            run("ip", "-n", ns, "addr", "add", "fd00:19:4::11/64", "dev", "eth0", "nodad");
            run("ip", "-n", ns, "link", "set", "eth0", "up");
            run("ip", "-n", ns, "link", "set", "peer0", "up");
            List<String> command =
                    new ArrayList<>(
                            List.of(
                                    "ip",
                                    "netns",
                                    "exec",
                                    ns,
                                    Path.of(System.getProperty("java.home"), "bin", "java")
                                            .toString(),
                                    "-Xmx512m",
                                    "-cp",
                                    System.getProperty("java.class.path"),
                                    probe.getName()));
            command.addAll(args);
            command.add(Integer.toString(warmUp));
            for (int n : sizes) {
                command.add(Integer.toString(n));
            }
            String out = run(command.toArray(String[]::new));
            List<double[]> rows = new ArrayList<>();
            List<String> lines = out.lines().filter(l -> l.matches("\\d+ .*")).toList();
            for (String line : lines.subList(1, lines.size())) {
                rows.add(
                        java.util.Arrays.stream(line.split(" "))
                                .mapToDouble(Double::parseDouble)
                                .toArray());
            }
            if (rows.size() != sizes.length) {
                throw new IllegalStateException(probe.getSimpleName() + ": " + out);
            }
            return rows;
        } finally {
            run("ip", "netns", "del", ns);
        }
    }

    private ScenarioReport report(
            BenchContext context,
            List<Block> blocks,
            List<double[]> sizes,
            List<double[]> policy,
            List<String> notes) {
        List<Figure> figures = new ArrayList<>();
        List<Comparison> comparisons = new ArrayList<>();
        List<Goal> goals = new ArrayList<>();
        List<Plot.Series> convergenceSeries = new ArrayList<>();
        double worstP99 = 0;
        for (Block b : blocks) {
            Figure host =
                    new Figure(
                            "TCP throughput (" + b.mode() + " block)",
                            "host-to-host",
                            "Gbit/s",
                            dist(b.hostGbps()));
            Figure pod =
                    new Figure(
                            "TCP throughput (" + b.mode() + " block)",
                            "pod-to-pod " + b.mode(),
                            "Gbit/s",
                            dist(b.podGbps()));
            Figure hostRtt =
                    new Figure(
                            "round trip (" + b.mode() + " block)",
                            "host-to-host",
                            "ms",
                            dist(b.hostRtt()));
            Figure podRtt =
                    new Figure(
                            "round trip (" + b.mode() + " block)",
                            "pod-to-pod " + b.mode(),
                            "ms",
                            dist(b.podRtt()));
            figures.addAll(List.of(host, pod, hostRtt, podRtt));
            Comparison throughput = Comparison.of(pod, host);
            comparisons.add(throughput);
            comparisons.add(Comparison.of(podRtt, hostRtt));
            double goal = b.mode().equals("direct") ? 0.9 : 0.7;
            goals.add(
                    new Goal(
                            "pod-to-pod TCP throughput ≥ "
                                    + goal
                                    + "× host-to-host in "
                                    + b.mode()
                                    + " mode",
                            String.format(
                                    Locale.ROOT,
                                    "%.2f× (%.2f against %.2f Gbit/s, medians)",
                                    throughput.ratio(),
                                    pod.distribution().median(),
                                    host.distribution().median()),
                            throughput.ratio() >= goal,
                            throughput.ratio() >= goal
                                    ? null
                                    : "the pod path crosses two more veth pairs and the hosts' forwarding"
                                            + (b.mode().equals("vxlan")
                                                    ? " and VXLAN encapsulation (UDP, no offload between namespaces)"
                                                    : "")
                                            + ", on two cores shared with the sender, receiver and agents"));
            if (!b.convergence().isEmpty()) {
                Distribution c = dist(b.convergence());
                figures.add(
                        new Figure("route convergence (" + b.mode() + ")", "cadastre", "ms", c));
                worstP99 = Math.max(worstP99, c.p99());
                double[] x = new double[b.convergence().size()];
                double[] y = new double[x.length];
                for (int i = 0; i < x.length; i++) {
                    x[i] = i + 1;
                    y[i] = b.convergence().get(i);
                }
                convergenceSeries.add(new Plot.Series(b.mode(), x, y));
            }
        }
        goals.add(
                new Goal(
                        "route convergence p99 ≤ 200 ms (ADD reply on one host → first echo from a pod on another)",
                        String.format(Locale.ROOT, "worst p99 %.0f ms", worstP99),
                        worstP99 <= 200,
                        worstP99 <= 200
                                ? null
                                : "the hint's delivery, the pool's read and the reconcile on the other host"));
        double[] nodes = new double[sizes.size()];
        double[] routes = new double[sizes.size()];
        double[] fdb = new double[sizes.size()];
        double[] all = new double[sizes.size()];
        double[] idle = new double[sizes.size()];
        for (int i = 0; i < sizes.size(); i++) {
            double[] row = sizes.get(i);
            nodes[i] = row[0];
            routes[i] = row[1];
            fdb[i] = row[2];
            all[i] = row[4];
            idle[i] = row[5];
            figures.add(
                    new Figure(
                            String.format(Locale.ROOT, "entries per host, %d nodes", (int) row[0]),
                            "routes / FDB / neighbours",
                            "entries",
                            new Distribution(1, row[1], row[2], row[3])));
            figures.add(
                    new Figure(
                            String.format(Locale.ROOT, "reconcile, %d nodes", (int) row[0]),
                            "all new / none changed",
                            "ms",
                            new Distribution(1, row[4], row[5], row[4])));
        }
        notes.add(
                "Entries per host (RoutingScaleProbe, VXLAN to every peer, 2 blocks per family per node): routes ="
                        + " 4 per peer (its 2 IPv4 and 2 IPv6 blocks) + 4 blackholes + the gateway; one FDB and one neighbour entry"
                        + " per peer and family. In the 'entries per host' rows the three columns are routes, FDB and neighbour"
                        + " entries (not a distribution); in the 'reconcile' rows, the reconcile that adds everything and the one"
                        + " that finds nothing to change (every resync's cost).");
        for (double[] row : policy) {
            figures.add(
                    new Figure(
                            String.format(
                                    Locale.ROOT,
                                    "network policy, %d pods (%d here, %d rules)",
                                    (int) row[0],
                                    (int) row[1],
                                    (int) row[2]),
                            "resolve / write / idle pass",
                            "ms",
                            new Distribution(1, row[3], row[4], row[5])));
            figures.add(
                    new Figure(
                            String.format(
                                    Locale.ROOT,
                                    "network policy, %d pods: a new pod's ADD waits",
                                    (int) row[0]),
                            "resolve + isolate",
                            "ms",
                            new Distribution(1, row[6], row[6], row[6])));
        }
        notes.add(
                "Network policy (PolicyScaleProbe): namespaces of 20 dual-stack pods, "
                        + POLICY_LOCAL_PODS
                        + " of the cluster's pods on this host, four policies per namespace (a default deny of both"
                        + " directions letting DNS and the namespace's own pods out; a0 from a1 on TCP 8080; every pod's"
                        + " named metrics port from a monitoring namespace; a0 from the a3 pods of every namespace on TCP"
                        + " 8080, a quarter of the cluster). In the 'network policy' rows the three columns"
                        + " are the resolution alone, the first write of the table and a pass that changes nothing (every"
                        + " 30 s resync: resolution and a read of the table), each a median of 5 but the write; the"
                        + " 'ADD waits' row is what an ADD of a pod a policy selects waits for (the pod's own resolution"
                        + " and its chains added to the table as it is, HostPolicy.isolate), a median of 5.");
        notes.add(
                "Convergence samples are from the plugin's exit after the ADD on h2 to the first echo the pod on h1"
                        + " received (one echo request every 5 ms); a negative value means the route was there before the plugin"
                        + " exited (the claim's hint goes out before the pod is wired).");
        List<Plot> plots = new ArrayList<>();
        if (!convergenceSeries.isEmpty()) {
            plots.add(
                    new Plot(
                            "pod-network-convergence.png",
                            "Route convergence per sample",
                            "sample",
                            "ms",
                            false,
                            convergenceSeries));
        }
        plots.add(
                new Plot(
                        "pod-network-scale.png",
                        "One host's routing as the cluster grows",
                        "nodes",
                        "entries / ms",
                        true,
                        List.of(
                                new Plot.Series("routes", nodes, routes),
                                new Plot.Series("FDB entries", nodes, fdb),
                                new Plot.Series("reconcile, all new (ms)", nodes, all),
                                new Plot.Series("reconcile, none changed (ms)", nodes, idle))));
        return new ScenarioReport(
                id(),
                "Pod network: throughput, latency and convergence across hosts",
                String.format(
                        Locale.ROOT,
                        "The fabric's 3-member cluster (one L2 segment, mutual TLS, Cassandra), the members restarted"
                                + " in mode direct, then vxlan (then the default again). In each mode a pod on h1 and one on h2 (real"
                                + " plugin, default MTU of the mode); %d rounds, each running in a seeded random order: iperf3 for %d s"
                                + " host-to-host (h1 → h2's underlay address) and pod-to-pod, and %d pings each way; then %d"
                                + " convergence samples (see notes). Finally RoutingScaleProbe (see notes) in a scratch namespace.",
                        context.repetitions(ROUNDS),
                        context.quick() ? 2 : IPERF_SECONDS,
                        context.quick() ? 20 : PINGS,
                        context.quick() ? 3 : CONVERGENCE_SAMPLES),
                figures,
                comparisons,
                goals,
                plots,
                notes);
    }

    private static Distribution dist(List<Double> values) {
        return Distribution.of(values.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** @return the routes, neighbours and VXLAN forwarding entries of a host, for a failure's message */
    private static String dataplane(String netns, String host) {
        return "\n---- "
                + host
                + ": routes\n"
                + run("ip", "-n", netns, "route")
                + "---- "
                + host
                + ": neighbours\n"
                + run("ip", "-n", netns, "neigh")
                + "---- "
                + host
                + ": forwarding database\n"
                + run("bridge", "-n", netns, "fdb", "show");
    }

    private static String run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            return out;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
