package io.cadastre.bench.network;

import io.cadastre.dataplane.HostPolicy;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.NetlinkHostPolicy;
import io.cadastre.dataplane.PolicyRules;
import io.cadastre.kube.NetworkPolicyResolver;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodIP;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One node's NetworkPolicy work for a cluster of N pods, for real: {@link NetworkPolicyResolver}
 * over synthetic caches and {@link NetlinkHostPolicy} writing the table in the namespace this JVM
 * runs in (the scenario starts it with {@code ip netns exec} in a scratch namespace).
 *
 * <p>The cluster: namespaces of 20 dual-stack pods (labels {@code app=a0..a3}), every pod with a
 * TCP port named {@code metrics}; {@code LOCAL} of them on this node, spread over the namespaces;
 * a {@code monitoring} namespace of 10 more. Each namespace has four policies, as an operator
 * writes them: a default deny of both directions that lets DNS (one ipBlock, UDP 53) and the
 * namespace's own pods out; {@code a0} reachable from {@code a1} on TCP 8080; every pod's {@code
 * metrics} port from the monitoring namespace; {@code a0} reachable on TCP 8080 from the {@code
 * a3} pods of every namespace (a quarter of the cluster: the peer that grows with it).
 *
 * <p>Prints one line per N: {@code pods local rules resolveMs writeMs idleMs gatedMs}: the
 * resolution alone, the first write of the table, a pass that finds nothing to change (the 30 s
 * resync's cost: resolution and a read of the table), and what an ADD of a selected pod waits for
 * (its own resolution and {@link HostPolicy#isolate}: its chains added to the table as it is).
 * Each time but the first write's is the median of 5. Then it removes the table.
 *
 * <p>Usage: {@code PolicyScaleProbe LOCAL N...}
 */
public final class PolicyScaleProbe {
    private static final int PER_NAMESPACE = 20;
    private static final int REPEATS = 5;
    private static final Pattern RULES = Pattern.compile("(\\d+) rules");

    private PolicyScaleProbe() {}

    public static void main(String[] args) throws Exception {
        int local = Integer.parseInt(args[0]);
        HostPolicy host = new NetlinkHostPolicy();
        NetworkPolicyResolver resolver = new NetworkPolicyResolver("n0");
        for (int a = 1; a < args.length; a++) {
            int pods = Integer.parseInt(args[a]);
            Cluster c = cluster(pods, local);
            double[] resolve = new double[REPEATS];
            PolicyRules rules = null;
            for (int i = 0; i < REPEATS; i++) {
                long t = System.nanoTime();
                rules = resolver.resolve(c.policies, c.pods, c.namespaces);
                resolve[i] = (System.nanoTime() - t) / 1e6;
            }
            long t = System.nanoTime();
            Optional<HostRouting.Change> first = host.reconcile(rules);
            double write = (System.nanoTime() - t) / 1e6;
            Matcher m = RULES.matcher(first.map(Object::toString).orElse(""));
            if (!m.find()) {
                throw new IllegalStateException(pods + " pods: nothing written: " + first);
            }
            double[] idle = new double[REPEATS];
            for (int i = 0; i < REPEATS; i++) {
                long s = System.nanoTime();
                Optional<HostRouting.Change> none =
                        host.reconcile(resolver.resolve(c.policies, c.pods, c.namespaces));
                idle[i] = (System.nanoTime() - s) / 1e6;
                if (none.isPresent()) {
                    throw new IllegalStateException("an idle pass wrote: " + none.get());
                }
            }
            // A new pod on this node: its ADD's addresses, before kubelet reports them.
            Pod fresh = pod("ns-0", "fresh", 0, "n0", List.of());
            List<Pod> withFresh = new ArrayList<>(c.pods);
            withFresh.add(fresh);
            double[] gated = new double[REPEATS];
            for (int i = 0; i < REPEATS; i++) {
                Map<String, List<InetAddress>> wired =
                        Map.of(
                                "ns-0/fresh",
                                List.of(
                                        InetAddress.getByName("198.19.255." + (1 + i)),
                                        InetAddress.getByName("fd00:198:ffff::" + (1 + i))));
                long s = System.nanoTime();
                Optional<HostRouting.Change> isolated =
                        host.isolate(
                                resolver.resolvePod(
                                                "ns-0/fresh",
                                                c.policies,
                                                withFresh,
                                                c.namespaces,
                                                wired)
                                        .orElseThrow());
                gated[i] = (System.nanoTime() - s) / 1e6;
                if (isolated.isEmpty()) {
                    throw new IllegalStateException("the new pod was not isolated");
                }
            }
            System.out.printf(
                    Locale.ROOT,
                    "%d %d %s %.1f %.1f %.1f %.1f%n",
                    pods,
                    Math.min(local, pods),
                    m.group(1),
                    median(resolve),
                    write,
                    median(idle),
                    median(gated));
            host.reconcile(PolicyRules.NONE);
        }
    }

    private record Cluster(
            List<NetworkPolicy> policies, List<Pod> pods, List<Namespace> namespaces) {}

    static Cluster cluster(int podCount, int local) {
        List<Pod> pods = new ArrayList<>();
        List<Namespace> namespaces = new ArrayList<>();
        List<NetworkPolicy> policies = new ArrayList<>();
        int spacing = Math.max(1, podCount / Math.max(1, local));
        int namespaceCount = (podCount + PER_NAMESPACE - 1) / PER_NAMESPACE;
        for (int n = 0; n < namespaceCount; n++) {
            String ns = "ns-" + n;
            namespaces.add(namespace(ns, "t" + (n % 10)));
            policies.addAll(policies(ns));
        }
        for (int j = 0; j < podCount; j++) {
            String node = j % spacing == 0 && j / spacing < local ? "n0" : "n" + (1 + j % 50);
            pods.add(pod("ns-" + (j / PER_NAMESPACE), "p" + j, j, node, addresses(j)));
        }
        namespaces.add(namespace("monitoring", "monitoring"));
        for (int j = 0; j < 10; j++) {
            int id = podCount + j;
            Pod prom = pod("monitoring", "prom-" + j, id, "n" + (1 + j), addresses(id));
            prom.getMetadata().setLabels(Map.of("app", "prom"));
            pods.add(prom);
        }
        return new Cluster(policies, pods, namespaces);
    }

    private static List<String> addresses(int id) {
        return List.of(
                "198.18." + (id / 250) + "." + (1 + id % 250),
                "fd00:198::" + Integer.toHexString(id + 1));
    }

    private static List<NetworkPolicy> policies(String ns) {
        return Arrays.stream(
                        new String[] {
                            """
                            metadata: {name: default-deny, namespace: %s}
                            spec:
                              podSelector: {}
                              policyTypes: [Ingress, Egress]
                              egress:
                              - to: [{ipBlock: {cidr: 198.19.0.10/32}}]
                                ports: [{protocol: UDP, port: 53}]
                              - to: [{podSelector: {}}]
                            """,
                            """
                            metadata: {name: frontend, namespace: %s}
                            spec:
                              podSelector: {matchLabels: {app: a0}}
                              ingress:
                              - from: [{podSelector: {matchLabels: {app: a1}}}]
                                ports: [{port: 8080}]
                            """,
                            """
                            metadata: {name: monitoring, namespace: %s}
                            spec:
                              podSelector: {}
                              ingress:
                              - from: [{namespaceSelector: {matchLabels: {team: monitoring}}}]
                                ports: [{port: metrics}]
                            """,
                            """
                            metadata: {name: from-gateways, namespace: %s}
                            spec:
                              podSelector: {matchLabels: {app: a0}}
                              ingress:
                              - from: [{namespaceSelector: {}, podSelector: {matchLabels: {app: a3}}}]
                                ports: [{port: 8080}]
                            """
                        })
                .map(
                        yaml ->
                                Serialization.unmarshal(
                                        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
                                                + yaml.formatted(ns),
                                        NetworkPolicy.class))
                .toList();
    }

    private static Namespace namespace(String name, String team) {
        return new NamespaceBuilder()
                .withNewMetadata()
                .withName(name)
                .withLabels(Map.of("team", team))
                .endMetadata()
                .build();
    }

    private static Pod pod(String ns, String name, int id, String node, List<String> ips) {
        return new PodBuilder()
                .withNewMetadata()
                .withNamespace(ns)
                .withName(name)
                .withLabels(Map.of("app", "a" + (id % 4)))
                .endMetadata()
                .withNewSpec()
                .withNodeName(node)
                .addNewContainer()
                .withName("app")
                .addNewPort()
                .withName("metrics")
                .withContainerPort(9100)
                .withProtocol("TCP")
                .endPort()
                .endContainer()
                .endSpec()
                .withNewStatus()
                .withPhase(ips.isEmpty() ? "Pending" : "Running")
                .withPodIPs(ips.stream().map(PodIP::new).toList())
                .endStatus()
                .build();
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
