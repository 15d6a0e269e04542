package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.kube.KubeObjects;
import io.cadastre.kube.MockKubernetesApi;
import io.cadastre.testcri.Containerd;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.CriClient.ExecResult;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The image runs as the DaemonSet runs it: built by this build, imported into a private
 * containerd ({@code ctr -n k8s.io images import}, no registry), and started through the CRI the
 * way kubelet starts the DaemonSet's pod (no Kubernetes API server can run here, so this stands
 * in for the node's side of {@code kubectl apply}, and fabric8's mock API server in this JVM for
 * the API server: {@link MockKubernetesApi}). The pod's shape is read from
 * {@code deploy/kubernetes/30-daemonset.yaml}: host network, the init container and then the agent
 * container with their arguments, environment (downward-API values filled in as kubelet would),
 * capabilities, seccomp profile, read-only root, kubelet's masked and read-only {@code /proc}
 * paths, every volume mount with its propagation, and what kubelet adds to every container: the
 * API server's Service variables and the service account's token, CA and namespace at
 * {@code /var/run/secrets/kubernetes.io/serviceaccount}. The settings are the single-node
 * ConfigMap's (the embedded journal: one node) with what a shared test machine forces on top (see
 * {@link #TEST_SETTINGS}). The API holds what a one-node cluster's API server would: the Node,
 * with a label that the test's IPv4 pool selects, and the agent's own pod, Running, whose IP is
 * the node's address ({@link #NODE_IP}), as a host-network pod's is.
 *
 * <p>The node is a {@link KubeletNode}: its file system a directory of the test's, its network
 * the machine's ({@code /proc/sys/net} too).
 *
 * <p>Then an ordinary pod: containerd calls the plugin that the init container installed, the
 * static one from the image, which talks to the containerized agent over the CNI socket; the pod
 * gets an IPv4 address (from the pool its Node's label selects: the agent read the Node through
 * the image's client) and an IPv6 one, and cadastrectl in the agent's container shows the
 * attachment. Then a rollout, as the DaemonSet's update strategy runs it: the agent stopped with
 * SIGTERM (its first run leaves the class data archive), its pod replaced by a new one, whose agent
 * maps that archive and reads the attachments the first recorded; the ordinary pod's removal (CNI
 * DEL, now to the new agent) frees both addresses. {@code /readyz} and {@code /healthz} answer on
 * the agent's admin port, and the agent's effective capabilities are exactly the manifest's.
 */
class ImageCriEndToEndTest {
    private static final Path IMAGE_TAR = Path.of(System.getProperty("cadastre.image.tar"));
    private static final String IMAGE = System.getProperty("cadastre.image.name");
    private static final String NODE = "img-node";

    /**
     * The node's address (kubelet's {@code status.hostIP}, and the agent's pod IP on a host
     * network): a loopback address, as test traffic must stay on one, but not the one the
     * single-node settings put the cluster port on, as a real node's address is not.
     */
    private static final String NODE_IP = "127.0.0.2";

    /** The Node's labels in the API; the test's IPv4 pool selects the first. */
    private static final Map<String, String> NODE_LABELS =
            Map.of("topology.kubernetes.io/zone", "img-a");

    /** Bit numbers of the capabilities the manifest may add (linux/capability.h). */
    private static final Map<String, Integer> CAPABILITY_BITS =
            Map.of("NET_ADMIN", 12, "NET_RAW", 13, "SYS_PTRACE", 19, "SYS_ADMIN", 21, "BPF", 39);

    /**
     * Settings over the single-node ConfigMap: test pools (their own ranges: other tests' agents
     * may route theirs in this machine's namespace meanwhile; the IPv4 one only for nodes in the
     * zone of {@link #NODE_LABELS}), no host-wide routing (the machine is shared), free ports for
     * the admin API and the cluster (%1$d, %2$d), the CNI socket under the test's root (%3$s).
     * Everything about Kubernetes is the ConfigMap's.
     */
    static final String TEST_SETTINGS =
            """

            # The test's own, over the ConfigMap's:
            cadastre.pools = [
              { name = "img-ipv4", cidr = "198.18.212.0/24", block-size = 26, node-selector = "topology.kubernetes.io/zone=img-a" }
              { name = "img-ipv6", cidr = "fd00:198:d4::/112", block-size = 122 }
            ]
            cadastre.routing.mode = none
            cadastre.admin.bind = "127.0.0.1:%1$d"
            cadastre.cluster.port = %2$d
            cadastre.cni-socket = "%3$s"
            """;

    @Test
    void theDaemonSetsPodServesAPodsAddAndDelThroughTheInstalledPlugin() throws Exception {
        DaemonSet ds = Manifests.one(Manifests.read(Manifests.DIR), DaemonSet.class, "cadastre");
        PodSpec spec = ds.getSpec().getTemplate().getSpec();
        int adminPort = freePort();
        int clusterPort = freePort();
        Path root = Files.createTempDirectory("cad-img");
        List<String> pods = new ArrayList<>();
        MockKubernetesApi api = null;
        Containerd containerd = null;
        try {
            api = MockKubernetesApi.start(root);
            KubeletNode node = new KubeletNode(NODE, NODE_IP, root, api);
            Files.createDirectories(node.hostPath("/opt/cni/bin"));
            Files.createDirectories(node.hostPath("/etc/cni/net.d"));
            // What a node has before Cadastre: the runtime's loopback plugin.
            Files.copy(
                    Path.of("/usr/lib/cni/loopback"),
                    node.hostPath("/opt/cni/bin").resolve("loopback"));
            containerd =
                    Containerd.start(
                            root.resolve("ctrd"),
                            node.hostPath("/opt/cni/bin"),
                            node.hostPath("/etc/cni/net.d"),
                            1);
            node.netns = containerd.netnsDir();
            KubeletNode.shareNetnsDir(node.netns);
            containerd.importImage(IMAGE_TAR);
            CriClient cri = containerd.cri();

            String socket = node.hostPath("/run/cadastre") + "/cni.sock";
            Path configMap = root.resolve("volumes/config");
            Files.createDirectories(configMap);
            Files.writeString(
                    configMap.resolve(ConfigMapTest.CONF_KEY),
                    ConfigMapTest.settingsText(Manifests.SINGLE_NODE)
                            + TEST_SETTINGS.formatted(adminPort, clusterPort, socket));
            node.configMaps.put("cadastre-config", configMap);

            KubeObjects.node(api.admin(), NODE, NODE_LABELS);
            String base = "http://127.0.0.1:" + adminPort;
            Container agentSpec = DaemonSetTest.container(spec, "agent");
            KubeletNode.Readiness ready = () -> readiness(base + readinessPath(agentSpec));
            KubeletNode.AgentPod first = node.startAgentPod(cri, ds, socket, ready, pods);
            PodSandboxConfig agentPod = first.config();
            String agent = first.agent();
            // The image's Kubernetes client, with the service account kubelet mounted, read the
            // Node over HTTPS. (The log is JSON lines, which write "/" as "\/".)
            assertTrue(
                    KubeletNode.log(agentPod, "agent")
                            .replace("\\/", "/")
                            .contains("node labels from the Node object: " + NODE_LABELS),
                    KubeletNode.log(agentPod, "agent"));
            assertEquals(
                    200,
                    get(base + agentSpec.getLivenessProbe().getHttpGet().getPath()).statusCode());
            // It runs with the manifest's capabilities and no others: what follows needs no more.
            ExecResult caps =
                    cri.execSync(
                            agent,
                            30,
                            "/bin/sh",
                            "-c",
                            "while read key value; do [ \"$key\" = CapEff: ] && echo $value; done < /proc/1/status");
            long expected = 0;
            for (String cap : agentSpec.getSecurityContext().getCapabilities().getAdd()) {
                expected |= 1L << CAPABILITY_BITS.get(cap);
            }
            assertEquals(
                    expected,
                    Long.parseLong(caps.stdout().trim(), 16),
                    "the agent's effective capabilities: " + caps);
            containerd.awaitNetworkReady(Duration.ofSeconds(30));

            // An ordinary pod on the node: its network from the installed plugin and the agent in
            // the image.
            PodSandboxConfig web =
                    KubeletPods.sandbox(
                            "shop", "web-" + KubeletNode.shortId(), root.resolve("pods"));
            String webSandbox = cri.runPodSandbox(web);
            pods.add(0, webSandbox);
            List<String> ips = new ArrayList<>();
            if (!cri.podSandboxStatus(webSandbox).getNetwork().getIp().isEmpty()) {
                ips.add(cri.podSandboxStatus(webSandbox).getNetwork().getIp());
            }
            cri.podSandboxStatus(webSandbox)
                    .getNetwork()
                    .getAdditionalIpsList()
                    .forEach(ip -> ips.add(ip.getIp()));
            assertEquals(2, ips.size(), ips.toString());
            assertTrue(ips.stream().anyMatch(ip -> ip.startsWith("198.18.212.")), ips.toString());
            assertTrue(ips.stream().anyMatch(ip -> ip.startsWith("fd00:198:d4::")), ips.toString());

            // cadastrectl inside the agent's container, as an operator runs it with kubectl exec.
            JsonNode shown =
                    KubeletNode.ctl(
                            cri, agent, "--server", base, "node", "show", NODE, "-o", "json");
            List<String> held = new ArrayList<>();
            for (JsonNode a : shown.path("attachmentList")) {
                if (web.getMetadata().getName().equals(a.path("podName").asText())) {
                    a.path("addresses").forEach(x -> held.add(x.asText()));
                }
            }
            assertEquals(
                    ips.stream().sorted().toList(),
                    held.stream().sorted().toList(),
                    shown.toString());

            // A rollout (a new image, a changed ConfigMap): kubelet stops the agent with SIGTERM
            // and its grace. This first run of the image leaves the class data archive that every
            // later start maps (the launcher), whole, and nothing partial.
            cri.stopContainer(agent, 60);
            List<String> archives;
            try (Stream<Path> files = Files.list(node.hostPath("/var/lib/cadastre"))) {
                archives =
                        files.map(f -> f.getFileName().toString())
                                .filter(f -> f.startsWith("cadastre-agent-"))
                                .toList();
            }
            assertEquals(1, archives.size(), archives.toString());
            assertTrue(archives.get(0).endsWith(".jsa"), archives.toString());
            assertTrue(
                    Files.size(node.hostPath("/var/lib/cadastre").resolve(archives.get(0)))
                            > 1 << 20,
                    archives.toString());

            // The old pod goes, and the DaemonSet's new one starts on the node: its init container
            // installs the plugin again, its agent reopens the journal and maps the archive.
            cri.stopPodSandbox(first.sandbox());
            cri.removePodSandbox(first.sandbox());
            pods.remove(first.sandbox());
            api.admin()
                    .pods()
                    .inNamespace(agentPod.getMetadata().getNamespace())
                    .withName(agentPod.getMetadata().getName())
                    .delete();
            KubeletNode.AgentPod second = node.startAgentPod(cri, ds, socket, ready, pods);
            ExecResult mapped =
                    cri.execSync(
                            second.agent(),
                            30,
                            "/bin/sh",
                            "-c",
                            "while read -r line; do case \"$line\" in *"
                                    + archives.get(0)
                                    + ") echo mapped; break;; esac; done < /proc/1/maps");
            assertEquals(
                    "mapped", mapped.stdout().trim(), "the archive in the JVM's maps: " + mapped);
            JsonNode after =
                    KubeletNode.ctl(
                            cri,
                            second.agent(),
                            "--server",
                            base,
                            "node",
                            "show",
                            NODE,
                            "-o",
                            "json");
            assertEquals(
                    shown.path("attachmentList").toString(),
                    after.path("attachmentList").toString(),
                    "the attachments the first agent recorded, as the second reads them");

            // kubelet's stop and remove of the pod started under the first agent: CNI DEL through
            // the plugin, to the second, frees both addresses.
            cri.stopPodSandbox(webSandbox);
            cri.removePodSandbox(webSandbox);
            pods.remove(webSandbox);
            for (String ip : ips) {
                JsonNode address =
                        KubeletNode.ctl(
                                cri,
                                second.agent(),
                                "--server",
                                base,
                                "ipam",
                                "address",
                                ip,
                                "-o",
                                "json");
                assertTrue(address.path("allocation").isNull(), ip + " is free again: " + address);
            }
            assertEquals(200, get(base + readinessPath(agentSpec)).statusCode());
        } finally {
            if (containerd != null) {
                // The pods on the pod network first, while the agent still answers their DEL.
                for (String sandbox : pods) {
                    try {
                        containerd.cri().stopPodSandbox(sandbox);
                        containerd.cri().removePodSandbox(sandbox);
                    } catch (RuntimeException e) {
                        // containerd's close tries again; the test's own failure is what matters
                    }
                }
                containerd.close();
            }
            if (api != null) {
                api.close();
            }
            deleteTree(root);
        }
    }

    private static String readinessPath(Container agent) {
        return agent.getReadinessProbe().getHttpGet().getPath();
    }

    /** @return null when {@code url} answers 200, otherwise its status and body */
    private static String readiness(String url) throws IOException, InterruptedException {
        HttpResponse<String> r = get(url);
        return r.statusCode() == 200 ? null : r.statusCode() + " " + r.body();
    }

    private static HttpResponse<String> get(String url) throws IOException, InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        return http.send(
                HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
