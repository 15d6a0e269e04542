package io.cadastre.testcri;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.testcri.CriClient.ExecResult;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.PodSandboxState;
import io.cadastre.testcri.v1.PodSandboxStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The harness itself, on Debian's reference plugins only (bridge + host-local, no Cadastre):
 * containerd starts privately, reports NetworkReady only once a configuration is there, runs a
 * kubelet-shaped pod whose container sees the address the runtime reports, and {@link
 * Containerd#close()} leaves no process, mount or directory behind even when it must clean up
 * after a SIGKILL with a pod still running.
 */
class ContainerdTest {
    private static final Path REFERENCE = Path.of("/usr/lib/cni");

    @Test
    void runsAKubeletShapedPodAndLeavesNothingBehind() throws Exception {
        Path dir = Files.createTempDirectory("cad-ctrd");
        String bridge = "cadh" + UUID.randomUUID().toString().substring(0, 8);
        Path bin = dir.resolve("cni-bin");
        Path conf = dir.resolve("cni-conf");
        Files.createDirectories(bin);
        Files.createDirectories(conf);
        for (String plugin : List.of("loopback", "bridge", "host-local")) {
            Files.copy(REFERENCE.resolve(plugin), bin.resolve(plugin));
        }
        Path box = dir.resolve("c");
        Containerd containerd = Containerd.start(box, bin, conf, 1);
        long shimPid = -1;
        try {
            CriClient cri = containerd.cri();
            assertEquals("containerd", cri.version().getRuntimeName());
            assertFalse(
                    cri.condition(CriClient.NETWORK_READY).orElseThrow().getStatus(),
                    "no network configuration yet");
            Files.writeString(
                    conf.resolve("10-ref.conflist"),
                    bridgeConf(bridge, "198.18.250.0/24", dir.resolve("host-local")));
            containerd.awaitNetworkReady(Duration.ofSeconds(30));

            PodSandboxConfig pod = KubeletPods.sandbox("harness", "web", dir.resolve("pods"));
            String sandbox = cri.runPodSandbox(pod);
            PodSandboxStatus status = cri.podSandboxStatus(sandbox);
            assertEquals(PodSandboxState.SANDBOX_READY, status.getState());
            String ip = status.getNetwork().getIp();
            assertTrue(ip.startsWith("198.18.250."), status.toString());
            String container =
                    cri.createAndStartContainer(sandbox, KubeletPods.sleeper(pod, "shell"), pod);
            ExecResult addr =
                    cri.execSync(container, 30, "/bin/busybox", "ip", "-o", "addr", "show", "eth0");
            assertEquals(0, addr.exitCode(), addr.toString());
            assertTrue(addr.stdout().contains("inet " + ip + "/24"), addr.toString());
            assertTrue(
                    Files.readString(
                                    dir.resolve("pods/harness_web_" + pod.getMetadata().getUid())
                                            .resolve("shell/0.log"))
                            .isEmpty(),
                    "the container's log is where kubelet looks for it");

            shimPid = shimOf(containerd);
            // A crash with the pod running: close() must still clean up all of it.
            containerd.kill();
        } finally {
            containerd.close();
            if (Files.exists(Path.of("/sys/class/net", bridge))) {
                new ProcessBuilder("ip", "link", "del", bridge)
                        .start()
                        .waitFor(30, TimeUnit.SECONDS);
            }
        }
        assertFalse(Files.exists(box), "containerd's directory is removed");
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            assertFalse(line.contains(box.toString()), "mount left behind: " + line);
        }
        if (shimPid > 0) {
            assertFalse(
                    ProcessHandle.of(shimPid).map(ProcessHandle::isAlive).orElse(false),
                    "shim " + shimPid + " left running");
        }
        Containerd.run(List.of("rm", "-rf", dir.toString()), Duration.ofSeconds(30));
    }

    /** A RuntimeClass's handler with a CNI conf dir of its own: the benchmarks compare two networks on one containerd so. */
    @Test
    void aRuntimeHandlerTakesItsPodsNetworkFromItsOwnConfDir() throws Exception {
        Path dir = Files.createTempDirectory("cad-ctrd");
        String suffix = UUID.randomUUID().toString().substring(0, 6);
        Path bin = Files.createDirectories(dir.resolve("cni-bin"));
        for (String plugin : List.of("loopback", "bridge", "host-local")) {
            Files.copy(REFERENCE.resolve(plugin), bin.resolve(plugin));
        }
        Path defaultConf = Files.createDirectories(dir.resolve("default-conf"));
        Path otherConf = Files.createDirectories(dir.resolve("other-conf"));
        Files.writeString(
                defaultConf.resolve("10-a.conflist"),
                bridgeConf("cadha" + suffix, "198.18.250.0/24", dir.resolve("a")));
        Files.writeString(
                otherConf.resolve("10-b.conflist"),
                bridgeConf("cadhb" + suffix, "198.18.251.0/24", dir.resolve("b")));
        Containerd containerd =
                Containerd.start(
                        dir.resolve("c"),
                        bin,
                        defaultConf,
                        1,
                        java.util.Map.of("other", otherConf));
        try {
            containerd.awaitNetworkReady(Duration.ofSeconds(30));
            CriClient cri = containerd.cri();
            String a = cri.runPodSandbox(KubeletPods.sandbox("harness", "a", dir.resolve("pods")));
            String b =
                    cri.runPodSandbox(
                            KubeletPods.sandbox("harness", "b", dir.resolve("pods")), "other");
            assertTrue(cri.podSandboxStatus(a).getNetwork().getIp().startsWith("198.18.250."));
            assertTrue(cri.podSandboxStatus(b).getNetwork().getIp().startsWith("198.18.251."));
        } finally {
            containerd.close();
            for (String bridge : List.of("cadha" + suffix, "cadhb" + suffix)) {
                if (Files.exists(Path.of("/sys/class/net", bridge))) {
                    new ProcessBuilder("ip", "link", "del", bridge)
                            .start()
                            .waitFor(30, TimeUnit.SECONDS);
                }
            }
            Containerd.run(List.of("rm", "-rf", dir.toString()), Duration.ofSeconds(30));
        }
    }

    private static String bridgeConf(String bridge, String subnet, Path dataDir) {
        return "{\"cniVersion\":\"1.0.0\",\"name\":\""
                + bridge
                + "\",\"plugins\":[{\"type\":\"bridge\",\"bridge\":\""
                + bridge
                + "\",\"ipam\":{\"type\":\"host-local\",\"dataDir\":\""
                + dataDir
                + "\",\"ranges\":[[{\"subnet\":\""
                + subnet
                + "\"}]]}}]}";
    }

    /** @return the PID of a shim of this containerd (its command line names the socket) */
    private static long shimOf(Containerd containerd) throws Exception {
        for (var process : Containerd.commandLines().entrySet()) {
            String cmd = process.getValue();
            if (cmd.contains("containerd-shim") && cmd.contains(containerd.socket().toString())) {
                return process.getKey();
            }
        }
        throw new AssertionError("no shim of " + containerd.socket());
    }
}
