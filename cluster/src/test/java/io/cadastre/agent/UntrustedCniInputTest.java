package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlAgent.Pod;
import io.cadastre.agent.CtlOutput.Run;
import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.Ip;
import io.cadastre.testsupport.TestNetns;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Inputs a root-run plugin must never accept, and repeated ADDs that must not disturb a running
 * pod, through the real plugin and a real agent (issue 12's probe): each is refused with its CNI
 * code and changes nothing — the pod's netns (links, addresses, routes), its host link (same
 * ifindex: not recreated, not flapped) and the node's attachments and blocks as the admin API
 * shows them are the same before and after.
 */
class UntrustedCniInputTest {
    private static CtlAgent agent;

    @BeforeAll
    static void start() throws Exception {
        agent = CtlAgent.start("untrusted-node", "untrusted", AgentProcess.TEST_POOLS);
    }

    @AfterAll
    static void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    /** Everything a refused request must leave as it was, as text to compare. */
    private static String snapshot(Pod pod) throws Exception {
        Run node = agent.ctl("node", "show", agent.node, "-o", "json");
        assertEquals(0, node.code(), node.toString());
        Run blocks = agent.ctl("ipam", "show", "--show-blocks", "-o", "json");
        assertEquals(0, blocks.code(), blocks.toString());
        String hostIf = HostInterfaceName.of(agent.network, pod.container(), "eth0");
        return String.join(
                "\n",
                "node: " + node.out(),
                "blocks: " + blocks.out(),
                "pod: " + NetnsState.of(pod.ns().name),
                "host link: " + Ip.run("-j", "link", "show", "dev", hostIf));
    }

    private static Map<String, String> env(String command, Pod pod, String netns) {
        Map<String, String> env = CniExec.env(command, pod.container(), netns, "eth0");
        env.put("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=" + pod.name());
        return env;
    }

    @Test
    void aRepeatedAddWhoseNetnsIsGoneFailsAndLeavesTheRunningPodAlone() throws Exception {
        Pod pod = agent.addPod("repeat-gone");
        String before = snapshot(pod);

        Result again =
                CniExec.run(
                        env("ADD", pod, "/var/run/netns/cadtest-gone-" + UUID.randomUUID()),
                        agent.netconf());

        assertEquals(3, again.code(), again.toString());
        assertEquals(before, snapshot(pod));
        assertEquals(pod.addresses(), addressesOf(pod));
    }

    @Test
    void aRepeatedAddAnswersTheSameResultWithoutRewiring() throws Exception {
        Pod pod = agent.addPod("repeat-same");
        String before = snapshot(pod);

        Result again = CniExec.run(env("ADD", pod, pod.ns().path()), agent.netconf());

        assertEquals(0, again.exit(), again.toString());
        List<String> ips = new ArrayList<>();
        again.json().path("ips").forEach(ip -> ips.add(ip.path("address").asText().split("/")[0]));
        assertEquals(pod.addresses(), ips);
        JsonNode podIf = again.json().path("interfaces").get(1);
        assertEquals(pod.ns().path(), podIf.path("sandbox").asText());
        assertEquals(
                before,
                snapshot(pod),
                "same links (ifindex, MAC), addresses and routes: nothing flapped");
    }

    @Test
    void aRepeatedAddAskingForAnotherAddressIsRefused() throws Exception {
        Pod pod = agent.addPod("repeat-other-ip");
        String before = snapshot(pod);
        Map<String, String> env = env("ADD", pod, pod.ns().path());
        env.put("CNI_ARGS", env.get("CNI_ARGS") + ";IP=198.18.15.200");

        Result again = CniExec.run(env, agent.netconf());

        assertEquals(7, again.code(), again.toString());
        assertTrue(
                again.json().path("details").asText().contains("repeated ADD"), again.toString());
        assertEquals(before, snapshot(pod));
    }

    @Test
    void aRepeatedAddIntoAnotherNetnsIsRefused() throws Exception {
        Pod pod = agent.addPod("repeat-other-ns");
        String before = snapshot(pod);
        try (TestNetns other = TestNetns.create()) {
            String otherBefore = NetnsState.of(other.name);

            Result again = CniExec.run(env("ADD", pod, other.path()), agent.netconf());

            assertEquals(4, again.code(), again.toString());
            assertEquals(otherBefore, NetnsState.of(other.name));
        }
        assertEquals(before, snapshot(pod));
    }

    @Test
    void unknownArgsAreRefusedWithoutTheirValuesReachingTheLogOrTheAnswer() throws Exception {
        Pod pod = agent.addPod("secret-args");
        String before = snapshot(pod);
        String secret = "hunter2-" + UUID.randomUUID();
        Map<String, String> env = env("ADD", pod, pod.ns().path());
        env.put("CNI_ARGS", "K8S_POD_NAMESPACE=e2e;SECRET_TOKEN=" + secret);

        Result refused = CniExec.run(env, agent.netconf());

        assertEquals(2, refused.code(), refused.toString());
        assertTrue(refused.stdout().contains("SECRET_TOKEN"), refused.toString());
        assertFalse(refused.stdout().contains(secret), refused.toString());
        assertFalse(
                Files.readString(agent.log()).contains(secret),
                "the secret reached the agent's log");
        assertEquals(before, snapshot(pod));
    }

    @Test
    void aLineBreakInTheContainerIdCannotForgeALogLine() throws Exception {
        String forged = "ERROR forged-" + UUID.randomUUID();
        try (TestNetns ns = TestNetns.create()) {
            Result refused =
                    CniExec.run(
                            CniExec.env("ADD", "c1\r\n" + forged, ns.path(), "eth0"),
                            agent.netconf());

            assertEquals(4, refused.code(), refused.toString());
            List<String> lines = Files.readAllLines(agent.log());
            assertTrue(
                    lines.stream().anyMatch(l -> l.contains("c1\\r\\n" + forged)),
                    "logged, escaped");
            assertFalse(
                    lines.stream().anyMatch(l -> l.startsWith(forged)),
                    "a line of its own: forged");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"K8S_POD_NAME=", "K8S_POD_NAMESPACE="})
    void kubernetesNamesLongerThanKubernetesAllowsAreRefused(String key) throws Exception {
        try (TestNetns ns = TestNetns.create()) {
            Map<String, String> env =
                    CniExec.env("ADD", CniEndToEndTest.container(), ns.path(), "eth0");
            env.put("CNI_ARGS", key + "a".repeat(300));

            Result refused = CniExec.run(env, agent.netconf());

            assertEquals(4, refused.code(), refused.toString());
            assertEquals("[]", NetnsState.addresses(ns.name), "nothing wired");
        }
    }

    /**
     * A pod's owner can set {@code args} through Multus' cni-args: an {@code agentSocket} there (or
     * in {@code runtimeConfig}) is not followed. The decoy socket, in a directory the plugin would
     * otherwise accept, sees no connection; the real agent serves the ADD.
     */
    @Test
    void anAgentSocketFromArgsOrRuntimeConfigIsNotFollowed() throws Exception {
        java.nio.file.Path dir = Files.createTempDirectory("cad-decoy");
        java.nio.file.Path decoyPath = dir.resolve("decoy.sock");
        try (java.nio.channels.ServerSocketChannel decoy =
                java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            decoy.bind(java.net.UnixDomainSocketAddress.of(decoyPath));
            decoy.configureBlocking(false);
            String conf =
                    agent.netconf()
                            .replaceFirst(
                                    "\\}$",
                                    ",\"args\":{\"cni\":{\"agentSocket\":\""
                                            + decoyPath
                                            + "\"}},\"runtimeConfig\":{\"agentSocket\":\""
                                            + decoyPath
                                            + "\"}}");
            try (TestNetns ns = TestNetns.create()) {
                String container = CniEndToEndTest.container();
                Result add = CniExec.run(CniExec.env("ADD", container, ns.path(), "eth0"), conf);
                try {
                    assertEquals(0, add.exit(), add.toString());
                    assertEquals(2, ns.addresses("eth0").size(), "served by the real agent");
                    assertEquals(null, decoy.accept(), "the decoy was connected to");
                } finally {
                    Result del =
                            CniExec.run(
                                    CniExec.env("DEL", container, ns.path(), "eth0"),
                                    agent.netconf());
                    assertEquals(0, del.exit(), del.toString());
                }
            }
        } finally {
            CniEndToEndTest.deleteTree(dir);
        }
    }

    @Test
    void cniArgsOverThePluginsLimitAreRefusedBeforeTheAgentIsAsked() throws Exception {
        Pod pod = agent.addPod("args-too-long");
        String before = snapshot(pod);
        Map<String, String> env = env("ADD", pod, pod.ns().path());
        env.put("CNI_ARGS", "IgnoreUnknown=1;NOTE=" + "x".repeat(9000));

        Result refused = CniExec.run(env, agent.netconf());

        assertEquals(4, refused.code(), refused.toString());
        assertTrue(refused.stdout().contains("CNI_ARGS"), refused.toString());
        assertEquals(before, snapshot(pod));
    }

    @Test
    void delIgnoresAPrevResultThatIsNotAnObject() throws Exception {
        Pod pod = agent.addPod("del-prev");
        String conf = agent.netconf().replaceFirst("\\}$", ",\"prevResult\":[]}");

        Result del =
                CniExec.run(CniExec.env("DEL", pod.container(), pod.ns().path(), "eth0"), conf);

        assertEquals(0, del.exit(), del.toString());
        // The runtime's order: the netns goes right after DEL, and the pair with it.
        pod.ns().close();
        TestNetns.awaitPairGone(
                HostInterfaceName.of(pod.network(), pod.container(), "eth0"), null, null);
    }

    /** The ranges a probe created pools over, each refused with 400 and no pool made. */
    @Test
    void poolsOverSpecialPurposeRangesAreRefused() throws Exception {
        Run before = agent.ctl("pool", "list", "-o", "json");
        String[] ranges = {
            "0.0.0.0/8",
            "127.0.0.0/24",
            "255.255.255.0/24",
            "224.0.0.0/24",
            "ff02::/120",
            "169.254.1.0/24",
            "::/120",
            "fe80::/120",
            "::ffff:198.19.0.0/120"
        };
        for (int i = 0; i < ranges.length; i++) {
            Run create = agent.ctl("pool", "create", "special-" + i, "--cidr", ranges[i]);
            assertEquals(2, create.code(), ranges[i] + ": " + create);
            assertTrue(create.err().contains("HTTP 400"), ranges[i] + ": " + create);
            assertTrue(create.err().contains("overlaps"), ranges[i] + ": " + create);
        }
        assertEquals(before.out(), agent.ctl("pool", "list", "-o", "json").out());
    }

    private static List<String> addressesOf(Pod pod) throws Exception {
        List<String> addresses = new ArrayList<>();
        for (String a : pod.ns().addresses("eth0")) {
            addresses.add(a.split("/")[0]);
        }
        return addresses;
    }
}
