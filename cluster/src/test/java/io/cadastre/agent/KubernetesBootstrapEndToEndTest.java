package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.kube.KubeObjects;
import io.cadastre.kube.MockKubernetesApi;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.TestNetns;
import io.cadastre.testsupport.TestPki;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Cluster bootstrap from the Kubernetes API with real agents (issue 15): two agent processes, on
 * loopback addresses as host-network pods are on their nodes' IPs ({@code CADASTRE_CLUSTER_HOSTNAME}
 * = the pod IP; here IPv6 pod IPs, ::1 with two ports), find each other as
 * the Running pods of their DaemonSet in fabric8's mock API server ({@link MockKubernetesApi}):
 * pods labelled as the DaemonSet's, with those pod IPs and the container port {@code cluster}.
 * They form one cluster; the one that formed it, stopped and started again alone, joins it. Two contact points are
 * required. One agent reaches the API as a pod does (service account), the other through a
 * kubeconfig, the two ways the agent's client finds its API server. The members authenticate each
 * other with mutual TLS, as beyond loopback they must (a test CA, {@link TestPki}).
 *
 * <p>Each agent has its own embedded journal, which a cluster of several members must not have
 * (they share Cassandra): each refuses ADDs, code 50, naming the other member, and
 * otherwise only membership is looked at.
 */
class KubernetesBootstrapEndToEndTest {
    private static final String CONFIG =
            """
            cadastre.pools = [
              { name = "k8sboot-ipv4", cidr = "198.18.180.0/24", block-size = 28 }
            ]
            """;

    /** One agent: its node, pod IP, cluster port, process and admin API. */
    private static final class Agent {
        final String node;
        final String ip;
        final int port;
        AgentProcess process;
        String adminUrl;

        Agent(String node, String ip) throws java.io.IOException {
            this.node = node;
            this.ip = ip;
            this.port = KubernetesEndToEndTest.freePort(ip);
        }

        /** @return the member's address as Pekko writes it (an IPv6 host in brackets) */
        String address() {
            return "pekko://cadastre@" + (ip.contains(":") ? "[" + ip + "]" : ip) + ":" + port;
        }

        void start() {
            try {
                process.start();
                adminUrl = process.adminUrl();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        /** @return node → member ("up" or "absent") as this agent's admin API lists the nodes */
        Map<String, String> members() {
            try {
                JsonNode nodes =
                        CtlOutput.assertOk(
                                        CtlAgent.ctl(
                                                adminUrl,
                                                process.adminTokenFile(),
                                                "node",
                                                "list",
                                                "-o",
                                                "json"))
                                .json();
                Map<String, String> members = new HashMap<>();
                nodes.path("nodes")
                        .forEach(
                                n ->
                                        members.put(
                                                n.path("name").asText(),
                                                n.path("member").asText()));
                return members;
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        boolean sees(Agent other, String member) {
            return member.equals(members().get(other.node));
        }
    }

    /**
     * IPv6 pod IPs only: two agents on two IPv4 node addresses form their cluster from the API in
     * the deploy module's {@code ImageClusterCriEndToEndTest} (the image on two nodes), and module
     * kube's {@code KubernetesBootstrapTest} runs it, rejoin included, on IPv4 with three agents
     * in one JVM.
     *
     * @param firstIp the first agent's pod IP: the lower, it forms the cluster
     * @param secondIp the second's (IPv6: the same loopback address, another port)
     */
    @ParameterizedTest(name = "pod IPs {0} and {1}")
    @CsvSource({"::1, ::1"})
    void twoAgentsFormOneClusterFromTheirPodsAndTheFormerRestartedAloneJoinsItAgain(
            String firstIp, String secondIp) throws Exception {
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        Agent one = new Agent("k8sboot-a-" + suffix, firstIp);
        Agent two = new Agent("k8sboot-b-" + suffix, secondIp);
        while (two.port == one.port) {
            two = new Agent(two.node, secondIp);
        }
        // On one IP the lower port is the lower address.
        boolean swap = firstIp.equals(secondIp) && two.port < one.port;
        Agent first = swap ? two : one;
        Agent second = swap ? one : two;
        Path dir = Files.createTempDirectory("cad-k8sboot");
        try (MockKubernetesApi api = MockKubernetesApi.start(dir)) {
            try {
                run(api, dir, first, second);
            } finally {
                for (Agent a : List.of(first, second)) {
                    if (a.process != null) {
                        a.process.close();
                    }
                }
            }
        } finally {
            CniEndToEndTest.deleteTree(dir);
        }
    }

    private static void run(MockKubernetesApi api, Path dir, Agent first, Agent second)
            throws Exception {
        TestPki ca = TestPki.authority("k8sboot-ca");
        for (Agent a : List.of(first, second)) {
            KubeObjects.node(api.admin(), a.node, Map.of());
            KubeObjects.agentPod(
                    api.admin(),
                    MockKubernetesApi.AGENTS,
                    "cadastre-agent-" + a.node,
                    a.node,
                    a.ip,
                    a.port);
            Path agentDir = Files.createDirectories(dir.resolve(a.node));
            Map<String, String> env =
                    new HashMap<>(
                            a == first
                                    ? api.inClusterEnvironment(agentDir)
                                    : api.kubeconfigEnvironment(agentDir));
            env.put("CADASTRE_KUBERNETES_ENABLED", "true");
            env.put("CADASTRE_KUBERNETES_NODE_NAME", a.node);
            env.put("CADASTRE_KUBERNETES_REQUIRED_CONTACT_POINTS", "2");
            env.put("CADASTRE_CLUSTER_HOSTNAME", a.ip);
            env.put("CADASTRE_CLUSTER_PORT", Integer.toString(a.port));
            // Two members: their port must authenticate peers (on loopback too, where it is
            // otherwise in untrusted mode, which drops the bootstrap's probes).
            TestPki.PemFiles tls = ca.write(ca.member(a.node, a.ip), agentDir.resolve("tls"));
            env.put("CADASTRE_CLUSTER_TLS_CERT_FILE", tls.cert().toString());
            env.put("CADASTRE_CLUSTER_TLS_KEY_FILE", tls.key().toString());
            env.put("CADASTRE_CLUSTER_TLS_CA_FILE", tls.ca().toString());
            a.process = new AgentProcess(agentDir, a.node, CONFIG).withEnvironment(env);
        }
        // Neither opens its socket before it is a member, and neither is one before the other
        // answers.
        CompletableFuture<Void> starting = CompletableFuture.runAsync(first::start);
        second.start();
        starting.join();

        for (Agent a : List.of(first, second)) {
            Agent f = first;
            KubernetesEndToEndTest.await(
                    () -> a.sees(f, "up") && a.sees(second, "up"),
                    () -> a.node + " does not list both members up: " + a.members());
        }
        assertTrue(
                first.process.logOfThisRun().contains("forming a new cluster"),
                first.process.tail());
        assertTrue(
                second.process
                        .logOfThisRun()
                        .contains("joining the cluster of [" + first.address() + "]"),
                second.process.tail());
        assertFalse(
                second.process.logOfThisRun().contains("forming a new cluster"),
                second.process.tail());

        // Each journal is its own: in a cluster of two, neither hands out an address.
        try (TestNetns ns = TestNetns.create()) {
            Result refused =
                    CniExec.run(
                            CniExec.env("ADD", CniEndToEndTest.container(), ns.path(), "eth0"),
                            "{\"cniVersion\":\"1.1.0\",\"name\":\"k8sboot\",\"type\":\"cadastre\","
                                    + "\"agentSocket\":\""
                                    + second.process.socket()
                                    + "\",\"ipam\":{}}");
            assertEquals(50, refused.code(), refused.toString());
            assertTrue(
                    refused.json()
                            .path("details")
                            .asText()
                            .contains(first.address() + " is a member too"),
                    refused.toString());
            assertFalse(ns.hasLink("eth0"), "a refused ADD leaves no interface");
        }

        // The agent that formed the cluster leaves it (its pod stays, as a DaemonSet's pod whose
        // container restarts): the other goes on alone.
        assertEquals(143, first.process.stop(), "exit code on SIGTERM");
        Agent gone = first;
        KubernetesEndToEndTest.await(
                () -> !second.sees(gone, "up"), () -> "still listed up: " + second.members());

        // Restarted alone, the lowest-addressed agent must join the running cluster, not form
        // another.
        first.start();
        for (Agent a : List.of(first, second)) {
            KubernetesEndToEndTest.await(
                    () -> a.sees(gone, "up") && a.sees(second, "up"),
                    () ->
                            a.node
                                    + " does not list both members up after the restart: "
                                    + a.members());
        }
        String again = first.process.logOfThisRun();
        assertTrue(
                again.contains("joining the cluster of [" + second.address() + "]"),
                first.process.tail());
        assertFalse(again.contains("forming a new cluster"), first.process.tail());

        for (Agent a : List.of(second, first)) {
            assertEquals(143, a.process.stop(), a.node + " exit code on SIGTERM");
        }
    }
}
