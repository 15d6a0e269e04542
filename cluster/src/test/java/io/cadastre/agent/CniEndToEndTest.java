package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.cni.CniCodes;
import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.Command;
import io.cadastre.testsupport.Ip;
import io.cadastre.testsupport.TestNetns;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CNI protocol end to end, as a runtime drives it: one real agent process on the embedded
 * journal, the real plugin executable, real network namespaces (root).
 */
class CniEndToEndTest {
    /** A pool of which a node may claim one block (maxBlocksPerNode). */
    private static final String LIMITED_POOL =
            "cadastre.pools += { name = \"limit-ipv4\", cidr = \"198.18.32.0/24\", block-size = 28, max-blocks-per-node = 1 }\n";

    private static Path dir;
    private static AgentProcess agent;

    @BeforeAll
    static void startAgent() throws Exception {
        dir = Files.createTempDirectory("cad-e2e");
        agent = new AgentProcess(dir, "e2e-node", AgentProcess.TEST_POOLS + LIMITED_POOL).start();
    }

    @AfterAll
    static void stopAgent() throws Exception {
        try {
            // 143 = 128 + SIGTERM: the JVM's exit status after its shutdown hooks (Pekko's
            // coordinated shutdown) have run; the removed socket shows they did.
            assertEquals(143, agent.stop(), "agent exit code on SIGTERM");
            assertFalse(Files.exists(agent.socket()), "socket removed on shutdown");
        } finally {
            agent.close();
            deleteTree(dir);
        }
    }

    static void deleteTree(Path root) throws java.io.IOException {
        if (root != null && Files.exists(root)) {
            try (var paths = Files.walk(root)) {
                paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    static String netconf(String version, String extra) {
        return "{\"cniVersion\":\""
                + version
                + "\",\"name\":\"e2e\",\"type\":\"cadastre\",\"agentSocket\":\""
                + agent.socket()
                + "\""
                + (extra.isEmpty() ? "" : "," + extra)
                + "}";
    }

    static String container() {
        return "c" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    static Result cni(String command, String container, TestNetns ns, String stdin)
            throws Exception {
        return CniExec.run(
                CniExec.env(command, container, ns == null ? null : ns.path(), "eth0"), stdin);
    }

    private static List<String> ipsOf(JsonNode result) {
        List<String> ips = new ArrayList<>();
        result.path("ips").forEach(ip -> ips.add(ip.path("address").asText()));
        return ips;
    }

    @ParameterizedTest
    @ValueSource(strings = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"})
    void addCheckDelInEverySupportedVersion(String version) throws Exception {
        String id = container();
        try (TestNetns ns = TestNetns.create()) {
            String conf = netconf(version, "\"ipam\":{}");
            Result add = cni("ADD", id, ns, conf);
            assertEquals(0, add.exit(), add.toString());
            JsonNode result = add.json();
            assertEquals(version, result.path("cniVersion").asText());
            List<String> ips = ipsOf(result);
            assertEquals(2, ips.size(), add.toString());
            assertTrue(
                    ips.get(0).startsWith("198.18.") && ips.get(0).endsWith("/32"), ips.toString());
            assertTrue(
                    ips.get(1).startsWith("fd00:198:1::") && ips.get(1).endsWith("/128"),
                    ips.toString());
            boolean oldShape = version.startsWith("0.");
            result.path("ips")
                    .forEach(ip -> assertEquals(oldShape, ip.has("version"), ip.toString()));
            assertEquals(2, result.path("interfaces").size());
            assertEquals(ns.path(), result.path("interfaces").get(1).path("sandbox").asText());

            // The namespace really has them.
            assertEquals(Set.copyOf(ips), Set.copyOf(ns.addresses("eth0")));
            assertTrue(ns.routes(4).contains("default via 169.254.1.1"), ns.routes(4).toString());
            assertTrue(
                    ns.routes(6).contains("default via fe80::ecee:eeff:feee:eeee"),
                    ns.routes(6).toString());
            String hostIf = HostInterfaceName.of("e2e", id, "eth0");
            assertTrue(TestNetns.hostHasLink(hostIf));

            if (!version.equals("0.3.0") && !version.equals("0.3.1")) {
                String withPrev = netconf(version, "\"ipam\":{},\"prevResult\":" + add.stdout());
                Result check = cni("CHECK", id, ns, withPrev);
                assertEquals(0, check.exit(), check.toString());
            }

            Result del = cni("DEL", id, ns, conf);
            assertEquals(0, del.exit(), del.toString());
            if (version.equals("1.1.0")) {
                // The netns outlives the DEL: the agent deletes the down pair itself after its
                // teardown delay (2 s).
                TestNetns.awaitPairGone(hostIf, ns, "eth0");
            } else {
                // The runtime's order: the netns goes right after DEL, and the pair with it.
                ns.close();
                TestNetns.awaitPairGone(hostIf, null, null);
            }
        }
    }

    /** @return the sample's value in the agent's /metrics, 0 when it has no such series */
    private static double metric(String sample) throws Exception {
        HttpResponse<String> reply =
                HttpClient.newHttpClient()
                        .send(
                                HttpRequest.newBuilder(URI.create(agent.adminUrl() + "/metrics"))
                                        .timeout(Duration.ofSeconds(30))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, reply.statusCode(), reply.body());
        Matcher value =
                Pattern.compile("^" + Pattern.quote(sample) + " (\\S+)$", Pattern.MULTILINE)
                        .matcher(reply.body());
        return value.find() ? Double.parseDouble(value.group(1)) : 0;
    }

    @Test
    void addsAreCountedInTheAgentsMetrics() throws Exception {
        String addsOk = "cadastre_cni_requests_total{result=\"ok\",verb=\"ADD\"}";
        String addsTimed = "cadastre_cni_request_duration_seconds_count{verb=\"ADD\"}";
        double before = metric(addsOk);
        double timedBefore = metric(addsTimed);
        String conf = netconf("1.1.0", "\"ipam\":{}");
        String first = container();
        String second = container();
        try (TestNetns a = TestNetns.create();
                TestNetns b = TestNetns.create()) {
            assertEquals(0, cni("ADD", first, a, conf).exit());
            assertEquals(0, cni("ADD", second, b, conf).exit());
            assertEquals(before + 2, metric(addsOk));
            assertEquals(timedBefore + 2, metric(addsTimed));
            // cluster-wide, from the entities: the pool's size in addresses (198.18.0.0/20)
            assertEquals(4096.0, metric("cadastre_ipam_ippool_size{pool=\"test-ipv4\"}"));
            assertEquals(0, cni("DEL", first, a, conf).exit());
            assertEquals(0, cni("DEL", second, b, conf).exit());
        }
        assertEquals(before + 2, metric(addsOk), "DELs are counted under their own verb");
        assertTrue(metric("cadastre_cni_requests_total{result=\"ok\",verb=\"DEL\"}") >= 2);
    }

    @Test
    void retriedAddReturnsTheSameAddressesAndDelIsIdempotent() throws Exception {
        String id = container();
        try (TestNetns ns = TestNetns.create()) {
            String conf = netconf("1.1.0", "\"mtu\":1400,\"ipam\":{}");
            Result first = cni("ADD", id, ns, conf);
            assertEquals(1400, ns.mtu("eth0"));
            Result again = cni("ADD", id, ns, conf);
            assertEquals(0, again.exit(), again.toString());
            assertEquals(ipsOf(first.json()), ipsOf(again.json()));
            assertEquals(Set.copyOf(ipsOf(first.json())), Set.copyOf(ns.addresses("eth0")));
            assertEquals(0, cni("DEL", id, ns, conf).exit());
            assertEquals(0, cni("DEL", id, ns, conf).exit());
            assertEquals(
                    0, cni("DEL", container(), null, conf).exit(), "DEL of an unknown container");
        }
    }

    /**
     * The {@code bandwidth} capability as a runtime passes it: the limits are on the host before
     * ADD answers, CHECK compares them, and an ADD repeated with other limits rewires the pod.
     */
    @Test
    void bandwidthLimitsAreWiredCheckedAndChangedByARepeatedAdd() throws Exception {
        String id = container();
        String hostEnd = HostInterfaceName.of("e2e", id, "eth0");
        String ifb = HostInterfaceName.ifbOf(hostEnd);
        try (TestNetns ns = TestNetns.create()) {
            String limits =
                    "\"runtimeConfig\":{\"bandwidth\":{\"ingressRate\":8000000,"
                            + "\"ingressBurst\":800000,\"egressRate\":4000000}}";
            String conf = netconf("1.1.0", "\"ipam\":{}," + limits);
            Result add = cni("ADD", id, ns, conf);
            assertEquals(0, add.exit(), add.toString());
            assertTrue(tc("qdisc", "show", "dev", hostEnd).contains("tbf"), "ingress shaped");
            assertTrue(tc("qdisc", "show", "dev", ifb).contains("tbf"), "egress shaped");

            Result check =
                    cni(
                            "CHECK",
                            id,
                            ns,
                            netconf(
                                    "1.1.0",
                                    "\"ipam\":{}," + limits + ",\"prevResult\":" + add.stdout()));
            assertEquals(0, check.exit(), check.toString());
            Result checkWithout =
                    cni(
                            "CHECK",
                            id,
                            ns,
                            netconf("1.1.0", "\"ipam\":{},\"prevResult\":" + add.stdout()));
            assertEquals(CniCodes.CHECK_FAILED, checkWithout.json().path("code").asInt());
            assertTrue(
                    checkWithout.json().path("details").asText().contains("not limited"),
                    checkWithout.toString());

            Result again = cni("ADD", id, ns, netconf("1.1.0", "\"ipam\":{}"));
            assertEquals(0, again.exit(), again.toString());
            assertEquals(ipsOf(add.json()), ipsOf(again.json()), "same addresses, rewired");
            assertFalse(tc("qdisc", "show", "dev", hostEnd).contains("tbf"), "no limit now");
            assertFalse(TestNetns.hostHasLink(ifb), "and no IFB device");
            assertEquals(0, cni("DEL", id, ns, conf).exit());
        }
    }

    private static String tc(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("tc"));
        command.addAll(List.of(args));
        Command.Result r = Command.run(command);
        assertEquals(0, r.exit(), r.err());
        return r.out();
    }

    @Test
    void checkFailsWhenTheNamespaceNoLongerMatches() throws Exception {
        String id = container();
        try (TestNetns ns = TestNetns.create()) {
            String conf = netconf("1.1.0", "\"ipam\":{}");
            Result add = cni("ADD", id, ns, conf);
            String v4 = ipsOf(add.json()).get(0);
            Ip.run("-n", ns.name, "addr", "del", v4, "dev", "eth0");
            Result check =
                    cni(
                            "CHECK",
                            id,
                            ns,
                            netconf("1.1.0", "\"ipam\":{},\"prevResult\":" + add.stdout()));
            assertNotEquals(0, check.exit());
            assertTrue(
                    check.json().path("details").asText().contains(v4.split("/")[0]),
                    check.toString());
            cni("DEL", id, ns, conf);
        }
    }

    @Test
    void specificAddressesAreGrantedOnlyWhenFreeAndInAPool() throws Exception {
        String conf = netconf("1.1.0", "\"ipam\":{\"pools\":[\"test-ipv4\"]}");
        String a = container();
        try (TestNetns ns = TestNetns.create();
                TestNetns other = TestNetns.create()) {
            Map<String, String> env = CniExec.env("ADD", a, ns.path(), "eth0");
            env.put(
                    "CNI_ARGS",
                    "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;IP=198.18.9.77");
            Result granted = CniExec.run(env, conf);
            assertEquals(0, granted.exit(), granted.toString());
            assertEquals(List.of("198.18.9.77/32"), ipsOf(granted.json()));

            for (String[] bad :
                    new String[][] {
                        {"198.18.9.77", "101"}, {"198.19.200.1", "102"}, {"198.18.9", "7"}
                    }) {
                String b = container();
                Map<String, String> env2 = CniExec.env("ADD", b, other.path(), "eth0");
                env2.put("CNI_ARGS", "IP=" + bad[0]);
                Result refused = CniExec.run(env2, conf);
                assertNotEquals(0, refused.exit());
                assertEquals(Integer.parseInt(bad[1]), refused.code(), refused.toString());
                assertFalse(other.hasLink("eth0"), "a refused ADD leaves no interface");
                assertFalse(TestNetns.hostHasLink(HostInterfaceName.of("e2e", b, "eth0")));
            }
            // runtimeConfig.ips (the "ips" capability) takes the same path.
            String c = container();
            Result viaRuntimeConfig =
                    cni(
                            "ADD",
                            c,
                            other,
                            netconf(
                                    "1.1.0",
                                    "\"ipam\":{\"pools\":[\"test-ipv4\"]},\"runtimeConfig\":{\"ips\":[\"198.18.9.78/24\"]}"));
            assertEquals(
                    List.of("198.18.9.78/32"),
                    ipsOf(viaRuntimeConfig.json()),
                    viaRuntimeConfig.toString());
            cni("DEL", c, other, conf);
            cni("DEL", a, ns, conf);
        }
    }

    /**
     * A specific address in a block the node may not claim, since it holds the pool's one block
     * (maxBlocksPerNode 1): the pool entity refuses with NODE_BLOCK_LIMIT, which reaches the
     * runtime as 102, with the entity's words as details.
     */
    @Test
    void aSpecificAddressBeyondTheNodesBlockLimitIsRefusedWith102() throws Exception {
        String conf = netconf("1.1.0", "\"ipam\":{\"pools\":[\"limit-ipv4\"]}");
        String a = container();
        String b = container();
        try (TestNetns ns = TestNetns.create();
                TestNetns other = TestNetns.create()) {
            Result first = cni("ADD", a, ns, conf);
            assertEquals(0, first.exit(), first.toString());
            assertTrue(
                    ipsOf(first.json()).get(0).startsWith("198.18.32."),
                    "the node claims the pool's lowest block: " + first);
            Map<String, String> env = CniExec.env("ADD", b, other.path(), "eth0");
            env.put("CNI_ARGS", "IP=198.18.32.200");
            Result refused = CniExec.run(env, conf);
            assertEquals(102, refused.code(), refused.toString());
            assertTrue(
                    refused.json().path("details").asText().contains("maxBlocksPerNode"),
                    refused.toString());
            assertFalse(other.hasLink("eth0"), "a refused ADD leaves no interface");
            assertEquals(0, cni("DEL", a, ns, conf).exit());
        }
    }

    @Test
    void badInputGetsTheRightErrorCode() throws Exception {
        String id = container();
        try (TestNetns ns = TestNetns.create()) {
            // The plugin takes no socket from a document it cannot walk: the environment names
            // it, and the agent then refuses the JSON.
            Map<String, String> viaEnv = CniExec.env("ADD", id, ns.path(), "eth0");
            viaEnv.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            assertEquals(
                    6,
                    CniExec.run(viaEnv, "{\"agentSocket\":\"" + agent.socket() + "\", not json")
                            .code());
            assertEquals(1, cni("ADD", id, ns, netconf("9.9.9", "\"ipam\":{}")).code());
            assertEquals(
                    7,
                    cni("ADD", id, ns, netconf("1.1.0", "\"ipam\":{\"pools\":[\"no-such-pool\"]}"))
                            .code());
            Map<String, String> noNetns = CniExec.env("ADD", id, null, "eth0");
            Result missingEnv = CniExec.run(noNetns, netconf("1.1.0", "\"ipam\":{}"));
            assertEquals(4, missingEnv.code());
            assertTrue(
                    missingEnv.json().path("msg").asText().contains("CNI_NETNS")
                            || missingEnv.json().path("details").asText().contains("CNI_NETNS"),
                    missingEnv.toString());
            Result unknownNetns =
                    CniExec.run(
                            CniExec.env("ADD", id, "/var/run/netns/cadtest-absent", "eth0"),
                            netconf("1.1.0", "\"ipam\":{}"));
            assertNotEquals(0, unknownNetns.exit());
            assertEquals(3, unknownNetns.code(), unknownNetns.toString());
            assertFalse(ns.hasLink("eth0"));
        }
        // A refused ADD released what it had taken: the attachment holds nothing.
        Result check =
                cni(
                        "CHECK",
                        id,
                        null,
                        netconf(
                                "1.1.0",
                                "\"ipam\":{},\"prevResult\":{\"cniVersion\":\"1.1.0\",\"ips\":[]}"));
        assertNotEquals(0, check.exit());
    }

    @Test
    void versionIsAnsweredAndStatusReportsReadiness() throws Exception {
        Result version =
                CniExec.run(CniExec.env("VERSION", null, null, null), "{\"cniVersion\":\"1.0.0\"}");
        assertEquals(0, version.exit());
        assertEquals(5, version.json().path("supportedVersions").size());
        Result status =
                CniExec.run(
                        CniExec.env("STATUS", null, null, null), netconf("1.1.0", "\"ipam\":{}"));
        assertEquals(0, status.exit(), status.toString());
    }

    /**
     * The /26 pool serves 62 IPAM-only attachments (its CIDR is their subnet: not its network
     * address .0 nor its broadcast .63) and routed /32 pods the last two; then STATUS says 50.
     */
    @Test
    void statusSays50WhenAPoolCanServeNoMore() throws Exception {
        String conf = netconf("1.1.0", "\"ipam\":{\"pools\":[\"tiny-ipv4\"]}");
        String ipamOnly =
                "{\"cniVersion\":\"1.1.0\",\"name\":\"e2e-ipam\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                        + "\"agentSocket\":\""
                        + agent.socket()
                        + "\",\"pools\":[\"tiny-ipv4\"]}}";
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 62; i++) {
            String id = container();
            ids.add(id);
            assertEquals(
                    0,
                    CniExec.run(CniExec.env("ADD", id, "/var/run/netns/unused", "eth0"), ipamOnly)
                            .exit());
        }
        Result exhausted =
                CniExec.run(
                        CniExec.env("ADD", container(), "/var/run/netns/unused", "eth0"), ipamOnly);
        assertEquals(100, exhausted.code(), exhausted.toString());
        assertEquals(
                0,
                CniExec.run(CniExec.env("STATUS", null, null, null), conf).exit(),
                "two addresses left for routed pods");
        try (TestNetns a = TestNetns.create();
                TestNetns b = TestNetns.create()) {
            String first = container();
            String second = container();
            Result ra = cni("ADD", first, a, conf);
            Result rb = cni("ADD", second, b, conf);
            assertEquals(
                    Set.of("198.19.0.0/32", "198.19.0.63/32"),
                    Set.of(ipsOf(ra.json()).get(0), ipsOf(rb.json()).get(0)));
            Result status = CniExec.run(CniExec.env("STATUS", null, null, null), conf);
            assertEquals(50, status.code(), status.toString());
            assertEquals(0, cni("DEL", first, a, conf).exit());
            assertEquals(0, cni("DEL", second, b, conf).exit());
        }
        for (String id : ids) {
            assertEquals(0, CniExec.run(CniExec.env("DEL", id, null, "eth0"), ipamOnly).exit());
        }
        assertEquals(0, CniExec.run(CniExec.env("STATUS", null, null, null), conf).exit());
    }

    /** The IPAM-only plugin on network {@code name}: CHECK looks at IPAM alone. */
    static String ipamOnlyNetconf(String name, String extra) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\""
                + name
                + "\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + agent.socket()
                + "\"}"
                + extra
                + "}";
    }

    /** @return IPAM's view of an attachment through CHECK: exit 0 when it holds the ADD's addresses, code 3 when none */
    static Result ipamCheck(String network, String container, String netnsPath, Result add)
            throws Exception {
        return CniExec.run(
                CniExec.env("CHECK", container, netnsPath, "eth0"),
                ipamOnlyNetconf(network, ",\"prevResult\":" + add.stdout()));
    }

    /**
     * GC with {@code cni.dev/valid-attachments} releases exactly the network's attachments not
     * listed: an entry is a (container ID, ifname) pair, so the right container with another
     * ifname does not keep it; another network's attachments are not touched.
     */
    @Test
    void garbageCollectionReleasesEveryAttachmentNotListedAsValid() throws Exception {
        String conf = netconf("1.1.0", "\"ipam\":{}");
        String keep1 = container();
        String keep2 = container();
        String drop1 = container();
        String drop2 = container();
        String otherNetwork = container();
        try (TestNetns a = TestNetns.create();
                TestNetns b = TestNetns.create();
                TestNetns c = TestNetns.create();
                TestNetns d = TestNetns.create()) {
            Result kept1 = cni("ADD", keep1, a, conf);
            Result kept2 = cni("ADD", keep2, b, conf);
            Result dropped1 = cni("ADD", drop1, c, conf);
            Result dropped2 = cni("ADD", drop2, d, conf);
            Result other =
                    CniExec.run(
                            CniExec.env("ADD", otherNetwork, "/var/run/netns/unused", "eth0"),
                            ipamOnlyNetconf("e2e-other", ""));
            for (Result r : List.of(kept1, kept2, dropped1, dropped2, other)) {
                assertEquals(0, r.exit(), r.toString());
            }
            String gc =
                    netconf(
                            "1.1.0",
                            "\"ipam\":{},\"cni.dev/valid-attachments\":["
                                    + "{\"containerID\":\""
                                    + keep1
                                    + "\",\"ifname\":\"eth0\"},"
                                    + "{\"containerID\":\""
                                    + keep2
                                    + "\",\"ifname\":\"eth0\"},"
                                    + "{\"containerID\":\""
                                    + drop2
                                    + "\",\"ifname\":\"net1\"}]");
            Result collected = CniExec.run(CniExec.env("GC", null, null, null), gc);
            assertEquals(0, collected.exit(), collected.toString());

            for (String dropped : List.of(drop1, drop2)) {
                assertFalse(
                        TestNetns.hostHasLink(HostInterfaceName.of("e2e", dropped, "eth0")),
                        "GC unwired " + dropped);
            }
            assertEquals(
                    3,
                    ipamCheck("e2e", drop1, c.path(), dropped1).code(),
                    "IPAM holds nothing for drop1");
            assertEquals(
                    3,
                    ipamCheck("e2e", drop2, d.path(), dropped2).code(),
                    "listed with another ifname: released");
            assertNotEquals(
                    0,
                    cni(
                                    "CHECK",
                                    drop1,
                                    c,
                                    netconf(
                                            "1.1.0",
                                            "\"ipam\":{},\"prevResult\":" + dropped1.stdout()))
                            .exit());
            for (String kept : List.of(keep1, keep2)) {
                assertTrue(TestNetns.hostHasLink(HostInterfaceName.of("e2e", kept, "eth0")));
            }
            assertEquals(
                    0,
                    cni(
                                    "CHECK",
                                    keep1,
                                    a,
                                    netconf(
                                            "1.1.0",
                                            "\"ipam\":{},\"prevResult\":" + kept1.stdout()))
                            .exit());
            assertEquals(
                    0,
                    cni(
                                    "CHECK",
                                    keep2,
                                    b,
                                    netconf(
                                            "1.1.0",
                                            "\"ipam\":{},\"prevResult\":" + kept2.stdout()))
                            .exit());
            assertEquals(
                    0,
                    ipamCheck("e2e-other", otherNetwork, "/var/run/netns/unused", other).exit(),
                    "another network's attachment is not touched");
            cni("DEL", keep1, a, conf);
            cni("DEL", keep2, b, conf);
            CniExec.run(
                    CniExec.env("DEL", otherNetwork, null, "eth0"),
                    ipamOnlyNetconf("e2e-other", ""));
        }
    }

    /**
     * 200 attachments in a row, each ADD then DEL with a real netns, through a pool of 64 addresses
     * with strict affinity: afterwards all 64 must be free again (62 concurrent IPAM-only ADDs
     * succeed, every address but the pool's network and broadcast address; two routed pods get
     * those; a 63rd IPAM-only ADD finds none), so not a single address leaked.
     */
    @Test
    void twoHundredAttachmentsInARowLeakNothing() throws Exception {
        String conf = netconf("1.1.0", "\"ipam\":{\"pools\":[\"tiny-ipv4\"]}");
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            String id = container();
            try (TestNetns ns = TestNetns.create()) {
                Result add = cni("ADD", id, ns, conf);
                assertEquals(0, add.exit(), "ADD " + i + ": " + add);
                seen.addAll(ipsOf(add.json()));
                assertEquals(0, cni("DEL", id, ns, conf).exit(), "DEL " + i);
            }
        }
        assertEquals(64, seen.size(), "the reuse order cycles through the whole block");
        String ipamOnly =
                "{\"cniVersion\":\"1.1.0\",\"name\":\"e2e-leak\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                        + "\"agentSocket\":\""
                        + agent.socket()
                        + "\",\"pools\":[\"tiny-ipv4\"]}}";
        List<CompletableFuture<Result>> adds = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 62; i++) {
            String id = container();
            ids.add(id);
            adds.add(
                    CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    return CniExec.run(
                                            CniExec.env("ADD", id, "/var/run/netns/unused", "eth0"),
                                            ipamOnly);
                                } catch (Exception e) {
                                    throw new IllegalStateException(e);
                                }
                            }));
        }
        Set<String> addresses = new HashSet<>();
        for (CompletableFuture<Result> add : adds) {
            Result r = add.join();
            assertEquals(0, r.exit(), r.toString());
            assertTrue(addresses.add(ipsOf(r.json()).get(0)), "duplicate " + r);
        }
        assertEquals(
                100,
                CniExec.run(
                                CniExec.env("ADD", container(), "/var/run/netns/unused", "eth0"),
                                ipamOnly)
                        .code());
        try (TestNetns a = TestNetns.create();
                TestNetns b = TestNetns.create()) {
            String first = container();
            String second = container();
            assertEquals(0, cni("ADD", first, a, conf).exit());
            assertEquals(0, cni("ADD", second, b, conf).exit());
            cni("DEL", first, a, conf);
            cni("DEL", second, b, conf);
        }
        for (String id : ids) {
            CniExec.run(CniExec.env("DEL", id, null, "eth0"), ipamOnly);
        }
    }
}
