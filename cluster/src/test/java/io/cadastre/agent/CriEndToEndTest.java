package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.CriClient.ExecResult;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.PauseImage;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.PodSandboxState;
import io.cadastre.testcri.v1.PodSandboxStatus;
import io.cadastre.testcri.v1.PortMapping;
import io.cadastre.testcri.v1.Protocol;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Command;
import io.cadastre.testsupport.TestNetns;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kubelet's own path to Cadastre: kubelet never execs a CNI plugin, it asks the container runtime
 * over the CRI, and the runtime calls the installed plugin through libcni (issue 14). Here the
 * runtime is a real containerd 1.6 ({@link io.cadastre.testcri.Containerd}), the plugin the built
 * one installed by {@code cadastre-agent install}, the agent a real process on the embedded
 * journal; the test plays kubelet through the CRI: it waits for NetworkReady, runs kubelet-shaped
 * sandboxes, reads their IPs from PodSandboxStatus as kubelet does for the pod's {@code podIPs},
 * and stops (twice, as kubelet does) and removes them, also after containerd or the agent crashed
 * in between.
 */
class CriEndToEndTest {
    private static final String NODE = "cri-node";
    private static CriNode node;

    @BeforeAll
    static void start() throws Exception {
        node = CriNode.start(NODE, AgentProcess.TEST_POOLS, 1, Map.of());
    }

    @AfterAll
    static void stop() throws Exception {
        if (node != null) {
            node.close();
        }
    }

    @Test
    void kubeletsSequenceWiresThePodAndReleasesItsAddresses() throws Exception {
        CriClient cri = node.cri();
        assertTrue(
                cri.condition(CriClient.NETWORK_READY).orElseThrow().getStatus(),
                "kubelet's readiness gate");
        String uid = UUID.randomUUID().toString();
        PodSandboxConfig pod =
                KubeletPods.sandbox(
                        "shop",
                        "web-0",
                        uid,
                        node.dir.resolve("pods"),
                        Map.of("app", "web", "pod-template-hash", "5d8f7c"),
                        Map.of("example.com/owner", "team-a"));
        String sandbox = cri.runPodSandbox(pod);
        String hostEnd = HostInterfaceName.of(CriNode.NETWORK, sandbox, "eth0");
        try {
            PodSandboxStatus status = cri.podSandboxStatus(sandbox);
            assertEquals(PodSandboxState.SANDBOX_READY, status.getState());
            assertEquals(uid, status.getMetadata().getUid());
            assertEquals(
                    pod.getAnnotationsMap(),
                    status.getAnnotationsMap(),
                    "annotations come back unchanged");
            List<String> ips = CriNode.ips(status);
            assertEquals(2, ips.size(), status.toString());
            String v4 = ips.stream().filter(ip -> !ip.contains(":")).findFirst().orElseThrow();
            String v6 = ips.stream().filter(ip -> ip.contains(":")).findFirst().orElseThrow();
            assertTrue(v4.startsWith("198.18.") && v6.startsWith("fd00:198:1::"), ips.toString());

            // What the admin API shows for the pod by its name and namespace is what kubelet reads.
            List<JsonNode> attachments = node.attachments("shop", "web-0");
            assertEquals(1, attachments.size(), attachments.toString());
            JsonNode attachment = attachments.get(0);
            assertEquals(sandbox, attachment.path("containerId").asText());
            assertEquals("eth0", attachment.path("ifname").asText());
            assertEquals(CriNode.NETWORK, attachment.path("network").asText());
            Set<String> held = new HashSet<>();
            attachment.path("addresses").forEach(a -> held.add(a.asText()));
            assertEquals(Set.copyOf(ips), held);
            assertTrue(TestNetns.hostHasLink(hostEnd), "the pod's host end " + hostEnd);

            // Inside a container of the pod: eth0 with both addresses and Cadastre's routes.
            String container =
                    cri.createAndStartContainer(sandbox, KubeletPods.sleeper(pod, "app"), pod);
            ExecResult addr =
                    cri.execSync(
                            container, 30, "/bin/busybox", "ip", "addr", "show", "dev", "eth0");
            assertEquals(0, addr.exitCode(), addr.toString());
            assertTrue(addr.stdout().contains("inet " + v4 + "/32 "), addr.toString());
            assertTrue(addr.stdout().contains("inet6 " + v6 + "/128 "), addr.toString());
            ExecResult route = cri.execSync(container, 30, "/bin/busybox", "ip", "route");
            assertTrue(
                    route.stdout().contains("default via 169.254.1.1 dev eth0"), route.toString());
            assertTrue(route.stdout().contains("169.254.1.1 dev eth0"), route.toString());
            ExecResult route6 = cri.execSync(container, 30, "/bin/busybox", "ip", "-6", "route");
            assertTrue(
                    route6.stdout().contains("default via fe80::ecee:eeff:feee:eeee dev eth0"),
                    route6.toString());
            assertEquals(
                    "web-0",
                    cri.execSync(container, 30, "/bin/busybox", "hostname").stdout().trim());

            // kubelet stops a sandbox more than once; the second is a no-op.
            cri.stopPodSandbox(sandbox);
            assertEquals(
                    List.of(), node.attachments("shop", "web-0"), "released at the first stop");
            TestNetns.awaitPairGone(hostEnd, null, null);
            cri.stopPodSandbox(sandbox);
            assertEquals(
                    PodSandboxState.SANDBOX_NOTREADY, cri.podSandboxStatus(sandbox).getState());
            cri.removePodSandbox(sandbox);
            assertTrue(cri.listPodSandboxes().stream().noneMatch(s -> s.getId().equals(sandbox)));
            for (String ip : ips) {
                JsonNode address = node.ctl("ipam", "address", ip, "-o", "json").json();
                assertTrue(address.path("allocation").isNull(), ip + " is free again: " + address);
            }
            assertClean();
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /**
     * kubelet puts a pod's annotations on its sandbox; containerd turns the bandwidth ones into
     * {@code runtimeConfig.bandwidth} for a conflist with the {@code bandwidth} capability, with
     * its placeholder burst (2^32-1 bits), and the agent shapes the pod before it starts.
     */
    @Test
    void aPodsBandwidthAnnotationsLimitWhatItReceivesAndSends() throws Exception {
        CriClient cri = node.cri();
        PodSandboxConfig pod =
                KubeletPods.sandbox(
                        "shop",
                        "limited-0",
                        UUID.randomUUID().toString(),
                        node.dir.resolve("pods"),
                        Map.of("app", "limited"),
                        Map.of(
                                "kubernetes.io/ingress-bandwidth", "10M",
                                "kubernetes.io/egress-bandwidth", "5M"));
        String sandbox = cri.runPodSandbox(pod);
        String hostEnd = HostInterfaceName.of(CriNode.NETWORK, sandbox, "eth0");
        String ifb = HostInterfaceName.ifbOf(hostEnd);
        try {
            JsonNode received = rootQdisc(hostEnd);
            assertEquals("tbf", received.path("kind").asText(), received.toString());
            assertEquals(10_000_000 / 8, received.path("options").path("rate").asLong());
            // containerd's burst stands for none: 10 ms at the rate, at least 64 KiB.
            long burst = received.path("options").path("burst").asLong();
            assertTrue(Math.abs(burst - 65_536) <= 1, received.toString());
            JsonNode sent = rootQdisc(ifb);
            assertEquals("tbf", sent.path("kind").asText(), sent.toString());
            assertEquals(5_000_000 / 8, sent.path("options").path("rate").asLong());
            String filters =
                    Command.run(List.of("tc", "filter", "show", "dev", hostEnd, "ingress")).out();
            assertTrue(filters.contains("Egress Redirect to device " + ifb), filters);

            node.cri().stopPodSandbox(sandbox);
            TestNetns.awaitPairGone(hostEnd, null, null);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (TestNetns.hostHasLink(ifb)) {
                assertTrue(System.nanoTime() < deadline, ifb + " outlived the pod's DEL");
                Thread.sleep(50);
            }
            node.cri().removePodSandbox(sandbox);
            assertClean();
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /**
     * A pod's hostPort, as kubelet asks for it (the sandbox's port mappings): containerd passes it
     * to the portmap plugin chained after Cadastre, and the node's own loopback address reaches
     * the pod's port; after the pod's DEL, nothing answers there.
     */
    @Test
    void aHostPortReachesThePodUntilItsDel() throws Exception {
        CriClient cri = node.cri();
        int hostPort = 18_080 + (int) (System.nanoTime() % 1_000);
        PodSandboxConfig pod =
                node.pod("shop", "listener-0").toBuilder()
                        .addPortMappings(
                                PortMapping.newBuilder()
                                        .setProtocol(Protocol.TCP)
                                        .setContainerPort(8080)
                                        .setHostPort(hostPort))
                        .build();
        String sandbox = cri.runPodSandbox(pod);
        try {
            cri.createAndStartContainer(
                    sandbox,
                    KubeletPods.container(
                            pod,
                            "listener",
                            PauseImage.NAME,
                            "/bin/busybox",
                            "nc",
                            "-ll",
                            "-p",
                            "8080",
                            "-e",
                            "/bin/busybox",
                            "echo",
                            "hello from the pod"),
                    pod);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            String answer = "";
            while (!answer.contains("hello from the pod")) {
                assertTrue(
                        System.nanoTime() < deadline,
                        "127.0.0.1:" + hostPort + " never reached the pod: '" + answer + "'");
                answer = readFrom(hostPort);
            }
            cri.stopPodSandbox(sandbox);
            assertEquals("", readFrom(hostPort), "the mapping went with the DEL");
            cri.removePodSandbox(sandbox);
            assertClean();
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /** @return what 127.0.0.1:port sends before it closes, "" when nothing listens */
    private static String readFrom(int port) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 1_000);
            socket.setSoTimeout(5_000);
            return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (ConnectException | SocketTimeoutException e) {
            return "";
        }
    }

    private static JsonNode rootQdisc(String dev) throws Exception {
        Command.Result qdiscs = Command.run(List.of("tc", "-j", "qdisc", "show", "dev", dev));
        assertEquals(0, qdiscs.exit(), qdiscs.err());
        for (JsonNode q : CniExec.JSON.readTree(qdiscs.out())) {
            if (q.path("root").asBoolean(false)) {
                return q;
            }
        }
        throw new AssertionError("no root qdisc on " + dev + ": " + qdiscs.out());
    }

    @Test
    void twentySandboxesStartedInParallelGetDistinctAddresses() throws Exception {
        CriClient cri = node.cri();
        int before = node.attachmentCount();
        ExecutorService kubelet = Executors.newFixedThreadPool(20);
        List<String> sandboxes = new ArrayList<>();
        try {
            List<Future<String>> runs = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                PodSandboxConfig pod = node.pod("burst", "pod-" + i);
                runs.add(kubelet.submit(() -> cri.runPodSandbox(pod)));
            }
            for (Future<String> run : runs) {
                sandboxes.add(run.get());
            }
            Set<String> all = new HashSet<>();
            for (String sandbox : sandboxes) {
                List<String> ips = CriNode.ips(cri.podSandboxStatus(sandbox));
                assertEquals(2, ips.size(), ips.toString());
                all.addAll(ips);
            }
            assertEquals(40, all.size(), "20 IPv4 and 20 IPv6 addresses, none twice: " + all);
            assertEquals(before + 20, node.attachmentCount());
            assertClean();

            List<Future<?>> stops = new ArrayList<>();
            for (String sandbox : sandboxes) {
                stops.add(
                        kubelet.submit(
                                () -> {
                                    cri.stopPodSandbox(sandbox);
                                    cri.removePodSandbox(sandbox);
                                    return null;
                                }));
            }
            for (Future<?> stop : stops) {
                stop.get();
            }
            assertEquals(before, node.attachmentCount(), "every attachment released");
            assertClean();
        } finally {
            kubelet.shutdownNow();
            sandboxes.forEach(node::removeQuietly);
        }
    }

    /**
     * containerd SIGKILLed with a pod running (its shim and the pod survive, as on a node), then
     * started again: it finds the sandbox, and kubelet's stop and remove release the addresses.
     */
    @Test
    void containerdKilledBetweenRunAndStopStillReleasesEverything() throws Exception {
        Running pod = runPod("crash", "runtime-killed");
        String sandbox = pod.sandbox();
        try {
            List<String> ips = pod.ips();
            long pid = node.containerd.pid();
            node.containerd.kill();
            assertFalse(
                    ProcessHandle.of(pid).isPresent() && ProcessHandle.of(pid).get().isAlive(),
                    "containerd is gone");
            assertEquals(
                    1,
                    node.attachments("crash", "runtime-killed").size(),
                    "the agent still holds the pod's addresses");

            node.containerd.restart();
            node.containerd.awaitNetworkReady(java.time.Duration.ofSeconds(30));
            CriClient cri = node.cri();
            assertEquals(
                    Set.copyOf(ips),
                    Set.copyOf(CriNode.ips(cri.podSandboxStatus(sandbox))),
                    "recovered with its IPs");
            stopAsKubeletDoesAndAssertReleased(
                    sandbox, "crash", "runtime-killed", pod.attachmentsBefore());
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /**
     * The agent SIGKILLed with a pod running: kubelet's stop fails while it is down (CNI DEL
     * answers "try again later", so containerd keeps the sandbox's network to tear down later),
     * and once the agent is back, the repeated stop releases the addresses.
     */
    @Test
    void agentKilledBetweenRunAndStopStillReleasesEverything() throws Exception {
        Running pod = runPod("crash", "agent-killed");
        String sandbox = pod.sandbox();
        try {
            node.agent.kill();
            StatusRuntimeException refused =
                    assertThrows(
                            StatusRuntimeException.class, () -> node.cri().stopPodSandbox(sandbox));
            assertTrue(
                    refused.getStatus().getDescription().contains("cadastre agent unreachable"),
                    refused.toString());

            node.agent.restart();
            assertEquals(
                    1,
                    node.attachments("crash", "agent-killed").size(),
                    "the restarted agent recovered the attachment");
            stopAsKubeletDoesAndAssertReleased(
                    sandbox, "crash", "agent-killed", pod.attachmentsBefore());
            for (String ip : pod.ips()) {
                assertTrue(
                        node.ctl("ipam", "address", ip, "-o", "json")
                                .json()
                                .path("allocation")
                                .isNull(),
                        ip);
            }
            assertClean();
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /** A dual-stack pod's sandbox, its IPs, and how many attachments the node recorded before it. */
    private record Running(String sandbox, List<String> ips, int attachmentsBefore) {}

    /** Runs a kubelet-shaped sandbox for pod {@code namespace/name} and checks it has an IPv4 and an IPv6 address. */
    private static Running runPod(String namespace, String name) throws Exception {
        int before = node.attachmentCount();
        String sandbox = node.cri().runPodSandbox(node.pod(namespace, name));
        List<String> ips = CriNode.ips(node.cri().podSandboxStatus(sandbox));
        assertEquals(2, ips.size(), ips.toString());
        return new Running(sandbox, ips, before);
    }

    /** StopPodSandbox twice and RemovePodSandbox; then the pod holds nothing and the node as many attachments as before. */
    private static void stopAsKubeletDoesAndAssertReleased(
            String sandbox, String namespace, String name, int before) throws Exception {
        node.cri().stopPodSandbox(sandbox);
        node.cri().stopPodSandbox(sandbox);
        node.cri().removePodSandbox(sandbox);
        assertEquals(List.of(), node.attachments(namespace, name));
        assertEquals(before, node.attachmentCount());
        assertClean();
    }

    private static void assertClean() throws Exception {
        JsonNode report = node.ipamCheck();
        assertTrue(report.path("clean").asBoolean(false), report.toString());
    }
}
