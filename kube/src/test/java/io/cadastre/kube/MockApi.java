package io.cadastre.kube;

import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.net.InetAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * fabric8's mock API server in CRUD mode (objects created are stored, listed and watched) on
 * loopback, and an admin client to set up Nodes, Namespaces and pods as kubectl would. The
 * agent-side code under test gets its own client ({@link #agentApi}), the production
 * {@link KubeApi} over it. {@link #stop()} makes the API unreachable (the port closes).
 */
final class MockApi implements AutoCloseable {
    /** The agents' namespace in these tests. */
    static final String AGENTS = "cadastre-system";

    private final KubernetesMockServer server;
    private final KubernetesClient admin;
    private boolean stopped;

    MockApi() {
        server =
                new KubernetesMockServer(
                        new Context(),
                        new MockWebServer(),
                        new HashMap<>(),
                        new KubernetesCrudDispatcher(),
                        false);
        server.init(InetAddress.getLoopbackAddress(), 0);
        admin = server.createClient();
    }

    /** @return the API as the agent of {@code node} sees it; close it after the test */
    KubeApi agentApi(String node, Duration requestTimeout) {
        // The mock server cannot select pods by spec.nodeName: the agent's pod cache holds them
        // all.
        return KubeApi.over(server.createClient(), node, AGENTS, requestTimeout, false);
    }

    KubernetesClient admin() {
        return admin;
    }

    Node node(String name, Map<String, String> labels) {
        return KubeObjects.node(admin, name, labels);
    }

    void deleteNode(String name) {
        admin.nodes().withName(name).delete();
    }

    Namespace namespace(String name, Map<String, String> annotations) {
        return KubeObjects.namespace(admin, name, annotations);
    }

    Pod pod(String namespace, String name, String node, Map<String, String> annotations) {
        return KubeObjects.pod(admin, namespace, name, node, annotations);
    }

    void deletePod(String namespace, String name) {
        admin.pods().inNamespace(namespace).withName(name).delete();
    }

    /** An agent's pod of the DaemonSet ({@link KubeObjects#agentPod}) in {@link #AGENTS}. */
    Pod agentPod(String name, String node, String ip, int clusterPort) {
        return KubeObjects.agentPod(admin, AGENTS, name, node, ip, clusterPort);
    }

    void deleteAgentPod(String name) {
        admin.pods().inNamespace(AGENTS).withName(name).delete();
    }

    /** Closes the API's port: every call fails from now on, and informers lose their watches. */
    void stop() {
        if (!stopped) {
            stopped = true;
            admin.close();
            server.destroy();
        }
    }

    @Override
    public void close() {
        stop();
    }
}
