package io.cadastre.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.IpPrefix;
import io.cadastre.dataplane.PolicyRules;
import io.cadastre.dataplane.PolicyRules.Direction;
import io.cadastre.dataplane.PolicyRules.Peer;
import io.cadastre.dataplane.PolicyRules.PodPolicy;
import io.cadastre.dataplane.PolicyRules.Ports;
import io.cadastre.dataplane.PolicyRules.Rule;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The resolver against the semantics of the Kubernetes API reference (NetworkPolicy v1), with
 * policies written as kubectl would take them. Node {@code n1} is this host; pods on {@code n2}
 * are only peers.
 */
class NetworkPolicyResolverTest {
    private final NetworkPolicyResolver resolver = new NetworkPolicyResolver("n1");

    /** Every pod of shop isolated for ingress, open to the pods labelled app=web. */
    private static final String SHOP_FROM_WEB =
            """
            kind: NetworkPolicy
            metadata: {name: p, namespace: shop}
            spec:
              podSelector: {}
              ingress: [{from: [{podSelector: {matchLabels: {app: web}}}]}]
            """;

    private final List<Namespace> namespaces =
            List.of(
                    namespace("shop", Map.of("team", "shop")),
                    namespace("ops", Map.of("team", "ops", "monitoring", "yes")),
                    namespace("dev", Map.of("team", "dev")));

    /** shop/web on n1, shop/db on n1, shop/cache on n2, ops/prom on n2, dev/tool on n1. */
    private final List<Pod> pods =
            List.of(
                    pod("shop", "web", "n1", Map.of("app", "web"), "198.18.0.1", "fd00:198::1"),
                    pod("shop", "db", "n1", Map.of("app", "db"), "198.18.0.2", "fd00:198::2"),
                    pod("shop", "cache", "n2", Map.of("app", "cache"), "198.18.1.3"),
                    pod("ops", "prom", "n2", Map.of("app", "prom"), "198.18.1.4"),
                    pod("dev", "tool", "n1", Map.of("app", "tool"), "198.18.0.5"));

    @Test
    void noPolicyIsolatesNothing() {
        assertEquals(PolicyRules.NONE, resolver.resolve(List.of(), pods, namespaces));
    }

    @Test
    void aDefaultDenyIsolatesEveryLocalPodOfItsNamespaceForIngressOnly() {
        PolicyRules rules =
                resolve(
                        """
                        kind: NetworkPolicy
                        metadata: {name: default-deny, namespace: shop}
                        spec:
                          podSelector: {}
                        """);
        assertEquals(List.of("shop/db", "shop/web"), names(rules));
        PodPolicy web = pod(rules, "shop/web");
        assertEquals(Direction.DENY_ALL, web.ingress());
        assertEquals(Direction.OPEN, web.egress());
        assertEquals(List.of(ip("198.18.0.1"), ip("fd00:198::1")), web.addresses());
        assertTrue(rules.enforced());
    }

    @Test
    void podSelectorPeersAreThePodsOfThePolicysNamespaceAnywhereWithTheirAddresses() {
        PolicyRules rules =
                resolve(
                        """
                        kind: NetworkPolicy
                        metadata: {name: db, namespace: shop}
                        spec:
                          podSelector: {matchLabels: {app: db}}
                          ingress:
                          - from:
                            - podSelector: {matchExpressions: [{key: app, operator: In, values: [web, cache]}]}
                            ports:
                            - port: 5432
                        """);
        assertEquals(List.of("shop/db"), names(rules));
        assertEquals(
                List.of(
                        new Rule(
                                List.of(
                                        host("198.18.1.3"),
                                        host("198.18.0.1"),
                                        host("fd00:198::1")),
                                List.of(new Ports(Ports.TCP, 5432, 5432)))),
                pod(rules, "shop/db").ingress().rules());
    }

    @Test
    void namespaceAndPodSelectorInOnePeerAreAndInTwoPeersOr() {
        String and =
                """
                kind: NetworkPolicy
                metadata: {name: and, namespace: shop}
                spec:
                  podSelector: {matchLabels: {app: db}}
                  ingress:
                  - from:
                    - namespaceSelector: {matchLabels: {monitoring: "yes"}}
                      podSelector: {matchLabels: {app: web}}
                """;
        // ops has no pod labelled web, so the only peer selects nothing: the rule lets nothing in.
        assertEquals(Direction.DENY_ALL, pod(resolve(and), "shop/db").ingress());
        String or =
                """
                kind: NetworkPolicy
                metadata: {name: or, namespace: shop}
                spec:
                  podSelector: {matchLabels: {app: db}}
                  ingress:
                  - from:
                    - namespaceSelector: {matchLabels: {monitoring: "yes"}}
                    - podSelector: {matchLabels: {app: web}}
                """;
        assertEquals(
                List.of(
                        new Rule(
                                List.of(
                                        host("198.18.1.4"),
                                        host("198.18.0.1"),
                                        host("fd00:198::1")),
                                List.of())),
                pod(resolve(or), "shop/db").ingress().rules());
        String everyNamespace =
                """
                kind: NetworkPolicy
                metadata: {name: all-ns, namespace: shop}
                spec:
                  podSelector: {matchLabels: {app: db}}
                  ingress:
                  - from:
                    - namespaceSelector: {}
                      podSelector: {matchLabels: {app: tool}}
                """;
        assertEquals(
                List.of(new Rule(List.of(host("198.18.0.5")), List.of())),
                pod(resolve(everyNamespace), "shop/db").ingress().rules());
    }

    @Test
    void ipBlocksKeepTheirExceptionsOfTheirFamilyAndLoseHostBits() {
        PolicyRules rules =
                resolve(
                        """
                        kind: NetworkPolicy
                        metadata: {name: blocks, namespace: dev}
                        spec:
                          podSelector: {}
                          policyTypes: [Egress]
                          egress:
                          - to:
                            - ipBlock: {cidr: 198.19.7.9/16, except: [198.19.7.0/24, "fd00::/8"]}
                            - ipBlock: {cidr: "fd00:198:9::/48"}
                            - ipBlock: {cidr: 198.19.0.0/16, except: [not-a-cidr]}
                            - ipBlock: {cidr: example.com/24}
                            ports:
                            - {protocol: UDP, port: 53}
                            - {protocol: TCP, port: 8000, endPort: 8080}
                            - {protocol: SCTP}
                            - {protocol: ICMP, port: 1}
                        """);
        PodPolicy tool = pod(rules, "dev/tool");
        assertEquals(Direction.OPEN, tool.ingress());
        assertEquals(
                List.of(
                        new Rule(
                                List.of(
                                        new Peer(
                                                IpPrefix.parse("198.19.0.0/16"),
                                                List.of(IpPrefix.parse("198.19.7.0/24"))),
                                        new Peer(IpPrefix.parse("fd00:198:9::/48"), List.of())),
                                List.of(
                                        new Ports(Ports.UDP, 53, 53),
                                        new Ports(Ports.TCP, 8000, 8080),
                                        Ports.all(Ports.SCTP)))),
                tool.egress().rules());
    }

    @Test
    void policyTypesDefaultToIngressAndEgressWhenThereAreEgressRules() {
        String egressRules =
                """
                kind: NetworkPolicy
                metadata: {name: p, namespace: dev}
                spec:
                  podSelector: {}
                  egress:
                  - ports: [{port: 443}]
                """;
        PodPolicy tool = pod(resolve(egressRules), "dev/tool");
        assertEquals(Direction.DENY_ALL, tool.ingress());
        assertEquals(
                List.of(new Rule(List.of(), List.of(new Ports(Ports.TCP, 443, 443)))),
                tool.egress().rules());
        String egressOnly =
                """
                kind: NetworkPolicy
                metadata: {name: p, namespace: dev}
                spec:
                  podSelector: {}
                  policyTypes: [Egress]
                """;
        PodPolicy isolatedOut = pod(resolve(egressOnly), "dev/tool");
        assertEquals(Direction.OPEN, isolatedOut.ingress());
        assertEquals(Direction.DENY_ALL, isolatedOut.egress());
    }

    @Test
    void rulesOfEveryPolicySelectingAPodAddUp() {
        PolicyRules rules =
                resolve(
                        """
                        kind: NetworkPolicy
                        metadata: {name: a, namespace: shop}
                        spec:
                          podSelector: {}
                          ingress: [{ports: [{port: 80}]}]
                        """,
                        """
                        kind: NetworkPolicy
                        metadata: {name: b, namespace: shop}
                        spec:
                          podSelector: {matchLabels: {app: web}}
                          ingress: [{ports: [{port: 443}]}]
                        """);
        assertEquals(
                List.of(
                        new Rule(List.of(), List.of(new Ports(Ports.TCP, 80, 80))),
                        new Rule(List.of(), List.of(new Ports(Ports.TCP, 443, 443)))),
                pod(rules, "shop/web").ingress().rules());
        assertEquals(
                List.of(new Rule(List.of(), List.of(new Ports(Ports.TCP, 80, 80)))),
                pod(rules, "shop/db").ingress().rules());
    }

    @Test
    void namedPortsResolveOnTheSelectedPodForIngressAndOnEachDestinationForEgress() {
        List<Pod> named = new ArrayList<>(pods);
        named.set(0, withPort(named.get(0), "http", 8080, "TCP"));
        named.set(2, withPort(named.get(2), "http", 9090, "TCP"));
        named.set(3, withPort(named.get(3), "http", 7070, "UDP"));
        NetworkPolicy ingress =
                policy(
                        """
                        kind: NetworkPolicy
                        metadata: {name: in, namespace: shop}
                        spec:
                          podSelector: {}
                          ingress: [{ports: [{port: http}]}]
                        """);
        PolicyRules in = resolver.resolve(List.of(ingress), named, namespaces);
        assertEquals(
                List.of(new Rule(List.of(), List.of(new Ports(Ports.TCP, 8080, 8080)))),
                pod(in, "shop/web").ingress().rules());
        assertEquals(Direction.DENY_ALL, pod(in, "shop/db").ingress(), "db has no port named http");
        NetworkPolicy egress =
                policy(
                        """
                        kind: NetworkPolicy
                        metadata: {name: out, namespace: dev}
                        spec:
                          podSelector: {}
                          policyTypes: [Egress]
                          egress:
                          - to: [{namespaceSelector: {}}, {ipBlock: {cidr: 0.0.0.0/0}}]
                            ports: [{port: http}]
                        """);
        PolicyRules out = resolver.resolve(List.of(egress), named, namespaces);
        assertEquals(
                List.of(
                        new Rule(
                                List.of(host("198.18.1.3")),
                                List.of(new Ports(Ports.TCP, 9090, 9090))),
                        new Rule(
                                List.of(host("198.18.0.1"), host("fd00:198::1")),
                                List.of(new Ports(Ports.TCP, 8080, 8080)))),
                pod(out, "dev/tool").egress().rules(),
                "the UDP port of that name and the ipBlock give nothing");
    }

    /**
     * The resolver reads each pod object once and keeps what it read for the next resolution, by
     * the object's identity: an updated pod (a new object) is read anew, and the addresses an ADD
     * lends a pod whose status has none follow each call, not the first.
     */
    @Test
    void aPodsNewObjectIsReadAnewAndLentAddressesFollowEachCall() {
        NetworkPolicy p = policy(SHOP_FROM_WEB);
        Pod fresh =
                new PodBuilder(pod("shop", "fresh", "n1", Map.of("app", "fresh"), "198.18.0.7"))
                        .editStatus()
                        .withPodIP(null)
                        .withPodIPs(List.of())
                        .endStatus()
                        .build();
        List<Pod> before = new ArrayList<>(pods);
        before.add(fresh);
        Map<String, List<java.net.InetAddress>> lent =
                Map.of("shop/fresh", List.of(ip("198.18.0.9")));

        PolicyRules first = resolver.resolve(List.of(p), before, namespaces, lent);
        assertEquals(
                List.of(new Rule(List.of(host("198.18.0.1"), host("fd00:198::1")), List.of())),
                pod(first, "shop/db").ingress().rules());
        assertEquals(List.of(ip("198.18.0.9")), pod(first, "shop/fresh").addresses());
        assertEquals(
                List.of(),
                pod(resolver.resolve(List.of(p), before, namespaces), "shop/fresh").addresses(),
                "lent by the call that lends them only");

        List<Pod> after = new ArrayList<>();
        for (Pod pod : before) {
            after.add(
                    pod.getMetadata().getName().equals("web")
                            ? new PodBuilder(pod)
                                    .editMetadata()
                                    .withLabels(Map.of("app", "web-old"))
                                    .endMetadata()
                                    .build()
                            : pod);
        }
        assertEquals(
                List.of(),
                pod(resolver.resolve(List.of(p), after, namespaces), "shop/db").ingress().rules(),
                "web's new object is read: its peer selects nothing now");
    }

    @Test
    void hostNetworkAndFinishedPodsAreNeitherIsolatedNorPeers() {
        List<Pod> more = new ArrayList<>(pods);
        more.add(
                new PodBuilder(pod("shop", "agent", "n1", Map.of("app", "web"), "198.19.0.1"))
                        .editSpec()
                        .withHostNetwork(true)
                        .endSpec()
                        .build());
        more.add(
                new PodBuilder(pod("shop", "job", "n1", Map.of("app", "web"), "198.18.0.9"))
                        .editStatus()
                        .withPhase("Succeeded")
                        .endStatus()
                        .build());
        NetworkPolicy p = policy(SHOP_FROM_WEB);
        PolicyRules rules = resolver.resolve(List.of(p), more, namespaces);
        assertEquals(List.of("shop/db", "shop/web"), names(rules));
        assertEquals(
                List.of(new Rule(List.of(host("198.18.0.1"), host("fd00:198::1")), List.of())),
                pod(rules, "shop/db").ingress().rules());
    }

    @Test
    void aSelectorTheApiServerWouldRefuseSelectsNothing() {
        PolicyRules rules =
                resolve(
                        """
                        kind: NetworkPolicy
                        metadata: {name: p, namespace: shop}
                        spec:
                          podSelector: {}
                          ingress:
                          - from:
                            - podSelector: {matchExpressions: [{key: app, operator: Like, values: [web]}]}
                            - podSelector: {matchExpressions: [{key: app, operator: In, values: []}]}
                            - podSelector: {matchExpressions: [{key: app, operator: Exists, values: [web]}]}
                            - {}
                        """);
        assertEquals(Direction.DENY_ALL, pod(rules, "shop/web").ingress());
        assertFalse(LabelSelectors.matches(null, Map.of()));
    }

    @Test
    void theSameStateGivesTheSameRulesWhateverTheOrderOfTheCaches() {
        List<NetworkPolicy> policies =
                List.of(
                        policy(
                                """
                                kind: NetworkPolicy
                                metadata: {name: a, namespace: shop}
                                spec:
                                  podSelector: {}
                                  ingress: [{from: [{namespaceSelector: {}}]}]
                                """),
                        policy(
                                """
                                kind: NetworkPolicy
                                metadata: {name: b, namespace: shop}
                                spec:
                                  podSelector: {}
                                  ingress: [{from: [{ipBlock: {cidr: 198.19.0.0/16}}]}]
                                """));
        PolicyRules first = resolver.resolve(policies, pods, namespaces);
        Random random = new Random(7);
        for (int i = 0; i < 5; i++) {
            List<NetworkPolicy> p = new ArrayList<>(policies);
            List<Pod> q = new ArrayList<>(pods);
            List<Namespace> n = new ArrayList<>(namespaces);
            Collections.shuffle(p, random);
            Collections.shuffle(q, random);
            Collections.shuffle(n, random);
            assertEquals(first, resolver.resolve(p, q, n));
        }
    }

    private PolicyRules resolve(String... yaml) {
        return resolver.resolve(
                java.util.Arrays.stream(yaml).map(NetworkPolicyResolverTest::policy).toList(),
                pods,
                namespaces);
    }

    private static NetworkPolicy policy(String yaml) {
        return Serialization.unmarshal(
                "apiVersion: networking.k8s.io/v1\n" + yaml, NetworkPolicy.class);
    }

    private static List<String> names(PolicyRules rules) {
        return rules.pods().stream().map(PodPolicy::pod).toList();
    }

    private static PodPolicy pod(PolicyRules rules, String name) {
        return rules.pods().stream()
                .filter(p -> p.pod().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError(name + " not isolated: " + rules));
    }

    private static Namespace namespace(String name, Map<String, String> labels) {
        return new NamespaceBuilder()
                .withNewMetadata()
                .withName(name)
                .withLabels(labels)
                .endMetadata()
                .build();
    }

    private static Pod pod(
            String namespace, String name, String node, Map<String, String> labels, String... ips) {
        return new PodBuilder()
                .withNewMetadata()
                .withNamespace(namespace)
                .withName(name)
                .withLabels(labels)
                .endMetadata()
                .withNewSpec()
                .withNodeName(node)
                .addNewContainer()
                .withName("c")
                .endContainer()
                .endSpec()
                .withNewStatus()
                .withPhase("Running")
                .withPodIP(ips[0])
                .addAllToPodIPs(
                        java.util.Arrays.stream(ips)
                                .map(ip -> new io.fabric8.kubernetes.api.model.PodIP(ip))
                                .toList())
                .endStatus()
                .build();
    }

    private static Pod withPort(Pod pod, String name, int number, String protocol) {
        return new PodBuilder(pod)
                .editSpec()
                .editFirstContainer()
                .addNewPort()
                .withName(name)
                .withContainerPort(number)
                .withProtocol(protocol)
                .endPort()
                .endContainer()
                .endSpec()
                .build();
    }

    private static java.net.InetAddress ip(String literal) {
        return IpPrefix.literal(literal);
    }

    private static Peer host(String literal) {
        return Peer.host(ip(literal));
    }
}
