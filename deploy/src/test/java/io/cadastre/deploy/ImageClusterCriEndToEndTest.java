package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.kube.KubeObjects;
import io.cadastre.kube.MockKubernetesApi;
import io.cadastre.testcri.Containerd;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Closing;
import io.cadastre.testsupport.PortRelay;
import io.cadastre.testsupport.Schema;
import io.cadastre.testsupport.TestPki;
import io.cadastre.testsupport.Topology;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The main settings through the image, on two nodes: what an operator installs on a cluster
 * ({@code deploy/kubernetes/}, README "Install on Kubernetes"), where {@link ImageCriEndToEndTest}
 * runs the single-node settings. Each node is a host of a {@link Topology} (a network namespace on
 * a shared fabric) with a containerd of its own started in it, so that the DaemonSet's
 * host-network pod is in the node's network as on a real node; the node's file system and
 * kubelet's side are a {@link KubeletNode}. The cluster has what the main ConfigMap expects:
 *
 * <ul>
 *   <li>Cassandra requiring a login, TLS and client certificates (on the topology's db address,
 *       its certificate from a test CA naming that address; {@code require_client_auth}), its
 *       schema created ahead by the superuser and the agents' role {@code cadastre} created as
 *       the README says; the Secret {@code cadastre-cassandra} holds the role's password, the
 *       CA's certificate and the agents' client certificate and key (PEM, as cert-manager writes
 *       a kubernetes.io/tls Secret), which the ConfigMap's commented lines name;
 *   <li>the Secret {@code cadastre-cluster-tls}: one certificate for every member, from the test
 *       CA;
 *   <li>the API server (fabric8's mock, in this JVM) with both Nodes and, once each is started,
 *       both agents' pods, Running at their nodes' addresses: the agents find each other there
 *       (two contact points required) and form one cluster. The API is reached from each node at
 *       the address kubelet's Service variables give, through a {@link PortRelay}.
 * </ul>
 *
 * Over the ConfigMap only what a test must change: its pools, Cassandra's address, a replication
 * factor of one (one Cassandra node), the CNI socket under the node's root. Routing is the
 * ConfigMap's. Then a pod on each node, each given its addresses by its own node's agent through
 * the plugin that node's init container installed; each reaches the other over IPv4 and IPv6; one
 * journal holds both (cadastrectl on one node shows the other's pod's address held); removing the
 * pods frees their addresses.
 */
class ImageClusterCriEndToEndTest {
    private static final Path IMAGE_TAR = Path.of(System.getProperty("cadastre.image.tar"));

    /** The admin API's address on each node (application.conf's default: the host's loopback). */
    private static final String ADMIN = "http://127.0.0.1:9467";

    /**
     * Over the main ConfigMap: the test's pools (ranges of their own), Cassandra's address (%1$s),
     * one replica (one Cassandra node), the CNI socket under the node's root (%2$s).
     */
    static final String TEST_SETTINGS =
            """

            # The test's own, over the ConfigMap's:
            cadastre.pools = [
              { name = "imgc-ipv4", cidr = "198.18.216.0/24", block-size = 26 }
              { name = "imgc-ipv6", cidr = "fd00:198:d8::/112", block-size = 122 }
            ]
            cadastre.cassandra.contact-points = ["%1$s"]
            cadastre.cassandra.replication-factor = 1
            cadastre.cassandra.tls.cert-file = "/etc/cadastre/cassandra/tls.crt"
            cadastre.cassandra.tls.key-file = "/etc/cadastre/cassandra/tls.key"
            cadastre.cni-socket = "%2$s"
            """;

    @Test
    void twoNodesFormOneClusterOnCassandraAndTheirPodsReachEachOther() throws Exception {
        DaemonSet ds = Manifests.one(Manifests.read(Manifests.DIR), DaemonSet.class, "cadastre");
        Path root = Files.createTempDirectory("cad-imgc");
        Topology topology = null;
        AtomicReference<CassandraNode> cassandra = new AtomicReference<>();
        CompletableFuture<Void> cassandraReady = null;
        MockKubernetesApi api = null;
        PortRelay apiRelay = null;
        List<Containerd> runtimes = new ArrayList<>();
        List<Pod> pods = new ArrayList<>();
        try {
            long started = System.nanoTime();
            topology = Topology.up(Topology.randomName(), 2);
            Path cassandraSecret = root.resolve("volumes/cassandra");
            TestPki.writePrivate(cassandraSecret.resolve("password"), randomHex() + "\n");
            TestPki ca = TestPki.authority("cadastre-test-ca");
            // ca.crt, and tls.crt and tls.key: the agents' client certificate.
            ca.write(ca.issue(TestPki.Spec.member("cadastre-agent", null)), cassandraSecret);
            // Cassandra (about half a minute with its login and TLS) starts while the nodes are
            // set up.
            Topology fabric = topology;
            cassandraReady =
                    CompletableFuture.runAsync(
                            () -> {
                                try {
                                    CassandraNode node =
                                            CassandraNode.startSecured(
                                                    fabric, root.resolve("cassandra"), ca, true);
                                    cassandra.set(node);
                                    Schema.create(fabric, node);
                                    CassandraRole.create(
                                            fabric,
                                            node,
                                            "cadastre",
                                            cassandraSecret.resolve("password"));
                                } catch (Exception e) {
                                    throw new IllegalStateException(e);
                                }
                            });
            Path clusterTls = root.resolve("volumes/cluster-tls");
            ca.write(ca.issue(TestPki.Spec.member("cadastre", null)), clusterTls);

            api = MockKubernetesApi.start(root);
            int apiPort = Integer.parseInt(api.serviceEnvironment().get("KUBERNETES_SERVICE_PORT"));
            Path apiSocket = root.resolve("api.sock");
            apiRelay = PortRelay.unixToTcp(apiSocket, new InetSocketAddress("127.0.0.1", apiPort));

            List<KubeletNode> nodes = new ArrayList<>();
            for (Topology.Host host : topology.hosts()) {
                KubeletNode node =
                        new KubeletNode(
                                "imgc-" + host.name(),
                                host.address(),
                                root.resolve(host.name()),
                                api);
                relayApi(topology, host, apiPort, apiSocket);
                Files.createDirectories(node.hostPath("/opt/cni/bin"));
                Files.createDirectories(node.hostPath("/etc/cni/net.d"));
                Files.copy(
                        Path.of("/usr/lib/cni/loopback"),
                        node.hostPath("/opt/cni/bin").resolve("loopback"));
                Containerd containerd =
                        Containerd.startIn(
                                host.netns(),
                                root.resolve("c" + host.index()),
                                node.hostPath("/opt/cni/bin"),
                                node.hostPath("/etc/cni/net.d"),
                                1);
                runtimes.add(containerd);
                node.netns = containerd.netnsDir();
                KubeletNode.shareNetnsDir(node.netns);
                containerd.importImage(IMAGE_TAR);
                Path configMap = root.resolve("volumes/config-" + host.name());
                Files.createDirectories(configMap);
                Files.writeString(
                        configMap.resolve(ConfigMapTest.CONF_KEY),
                        ConfigMapTest.settingsText(Manifests.DIR)
                                + TEST_SETTINGS.formatted(
                                        topology.db().address() + ":9042", socket(node)));
                node.configMaps.put("cadastre-config", configMap);
                node.secrets.put("cadastre-cluster-tls", clusterTls);
                node.secrets.put("cadastre-cassandra", cassandraSecret);
                KubeObjects.node(api.admin(), node.name, Map.of());
                nodes.add(node);
            }

            cassandraReady.join();
            long cassandraMillis = (System.nanoTime() - started) / 1_000_000;
            // Both agents' pods at once, as the DaemonSet starts them: neither is ready before
            // the two have formed their cluster.
            List<String> agentSandboxes = java.util.Collections.synchronizedList(new ArrayList<>());
            List<CompletableFuture<KubeletNode.AgentPod>> starting = new ArrayList<>();
            for (int i = 0; i < nodes.size(); i++) {
                KubeletNode node = nodes.get(i);
                Topology.Host host = topology.host(i + 1);
                CriClient cri = runtimes.get(i).cri();
                Topology t = topology;
                starting.add(
                        CompletableFuture.supplyAsync(
                                () -> {
                                    try {
                                        return node.startAgentPod(
                                                cri,
                                                ds,
                                                socket(node),
                                                () -> readiness(t, host),
                                                agentSandboxes);
                                    } catch (Exception e) {
                                        throw new IllegalStateException(e);
                                    }
                                }));
            }
            List<KubeletNode.AgentPod> agents =
                    starting.stream().map(CompletableFuture::join).toList();

            long agentsMillis = (System.nanoTime() - started) / 1_000_000;
            // Each reached Cassandra as the role, over TLS with the Secret's CA, presenting the
            // Secret's client certificate (Cassandra requires one).
            for (KubeletNode.AgentPod agent : agents) {
                String log = KubeletNode.log(agent.config(), "agent").replace("\\/", "/");
                assertTrue(
                        log.contains(
                                "Cassandra: as cadastre, TLS (hostname validation on, trust "
                                        + ConfigMapTest.CA_FILE
                                        + " (PEM), client certificate"
                                        + " /etc/cadastre/cassandra/tls.crt (PEM))"),
                        log);
            }
            // One cluster: each agent lists both nodes as members that are up (with two clusters
            // on one journal each would list the other's node, but not as a member of its own).
            for (int i = 0; i < nodes.size(); i++) {
                JsonNode listed =
                        KubeletNode.ctl(
                                runtimes.get(i).cri(),
                                agents.get(i).agent(),
                                "--server",
                                ADMIN,
                                "node",
                                "list",
                                "-o",
                                "json");
                Map<String, String> members = new java.util.HashMap<>();
                listed.path("nodes")
                        .forEach(
                                n ->
                                        members.put(
                                                n.path("name").asText(),
                                                n.path("member").asText()));
                for (KubeletNode node : nodes) {
                    assertEquals("up", members.get(node.name), node.name + " in " + listed);
                }
            }

            // A pod on each node.
            for (int i = 0; i < nodes.size(); i++) {
                CriClient cri = runtimes.get(i).cri();
                runtimes.get(i).awaitNetworkReady(Duration.ofSeconds(30));
                PodSandboxConfig config =
                        KubeletPods.sandbox(
                                "shop",
                                "web-" + KubeletNode.shortId(),
                                nodes.get(i).root.resolve("pods"));
                String sandbox = cri.runPodSandbox(config);
                Pod pod = new Pod(i, sandbox, cri.networkNamespace(sandbox), new ArrayList<>());
                pods.add(pod);
                var network = cri.podSandboxStatus(sandbox).getNetwork();
                pod.ips().add(network.getIp());
                network.getAdditionalIpsList().forEach(ip -> pod.ips().add(ip.getIp()));
                assertEquals(2, pod.ips().size(), pod.ips().toString());
                assertTrue(
                        pod.ips().stream().anyMatch(ip -> ip.startsWith("198.18.216.")),
                        pod.ips().toString());
                assertTrue(
                        pod.ips().stream().anyMatch(ip -> ip.startsWith("fd00:198:d8::")),
                        pod.ips().toString());
            }

            // Each reaches the other, across the nodes, over both families.
            for (Pod from : pods) {
                for (Pod to : pods) {
                    if (from != to) {
                        for (String ip : to.ips()) {
                            awaitPing(from.netns(), ip);
                        }
                    }
                }
            }

            System.out.printf(
                    "image on two nodes: Cassandra with its schema and role ready after %d ms, both"
                            + " agents ready after %d ms, the pods reached each other after %d ms%n",
                    cassandraMillis, agentsMillis, (System.nanoTime() - started) / 1_000_000);
            // One journal: the first node's agent shows the second's pod's addresses held by the
            // second node.
            for (String ip : pods.get(1).ips()) {
                JsonNode address = address(runtimes.get(0).cri(), agents.get(0), ip);
                assertEquals(
                        nodes.get(1).name,
                        address.path("allocation").path("node").asText(),
                        ip + " held by the second node: " + address);
            }

            // kubelet removes the pods: CNI DEL through each node's plugin frees the addresses.
            for (Pod pod : List.copyOf(pods)) {
                CriClient cri = runtimes.get(pod.node()).cri();
                cri.stopPodSandbox(pod.sandbox());
                cri.removePodSandbox(pod.sandbox());
                pods.remove(pod);
                for (String ip : pod.ips()) {
                    int other = 1 - pod.node();
                    JsonNode address = address(runtimes.get(other).cri(), agents.get(other), ip);
                    assertTrue(address.path("allocation").isNull(), ip + " is free: " + address);
                }
            }
        } finally {
            // Every step runs, also after one failed: the ordinary pods first, while their agents
            // still answer their DEL.
            List<AutoCloseable> cleanup = new ArrayList<>();
            for (Pod pod : pods) {
                cleanup.add(
                        () -> {
                            runtimes.get(pod.node()).cri().stopPodSandbox(pod.sandbox());
                            runtimes.get(pod.node()).cri().removePodSandbox(pod.sandbox());
                        });
            }
            // Both at once: each stops its agent's pod (the agent leaves the cluster) first.
            cleanup.add(() -> Closing.together(runtimes));
            PortRelay relay = apiRelay;
            MockKubernetesApi server = api;
            CompletableFuture<Void> ready = cassandraReady;
            Topology fabric = topology;
            cleanup.add(
                    () -> {
                        if (relay != null) {
                            relay.close();
                        }
                    });
            cleanup.add(
                    () -> {
                        if (server != null) {
                            server.close();
                        }
                    });
            cleanup.add(
                    () -> {
                        if (ready != null) {
                            // its own failure is the test's; what it started is stopped next
                            ready.handle((ok, failed) -> null).get(5, TimeUnit.MINUTES);
                        }
                        if (cassandra.get() != null) {
                            cassandra.get().close();
                        }
                    });
            cleanup.add(
                    () -> {
                        if (fabric != null) {
                            fabric.close(); // and the relays started in it
                        }
                    });
            cleanup.add(() -> deleteTree(root));
            Closing.inTurn(cleanup);
        }
    }

    /** A pod on node {@code node} (0 or 1): its sandbox, network namespace and addresses. */
    private record Pod(int node, String sandbox, String netns, List<String> ips) {}

    /** @return what {@code cadastrectl ipam address IP} in the agent's container says of {@code ip} */
    private static JsonNode address(CriClient cri, KubeletNode.AgentPod agent, String ip)
            throws java.io.IOException {
        return KubeletNode.ctl(
                cri, agent.agent(), "--server", ADMIN, "ipam", "address", ip, "-o", "json");
    }

    /** @return the CNI socket's path on the node (the conflist names it; the agent listens there) */
    private static String socket(KubeletNode node) {
        return node.hostPath("/run/cadastre") + "/cni.sock";
    }

    /**
     * Starts the relay that gives the host the API server at kubelet's Service address
     * (127.0.0.1 and the mock's port, in the host's namespace), and waits until it listens.
     */
    private static void relayApi(Topology topology, Topology.Host host, int port, Path socket)
            throws Exception {
        Process relay =
                topology.exec(
                        host,
                        PortRelay.command("127.0.0.1", port, socket),
                        pb -> pb.redirectErrorStream(true));
        BufferedReader out =
                new BufferedReader(
                        new InputStreamReader(relay.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (!PortRelay.LISTENING.equals(line)) {
            relay.destroyForcibly();
            throw new IllegalStateException("the API relay on " + host.name() + " said " + line);
        }
    }

    /** @return null when the agent's /readyz answers 200 (busybox wget in the host's namespace) */
    private static String readiness(Topology topology, Topology.Host host) throws Exception {
        Process wget =
                topology.exec(
                        host,
                        List.of("busybox", "wget", "-q", "-O", "-", ADMIN + "/readyz"),
                        pb -> pb.redirectErrorStream(true));
        String out = new String(wget.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!wget.waitFor(10, TimeUnit.SECONDS)) {
            wget.destroyForcibly();
            return "no answer within 10 s";
        }
        return wget.exitValue() == 0 ? null : out.strip();
    }

    /** Waits until one echo request from the pod's namespace to {@code ip} is answered. */
    private static void awaitPing(String netns, String ip) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String last = "";
        while (true) {
            Process ping =
                    new ProcessBuilder(
                                    "nsenter",
                                    "--net=" + netns,
                                    "busybox",
                                    "ping",
                                    "-c",
                                    "1",
                                    "-W",
                                    "1",
                                    ip)
                            .redirectErrorStream(true)
                            .start();
            last = new String(ping.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (ping.waitFor(10, TimeUnit.SECONDS) && ping.exitValue() == 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(netns + " did not reach " + ip + " within 30 s: " + last);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
        }
    }

    private static String randomHex() {
        byte[] bytes = new byte[16];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    private static void deleteTree(Path root) throws java.io.IOException {
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
