package io.cadastre.testcri;

import io.cadastre.testcri.v1.ContainerConfig;
import io.cadastre.testcri.v1.ContainerMetadata;
import io.cadastre.testcri.v1.DNSConfig;
import io.cadastre.testcri.v1.ImageSpec;
import io.cadastre.testcri.v1.LinuxPodSandboxConfig;
import io.cadastre.testcri.v1.LinuxSandboxSecurityContext;
import io.cadastre.testcri.v1.NamespaceMode;
import io.cadastre.testcri.v1.NamespaceOption;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.PodSandboxMetadata;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * CRI configurations shaped as kubelet makes them for a pod (kubelet's
 * {@code generatePodSandboxConfig} and {@code generateContainerConfig}): what a runtime, and so
 * the CNI plugin it calls, sees for a real pod.
 *
 * <ul>
 *   <li>metadata: the pod's name, namespace and UID, attempt 0;
 *   <li>hostname: the pod's name;
 *   <li>log directory: {@code <logRoot>/<namespace>_<name>_<uid>} (kubelet's
 *       {@code /var/log/pods/...}), created here as kubelet creates it;
 *   <li>DNS: the cluster DNS service {@value #CLUSTER_DNS}, the search path
 *       {@code <namespace>.svc.cluster.local svc.cluster.local cluster.local}, {@code ndots:5};
 *   <li>labels: the pod's own plus {@code io.kubernetes.pod.name}, {@code .namespace}, {@code .uid};
 *   <li>annotations: the pod's own plus {@code kubernetes.io/config.source: api} and
 *       {@code kubernetes.io/config.seen}.
 * </ul>
 */
public final class KubeletPods {
    /** The cluster DNS service address written into sandboxes' resolv.conf (in the benchmarking range 198.18.0.0/15). */
    public static final String CLUSTER_DNS = "198.18.255.10";

    /**
     * What kubelet asks the runtime to mask in an unprivileged container (procMount Default;
     * kubelet's {@code securitycontext} defaults): bind-mounted over with nothing.
     */
    public static final List<String> MASKED_PATHS =
            List.of(
                    "/proc/asound",
                    "/proc/acpi",
                    "/proc/kcore",
                    "/proc/keys",
                    "/proc/latency_stats",
                    "/proc/timer_list",
                    "/proc/timer_stats",
                    "/proc/sched_debug",
                    "/proc/scsi",
                    "/sys/firmware",
                    "/sys/devices/virtual/powercap");

    /**
     * What kubelet asks the runtime to make read-only in an unprivileged container (procMount
     * Default): {@code /proc/sys} among them, so that such a container cannot set sysctls there.
     */
    public static final List<String> READONLY_PATHS =
            List.of("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger");

    private KubeletPods() {}

    /**
     * @return {@code sandbox} as kubelet makes it for a pod with {@code hostNetwork: true}: the
     *     network namespace is the node's (NODE), and so no CNI call is made for it; PID and IPC
     *     namespaces stay the pod's own (kubelet sets the PID mode CONTAINER for v1 pods); no
     *     hostname (kubelet sets none for such a pod: it shares the node's UTS namespace)
     */
    public static PodSandboxConfig hostNetwork(PodSandboxConfig sandbox) {
        return sandbox.toBuilder()
                .clearHostname()
                .setLinux(
                        LinuxPodSandboxConfig.newBuilder()
                                .setSecurityContext(
                                        LinuxSandboxSecurityContext.newBuilder()
                                                .setNamespaceOptions(
                                                        NamespaceOption.newBuilder()
                                                                .setNetwork(NamespaceMode.NODE)
                                                                .setPid(NamespaceMode.CONTAINER)
                                                                .setIpc(NamespaceMode.POD))))
                .build();
    }

    /**
     * @param logRoot where pod log directories go (kubelet's {@code /var/log/pods})
     * @param labels the pod's own labels
     * @param annotations the pod's own annotations
     * @throws IOException when the log directory cannot be created
     */
    public static PodSandboxConfig sandbox(
            String namespace,
            String name,
            String uid,
            Path logRoot,
            Map<String, String> labels,
            Map<String, String> annotations)
            throws IOException {
        Path logDirectory = logRoot.resolve(namespace + "_" + name + "_" + uid);
        Files.createDirectories(logDirectory);
        return PodSandboxConfig.newBuilder()
                .setMetadata(
                        PodSandboxMetadata.newBuilder()
                                .setName(name)
                                .setNamespace(namespace)
                                .setUid(uid)
                                .setAttempt(0))
                .setHostname(name)
                .setLogDirectory(logDirectory.toString())
                .setDnsConfig(
                        DNSConfig.newBuilder()
                                .addServers(CLUSTER_DNS)
                                .addSearches(namespace + ".svc.cluster.local")
                                .addSearches("svc.cluster.local")
                                .addSearches("cluster.local")
                                .addOptions("ndots:5"))
                .putAllLabels(labels)
                .putLabels("io.kubernetes.pod.name", name)
                .putLabels("io.kubernetes.pod.namespace", namespace)
                .putLabels("io.kubernetes.pod.uid", uid)
                .putAllAnnotations(annotations)
                .putAnnotations("kubernetes.io/config.source", "api")
                .putAnnotations("kubernetes.io/config.seen", Instant.now().toString())
                .build();
    }

    /** As {@link #sandbox(String, String, String, Path, Map, Map)} with an {@code app} label and a fresh UID. */
    public static PodSandboxConfig sandbox(String namespace, String name, Path logRoot)
            throws IOException {
        return sandbox(
                namespace,
                name,
                UUID.randomUUID().toString(),
                logRoot,
                Map.of("app", name),
                Map.of());
    }

    /** @return a container of {@link PauseImage} that sleeps for an hour: a shell to exec busybox applets in */
    public static ContainerConfig sleeper(PodSandboxConfig sandbox, String name) {
        return container(sandbox, name, PauseImage.NAME, "/bin/busybox", "sleep", "3600");
    }

    /**
     * A container as kubelet configures one: metadata, image, argv, labels naming the pod and the
     * container, a log path {@code <name>/0.log} under the sandbox's log directory.
     *
     * @param image an image the runtime holds (there is no registry: see {@link PauseImage})
     * @param argv the command (the image's entrypoint is not used)
     */
    public static ContainerConfig container(
            PodSandboxConfig sandbox, String name, String image, String... argv) {
        PodSandboxMetadata pod = sandbox.getMetadata();
        return ContainerConfig.newBuilder()
                .setMetadata(ContainerMetadata.newBuilder().setName(name).setAttempt(0))
                .setImage(ImageSpec.newBuilder().setImage(image))
                .addAllCommand(List.of(argv))
                .putLabels("io.kubernetes.container.name", name)
                .putLabels("io.kubernetes.pod.name", pod.getName())
                .putLabels("io.kubernetes.pod.namespace", pod.getNamespace())
                .putLabels("io.kubernetes.pod.uid", pod.getUid())
                .putAnnotations("io.kubernetes.container.restartCount", "0")
                .setLogPath(name + "/0.log")
                .build();
    }
}
