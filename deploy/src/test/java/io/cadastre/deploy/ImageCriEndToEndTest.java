package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.kube.KubeObjects;
import io.cadastre.kube.MockKubernetesApi;
import io.cadastre.testcri.Containerd;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.CriClient.ExecResult;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.v1.Capability;
import io.cadastre.testcri.v1.ContainerConfig;
import io.cadastre.testcri.v1.ContainerState;
import io.cadastre.testcri.v1.ContainerStatus;
import io.cadastre.testcri.v1.KeyValue;
import io.cadastre.testcri.v1.LinuxContainerConfig;
import io.cadastre.testcri.v1.LinuxContainerSecurityContext;
import io.cadastre.testcri.v1.Mount;
import io.cadastre.testcri.v1.MountPropagation;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.SecurityProfile;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodSpecBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
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
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
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
 * <p>The node's file system is a directory of the test's: every host path of the manifest lives
 * under it ({@link Node#hostPath}), and paths the manifest mounts at the same place as on the host
 * (the CNI socket's directory) stay the same on both sides, as the manifest requires. The pods'
 * network namespaces are containerd's, under its state directory, made a shared mount as a node's
 * {@code /var/run/netns} is (iproute2 and systemd do it), so that HostToContainer propagation
 * shows the agent the namespaces made after it started. {@code /proc/sys/net} is the machine's.
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
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration DEADLINE = Duration.ofSeconds(120);
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
     * Directories whose paths leave the container: the CNI socket's (the conflist names it to the
     * plugin on the host) and the netns one (the runtime on the host names CNI_NETNS there).
     */
    private static final java.util.Set<String> SHARED_WITH_HOST =
            java.util.Set.of("/run/cadastre", "/var/run/netns");

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
            Node node = new Node(root, api);
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
            shareNetnsDir(node.netns);
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
            AgentPod first = startAgentPod(cri, node, ds, socket, base, pods);
            PodSandboxConfig agentPod = first.config();
            String agent = first.agent();
            // The image's Kubernetes client, with the service account kubelet mounted, read the
            // Node over HTTPS. (The log is JSON lines, which write "/" as "\/".)
            assertTrue(
                    log(agentPod, "agent")
                            .replace("\\/", "/")
                            .contains("node labels from the Node object: " + NODE_LABELS),
                    log(agentPod, "agent"));
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
                    KubeletPods.sandbox("shop", "web-" + shortId(), root.resolve("pods"));
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
            JsonNode shown = ctl(cri, agent, "--server", base, "node", "show", NODE, "-o", "json");
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
            AgentPod second = startAgentPod(cri, node, ds, socket, base, pods);
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
                    ctl(cri, second.agent(), "--server", base, "node", "show", NODE, "-o", "json");
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
                        ctl(
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

    /** One pod of the DaemonSet on the node: its sandbox's configuration and id, and its agent container's. */
    private record AgentPod(PodSandboxConfig config, String sandbox, String agent) {}

    /**
     * Starts a pod of the DaemonSet as kubelet does, until the agent's admin API says it is ready:
     * its host-network sandbox, its object in the API (Running at the node's address), the init
     * container to completion (the plugin and the conflist installed, naming {@code socket}), then
     * the agent container.
     *
     * @param pods the sandboxes to remove at the end; the new one is added
     */
    private static AgentPod startAgentPod(
            CriClient cri,
            Node node,
            DaemonSet ds,
            String socket,
            String adminUrl,
            List<String> pods)
            throws Exception {
        PodSpec spec = ds.getSpec().getTemplate().getSpec();
        Map<String, String> labels = ds.getSpec().getTemplate().getMetadata().getLabels();
        PodSandboxConfig agentPod =
                KubeletPods.hostNetwork(
                        KubeletPods.sandbox(
                                "cadastre",
                                "cadastre-" + shortId(),
                                UUID.randomUUID().toString(),
                                node.root.resolve("pods"),
                                labels,
                                Map.of()));
        String agentSandbox = cri.runPodSandbox(agentPod);
        pods.add(agentSandbox);
        // The API server's view: the DaemonSet's pod bound to the node.
        node.api
                .admin()
                .pods()
                .inNamespace(agentPod.getMetadata().getNamespace())
                .resource(
                        new PodBuilder()
                                .withNewMetadata()
                                .withName(agentPod.getMetadata().getName())
                                .withNamespace(agentPod.getMetadata().getNamespace())
                                .withUid(agentPod.getMetadata().getUid())
                                .withLabels(labels)
                                .endMetadata()
                                .withSpec(new PodSpecBuilder(spec).withNodeName(NODE).build())
                                .withNewStatus()
                                .withPhase("Running")
                                .withHostIP(NODE_IP)
                                .withPodIP(NODE_IP)
                                .endStatus()
                                .build())
                .create();

        // The init container, to completion, as kubelet runs it before the pod's containers.
        Container install = DaemonSetTest.container(spec, "install-cni");
        String installId =
                cri.createAndStartContainer(
                        agentSandbox, node.container(agentPod, install, spec), agentPod);
        ContainerStatus installed = awaitExit(cri, installId, agentPod, "install-cni");
        assertEquals(0, installed.getExitCode(), log(agentPod, "install-cni"));
        Path bin = node.hostPath("/opt/cni/bin");
        for (String plugin : List.of("cadastre", "cadastre-ipam")) {
            assertTrue(Files.isExecutable(bin.resolve(plugin)), plugin + " installed");
        }
        JsonNode conflist =
                JSON.readTree(
                        node.hostPath("/etc/cni/net.d").resolve("10-cadastre.conflist").toFile());
        assertEquals(
                socket,
                conflist.path("plugins").path(0).path("agentSocket").asText(),
                conflist.toString());

        // The agent container, until the admin API says it is ready.
        Container agentSpec = DaemonSetTest.container(spec, "agent");
        String agent =
                cri.createAndStartContainer(
                        agentSandbox, node.container(agentPod, agentSpec, spec), agentPod);
        awaitReady(cri, agent, agentPod, adminUrl + readinessPath(agentSpec));
        return new AgentPod(agentPod, agentSandbox, agent);
    }

    private static String readinessPath(Container agent) {
        return agent.getReadinessProbe().getHttpGet().getPath();
    }

    /**
     * The node: host paths under {@code root}, the runtime's netns directory for
     * {@code /var/run/netns}, the ConfigMaps kubelet would have written, and how kubelet turns a
     * manifest's container into a CRI container configuration.
     */
    private static final class Node {
        /** Where kubelet mounts a pod's service account (its projected token volume). */
        static final String SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

        final Path root;
        final Map<String, Path> configMaps = new java.util.HashMap<>();
        Path netns;

        /** The cluster's API server. */
        final MockKubernetesApi api;

        Node(Path root, MockKubernetesApi api) {
            this.root = root;
            this.api = api;
        }

        /** @return where the manifest's host path {@code path} is on this test node */
        Path hostPath(String path) {
            if (path.equals("/var/run/netns")) {
                return netns;
            }
            if (path.startsWith("/proc/")) {
                return Path.of(path); // the kernel's, not a file of the node's
            }
            return root.resolve(path.substring(1));
        }

        /**
         * @return {@code c} as kubelet hands it to the runtime: image, args, env (field
         *     references resolved), mounts, and the Linux security context
         */
        ContainerConfig container(PodSandboxConfig sandbox, Container c, PodSpec pod)
                throws IOException {
            ContainerConfig.Builder config =
                    KubeletPods.container(sandbox, c.getName(), c.getImage()).toBuilder()
                            .clearCommand()
                            .addAllArgs(args(c));
            for (EnvVar e : c.getEnv()) {
                config.addEnvs(
                        KeyValue.newBuilder().setKey(e.getName()).setValue(envValue(e, sandbox)));
            }
            // kubelet gives every container the API server's Service address and, the pod's
            // service account's token being mounted by default, the account's files.
            api.serviceEnvironment()
                    .forEach(
                            (key, value) ->
                                    config.addEnvs(
                                            KeyValue.newBuilder().setKey(key).setValue(value)));
            for (VolumeMount m : c.getVolumeMounts()) {
                config.addMounts(mount(m, pod));
            }
            if (!Boolean.FALSE.equals(pod.getAutomountServiceAccountToken())) {
                config.addMounts(
                        Mount.newBuilder()
                                .setContainerPath(SERVICE_ACCOUNT)
                                .setHostPath(serviceAccount(sandbox).toString())
                                .setReadonly(true));
            }
            SecurityContext sc = c.getSecurityContext();
            LinuxContainerSecurityContext.Builder linux =
                    LinuxContainerSecurityContext.newBuilder()
                            .setPrivileged(Boolean.TRUE.equals(sc.getPrivileged()))
                            .setReadonlyRootfs(Boolean.TRUE.equals(sc.getReadOnlyRootFilesystem()))
                            .setNoNewPrivs(Boolean.FALSE.equals(sc.getAllowPrivilegeEscalation()))
                            // kubelet gives each container its pod's namespace modes (PID: the
                            // container's own)
                            .setNamespaceOptions(
                                    sandbox.getLinux().getSecurityContext().getNamespaceOptions())
                            .addAllMaskedPaths(KubeletPods.MASKED_PATHS)
                            .addAllReadonlyPaths(KubeletPods.READONLY_PATHS)
                            .setCapabilities(
                                    Capability.newBuilder()
                                            .addAllAddCapabilities(
                                                    sc.getCapabilities().getAdd() == null
                                                            ? List.of()
                                                            : sc.getCapabilities().getAdd())
                                            .addAllDropCapabilities(
                                                    sc.getCapabilities().getDrop()));
            if (sc.getSeccompProfile() != null) {
                assertEquals("RuntimeDefault", sc.getSeccompProfile().getType());
                linux.setSeccomp(
                        SecurityProfile.newBuilder()
                                .setProfileType(SecurityProfile.ProfileType.RuntimeDefault));
            }
            return config.setLinux(LinuxContainerConfig.newBuilder().setSecurityContext(linux))
                    .build();
        }

        /** @return the service account's files for the pod's containers, written once per pod */
        private Path serviceAccount(PodSandboxConfig sandbox) throws IOException {
            Path dir =
                    root.resolve("volumes")
                            .resolve("service-account-" + sandbox.getMetadata().getUid());
            return Files.isDirectory(dir)
                    ? dir
                    : api.serviceAccount(dir, sandbox.getMetadata().getNamespace());
        }

        /** The manifest's args, with host paths that the manifest uses on both sides moved under the node's root. */
        private List<String> args(Container c) {
            List<String> args = new ArrayList<>();
            for (String a : c.getArgs()) {
                args.add(
                        a.startsWith("--socket=/run/cadastre/")
                                ? "--socket=" + hostPath(a.substring("--socket=".length()))
                                : a);
            }
            return args;
        }

        private String envValue(EnvVar e, PodSandboxConfig sandbox) {
            if (e.getValue() != null) {
                return e.getValue();
            }
            String field = e.getValueFrom().getFieldRef().getFieldPath();
            return switch (field) {
                case "spec.nodeName" -> NODE;
                case "metadata.namespace" -> sandbox.getMetadata().getNamespace();
                case "status.hostIP" -> NODE_IP;
                default ->
                        throw new AssertionError(
                                "a field kubelet would fill in that this test does not: " + field);
            };
        }

        /** A volume mount as kubelet hands it over: the host directory behind the volume. */
        private Mount mount(VolumeMount m, PodSpec pod) throws IOException {
            Volume v =
                    pod.getVolumes().stream()
                            .filter(x -> x.getName().equals(m.getName()))
                            .findFirst()
                            .orElseThrow();
            Path host;
            String containerPath = m.getMountPath();
            if (v.getHostPath() != null) {
                host = hostPath(v.getHostPath().getPath());
                if ("DirectoryOrCreate".equals(v.getHostPath().getType())) {
                    Files.createDirectories(host);
                }
                if (SHARED_WITH_HOST.contains(m.getMountPath())) {
                    assertEquals(m.getMountPath(), v.getHostPath().getPath());
                    containerPath = host.toString(); // the same path on both sides, also here
                }
            } else if (v.getConfigMap() != null) {
                host = configMaps.get(v.getConfigMap().getName());
            } else if (v.getEmptyDir() != null
                    || (v.getSecret() != null
                            && Boolean.TRUE.equals(v.getSecret().getOptional()))) {
                // An emptyDir; an optional Secret that does not exist is mounted empty.
                host = Files.createDirectories(root.resolve("volumes").resolve(v.getName()));
            } else {
                throw new AssertionError(
                        "volume " + v.getName() + " of a kind this test does not provide");
            }
            String propagation = m.getMountPropagation();
            return Mount.newBuilder()
                    .setContainerPath(containerPath)
                    .setHostPath(host.toString())
                    .setReadonly(Boolean.TRUE.equals(m.getReadOnly()))
                    .setPropagation(
                            "HostToContainer".equals(propagation)
                                    ? MountPropagation.PROPAGATION_HOST_TO_CONTAINER
                                    : MountPropagation.PROPAGATION_PRIVATE)
                    .build();
        }
    }

    /**
     * Makes the netns directory a shared mount point (bound onto itself), as a node's
     * /var/run/netns is: without it no mount made there later propagates into the agent's container.
     */
    private static void shareNetnsDir(Path dir) throws Exception {
        Files.createDirectories(dir);
        run("mount", "--bind", dir.toString(), dir.toString());
        run("mount", "--make-shared", dir.toString());
    }

    /** cadastrectl run by ExecSync in the agent's container; its JSON output. */
    private static JsonNode ctl(CriClient cri, String container, String... args)
            throws IOException {
        List<String> argv = new ArrayList<>(List.of("cadastrectl"));
        argv.addAll(List.of(args));
        ExecResult r = cri.execSync(container, 60, argv.toArray(String[]::new));
        assertEquals(0, r.exitCode(), r.toString());
        return JSON.readTree(r.stdout());
    }

    /** Waits for the container to exit; fails with its log when it does not within the deadline. */
    private static ContainerStatus awaitExit(
            CriClient cri, String id, PodSandboxConfig pod, String name) throws IOException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        while (true) {
            ContainerStatus status = cri.containerStatus(id);
            if (status.getState() == ContainerState.CONTAINER_EXITED) {
                return status;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        name
                                + " did not exit within "
                                + DEADLINE
                                + ": "
                                + status
                                + "\n"
                                + log(pod, name));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
        }
    }

    /** Waits until {@code url} answers 200; fails with the container's log when it exits or the deadline passes. */
    private static void awaitReady(CriClient cri, String id, PodSandboxConfig pod, String url)
            throws Exception {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        String last = "no answer";
        while (true) {
            ContainerStatus status = cri.containerStatus(id);
            if (status.getState() == ContainerState.CONTAINER_EXITED) {
                throw new AssertionError(
                        "the agent exited with "
                                + status.getExitCode()
                                + ":\n"
                                + log(pod, "agent"));
            }
            try {
                HttpResponse<String> r = get(url);
                if (r.statusCode() == 200) {
                    return;
                }
                last = r.statusCode() + " " + r.body();
            } catch (IOException e) {
                last = e.toString();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        url
                                + " not ready within "
                                + DEADLINE
                                + " ("
                                + last
                                + "):\n"
                                + log(pod, "agent"));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(250));
        }
    }

    private static HttpResponse<String> get(String url) throws IOException, InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        return http.send(
                HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** @return the container's log, where kubelet would read it (the sandbox's log directory) */
    private static String log(PodSandboxConfig pod, String container) {
        Path file = Path.of(pod.getLogDirectory()).resolve(container).resolve("0.log");
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "(no log " + file + ": " + e + ")";
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String shortId() {
        return UUID.randomUUID().toString().substring(0, 5);
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out =
                new String(
                        p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out);
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
