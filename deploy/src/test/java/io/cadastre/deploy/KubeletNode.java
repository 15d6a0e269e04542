package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.kube.MockKubernetesApi;
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
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A Kubernetes node as the image tests run one: kubelet's side of the DaemonSet's pods, through a
 * private containerd's CRI. The node's file system is a directory of the test's: every host path
 * of the manifest lives under it ({@link #hostPath}), and paths the manifest mounts at the same
 * place as on the host (the CNI socket's directory) stay the same on both sides, as the manifest
 * requires. The pods' network namespaces are containerd's, under its state directory, made a
 * shared mount as a node's {@code /var/run/netns} is (iproute2 and systemd do it:
 * {@link #shareNetnsDir}), so that HostToContainer propagation shows the agent the namespaces made
 * after it started. {@code /proc/sys/net} is the kernel's, as the network namespace containerd
 * runs in sees it. ConfigMaps and Secrets are directories the test wrote, as kubelet writes their
 * volumes.
 */
final class KubeletNode {
    /** Where kubelet mounts a pod's service account (its projected token volume). */
    static final String SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

    /** How long a container may take to exit, or the agent to become ready. */
    static final Duration DEADLINE = Duration.ofSeconds(120);

    static final ObjectMapper JSON = new ObjectMapper();

    /**
     * Directories whose paths leave the container: the CNI socket's (the conflist names it to the
     * plugin on the host) and the netns one (the runtime on the host names CNI_NETNS there).
     */
    private static final Set<String> SHARED_WITH_HOST = Set.of("/run/cadastre", "/var/run/netns");

    /** The Node's name (its pods' {@code spec.nodeName}). */
    final String name;

    /** The node's address: kubelet's {@code status.hostIP}, and a host-network pod's IP. */
    final String ip;

    /** The node's file system. */
    final Path root;

    /** The cluster's API server. */
    final MockKubernetesApi api;

    /** ConfigMap name to the directory of its files. */
    final Map<String, Path> configMaps = new HashMap<>();

    /** Secret name to the directory of its files (a Secret not here does not exist). */
    final Map<String, Path> secrets = new HashMap<>();

    /** The runtime's netns directory: the node's {@code /var/run/netns}. */
    Path netns;

    KubeletNode(String name, String ip, Path root, MockKubernetesApi api) {
        this.name = name;
        this.ip = ip;
        this.root = root;
        this.api = api;
    }

    /** How the test asks the agent's admin API whether it is ready. */
    interface Readiness {
        /**
         * @return null when ready, otherwise what the agent answered
         * @throws IOException when it could not be asked (the wait goes on; anything else ends it)
         */
        String notReady() throws Exception;
    }

    /** One pod of the DaemonSet on the node: its sandbox's configuration and id, and its agent container's. */
    record AgentPod(PodSandboxConfig config, String sandbox, String agent) {}

    /**
     * Starts a pod of the DaemonSet as kubelet does, until the agent's admin API says it is ready:
     * its host-network sandbox, its object in the API (Running at the node's address), the init
     * container to completion (the plugin and the conflist installed, naming {@code socket}), then
     * the agent container.
     *
     * @param socket the CNI socket's path on the node, which the conflist must name
     * @param pods the sandboxes to remove at the end; the new one is added
     */
    AgentPod startAgentPod(
            CriClient cri, DaemonSet ds, String socket, Readiness readiness, List<String> pods)
            throws Exception {
        PodSpec spec = ds.getSpec().getTemplate().getSpec();
        Map<String, String> labels = ds.getSpec().getTemplate().getMetadata().getLabels();
        PodSandboxConfig agentPod =
                KubeletPods.hostNetwork(
                        KubeletPods.sandbox(
                                "cadastre",
                                "cadastre-" + shortId(),
                                UUID.randomUUID().toString(),
                                root.resolve("pods"),
                                labels,
                                Map.of()));
        String agentSandbox = cri.runPodSandbox(agentPod);
        pods.add(agentSandbox);
        // The API server's view: the DaemonSet's pod bound to the node.
        api.admin()
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
                                .withSpec(new PodSpecBuilder(spec).withNodeName(name).build())
                                .withNewStatus()
                                .withPhase("Running")
                                .withHostIP(ip)
                                .withPodIP(ip)
                                .endStatus()
                                .build())
                .create();

        // The init container, to completion, as kubelet runs it before the pod's containers.
        Container install = DaemonSetTest.container(spec, "install-cni");
        String installId =
                cri.createAndStartContainer(
                        agentSandbox, container(agentPod, install, spec), agentPod);
        ContainerStatus installed = awaitExit(cri, installId, agentPod, "install-cni");
        assertEquals(0, installed.getExitCode(), log(agentPod, "install-cni"));
        Path bin = hostPath("/opt/cni/bin");
        for (String plugin : List.of("cadastre", "cadastre-ipam")) {
            assertTrue(Files.isExecutable(bin.resolve(plugin)), plugin + " installed");
        }
        JsonNode conflist =
                JSON.readTree(hostPath("/etc/cni/net.d").resolve("10-cadastre.conflist").toFile());
        assertEquals(
                socket,
                conflist.path("plugins").path(0).path("agentSocket").asText(),
                conflist.toString());

        // The agent container, until the admin API says it is ready.
        Container agentSpec = DaemonSetTest.container(spec, "agent");
        String agent =
                cri.createAndStartContainer(
                        agentSandbox, container(agentPod, agentSpec, spec), agentPod);
        awaitReady(cri, agent, agentPod, readiness);
        return new AgentPod(agentPod, agentSandbox, agent);
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
                                config.addEnvs(KeyValue.newBuilder().setKey(key).setValue(value)));
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
                                        .addAllDropCapabilities(sc.getCapabilities().getDrop()));
        if (sc.getSeccompProfile() != null) {
            assertEquals("RuntimeDefault", sc.getSeccompProfile().getType());
            linux.setSeccomp(
                    SecurityProfile.newBuilder()
                            .setProfileType(SecurityProfile.ProfileType.RuntimeDefault));
        }
        return config.setLinux(LinuxContainerConfig.newBuilder().setSecurityContext(linux)).build();
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
            case "spec.nodeName" -> name;
            case "metadata.namespace" -> sandbox.getMetadata().getNamespace();
            case "status.hostIP" -> ip;
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
        } else if (v.getSecret() != null && secrets.containsKey(v.getSecret().getSecretName())) {
            host = secrets.get(v.getSecret().getSecretName());
        } else if (v.getEmptyDir() != null
                || (v.getSecret() != null && Boolean.TRUE.equals(v.getSecret().getOptional()))) {
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

    /**
     * Makes the netns directory a shared mount point (bound onto itself), as a node's
     * /var/run/netns is: without it no mount made there later propagates into the agent's container.
     */
    static void shareNetnsDir(Path dir) throws Exception {
        Files.createDirectories(dir);
        run("mount", "--bind", dir.toString(), dir.toString());
        run("mount", "--make-shared", dir.toString());
    }

    /** cadastrectl run by ExecSync in the agent's container; its JSON output. */
    static JsonNode ctl(CriClient cri, String container, String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of("cadastrectl"));
        argv.addAll(List.of(args));
        ExecResult r = cri.execSync(container, 60, argv.toArray(String[]::new));
        assertEquals(0, r.exitCode(), r.toString());
        return JSON.readTree(r.stdout());
    }

    /** Waits for the container to exit; fails with its log when it does not within the deadline. */
    static ContainerStatus awaitExit(CriClient cri, String id, PodSandboxConfig pod, String name)
            throws IOException {
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

    /**
     * Waits until the agent says it is ready; fails with the container's log when it exits or
     * the deadline passes.
     */
    static void awaitReady(CriClient cri, String id, PodSandboxConfig pod, Readiness readiness)
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
                String answer = readiness.notReady();
                if (answer == null) {
                    return;
                }
                last = answer;
            } catch (IOException e) {
                last = e.toString();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "not ready within " + DEADLINE + " (" + last + "):\n" + log(pod, "agent"));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(250));
        }
    }

    /** @return the container's log, where kubelet would read it (the sandbox's log directory) */
    static String log(PodSandboxConfig pod, String container) {
        Path file = Path.of(pod.getLogDirectory()).resolve(container).resolve("0.log");
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "(no log " + file + ": " + e + ")";
        }
    }

    static String shortId() {
        return UUID.randomUUID().toString().substring(0, 5);
    }

    /** Runs a command to its end. @throws IOException with its output when it fails */
    static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out);
        }
    }
}
