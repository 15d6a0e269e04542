package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ctl.Cadastrectl;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.Ip;
import io.cadastre.testsupport.TestNetns;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A CNI_NETNS that names the host's own network namespace is refused before anything is assigned
 * or wired (code 4). The "host" here is a network namespace of the test's own with a real agent
 * in it, so that a regression could never put veths, addresses or default routes on the machine
 * running the test: its links, addresses and routes, and the node's attachments and blocks (read
 * through cadastrectl run inside it), are the same before and after.
 */
class HostNetnsRefusedTest {
    private static Path dir;
    private static TestNetns host;
    private static AgentProcess agent;
    private static String adminUrl;

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("cad-hostns");
        host = TestNetns.create();
        Ip.run("-n", host.name, "link", "set", "lo", "up");
        agent =
                new AgentProcess(dir, "hostns-node", AgentProcess.TEST_POOLS)
                        .inNetns(host.name)
                        .start();
        adminUrl = agent.adminUrl();
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (agent != null) {
                agent.close();
            }
        } finally {
            try {
                if (host != null) {
                    host.close();
                }
            } finally {
                CniEndToEndTest.deleteTree(dir);
            }
        }
    }

    private static String netconf() {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"hostns\",\"type\":\"cadastre\",\"agentSocket\":\""
                + agent.socket()
                + "\",\"ipam\":{}}";
    }

    /** The host namespace's state and the node's IPAM state, as text. */
    private static String snapshot() throws Exception {
        return NetnsState.of(host.name)
                + "\nnode: "
                + ctl("node", "show", "hostns-node", "-o", "json")
                + "\nblocks: "
                + ctl("ipam", "show", "--show-blocks", "-o", "json");
    }

    /** cadastrectl inside the host namespace, where the agent's admin API listens on loopback. */
    private static String ctl(String... args) throws IOException, InterruptedException {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "ip",
                                "netns",
                                "exec",
                                host.name,
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-XX:TieredStopAtLevel=1",
                                "-cp",
                                System.getProperty("java.class.path"),
                                Cadastrectl.class.getName(),
                                "--server",
                                adminUrl));
        Path token = dir.resolve("data").resolve("admin.token");
        if (Files.exists(token)) {
            command.addAll(List.of("--token-file", token.toString()));
        }
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "cadastrectl did not exit");
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    void addAndCheckNamingTheHostNamespaceAreRefusedAndChangeNothing() throws Exception {
        String before = snapshot();
        String[] hostPaths = {
            host.path(),
            "/proc/" + agent.pid() + "/ns/net",
            "/proc/" + agent.pid() + "/task/" + agent.pid() + "/ns/net"
        };
        for (String path : hostPaths) {
            Result refused =
                    CniExec.run(
                            CniExec.env("ADD", CniEndToEndTest.container(), path, "eth0"),
                            netconf());
            assertEquals(4, refused.code(), path + ": " + refused);
            assertTrue(
                    refused.json().path("details").asText().contains("host's network namespace"),
                    refused.toString());
        }
        assertEquals(before, snapshot());
    }

    @Test
    void aFileThatIsNoNetworkNamespaceIsRefusedBeforeAnyAddressIsAssigned() throws Exception {
        String before = snapshot();
        Path notNetns = Files.writeString(dir.resolve("not-a-netns"), "x");
        Result refused =
                CniExec.run(
                        CniExec.env(
                                "ADD", CniEndToEndTest.container(), notNetns.toString(), "eth0"),
                        netconf());
        assertEquals(3, refused.code(), refused.toString());
        assertEquals(before, snapshot());
    }

    @Test
    void aPodNamespaceIsStillServedAndCheckedButCheckOfTheHostIsRefused() throws Exception {
        try (TestNetns pod = TestNetns.create()) {
            String container = CniEndToEndTest.container();
            Result add = CniExec.run(CniExec.env("ADD", container, pod.path(), "eth0"), netconf());
            assertEquals(0, add.exit(), add.toString());
            assertEquals(2, pod.addresses("eth0").size());
            String withPrev =
                    netconf().replaceFirst("\\}$", ",\"prevResult\":" + add.stdout() + "}");
            Result checkOfHost =
                    CniExec.run(CniExec.env("CHECK", container, host.path(), "eth0"), withPrev);
            assertEquals(4, checkOfHost.code(), "CHECK reads a namespace too: " + checkOfHost);
            Result check =
                    CniExec.run(CniExec.env("CHECK", container, pod.path(), "eth0"), withPrev);
            assertEquals(0, check.exit(), check.toString());
            Result del = CniExec.run(CniExec.env("DEL", container, pod.path(), "eth0"), netconf());
            assertEquals(0, del.exit(), del.toString());
        }
    }
}
