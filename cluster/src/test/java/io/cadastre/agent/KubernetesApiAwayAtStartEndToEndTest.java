package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import io.cadastre.kube.KubeObjects;
import io.cadastre.kube.MockKubernetesApi;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.TestNetns;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A real agent started while its Kubernetes API server is away (issue 15): it waits
 * {@code labels-wait} (here 2 s) for its Node's labels, then opens its CNI socket with the
 * configured labels ({@code CADASTRE_NODE_LABELS}) and serves ADDs from the netconf; once the API
 * answers, the Node's labels replace them and the next ADD follows. The API is fabric8's mock
 * server ({@link MockKubernetesApi}), started only after the agent, on the port the agent's
 * kubeconfig names (plain HTTP: a certificate made by the mock at its start cannot be trusted
 * before). Bootstrap is off (the agent joins alone: without the API it would find no agents).
 */
class KubernetesApiAwayAtStartEndToEndTest {
    private static final String ZONE = "topology.kubernetes.io/zone";
    private static final String ZONE_A = "198.18.181.0/24";
    private static final String ZONE_B = "198.18.182.0/24";
    private static final String CONFIG =
            """
            cadastre.pools = [
              { name = "k8saway-zone-a", cidr = "%s", block-size = 28, node-selector = "%s=e2e-a" }
              { name = "k8saway-zone-b", cidr = "%s", block-size = 28, node-selector = "%s=e2e-b" }
            ]
            cadastre.kubernetes.labels-wait = 2s
            """
                    .formatted(ZONE_A, ZONE, ZONE_B, ZONE);

    @Test
    void anAgentStartedWithoutItsApiServesWithTheConfiguredLabelsUntilTheNodesAreRead()
            throws Exception {
        String node = "k8saway-" + UUID.randomUUID().toString().substring(0, 8);
        Path dir = Files.createTempDirectory("cad-k8saway");
        int apiPort = KubernetesEndToEndTest.freePort("127.0.0.1");
        Map<String, String> env =
                new HashMap<>(
                        MockKubernetesApi.kubeconfigEnvironment(
                                dir, "http://127.0.0.1:" + apiPort, null));
        env.put("CADASTRE_KUBERNETES_ENABLED", "true");
        env.put("CADASTRE_KUBERNETES_BOOTSTRAP", "false");
        env.put("CADASTRE_NODE_LABELS", ZONE + "=e2e-b");
        AgentProcess agent = new AgentProcess(dir, node, CONFIG).withEnvironment(env);
        MockKubernetesApi api = null;
        try (TestNetns before = TestNetns.create();
                TestNetns after = TestNetns.create()) {
            agent.start();
            String adminUrl = agent.adminUrl();
            String log = agent.logOfThisRun();
            assertTrue(
                    log.contains(
                            "the Node's labels were not read within PT2S: serving with the configured labels {"
                                    + ZONE
                                    + "=e2e-b}"),
                    agent.tail());
            assertTrue(
                    log.contains(
                            "cadastre-agent ready: node "
                                    + node
                                    + " (labels {"
                                    + ZONE
                                    + "=e2e-b})"),
                    agent.tail());
            String whileAway = CniEndToEndTest.container();
            String first = add(agent, before, whileAway, "while-away");
            assertTrue(Cidr.parse(ZONE_B).contains(first), first + " in " + ZONE_B);

            api = MockKubernetesApi.start(dir, apiPort, false);
            KubeObjects.namespace(api.admin(), "k8saway", Map.of());
            KubeObjects.pod(api.admin(), "k8saway", "while-away", node, Map.of());
            KubeObjects.node(api.admin(), node, Map.of(ZONE, "e2e-a"));
            KubernetesEndToEndTest.await(
                    () -> labels(adminUrl, agent, node).equals(Map.of(ZONE, "e2e-a")),
                    () ->
                            "the Node's labels were not taken once the API answered:\n"
                                    + agent.tail());
            KubeObjects.pod(api.admin(), "k8saway", "once-back", node, Map.of());
            String onceBack = CniEndToEndTest.container();
            String second = add(agent, after, onceBack, "once-back");
            assertTrue(Cidr.parse(ZONE_A).contains(second), second + " in " + ZONE_A);

            for (String[] pod :
                    new String[][] {{whileAway, before.path()}, {onceBack, after.path()}}) {
                Result del =
                        CniExec.run(CniExec.env("DEL", pod[0], pod[1], "eth0"), netconf(agent));
                assertEquals(0, del.exit(), del.toString());
            }
            assertEquals(143, agent.stop(), "agent exit code on SIGTERM");
        } finally {
            try {
                agent.close();
            } finally {
                if (api != null) {
                    api.close();
                }
                CniEndToEndTest.deleteTree(dir);
            }
        }
    }

    /** ADDs the sandbox {@code container} of pod {@code k8saway/POD} in {@code ns}; @return its IPv4 address */
    private static String add(AgentProcess agent, TestNetns ns, String container, String pod)
            throws Exception {
        Map<String, String> env = CniExec.env("ADD", container, ns.path(), "eth0");
        env.put(
                "CNI_ARGS",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=k8saway;K8S_POD_NAME="
                        + pod
                        + ";K8S_POD_INFRA_CONTAINER_ID="
                        + container);
        Result add = CniExec.run(env, netconf(agent));
        assertEquals(0, add.exit(), add.toString());
        return add.json().path("ips").get(0).path("address").asText().split("/")[0];
    }

    private static String netconf(AgentProcess agent) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"k8saway\",\"type\":\"cadastre\",\"agentSocket\":\""
                + agent.socket()
                + "\",\"ipam\":{}}";
    }

    private static Map<String, String> labels(String adminUrl, AgentProcess agent, String node) {
        try {
            Map<String, String> labels = new HashMap<>();
            CtlOutput.assertOk(
                            CtlAgent.ctl(
                                    adminUrl,
                                    agent.adminTokenFile(),
                                    "node",
                                    "show",
                                    node,
                                    "-o",
                                    "json"))
                    .json()
                    .path("labels")
                    .properties()
                    .forEach(e -> labels.put(e.getKey(), e.getValue().asText()));
            return labels;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
