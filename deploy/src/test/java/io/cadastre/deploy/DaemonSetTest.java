package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HTTPGetAction;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.RollingUpdateDaemonSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * What the DaemonSet must be for the agent to work on a node, checked on the parsed manifest
 * (there is no API server here; {@code ImageCriEndToEndTest} runs the same pod shape through
 * containerd's CRI): host network, every mount at the path the agent and the host's plugin use,
 * the init container writing where the runtime reads CNI plugins and configurations, probes on
 * the admin API's real endpoints and port, the capabilities the dataplane's calls need and no
 * more, and the scheduling of a node's own network agent.
 */
class DaemonSetTest {
    private static final DaemonSet DS = daemonSet();
    private static final PodSpec POD = DS.getSpec().getTemplate().getSpec();

    private static DaemonSet daemonSet() {
        try {
            return Manifests.one(Manifests.read(Manifests.DIR), DaemonSet.class, "cadastre");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** @return the container named {@code name}, of the init containers or the others */
    static Container container(PodSpec pod, String name) {
        return java.util.stream.Stream.concat(
                        pod.getInitContainers().stream(), pod.getContainers().stream())
                .filter(c -> c.getName().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no container " + name));
    }

    /** @return the host path behind the volume mounted at {@code mountPath} in {@code container} */
    static String hostPathAt(PodSpec pod, Container container, String mountPath) {
        VolumeMount mount = mountAt(container, mountPath);
        Volume volume =
                pod.getVolumes().stream()
                        .filter(v -> v.getName().equals(mount.getName()))
                        .findFirst()
                        .orElseThrow();
        assertNotNull(volume.getHostPath(), mountPath + " is no hostPath volume");
        return volume.getHostPath().getPath();
    }

    static VolumeMount mountAt(Container container, String mountPath) {
        return container.getVolumeMounts().stream()
                .filter(m -> m.getMountPath().equals(mountPath))
                .findFirst()
                .orElseThrow(
                        () ->
                                new AssertionError(
                                        container.getName() + " mounts nothing at " + mountPath));
    }

    @Test
    void theAgentRunsInTheHostNetworkOnEveryNodeAsANodeCriticalPod() {
        assertTrue(
                POD.getHostNetwork(),
                "hostNetwork: veths, routes and VXLAN devices are the host's");
        assertEquals(
                "Default",
                POD.getDnsPolicy(),
                "the node's resolver: cluster DNS needs this network first");
        assertEquals("system-node-critical", POD.getPriorityClassName());
        assertEquals(1, POD.getTolerations().size());
        Toleration any = POD.getTolerations().get(0);
        assertEquals("Exists", any.getOperator());
        assertNull(any.getKey(), "every taint, not one key's");
        assertNull(any.getEffect(), "every effect");
        assertEquals(
                DS.getSpec().getSelector().getMatchLabels(),
                DS.getSpec().getTemplate().getMetadata().getLabels());
    }

    @Test
    void aRollingUpdateNeverRunsTwoAgentsOnOneNode() {
        assertEquals("RollingUpdate", DS.getSpec().getUpdateStrategy().getType());
        RollingUpdateDaemonSet rolling = DS.getSpec().getUpdateStrategy().getRollingUpdate();
        assertEquals(1, rolling.getMaxUnavailable().getIntVal());
        assertEquals(
                0,
                rolling.getMaxSurge().getIntVal(),
                "a surge would start the new agent beside the old one");
    }

    @Test
    void theInitContainerInstallsThePluginAndConflistIntoTheHostsCniDirectories() {
        Container install = container(POD, "install-cni");
        assertEquals(List.of(install), POD.getInitContainers());
        Map<String, String> args = options(install.getArgs().subList(1, install.getArgs().size()));
        assertEquals("install", install.getArgs().get(0));
        assertEquals(
                "/opt/cni/bin",
                hostPathAt(POD, install, args.get("--bin-dir")),
                "where runtimes look for CNI plugins");
        assertEquals(
                "/etc/cni/net.d",
                hostPathAt(POD, install, args.get("--conf-dir")),
                "where runtimes read network configurations");
        // The conflist names the socket the agent listens on, at a path that is the same on the
        // host.
        Container agent = container(POD, "agent");
        String socketDir = args.get("--socket").substring(0, args.get("--socket").lastIndexOf('/'));
        assertEquals(
                socketDir,
                hostPathAt(POD, agent, socketDir),
                "the plugin on the host connects to this path");
        assertEquals(ConfigMapTest.setting("cadastre.cni-socket"), args.get("--socket"));
        assertNoCapabilities(install.getSecurityContext());
        assertTrue(install.getSecurityContext().getReadOnlyRootFilesystem());
        assertFalse(install.getSecurityContext().getAllowPrivilegeEscalation());
        assertEquals(
                DS.getSpec().getTemplate().getSpec().getContainers().get(0).getImage(),
                install.getImage());
    }

    @Test
    void theAgentSeesTheHostsPathsWhereItAndThePluginUseThem() {
        Container agent = container(POD, "agent");
        // CNI_NETNS paths are the runtime's, on the host: the same path, new namespaces included.
        assertEquals("/var/run/netns", hostPathAt(POD, agent, "/var/run/netns"));
        assertEquals("HostToContainer", mountAt(agent, "/var/run/netns").getMountPropagation());
        // The data directory where `sudo cadastrectl` on the node finds the admin token.
        assertEquals(
                ConfigMapTest.setting("cadastre.data-dir"),
                hostPathAt(POD, agent, ConfigMapTest.setting("cadastre.data-dir")));
        // The host's network sysctls, writable, where cadastre.proc-sys points.
        String procSysNet = ConfigMapTest.setting("cadastre.proc-sys") + "/net";
        assertEquals("/proc/sys/net", hostPathAt(POD, agent, procSysNet));
        assertFalse(Boolean.TRUE.equals(mountAt(agent, procSysNet).getReadOnly()));
        // The settings file the agent is started with comes from the ConfigMap.
        int config = agent.getArgs().indexOf("--config");
        String file = agent.getArgs().get(config + 1);
        VolumeMount settings = mountAt(agent, file.substring(0, file.lastIndexOf('/')));
        Volume volume =
                POD.getVolumes().stream()
                        .filter(v -> v.getName().equals(settings.getName()))
                        .findFirst()
                        .orElseThrow();
        assertEquals("cadastre-config", volume.getConfigMap().getName());
        assertEquals(ConfigMapTest.CONF_KEY, file.substring(file.lastIndexOf('/') + 1));
        // Node-specific values from the downward API.
        Map<String, String> fields =
                agent.getEnv().stream()
                        .filter(
                                e ->
                                        e.getValueFrom() != null
                                                && e.getValueFrom().getFieldRef() != null)
                        .collect(
                                Collectors.toMap(
                                        EnvVar::getName,
                                        e -> e.getValueFrom().getFieldRef().getFieldPath()));
        assertEquals(
                Map.of(
                        "CADASTRE_NODE_NAME",
                        "spec.nodeName",
                        "CADASTRE_POD_NAMESPACE",
                        "metadata.namespace",
                        "CADASTRE_CLUSTER_HOSTNAME",
                        "status.hostIP"),
                fields);
        // A read-only root file system, with somewhere for native libraries to unpack.
        assertTrue(agent.getSecurityContext().getReadOnlyRootFilesystem());
        assertNotNull(
                POD.getVolumes().stream()
                        .filter(v -> v.getName().equals(mountAt(agent, "/tmp").getName()))
                        .findFirst()
                        .orElseThrow()
                        .getEmptyDir());
    }

    @Test
    void noVolumeIsMountedInsideAnother() {
        for (Container c : List.of(container(POD, "install-cni"), container(POD, "agent"))) {
            List<String> paths =
                    c.getVolumeMounts().stream().map(VolumeMount::getMountPath).toList();
            for (String outer : paths) {
                for (String inner : paths) {
                    // The runtime would have to make the inner mount point inside the outer volume,
                    // which fails when that one is read-only (a ConfigMap, a Secret).
                    assertFalse(
                            inner.startsWith(outer + "/"),
                            c.getName() + ": " + inner + " inside " + outer);
                }
            }
        }
    }

    @Test
    void probesAskTheAdminApiOnTheNodesLoopback() {
        Container agent = container(POD, "agent");
        String bind = ConfigMapTest.setting("cadastre.admin.bind");
        String host = bind.substring(0, bind.lastIndexOf(':'));
        int port = Integer.parseInt(bind.substring(bind.lastIndexOf(':') + 1));
        assertProbe(agent.getReadinessProbe(), host, port, "/readyz");
        assertProbe(agent.getLivenessProbe(), host, port, "/healthz");
        assertProbe(agent.getStartupProbe(), host, port, "/healthz");
    }

    private static void assertProbe(Probe probe, String host, int port, String path) {
        HTTPGetAction get = probe.getHttpGet();
        assertEquals(
                host,
                get.getHost(),
                "the admin API listens on loopback only; kubelet shares the host's");
        assertEquals(port, get.getPort().getIntVal());
        assertEquals(path, get.getPath());
        assertTrue(get.getScheme() == null || get.getScheme().equals("HTTP"));
    }

    @Test
    void theAgentHasOnlyTheCapabilitiesItsDataplaneCalls() {
        SecurityContext sc = container(POD, "agent").getSecurityContext();
        assertFalse(sc.getPrivileged());
        assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
        assertEquals(Set.of("NET_ADMIN", "SYS_ADMIN"), Set.copyOf(sc.getCapabilities().getAdd()));
        // The API server refuses allowPrivilegeEscalation: false together with SYS_ADMIN.
        assertNull(sc.getAllowPrivilegeEscalation());
        assertEquals("RuntimeDefault", sc.getSeccompProfile().getType());
        assertEquals(0L, sc.getRunAsUser());
    }

    private static void assertNoCapabilities(SecurityContext sc) {
        assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
        assertTrue(
                sc.getCapabilities().getAdd() == null || sc.getCapabilities().getAdd().isEmpty());
        assertFalse(Boolean.TRUE.equals(sc.getPrivileged()));
    }

    @Test
    void theImageIsTheOneTheBuildMakes() {
        for (Container c : List.of(container(POD, "install-cni"), container(POD, "agent"))) {
            assertEquals(System.getProperty("cadastre.image.name"), c.getImage(), c.getName());
            assertEquals(
                    "IfNotPresent",
                    c.getImagePullPolicy(),
                    "no registry: the image is loaded onto the nodes");
        }
    }

    /** {@code --key=value} arguments by key. */
    private static Map<String, String> options(List<String> args) {
        return args.stream()
                .collect(
                        Collectors.toMap(
                                a -> a.substring(0, a.indexOf('=')),
                                a -> a.substring(a.indexOf('=') + 1)));
    }
}
