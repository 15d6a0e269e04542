package io.cadastre.kube;

import io.fabric8.kubernetes.api.model.ContainerPortBuilder;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.Map;

/**
 * The Kubernetes objects the tests make, as kubectl would, through any client of an API server
 * (this module's tests' in-JVM mock, module cluster's end-to-end tests' mock over HTTPS): each
 * created, or replaced when it exists.
 */
public final class KubeObjects {
    /** The labels the agents' DaemonSet gives its pods (the default {@code bootstrap.pod-label-selector}). */
    public static final Map<String, String> AGENT_LABELS =
            Map.of("app.kubernetes.io/name", "cadastre");

    private KubeObjects() {}

    /** The Node {@code name} with these labels. */
    public static Node node(KubernetesClient client, String name, Map<String, String> labels) {
        return client.nodes()
                .resource(
                        new NodeBuilder()
                                .withNewMetadata()
                                .withName(name)
                                .withLabels(labels)
                                .endMetadata()
                                .build())
                .createOr(existing -> existing.update());
    }

    /** The namespace {@code name} with these annotations. */
    public static Namespace namespace(
            KubernetesClient client, String name, Map<String, String> annotations) {
        return namespace(client, name, annotations, Map.of());
    }

    /** The namespace {@code name} with these labels (what NetworkPolicy's namespaceSelector reads). */
    public static Namespace labelledNamespace(
            KubernetesClient client, String name, Map<String, String> labels) {
        return namespace(client, name, Map.of(), labels);
    }

    private static Namespace namespace(
            KubernetesClient client,
            String name,
            Map<String, String> annotations,
            Map<String, String> labels) {
        return client.namespaces()
                .resource(
                        new NamespaceBuilder()
                                .withNewMetadata()
                                .withName(name)
                                .withAnnotations(annotations)
                                .withLabels(labels)
                                .endMetadata()
                                .build())
                .createOr(existing -> existing.update());
    }

    /** A pod with these annotations, bound to {@code node} (scheduled: its sandbox's ADD is next). */
    public static Pod pod(
            KubernetesClient client,
            String namespace,
            String name,
            String node,
            Map<String, String> annotations) {
        return client.pods()
                .inNamespace(namespace)
                .resource(
                        scheduled(namespace, name, node)
                                .editMetadata()
                                .withAnnotations(annotations)
                                .endMetadata()
                                .build())
                .createOr(existing -> existing.update());
    }

    /**
     * What kubelet reports of a pod once its sandbox is up: the pod {@code name} with these labels,
     * bound to {@code node}, Running with these addresses ({@code status.podIPs}, the first also
     * {@code status.podIP}); with none, Pending (scheduled, its sandbox not reported yet).
     */
    public static Pod runningPod(
            KubernetesClient client,
            String namespace,
            String name,
            String node,
            Map<String, String> labels,
            java.util.List<String> ips) {
        return client.pods()
                .inNamespace(namespace)
                .resource(
                        scheduled(namespace, name, node)
                                .editMetadata()
                                .withLabels(labels)
                                .endMetadata()
                                .withNewStatus()
                                .withPhase(ips.isEmpty() ? "Pending" : "Running")
                                .withPodIP(ips.isEmpty() ? null : ips.get(0))
                                .withPodIPs(
                                        ips.stream()
                                                .map(io.fabric8.kubernetes.api.model.PodIP::new)
                                                .toList())
                                .endStatus()
                                .build())
                .createOr(existing -> existing.update());
    }

    /** A pod bound to {@code node}, one container, as the scheduler leaves it. */
    private static PodBuilder scheduled(String namespace, String name, String node) {
        return new PodBuilder()
                .withNewMetadata()
                .withName(name)
                .withNamespace(namespace)
                .endMetadata()
                .withNewSpec()
                .withNodeName(node)
                .addNewContainer()
                .withName("app")
                .withImage("pause")
                .endContainer()
                .endSpec();
    }

    /**
     * An agent's pod of the DaemonSet in {@code namespace}: {@link #AGENT_LABELS}, host network, the
     * agent container's cluster port named {@code cluster}, Running with the pod IP (a host network
     * pod's IP is its node's).
     */
    public static Pod agentPod(
            KubernetesClient client,
            String namespace,
            String name,
            String node,
            String ip,
            int clusterPort) {
        return client.pods()
                .inNamespace(namespace)
                .resource(
                        new PodBuilder()
                                .withNewMetadata()
                                .withName(name)
                                .withNamespace(namespace)
                                .withLabels(AGENT_LABELS)
                                .endMetadata()
                                .withNewSpec()
                                .withNodeName(node)
                                .withHostNetwork(true)
                                .addNewContainer()
                                .withName("agent")
                                .withImage("cadastre")
                                .withPorts(
                                        new ContainerPortBuilder()
                                                .withName("cluster")
                                                .withContainerPort(clusterPort)
                                                .build())
                                .endContainer()
                                .endSpec()
                                .withNewStatus()
                                .withPhase("Running")
                                .withPodIP(ip)
                                .endStatus()
                                .build())
                .createOr(existing -> existing.update());
    }
}
