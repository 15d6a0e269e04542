package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.CriClient.ExecResult;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.Ip;
import io.cadastre.testsupport.TestNetns;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Secondary networks as Multus makes them, and IPAM-only addresses on an L2 subnet (issue 14).
 * containerd with {@code max_conf_num = 2} gives each pod eth0 from Cadastre's conflist and eth1
 * from the reference {@code macvlan} plugin with {@code ipam.type = cadastre-ipam} on another
 * pool: the same delegation Multus performs. The Multus delegate call itself is made as Multus
 * makes it: the reference plugin exec'd with {@code CNI_IFNAME=net1}, the
 * NetworkAttachmentDefinition's config on stdin with libcni's {@code runtimeConfig} ({@code ips},
 * {@code mac}) for the capabilities it declares, into the sandbox's network namespace. The macvlan
 * master is one end of a veth pair of the test's (deleting it deletes both).
 */
class SecondaryNetworkEndToEndTest {
    private static final String NODE = "l2-node";

    /** The agent's pools: the test pools, and two L2 subnets of the fabric range. */
    private static final String POOLS =
            AgentProcess.TEST_POOLS
                    + """
            cadastre.pools += { name = "l2-ipv4", cidr = "198.19.64.0/24", block-size = 26 }
            cadastre.pools += { name = "l2b-ipv4", cidr = "198.19.65.0/24", block-size = 26 }
            """;

    private static String master;
    private static CriNode node;

    @BeforeAll
    static void start() throws Exception {
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        master = "cadl2" + suffix;
        // The kernel here has no dummy links: a veth pair's end is the "uplink" the macvlans sit
        // on.
        Ip.run("link", "add", master, "type", "veth", "peer", "name", "cadl2p" + suffix);
        try {
            Ip.run("link", "set", master, "up");
            Ip.run("link", "set", "cadl2p" + suffix, "up");
            // eth1: macvlan on the L2 subnet 198.19.64.0/24 in host-local's single-range form.
            String secondary =
                    "{\"cniVersion\":\"1.0.0\",\"name\":\"l2net\",\"plugins\":[{\"type\":\"macvlan\",\"master\":\""
                            + master
                            + "\",\"mode\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\"%SOCKET%\","
                            + "\"pools\":[\"l2-ipv4\"],\"subnet\":\"198.19.64.0/24\",\"gateway\":\"198.19.64.1\","
                            + "\"routes\":[{\"dst\":\"198.19.0.0/16\"}]}}]}";
            node = CriNode.start(NODE, POOLS, 2, Map.of("20-l2.conflist", secondary));
        } catch (Exception | AssertionError e) {
            Ip.run("link", "del", master);
            throw e;
        }
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (node != null) {
                node.close();
            }
        } finally {
            if (TestNetns.hostHasLink(master)) {
                Ip.run("link", "del", master);
            }
        }
    }

    @Test
    void aPodGetsEth0FromCadastreAndEth1OnTheL2SubnetAndStopReleasesBoth() throws Exception {
        CriClient cri = node.cri();
        PodSandboxConfig pod = node.pod("team-a", "two-nics");
        String sandbox = cri.runPodSandbox(pod);
        try {
            List<String> ips = CriNode.ips(cri.podSandboxStatus(sandbox));
            assertEquals(2, ips.size(), "kubelet's podIPs come from the first network: " + ips);
            Map<String, JsonNode> byIfname = byIfname(node.attachments("team-a", "two-nics"));
            assertEquals(Set.of("eth0", "eth1"), byIfname.keySet());
            assertEquals(Set.copyOf(ips), addresses(byIfname.get("eth0")));
            assertEquals("l2net", byIfname.get("eth1").path("network").asText());
            String l2 = addresses(byIfname.get("eth1")).iterator().next();
            assertTrue(l2.startsWith("198.19.64."), l2);
            assertFalse(
                    Set.of("198.19.64.0", "198.19.64.1", "198.19.64.255").contains(l2),
                    "never the subnet's network address, gateway or broadcast: " + l2);

            String container =
                    cri.createAndStartContainer(sandbox, KubeletPods.sleeper(pod, "app"), pod);
            ExecResult eth1 =
                    cri.execSync(
                            container, 30, "/bin/busybox", "ip", "addr", "show", "dev", "eth1");
            assertTrue(
                    eth1.stdout().contains("inet " + l2 + "/24 "),
                    "the subnet's prefix length: " + eth1);
            ExecResult routes = cri.execSync(container, 30, "/bin/busybox", "ip", "route");
            assertTrue(
                    routes.stdout().contains("198.19.0.0/16 via 198.19.64.1 dev eth1"),
                    "ipam.routes via the gateway the result carries: " + routes);
            assertTrue(
                    routes.stdout().contains("default via 169.254.1.1 dev eth0"),
                    routes.toString());

            cri.stopPodSandbox(sandbox);
            assertEquals(
                    List.of(), node.attachments("team-a", "two-nics"), "both interfaces released");
            cri.stopPodSandbox(sandbox);
            cri.removePodSandbox(sandbox);
            assertTrue(
                    node.ctl("ipam", "address", l2, "-o", "json")
                            .json()
                            .path("allocation")
                            .isNull());
            assertTrue(node.ipamCheck().path("clean").asBoolean(false));
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /**
     * Multus' delegate call for a NetworkAttachmentDefinition with {@code cadastre-ipam}: the NAD
     * declares the {@code ips} and {@code mac} capabilities, so libcni puts the pod's requested
     * address and MAC into {@code runtimeConfig}; {@code CNI_IFNAME} is {@code net1}; the
     * reference macvlan delegates IPAM to Cadastre with the same stdin. Multus' DEL, then the
     * runtime's stop, release everything.
     */
    @Test
    void theDelegateCallAsMultusMakesItGivesNet1TheRequestedAddressAndMac() throws Exception {
        CriClient cri = node.cri();
        String uid = UUID.randomUUID().toString();
        PodSandboxConfig pod =
                KubeletPods.sandbox(
                        "team-b",
                        "multus-pod",
                        uid,
                        node.dir.resolve("pods"),
                        Map.of("app", "multus-pod"),
                        Map.of(
                                "k8s.v1.cni.cncf.io/networks",
                                "[{\"name\":\"l2-nad\",\"ips\":[\"198.19.65.50/24\"],\"mac\":\"c2:b0:57:49:47:f1\"}]"));
        String sandbox = cri.runPodSandbox(pod);
        try {
            String netns = cri.networkNamespace(sandbox);
            String nad =
                    "{\"cniVersion\":\"1.0.0\",\"name\":\"l2-nad\",\"type\":\"macvlan\",\"master\":\""
                            + master
                            + "\",\"mode\":\"bridge\",\"capabilities\":{\"ips\":true,\"mac\":true},\"ipam\":{\"type\":\"cadastre-ipam\","
                            + "\"agentSocket\":\""
                            + node.agent.socket()
                            + "\",\"pools\":[\"l2b-ipv4\"]},"
                            + "\"runtimeConfig\":{\"ips\":[\"198.19.65.50/24\"],\"mac\":\"c2:b0:57:49:47:f1\"}}";
            Map<String, String> env = CniExec.env("ADD", sandbox, netns, "net1");
            env.put(
                    "CNI_ARGS",
                    "IgnoreUnknown=true;K8S_POD_NAMESPACE=team-b;K8S_POD_NAME=multus-pod;"
                            + "K8S_POD_INFRA_CONTAINER_ID="
                            + sandbox
                            + ";K8S_POD_UID="
                            + uid);
            env.put("CNI_PATH", node.binDir.toString());
            Result add = CniExec.run(node.binDir.resolve("macvlan"), env, nad);
            assertEquals(0, add.exit(), add.toString());
            assertEquals(
                    "198.19.65.50/24",
                    add.json().path("ips").get(0).path("address").asText(),
                    add.toString());
            assertEquals(
                    "c2:b0:57:49:47:f1",
                    add.json().path("interfaces").get(0).path("mac").asText(),
                    add.toString());

            Map<String, JsonNode> byIfname = byIfname(node.attachments("team-b", "multus-pod"));
            assertEquals(Set.of("eth0", "eth1", "net1"), byIfname.keySet());
            assertEquals(Set.of("198.19.65.50"), addresses(byIfname.get("net1")));
            assertEquals("l2-nad", byIfname.get("net1").path("network").asText());
            String container =
                    cri.createAndStartContainer(sandbox, KubeletPods.sleeper(pod, "app"), pod);
            ExecResult net1 =
                    cri.execSync(
                            container, 30, "/bin/busybox", "ip", "addr", "show", "dev", "net1");
            assertTrue(net1.stdout().contains("inet 198.19.65.50/24 "), net1.toString());
            assertTrue(net1.stdout().contains("link/ether c2:b0:57:49:47:f1 "), net1.toString());

            // Multus DELs its delegates with the same configuration before the runtime's own
            // teardown.
            env.put("CNI_COMMAND", "DEL");
            Result del = CniExec.run(node.binDir.resolve("macvlan"), env, nad);
            assertEquals(0, del.exit(), del.toString());
            assertEquals(
                    Set.of("eth0", "eth1"),
                    byIfname(node.attachments("team-b", "multus-pod")).keySet());
            cri.stopPodSandbox(sandbox);
            cri.removePodSandbox(sandbox);
            assertEquals(List.of(), node.attachments("team-b", "multus-pod"));
            assertTrue(node.ipamCheck().path("clean").asBoolean(false));
        } finally {
            node.removeQuietly(sandbox);
        }
    }

    /**
     * The IPAM-only plugin under the reference macvlan, exec'd as a runtime does, on a /24 pool
     * named alone (no {@code subnet} in the netconf: the pool's CIDR is the subnet): the first
     * address is .1, not the network address .0 that issue 14 measured; the network address asked
     * for by name is refused (102) and changes nothing; a narrow {@code rangeStart}/{@code
     * rangeEnd} is kept to.
     */
    @Test
    void ipamOnlyOnAnL2SubnetThroughTheRealPlugin() throws Exception {
        String pools = "\"pools\":[\"l2b-ipv4\"]";
        try (TestNetns first = TestNetns.create();
                TestNetns refused = TestNetns.create();
                TestNetns narrow = TestNetns.create()) {
            Result a = macvlan("ADD", "l2-first", first, pools, null);
            assertEquals(0, a.exit(), a.toString());
            String address = a.json().path("ips").get(0).path("address").asText();
            assertTrue(
                    address.startsWith("198.19.65.")
                            && address.endsWith("/24")
                            && !address.equals("198.19.65.0/24"),
                    a.toString());
            assertEquals(List.of(address), first.addresses("eth0"));

            Result network = macvlan("ADD", "l2-refused", refused, pools, "198.19.65.0");
            assertEquals(102, network.code(), network.toString());
            assertEquals(
                    List.of(),
                    node.attachments("default", "l2-refused"),
                    "a refused ADD holds nothing");

            Result inRange =
                    macvlan(
                            "ADD",
                            "l2-narrow",
                            narrow,
                            "\"pools\":[\"l2b-ipv4\"],\"subnet\":\"198.19.65.0/24\","
                                    + "\"rangeStart\":\"198.19.65.200\",\"rangeEnd\":\"198.19.65.201\",\"gateway\":\"198.19.65.254\"",
                            null);
            assertEquals(0, inRange.exit(), inRange.toString());
            JsonNode ip = inRange.json().path("ips").get(0);
            assertEquals("198.19.65.254", ip.path("gateway").asText(), inRange.toString());
            assertTrue(
                    Set.of("198.19.65.200/24", "198.19.65.201/24")
                            .contains(ip.path("address").asText()),
                    inRange.toString());

            assertEquals(0, macvlan("DEL", "l2-first", first, pools, null).exit());
            assertEquals(0, macvlan("DEL", "l2-narrow", narrow, pools, null).exit());
            // macvlan 1.1.1 leaves its link behind when IPAM refuses; the runtime's DEL after a
            // failed ADD removes it.
            assertEquals(
                    0,
                    macvlan("DEL", "l2-refused", refused, pools, null).exit(),
                    "DEL after a refused ADD, as runtimes do");
            assertFalse(refused.hasLink("eth0"));
        }
        assertTrue(node.ipamCheck().path("clean").asBoolean(false));
    }

    /** The reference macvlan with {@code cadastre-ipam}, exec'd as a runtime does, for pod {@code default/CONTAINER}. */
    private static Result macvlan(
            String command, String container, TestNetns ns, String ipamFields, String ip)
            throws Exception {
        String conf =
                "{\"cniVersion\":\"1.0.0\",\"name\":\"l2-direct\",\"type\":\"macvlan\",\"master\":\""
                        + master
                        + "\",\"mode\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\""
                        + node.agent.socket()
                        + "\","
                        + ipamFields
                        + "}}";
        Map<String, String> env = CniExec.env(command, container, ns.path(), "eth0");
        env.put(
                "CNI_ARGS",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME="
                        + container
                        + (ip == null ? "" : ";IP=" + ip));
        env.put("CNI_PATH", node.binDir.toString());
        return CniExec.run(node.binDir.resolve("macvlan"), env, conf);
    }

    private static Map<String, JsonNode> byIfname(List<JsonNode> attachments) {
        Map<String, JsonNode> out = new java.util.TreeMap<>();
        attachments.forEach(a -> out.put(a.path("ifname").asText(), a));
        return out;
    }

    private static Set<String> addresses(JsonNode attachment) {
        Set<String> out = new HashSet<>();
        attachment.path("addresses").forEach(a -> out.add(a.asText()));
        return out;
    }
}
