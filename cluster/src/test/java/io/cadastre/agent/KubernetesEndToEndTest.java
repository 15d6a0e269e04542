package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlOutput.Run;
import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.ipam.Cidr;
import io.cadastre.kube.KubeObjects;
import io.cadastre.kube.MockKubernetesApi;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.TestNetns;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Kubernetes objects driving a real agent end to end (issue 15): fabric8's mock API server in this
 * JVM ({@link MockKubernetesApi}), a real agent process configured as the DaemonSet's pod is
 * (the kubelet's {@code KUBERNETES_SERVICE_HOST}/{@code PORT}, the service account's token, CA and
 * namespace, {@code CADASTRE_KUBERNETES_ENABLED}, the Node's name, the pod IP as
 * {@code CADASTRE_CLUSTER_HOSTNAME}, bootstrap from its own pod), the real plugin executable called
 * with the {@code CNI_ARGS} a container runtime passes for a pod, real network namespaces (root);
 * the IPAM's state read through cadastrectl and the admin API.
 *
 * <p>The agent's pools: two selected by the Node's zone label, two for annotations, two IPv6
 * pools; selection by labels takes a family's matching pools by name, so the zone pools come first.
 * The reclaim grace is 1 s. The test with the API down runs last: the API stays down after it.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubernetesEndToEndTest {
    private static final String ZONE = "topology.kubernetes.io/zone";
    private static final String NETWORK = "k8se2e";
    private static final String ZONE_A = "198.18.176.0/24";
    private static final String ZONE_B = "198.18.177.0/24";
    private static final String FOR_NAMESPACES = "198.18.178.0/24";
    private static final String FOR_PODS = "198.18.179.0/24";
    private static final String IPV6 = "fd00:198:b0::/112";
    private static final String IPV6_FOR_PODS = "fd00:198:b1::/112";
    private static final String CONFIG =
            """
            cadastre.pools = [
              { name = "k8se2e-a-zone-a", cidr = "%s", block-size = 28, node-selector = "%s=e2e-a" }
              { name = "k8se2e-a-zone-b", cidr = "%s", block-size = 28, node-selector = "%s=e2e-b" }
              { name = "k8se2e-b-namespace", cidr = "%s", block-size = 28 }
              { name = "k8se2e-c-pod", cidr = "%s", block-size = 28 }
              { name = "k8se2e-ipv6", cidr = "%s", block-size = 122 }
              { name = "k8se2e-ipv6-pod", cidr = "%s", block-size = 122 }
            ]
            cadastre.cleanup.attachments { interval = 200ms, grace = 1s }
            cadastre.kubernetes.other-agents-check-interval = 200ms
            """
                    .formatted(
                            ZONE_A,
                            ZONE,
                            ZONE_B,
                            ZONE,
                            FOR_NAMESPACES,
                            FOR_PODS,
                            IPV6,
                            IPV6_FOR_PODS);
    private static final Duration WITHIN = Duration.ofSeconds(30);

    /**
     * One client for every request to the admin API: each client keeps its connections open, and
     * the admin API closes connections beyond its limit (128) at once.
     */
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static final String PLAIN = "k8se2e-plain";
    private static final String ANNOTATED = "k8se2e-annotated";
    private static final String IPV4_POOLS = "cadastre.io/ipv4pools";
    private static final String IPV6_POOLS = "cadastre.io/ipv6pools";
    private static final String IP_ADDRS = "cadastre.io/ipAddrs";

    private static final String NODE = "k8se2e-" + UUID.randomUUID().toString().substring(0, 8);

    /** NetworkPolicy's drops, by direction, as the agent's /metrics has them. */
    private static final String POLICY_DROPS = "cadastre_policy_dropped_packets_total";

    private static Path dir;
    private static MockKubernetesApi api;
    private static AgentProcess agent;
    private static String adminUrl;

    /** Pods ADDed and not DELeted yet: DELeted after each test, also when it failed. */
    private static final List<PodAdd> added = new ArrayList<>();

    private static final List<TestNetns> namespaces = new ArrayList<>();

    /** A pod's sandbox: its namespace and name in Kubernetes, netns, container ID, the netconf and the ADD's outcome. */
    record PodAdd(
            String namespace,
            String name,
            TestNetns ns,
            String container,
            String netconf,
            Result add) {
        List<String> ips() {
            List<String> ips = new ArrayList<>();
            add.json()
                    .path("ips")
                    .forEach(ip -> ips.add(ip.path("address").asText().split("/")[0]));
            return ips;
        }

        String v4() {
            return ips().stream()
                    .filter(ip -> !ip.contains(":"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError(add));
        }

        String v6() {
            return ips().stream()
                    .filter(ip -> ip.contains(":"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError(add));
        }

        String hostLink() {
            return HostInterfaceName.of(NETWORK, container, "eth0");
        }
    }

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("cad-k8se2e");
        try {
            api = MockKubernetesApi.start(dir);
            KubeObjects.node(api.admin(), NODE, Map.of(ZONE, "e2e-a"));
            KubeObjects.namespace(api.admin(), PLAIN, Map.of());
            int clusterPort = freePort("127.0.0.1");
            KubeObjects.agentPod(
                    api.admin(),
                    MockKubernetesApi.AGENTS,
                    "cadastre-agent-" + NODE,
                    NODE,
                    "127.0.0.1",
                    clusterPort);
            Map<String, String> env = new HashMap<>(api.inClusterEnvironment(dir));
            env.put("CADASTRE_KUBERNETES_ENABLED", "true");
            env.put("CADASTRE_KUBERNETES_NODE_NAME", NODE);
            env.put("CADASTRE_CLUSTER_HOSTNAME", "127.0.0.1");
            env.put("CADASTRE_CLUSTER_PORT", Integer.toString(clusterPort));
            agent = new AgentProcess(dir, NODE, CONFIG).withEnvironment(env).start();
            adminUrl = agent.adminUrl();
        } catch (Exception | AssertionError e) {
            stop();
            throw e;
        }
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (agent != null) {
                delAll();
                assertEquals(143, agent.stop(), "agent exit code on SIGTERM");
            }
        } finally {
            try {
                if (agent != null) {
                    agent.close();
                }
                for (TestNetns ns : namespaces) {
                    ns.close();
                }
            } finally {
                if (api != null) {
                    api.close();
                }
                CniEndToEndTest.deleteTree(dir);
            }
        }
    }

    @AfterEach
    void delPods() throws Exception {
        delAll();
    }

    /**
     * @return a port free on {@code host} now, for an agent's cluster port: its pod names the port,
     *     so the port is chosen before the agent starts
     */
    static int freePort(String host) throws java.io.IOException {
        try (java.net.ServerSocket s =
                new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName(host))) {
            return s.getLocalPort();
        }
    }

    // ---- the tests ----

    @Test
    @Order(1)
    void theNodesLabelsSelectThePoolsAndTheNextAddFollowsAChange() throws Exception {
        // The socket opened only once the Node's labels were read (labels-wait).
        assertTrue(
                Files.readString(agent.log())
                        .contains(
                                "cadastre-agent ready: node "
                                        + NODE
                                        + " (labels {"
                                        + ZONE
                                        + "=e2e-a})"),
                agent.tail());
        PodAdd first = add(PLAIN, "labels-1", Map.of());
        assertIn(ZONE_A, first.v4());
        assertIn(IPV6, first.v6());

        KubeObjects.node(api.admin(), NODE, Map.of(ZONE, "e2e-b"));
        try {
            awaitLabels(Map.of(ZONE, "e2e-b"));
            PodAdd second = add(PLAIN, "labels-2", Map.of());
            assertIn(ZONE_B, second.v4());
            assertIn(IPV6, second.v6());
            assertTrue(
                    first.ns().addresses("eth0").contains(first.v4() + "/32"),
                    "a running pod keeps its address");
        } finally {
            KubeObjects.node(api.admin(), NODE, Map.of(ZONE, "e2e-a"));
            awaitLabels(Map.of(ZONE, "e2e-a"));
        }
    }

    @Test
    @Order(2)
    void aNamespaceAnnotationChoosesThePoolsAndThePodsWins() throws Exception {
        KubeObjects.namespace(
                api.admin(), ANNOTATED, Map.of(IPV4_POOLS, "[\"k8se2e-b-namespace\"]"));
        PodAdd byNamespace = add(ANNOTATED, "by-namespace", Map.of());
        assertIn(FOR_NAMESPACES, byNamespace.v4());
        assertIn(
                // the family the annotation does not name keeps the Node's selection
                IPV6, byNamespace.v6());

        // By CIDR for IPv4, by name for IPv6.
        Map<String, String> pools =
                Map.of(IPV4_POOLS, "[\"" + FOR_PODS + "\"]", IPV6_POOLS, "[\"k8se2e-ipv6-pod\"]");
        PodAdd byPod = add(ANNOTATED, "by-pod", pools);
        assertIn(FOR_PODS, byPod.v4());
        assertIn(IPV6_FOR_PODS, byPod.v6());
        assertEquals(
                List.of(byPod.v4() + "/32", byPod.v6() + "/128").stream().sorted().toList(),
                byPod.ns().addresses("eth0").stream().sorted().toList());

        // The same through the IPAM-only plugin (another plugin wires the pod).
        PodAdd ipamOnly = add(ANNOTATED, "by-pod-ipam-only", pools, ipamOnlyNetconf());
        assertIn(FOR_PODS, ipamOnly.v4());
        assertIn(IPV6_FOR_PODS, ipamOnly.v6());
    }

    @Test
    @Order(3)
    void theIpAddrsAnnotationGivesThePodThoseAddresses() throws Exception {
        PodAdd fixed =
                add(PLAIN, "fixed", Map.of(IP_ADDRS, "[\"198.18.179.77\", \"fd00:198:b1::77\"]"));
        assertEquals(List.of("198.18.179.77", "fd00:198:b1::77"), fixed.ips());
        assertEquals(
                List.of("198.18.179.77/32", "fd00:198:b1::77/128"),
                fixed.ns().addresses("eth0").stream().sorted().toList());
        JsonNode holder = ctl("ipam", "address", "198.18.179.77", "-o", "json").json();
        assertEquals(
                PLAIN, holder.path("allocation").path("podNamespace").asText(), holder.toString());
        assertEquals(
                "fixed", holder.path("allocation").path("podName").asText(), holder.toString());
    }

    @Test
    @Order(4)
    void aBadAnnotationIsRefusedWithItsCodeAndChangesNothing() throws Exception {
        PodAdd holder = add(PLAIN, "holder", Map.of(IP_ADDRS, "[\"198.18.179.88\"]"));
        KubeObjects.namespace(api.admin(), "k8se2e-bad-namespace", Map.of(IPV4_POOLS, "[1, 2]"));
        String before = ipamState();

        record Bad(String namespace, String annotation, String value, int code, String inMessage) {}
        List<Bad> bad =
                List.of(
                        new Bad(
                                PLAIN,
                                IPV4_POOLS,
                                "k8se2e-b-namespace",
                                7,
                                IPV4_POOLS), // not a JSON array
                        new Bad(
                                PLAIN,
                                IPV4_POOLS,
                                "[\"no-such-pool\"]",
                                7,
                                "no-such-pool"), // no such pool
                        new Bad(
                                PLAIN,
                                IPV6_POOLS,
                                "[\"k8se2e-c-pod\"]",
                                7,
                                "k8se2e-c-pod"), // a pool of the other family
                        new Bad(
                                PLAIN,
                                IP_ADDRS,
                                "[\"198.18.250.1\"]",
                                102,
                                "198.18.250.1"), // in none of the chosen pools
                        new Bad(
                                PLAIN,
                                IP_ADDRS,
                                "[\"198.18.179.88\"]",
                                101,
                                "198.18.179.88"), // held by another pod
                        new Bad(
                                "k8se2e-bad-namespace",
                                "",
                                "",
                                7,
                                "namespace k8se2e-bad-namespace")); // the namespace's
        int i = 0;
        for (Bad b : bad) {
            String name = "bad-" + i++;
            PodAdd refused =
                    tryAdd(
                            b.namespace(),
                            name,
                            b.annotation().isEmpty()
                                    ? Map.of()
                                    : Map.of(b.annotation(), b.value()));
            Result r = refused.add();
            assertNotEquals(0, r.exit(), b + ": " + r);
            assertEquals(b.code(), r.code(), b + ": " + r);
            assertTrue(
                    r.json().path("msg").asText().contains(b.inMessage())
                            || r.json().path("details").asText().contains(b.inMessage()),
                    b + ": " + r);
            assertFalse(refused.ns().hasLink("eth0"), "a refused ADD leaves no interface: " + b);
            assertFalse(TestNetns.hostHasLink(refused.hostLink()), "nor a host end: " + b);
        }
        assertEquals(before, ipamState(), "refused ADDs changed the IPAM");
        assertEquals(
                List.of("198.18.179.88/32"),
                holder.ns().addresses("eth0").stream().filter(a -> !a.contains(":")).toList());
    }

    /**
     * NetworkPolicy on real traffic between pod netns on this host: a policy isolates a pod as soon
     * as the API has it, follows changes of pods' and namespaces' labels, and its table goes when
     * the last policy does. The pods' labels and addresses reach the API as kubelet reports them.
     */
    @Test
    @Order(5)
    void networkPoliciesFilterTrafficBetweenPodsAndFollowTheApi() throws Exception {
        String shop = "k8se2e-np-shop";
        String ops = "k8se2e-np-ops";
        KubeObjects.labelledNamespace(api.admin(), shop, Map.of("team", "shop"));
        KubeObjects.labelledNamespace(api.admin(), ops, Map.of("team", "ops"));
        PodAdd web = running(shop, "web", Map.of("app", "web"));
        PodAdd client = running(shop, "client", Map.of("app", "client"));
        PodAdd prom = running(ops, "prom", Map.of("app", "prom"));
        List<Process> listeners = new ArrayList<>();
        try {
            listeners.add(listen(web, 8080));
            listeners.add(listen(web, 9090));
            listeners.add(listen(prom, 8080));
            await(
                    () -> connects(client, web.v4(), 8080),
                    () -> "web serves port 8080 before any policy");
            assertTrue(pings(prom, web.v4()));
            assertTrue(pings(prom, web.v6()));

            // Ingress of web: from pods labelled client, TCP 8080 only.
            policy(
                    """
                    kind: NetworkPolicy
                    metadata: {name: web, namespace: %s}
                    spec:
                      podSelector: {matchLabels: {app: web}}
                      ingress:
                      - from: [{podSelector: {matchLabels: {app: client}}}]
                        ports: [{port: 8080}]
                    """
                            .formatted(shop));
            await(() -> !pings(prom, web.v4()), () -> "web isolated: " + policyTable());
            assertTrue(connects(client, web.v4(), 8080), "the rule's peer, on the rule's port");
            assertFalse(connects(client, web.v4(), 9090), "another port");
            assertFalse(connects(prom, web.v4(), 8080), "another pod");
            assertFalse(pings(client, web.v6()), "ICMPv6 is no TCP 8080");
            assertTrue(pings(web, prom.v4()), "web's egress is not isolated; the reply passes");
            assertTrue(pings(web, prom.v6()));
            double ingressDrops = sample(POLICY_DROPS, "direction", "ingress");
            assertTrue(ingressDrops > 0, "refused packets to web are counted: " + ingressDrops);
            assertEquals(0, sample(POLICY_DROPS, "direction", "egress"), "no egress isolated");

            // A new pod the policy selects is isolated when its ADD answers, before kubelet
            // reports its addresses: the API has its labels (scheduled), not yet its addresses.
            String before = policyComment();
            KubeObjects.runningPod(
                    api.admin(), shop, "web-2", NODE, Map.of("app", "web"), List.of());
            await(
                    () -> !policyComment().equals(before),
                    () -> "the agent's caches have the scheduled pod: " + policyTable());
            PodAdd web2 = sandboxAdd(shop, "web-2", netconf());
            assertEquals(0, web2.add().exit(), web2.add().toString());
            String table = policyTable();
            assertTrue(table.contains("ip daddr " + web2.v4() + " jump"), table);
            assertTrue(table.contains("ip6 daddr " + web2.v6() + " jump"), table);
            assertFalse(pings(prom, web2.v4()), "isolated from its first packet");

            // A namespace selector, and a relabelled namespace.
            policy(
                    """
                    kind: NetworkPolicy
                    metadata: {name: monitoring, namespace: %s}
                    spec:
                      podSelector: {}
                      ingress: [{from: [{namespaceSelector: {matchLabels: {team: ops}}}]}]
                    """
                            .formatted(shop));
            await(() -> connects(prom, web.v4(), 9090), () -> "ops may reach shop");
            assertTrue(pings(prom, web.v6()));
            KubeObjects.labelledNamespace(api.admin(), ops, Map.of("team", "elsewhere"));
            await(
                    () -> !pings(prom, web.v4()),
                    () -> "a relabelled namespace is no longer selected: " + policyTable());

            // Egress isolation of ops: no rule, so prom reaches nothing. client's ingress refuses
            // prom too, but prom's egress is checked first: the drops count as egress. Connections
            // to prom still work.
            policy(
                    """
                    kind: NetworkPolicy
                    metadata: {name: deny-egress, namespace: %s}
                    spec:
                      podSelector: {}
                      policyTypes: [Egress]
                    """
                            .formatted(ops));
            await(
                    () -> policyTable().contains("ip saddr " + prom.v4() + " jump "),
                    () -> "prom's egress isolated: " + policyTable());
            assertEquals(0, sample(POLICY_DROPS, "direction", "egress"));
            assertFalse(pings(prom, client.v4()), "prom reaches nothing");
            assertTrue(
                    sample(POLICY_DROPS, "direction", "egress") > 0,
                    () -> "prom's refused egress is counted: " + policyTable());
            assertTrue(connects(client, prom.v4(), 8080), "replies of a connection to prom pass");

            assertTrue(policyTable().contains("ingress"), policyTable());
            api.admin().network().v1().networkPolicies().inNamespace(shop).delete();
            api.admin().network().v1().networkPolicies().inNamespace(ops).delete();
            await(
                    () -> policyTable().isEmpty(),
                    () -> "the table goes with the last policy: " + policyTable());
            assertTrue(pings(prom, web.v4()));
            assertTrue(connects(prom, web.v4(), 9090));
            assertTrue(
                    sample(POLICY_DROPS, "direction", "ingress") >= ingressDrops,
                    "the count outlives the tables it was read from");
        } finally {
            listeners.forEach(Process::destroyForcibly);
            api.admin().network().v1().networkPolicies().inNamespace(shop).delete();
            api.admin().network().v1().networkPolicies().inNamespace(ops).delete();
            if (!policyTable().isEmpty()) {
                io.cadastre.testsupport.Command.run(
                        List.of("nft", "delete", "table", "inet", "cadastre-policy"));
            }
        }
    }

    @Test
    @Order(6)
    void anAttachmentWhosePodIsDeletedFromTheApiIsReleasedAfterTheGrace() throws Exception {
        PodAdd deleted = add(PLAIN, "deleted", Map.of());
        PodAdd kept = add(PLAIN, "kept", Map.of());
        double podGone = reclaimed("pod-gone");

        api.admin().pods().inNamespace(PLAIN).withName("deleted").delete();
        // The release is counted once the node has forgotten the attachment: wait for both.
        await(
                () -> !attached(deleted.container()) && reclaimed("pod-gone") == podGone + 1,
                () -> "attachment of the deleted pod not released:\n" + agent.tail());

        assertTrue(attached(kept.container()), "the pod still in the API keeps its attachment");
        assertTrue(TestNetns.hostHasLink(kept.hostLink()));
        assertFalse(
                TestNetns.hostHasLink(deleted.hostLink()),
                "released as DEL releases: the host end is gone");
        assertFalse(deleted.ns().hasLink("eth0"));
        assertTrue(
                Files.readString(agent.log())
                        .contains(
                                "reclaimed attachment "
                                        + NETWORK
                                        + "."
                                        + deleted.container()
                                        + "/eth0"),
                agent.tail());
        // The address is free again.
        JsonNode free = ctl("ipam", "address", deleted.v4(), "-o", "json").json();
        assertTrue(
                free.path("allocation").isMissingNode() || free.path("allocation").isNull(),
                free.toString());
    }

    /**
     * This agent's journal is its own (embedded): an agent of the DaemonSet on another node would
     * hand out the same addresses from a journal of its own. While its pod is listed, ADD answers
     * code 50 naming that node and changes nothing, {@code /readyz} says why, and a DEL still
     * frees what this node holds; once the pod is gone, ADDs are served again.
     */
    @Test
    @Order(7)
    void anAgentOnAnotherNodeStopsAddsUntilItsPodIsGone() throws Exception {
        PodAdd before = add(PLAIN, "lone-before", Map.of());
        String other = "k8se2e-other-" + UUID.randomUUID().toString().substring(0, 8);
        String otherPod = "cadastre-agent-" + other;
        KubeObjects.agentPod(
                api.admin(), MockKubernetesApi.AGENTS, otherPod, other, "127.0.0.9", 2552);
        try {
            await(
                    () -> readyz().contains("node " + other + ":"),
                    () -> "/readyz does not name " + other + ": " + readyz());
            String state = ipamState();
            PodAdd refused = tryAdd(PLAIN, "lone-refused", Map.of());
            Result r = refused.add();
            assertEquals(50, r.code(), r.toString());
            assertTrue(
                    r.json().path("details").asText().contains("node " + other + ":"),
                    r.toString());
            assertFalse(refused.ns().hasLink("eth0"), "a refused ADD leaves no interface");
            assertEquals(state, ipamState(), "the refused ADD changed the IPAM");

            // DEL goes on: what this node holds is freed.
            Map<String, String> env =
                    CniExec.env("DEL", before.container(), before.ns().path(), "eth0");
            Result del = CniExec.run(env, before.netconf());
            assertEquals(0, del.exit(), del.toString());
            added.remove(before);
            assertFalse(attached(before.container()), "still attached after its DEL");
        } finally {
            api.admin().pods().inNamespace(MockKubernetesApi.AGENTS).withName(otherPod).delete();
        }
        await(() -> readyz().equals("ready"), () -> "/readyz: " + readyz());
        PodAdd after = add(PLAIN, "lone-after", Map.of());
        assertIn(ZONE_A, after.v4());
    }

    @Test
    @Order(8)
    void withTheApiDownAnAddTheNetconfServesSucceedsAndNothingIsReleased() throws Exception {
        PodAdd held = add(PLAIN, "held", Map.of());
        PodAdd witness = add(PLAIN, "witness", Map.of());
        Map<String, String> labels = labels();
        double podGone = reclaimed("pod-gone");
        double netnsGone = reclaimed("netns-gone");

        api.stop();

        // A pod the API never showed the agent: not in the cache, and its GET fails. The netconf
        // (here: the pools the Node's last labels select) serves it.
        PodAdd unseen = add(PLAIN, "unseen", Map.of());
        assertIn(ZONE_A, unseen.v4());
        assertIn(IPV6, unseen.v6());

        // The witness's netns vanishes: the netns rule releases it after the grace, API or not.
        // Once it has, the reclaim has looked at the others for longer than the grace with the API
        // down.
        witness.ns().close();
        await(
                () -> !attached(witness.container()) && reclaimed("netns-gone") == netnsGone + 1,
                () -> "the witness was not reclaimed:\n" + agent.tail());
        assertEquals(
                podGone,
                reclaimed("pod-gone"),
                "nothing released for a pod the API could not be asked about");
        assertTrue(
                attached(held.container()),
                "a pod still in the API when it went away keeps its attachment");
        assertTrue(TestNetns.hostHasLink(held.hostLink()), "and its host end");
        assertTrue(attached(unseen.container()), "a pod the API never listed keeps its attachment");
        assertEquals(labels, labels(), "the Node's last labels stand");
        added.remove(witness);
    }

    // ---- pods ----

    /** Creates the pod bound to this node, then ADDs its sandbox through the full plugin, which must succeed. */
    private static PodAdd add(String namespace, String name, Map<String, String> annotations)
            throws Exception {
        return add(namespace, name, annotations, netconf());
    }

    private static PodAdd add(
            String namespace, String name, Map<String, String> annotations, String netconf)
            throws Exception {
        PodAdd pod = tryAdd(namespace, name, annotations, netconf);
        assertEquals(0, pod.add().exit(), pod.add().toString());
        return pod;
    }

    /**
     * Creates the pod bound to this node (unless the API is stopped), then ADDs its sandbox as a
     * container runtime does for a pod: a netns of its own, {@code CNI_ARGS} naming the pod.
     */
    private static PodAdd tryAdd(String namespace, String name, Map<String, String> annotations)
            throws Exception {
        return tryAdd(namespace, name, annotations, netconf());
    }

    private static PodAdd tryAdd(
            String namespace, String name, Map<String, String> annotations, String netconf)
            throws Exception {
        if (!api.stopped()) {
            KubeObjects.pod(api.admin(), namespace, name, NODE, annotations);
        }
        return sandboxAdd(namespace, name, netconf);
    }

    /** ADDs the pod's sandbox as a container runtime does: a netns of its own, {@code CNI_ARGS} naming the pod. */
    private static PodAdd sandboxAdd(String namespace, String name, String netconf)
            throws Exception {
        TestNetns ns = TestNetns.create();
        namespaces.add(ns);
        String container = CniEndToEndTest.container();
        Map<String, String> env = CniExec.env("ADD", container, ns.path(), "eth0");
        env.put(
                "CNI_ARGS",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE="
                        + namespace
                        + ";K8S_POD_NAME="
                        + name
                        + ";K8S_POD_INFRA_CONTAINER_ID="
                        + container
                        + ";K8S_POD_UID="
                        + UUID.randomUUID());
        PodAdd pod = new PodAdd(namespace, name, ns, container, netconf, CniExec.run(env, netconf));
        added.add(pod);
        return pod;
    }

    private static String netconf() {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\""
                + NETWORK
                + "\",\"type\":\"cadastre\",\"agentSocket\":\""
                + agent.socket()
                + "\",\"ipam\":{}}";
    }

    /** Another network whose plugin delegates IPAM to {@code cadastre-ipam}. */
    private static String ipamOnlyNetconf() {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\""
                + NETWORK
                + "-ipam\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + agent.socket()
                + "\"}}";
    }

    // ---- network policy ----

    /** ADDs the pod's sandbox, then reports it Running with its labels and addresses, as kubelet does. */
    private static PodAdd running(String namespace, String name, Map<String, String> labels)
            throws Exception {
        PodAdd pod = add(namespace, name, Map.of());
        KubeObjects.runningPod(api.admin(), namespace, name, NODE, labels, pod.ips());
        return pod;
    }

    private static void policy(String yaml) {
        api.admin()
                .network()
                .v1()
                .networkPolicies()
                .resource(
                        io.fabric8.kubernetes.client.utils.Serialization.unmarshal(
                                "apiVersion: networking.k8s.io/v1\n" + yaml,
                                io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy.class))
                .createOr(existing -> existing.update());
    }

    /** A TCP server in the pod's netns that accepts every connection and closes it. */
    private static Process listen(PodAdd pod, int port) throws java.io.IOException {
        return new ProcessBuilder(
                        "nsenter",
                        "--net=" + pod.ns().path(),
                        "busybox",
                        "nc",
                        "-ll",
                        "-p",
                        Integer.toString(port),
                        "-e",
                        "true")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
    }

    /** Whether a TCP connection from the pod to {@code address}:{@code port} opens within 1 s. */
    private static boolean connects(PodAdd from, String address, int port) {
        return inPod(from, "busybox", "nc", "-w", "1", address, Integer.toString(port));
    }

    /** Whether one ping from the pod to {@code address} is answered within 1 s. */
    private static boolean pings(PodAdd from, String address) {
        return inPod(from, "busybox", "ping", "-c1", "-W1", address);
    }

    private static boolean inPod(PodAdd pod, String... command) {
        List<String> line = new ArrayList<>(List.of("nsenter", "--net=" + pod.ns().path()));
        line.addAll(List.of(command));
        try {
            Process p =
                    new ProcessBuilder(line)
                            .redirectErrorStream(true)
                            .redirectInput(
                                    ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                            .start();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** @return the policy table's comment (the digest of what it enforces), or "" */
    private static String policyComment() {
        Matcher m = Pattern.compile("comment \"([^\"]*)\"").matcher(policyTable());
        return m.find() ? m.group(1) : "";
    }

    /** @return {@code nft list table inet cadastre-policy}, or "" when there is no such table */
    private static String policyTable() {
        try {
            Process p =
                    new ProcessBuilder("nft", "list", "table", "inet", "cadastre-policy")
                            .redirectErrorStream(true)
                            .start();
            String out = new String(p.getInputStream().readAllBytes());
            return p.waitFor() == 0 ? out : "";
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    /** DELs every pod ADDed and not DELeted yet, each even when one before failed; removes their namespaces. */
    private static void delAll() throws Exception {
        AssertionError failed = null;
        for (PodAdd pod : List.copyOf(added)) {
            Map<String, String> env = CniExec.env("DEL", pod.container(), pod.ns().path(), "eth0");
            env.put(
                    "CNI_ARGS",
                    "IgnoreUnknown=1;K8S_POD_NAMESPACE="
                            + pod.namespace()
                            + ";K8S_POD_NAME="
                            + pod.name());
            Result del = CniExec.run(env, pod.netconf());
            if (del.exit() != 0 && failed == null) {
                failed = new AssertionError("DEL of " + pod.name() + ": " + del);
            }
            added.remove(pod);
        }
        for (TestNetns ns : List.copyOf(namespaces)) {
            ns.close();
            namespaces.remove(ns);
        }
        if (failed != null) {
            throw failed;
        }
    }

    // ---- what the agent says ----

    private static Run ctl(String... args) {
        return CtlOutput.assertOk(CtlAgent.ctl(adminUrl, agent.adminTokenFile(), args));
    }

    private static JsonNode nodeDetail() throws Exception {
        return ctl("node", "show", NODE, "-o", "json").json();
    }

    private static Map<String, String> labels() throws Exception {
        Map<String, String> labels = new HashMap<>();
        nodeDetail()
                .path("labels")
                .properties()
                .forEach(e -> labels.put(e.getKey(), e.getValue().asText()));
        return labels;
    }

    private static boolean attached(String container) {
        try {
            for (JsonNode a : nodeDetail().path("attachmentList")) {
                if (a.path("containerId").asText().equals(container)) {
                    return true;
                }
            }
            return false;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return the pools' use and the blocks, and this node's labels, blocks and attachments, as cadastrectl prints them */
    private static String ipamState() throws Exception {
        JsonNode detail = nodeDetail();
        return ctl("ipam", "show", "--show-blocks", "-o", "json").json()
                + "\n"
                + detail.path("labels")
                + "\n"
                + detail.path("affineBlocks")
                + "\n"
                + detail.path("attachmentList");
    }

    private static void awaitLabels(Map<String, String> expected) {
        await(
                () -> {
                    try {
                        return labels().equals(expected);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                },
                () -> "the node's labels did not become " + expected + ":\n" + agent.tail());
    }

    /** @return {@code cadastre_ipam_allocations_gc_reclamations_total} of this node for the reason, 0 when absent */
    private static double reclaimed(String reason) {
        return sample("cadastre_ipam_allocations_gc_reclamations_total", "reason", reason);
    }

    /** @return the agent's sample of {@code metric} for this node and {@code label}, 0 when absent */
    private static double sample(String metric, String label, String value) {
        HttpResponse<String> reply = get("/metrics");
        assertEquals(200, reply.statusCode(), reply.body());
        Matcher m =
                Pattern.compile(
                                "^" + Pattern.quote(metric) + "\\{([^}]*)\\} (\\S+)$",
                                Pattern.MULTILINE)
                        .matcher(reply.body());
        while (m.find()) {
            if (m.group(1).contains("node=\"" + NODE + "\"")
                    && m.group(1).contains(label + "=\"" + value + "\"")) {
                return Double.parseDouble(m.group(2));
            }
        }
        return 0;
    }

    /** @return {@code ready}, or the reason {@code /readyz} gives for not being ready */
    private static String readyz() {
        HttpResponse<String> reply = get("/readyz");
        if (reply.statusCode() == 200) {
            return "ready";
        }
        try {
            return new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(reply.body())
                    .path("reason")
                    .asText(reply.body());
        } catch (java.io.IOException e) {
            return reply.statusCode() + " " + reply.body();
        }
    }

    /** @return the admin API's answer to a GET of {@code path} */
    private static HttpResponse<String> get(String path) {
        try {
            return HTTP.send(
                    HttpRequest.newBuilder(URI.create(adminUrl + path))
                            .timeout(Duration.ofSeconds(30))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void assertIn(String cidr, String address) {
        assertTrue(Cidr.parse(cidr).contains(address), address + " in " + cidr);
    }

    /** Waits for the condition, checking every 100 ms; fails with {@code why} after {@link #WITHIN}. */
    static void await(BooleanSupplier condition, Supplier<String> why) {
        long deadline = System.nanoTime() + WITHIN.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + WITHIN + ": " + why.get());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
    }
}
