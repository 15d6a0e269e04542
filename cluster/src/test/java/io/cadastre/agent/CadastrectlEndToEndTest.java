package io.cadastre.agent;

import static io.cadastre.agent.CtlOutput.assertCells;
import static io.cadastre.agent.CtlOutput.assertFailed;
import static io.cadastre.agent.CtlOutput.defaultPoolRow;
import static io.cadastre.agent.CtlOutput.pool;
import static io.cadastre.agent.CtlOutput.rowsBy;
import static io.cadastre.agent.CtlOutput.table;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlAgent.Pod;
import io.cadastre.agent.CtlOutput.Run;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code cadastrectl} against a real agent: the tool's own entry point in-process (its picocli
 * command line, output captured), a real agent process on the embedded journal, three live pods
 * made with the real plugin in real network namespaces (root). What ctl's tests check against a
 * fake, checked here against the admin API as the agent really answers: the requests are the
 * right ones, the answers have the shapes the tables read, the errors come back as exit 2.
 * Assertions read cells by column name, so columns the agent adds later do not break them.
 */
class CadastrectlEndToEndTest {
    private static final String NODE = "ctl-node";
    private static final String NETWORK = "ctl";
    private static final String CONFIG =
            """
            cadastre.pools = [
              { name = "ctl-ipv4", cidr = "198.18.112.0/24", block-size = 26 }
              { name = "ctl-ipv6", cidr = "fd00:198:70::/120", block-size = 122 }
              { name = "ctl-strict", cidr = "198.19.112.0/28", block-size = 28, strict-affinity = true,
                allow-borrowing = false, max-blocks-per-node = 1 }
            ]
            cadastre.default-pools = ["ctl-ipv4", "ctl-ipv6"]
            """;

    /** In 198.18.0.0/15, in none of the agent's pools. */
    private static final String IN_NO_POOL = "198.19.200.1";

    private static CtlAgent agent;
    private static String adminUrl;
    private static final List<Pod> pods = new ArrayList<>();

    @BeforeAll
    static void startAgentAndPods() throws Exception {
        agent = CtlAgent.start(NODE, NETWORK, CONFIG);
        adminUrl = agent.adminUrl;
        for (int i = 1; i <= 3; i++) {
            Pod pod = agent.addPod("pod-" + i);
            assertEquals(2, pod.addresses().size(), "dual-stack: " + pod);
            pods.add(pod);
        }
    }

    /** DELs the pods, stops the agent, removes what it left; also when the start failed half-way. */
    @AfterAll
    static void stopPodsAndAgent() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    // ---- reads

    @Test
    void ipamShowListsEveryPoolWithTheLivePodsAllocations() throws Exception {
        Run run = ctl("ipam", "show");
        assertEquals("", run.err());
        Map<String, Map<String, String>> pools = configuredPools(run, "POOL");
        assertCells(
                pools.get("ctl-ipv4"),
                Map.of(
                        "CIDR",
                        "198.18.112.0/24",
                        "BLOCK-SIZE",
                        "/26",
                        "BLOCKS(claimed/total)",
                        "1/4",
                        "ALLOCATED",
                        "3",
                        "SIZE",
                        "256",
                        "UTIL%",
                        "1.2",
                        "FLAGS",
                        "-"));
        assertCells(
                pools.get("ctl-ipv6"),
                Map.of(
                        "CIDR",
                        "fd00:198:70::/120",
                        "BLOCK-SIZE",
                        "/122",
                        "BLOCKS(claimed/total)",
                        "1/4",
                        "ALLOCATED",
                        "3",
                        "SIZE",
                        "256",
                        "UTIL%",
                        "1.2"));
        assertCells(
                pools.get("ctl-strict"),
                Map.of(
                        "BLOCKS(claimed/total)",
                        "0/1",
                        "ALLOCATED",
                        "0",
                        "UTIL%",
                        "0.0",
                        "FLAGS",
                        "strict-affinity,no-borrowing,max-blocks-per-node=1"));

        Run json = ctl("ipam", "show", "-o", "json");
        assertEquals(0, json.code(), json.toString());
        JsonNode v4 = pool(json.json(), "ctl-ipv4");
        assertEquals("198.18.112.0/24", v4.path("cidr").asText());
        assertEquals(26, v4.path("blockSize").asInt());
        assertEquals(3, v4.path("allocated").asInt());
        assertEquals(256, v4.path("size").asInt());
        assertEquals(1, v4.path("blocks").path("claimed").asInt());
        assertEquals(4, v4.path("blocks").path("total").asInt());
    }

    @Test
    void ipamShowBlocksListsTheNodesClaimedBlocks() throws Exception {
        Run run = ctl("ipam", "show", "--show-blocks");
        assertEquals(0, run.code(), run.toString());
        Map<String, Map<String, String>> blocks = rowsBy("BLOCK", table(run.out(), 1));
        assertEquals(Set.of("198.18.112.0/26", "fd00:198:70::/122"), blocks.keySet(), run.out());
        assertCells(
                blocks.get("198.18.112.0/26"),
                Map.of(
                        "POOL",
                        "ctl-ipv4",
                        "AFFINITY",
                        NODE,
                        "ALLOCATED",
                        "3",
                        "FREE",
                        "61",
                        "BORROWED-BY",
                        "-"));
        assertCells(
                blocks.get("fd00:198:70::/122"),
                Map.of("POOL", "ctl-ipv6", "AFFINITY", NODE, "ALLOCATED", "3"));

        Run json = ctl("ipam", "show", "--show-blocks", "-o", "json");
        assertEquals(0, json.code(), json.toString());
        List<String> keys = new ArrayList<>();
        json.json().fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("pools", "blocks"), keys, "one document holding both answers");
        assertEquals(2, json.json().path("blocks").size(), json.out());
        assertEquals(3, json.json().path("pools").size(), json.out());
    }

    @Test
    void ipamCheckIsCleanWhileThePodsLive() throws Exception {
        Run run = ctl("ipam", "check");
        assertEquals(0, run.code(), run.toString());
        assertTrue(
                run.out().startsWith("clean: checked 6 allocations and 3 attachments in "),
                run.out());
        assertTrue(run.out().matches("(?s).*allocations without attachment +0\n.*"), run.out());
        // The agent runs routing mode none (the machine's own namespace): its routes are not
        // checked.
        assertTrue(
                run.out()
                        .matches(
                                "(?s).*blocks without their route \\(routes not checked\\) +0\n.*"),
                run.out());

        Run json = ctl("ipam", "check", "-o", "json");
        assertEquals(0, json.code(), json.toString());
        JsonNode report = json.json();
        assertTrue(report.path("clean").asBoolean(false), json.out());
        assertEquals(6, report.path("checkedAllocations").asInt());
        assertEquals(3, report.path("checkedAttachments").asInt());
        for (String finding :
                List.of(
                        "allocationsWithoutAttachment",
                        "attachmentsWithoutAllocation",
                        "blocksAffineToUnknownNodes")) {
            assertEquals(0, report.path(finding).size(), finding + ": " + json.out());
        }
    }

    @Test
    void ipamAddressShowsThePodHoldingEitherFamilysAddress() throws Exception {
        Pod pod = pods.get(0);
        for (String address : List.of(pod.v4(), pod.v6())) {
            Run run = ctl("ipam", "address", address);
            assertEquals(0, run.code(), run.toString());
            Map<String, String> row = table(run.out(), 0).get(0);
            assertCells(
                    row,
                    Map.of(
                            "ADDRESS",
                            address,
                            "STATE",
                            "allocated",
                            "NODE",
                            NODE,
                            "HANDLE",
                            pod.handle(),
                            "IFNAME",
                            "eth0",
                            "POD",
                            "e2e/" + pod.name()));
            assertEquals(address.contains(":") ? "ctl-ipv6" : "ctl-ipv4", row.get("POOL"));
        }
        Run json = ctl("ipam", "address", pod.v4(), "-o", "json");
        assertEquals(0, json.code(), json.toString());
        assertEquals("198.18.112.0/26", json.json().path("block").asText());
        JsonNode allocation = json.json().path("allocation");
        assertEquals(pod.handle(), allocation.path("handle").asText());
        assertEquals(pod.name(), allocation.path("podName").asText());
        assertTrue(allocation.path("allocatedAtMillis").asLong() > 0, json.out());

        // In a pool, in a block no node has claimed: free.
        Run free = ctl("ipam", "address", "198.18.112.200");
        assertEquals(0, free.code(), free.toString());
        assertCells(
                table(free.out(), 0).get(0),
                Map.of(
                        "POOL",
                        "ctl-ipv4",
                        "BLOCK",
                        "198.18.112.192/26",
                        "STATE",
                        "free",
                        "NODE",
                        "-"));
        Run freeJson = ctl("ipam", "address", "198.18.112.200", "-o", "json");
        assertTrue(freeJson.json().path("allocation").isNull(), freeJson.out());
    }

    @Test
    void nodeListAndShowDescribeTheAgentsNode() throws Exception {
        Run list = ctl("node", "list");
        assertEquals(0, list.code(), list.toString());
        Map<String, Map<String, String>> nodes = rowsBy("NAME", table(list.out(), 0));
        assertEquals(Set.of(NODE), nodes.keySet(), list.out());
        assertCells(
                nodes.get(NODE),
                Map.of(
                        "MEMBER",
                        "up",
                        "AFFINE-BLOCKS",
                        "2",
                        "BORROWED-BLOCKS",
                        "0",
                        "ATTACHMENTS",
                        "3",
                        "REMOVED",
                        "false",
                        "LABELS",
                        "-"));
        Run listJson = ctl("node", "list", "-o", "json");
        assertEquals(0, listJson.code(), listJson.toString());
        JsonNode summary = listJson.json().path("nodes").get(0);
        assertEquals(NODE, summary.path("name").asText());
        assertEquals("up", summary.path("member").asText());
        assertTrue(
                summary.path("labels").isObject() && summary.path("labels").isEmpty(),
                "no labels: " + listJson.out());
        assertTrue(
                summary.path("removed").isBoolean() && !summary.path("removed").booleanValue(),
                listJson.out());

        Run show = ctl("node", "show", NODE);
        assertEquals(0, show.code(), show.toString());
        assertCells(
                table(show.out(), 0).get(0),
                Map.of(
                        "NAME",
                        NODE,
                        "MEMBER",
                        "up",
                        "ATTACHMENTS",
                        "3",
                        "REMOVED",
                        "false",
                        "LABELS",
                        "-"));
        Map<String, Map<String, String>> blocks = rowsBy("BLOCK", table(show.out(), 1));
        assertEquals(Set.of("198.18.112.0/26", "fd00:198:70::/122"), blocks.keySet(), show.out());
        blocks.values().forEach(b -> assertEquals("affine", b.get("ROLE")));
        Map<String, Map<String, String>> attachments = rowsBy("HANDLE", table(show.out(), 2));
        assertEquals(3, attachments.size(), show.out());
        for (Pod pod : pods) {
            assertCells(
                    attachments.get(pod.handle()),
                    Map.of(
                            "IFNAME",
                            "eth0",
                            "NETWORK",
                            NETWORK,
                            "CONTAINER",
                            pod.container().substring(0, 12),
                            "POD",
                            "e2e/" + pod.name(),
                            "ADDRESSES",
                            pod.v4() + "," + pod.v6()));
        }
        Run showJson = ctl("node", "show", NODE, "-o", "json");
        assertEquals(0, showJson.code(), showJson.toString());
        Set<String> containers = new HashSet<>();
        showJson.json()
                .path("attachmentList")
                .forEach(a -> containers.add(a.path("containerId").asText()));
        assertEquals(
                Set.of(pods.get(0).container(), pods.get(1).container(), pods.get(2).container()),
                containers);
    }

    @Test
    void poolListShowsTheConfiguredSettings() throws Exception {
        Run run = ctl("pool", "list");
        Map<String, Map<String, String>> pools = configuredPools(run, "NAME");
        assertCells(pools.get("ctl-ipv4"), defaultPoolRow("ctl-ipv4", "198.18.112.0/24", "/26"));
        assertCells(
                pools.get("ctl-strict"),
                Map.of(
                        "CIDR",
                        "198.19.112.0/28",
                        "BLOCK-SIZE",
                        "/28",
                        "STRICT-AFFINITY",
                        "true",
                        "ALLOW-BORROWING",
                        "false",
                        "MAX-BLOCKS-PER-NODE",
                        "1",
                        "DISABLED",
                        "false",
                        "NODE-SELECTOR",
                        "all()"));
        assertEquals(
                1,
                run.out().split("\n\n").length,
                "no pool excludes anything, no EXCLUDED table: " + run.out());

        Run json = ctl("pool", "list", "-o", "json");
        assertEquals(0, json.code(), json.toString());
        JsonNode strict = pool(json.json(), "ctl-strict");
        assertTrue(strict.path("strictAffinity").asBoolean(false), json.out());
        assertEquals(1, strict.path("maxBlocksPerNode").asInt());
        assertEquals(16, strict.path("size").asInt());
        assertEquals("", strict.path("nodeSelector").asText("missing"), json.out());
        assertTrue(
                strict.path("excluded").isArray() && strict.path("excluded").isEmpty(), json.out());
    }

    // ---- repair

    /**
     * Release by address frees the whole attachment (both families), the node forgets it, and the
     * check stays clean; releasing again releases nothing. Release by handle likewise, in JSON.
     * Own pods, deleted at the end: the shared pods' counts stay as the other tests expect.
     */
    @Test
    void releaseFreesAnAttachmentByAddressOrHandleAndTheCheckStaysClean() throws Exception {
        Pod a = agent.addPod("released-a");
        Pod b = agent.addPod("released-b");
        try {
            assertEquals(
                    "allocated",
                    table(ctl("ipam", "address", a.v4()).out(), 0).get(0).get("STATE"));
            Run release = ctl("ipam", "release", "--address", a.v4());
            assertEquals(0, release.code(), release.toString());
            assertEquals(
                    Set.of("released " + a.v4(), "released " + a.v6()),
                    Set.copyOf(release.out().lines().toList()),
                    "the other family's address goes with it");
            for (String address : List.of(a.v4(), a.v6())) {
                assertEquals(
                        "free",
                        table(ctl("ipam", "address", address).out(), 0).get(0).get("STATE"),
                        address);
            }
            Run again = ctl("ipam", "release", "--address", a.v4());
            assertEquals(0, again.code(), again.toString());
            assertEquals("nothing released: no allocation held\n", again.out());

            Run byHandle =
                    ctl("ipam", "release", "--node", NODE, "--handle", b.handle(), "-o", "json");
            assertEquals(0, byHandle.code(), byHandle.toString());
            Set<String> released = new HashSet<>();
            byHandle.json().path("released").forEach(r -> released.add(r.asText()));
            assertEquals(Set.of(b.v4(), b.v6()), released, byHandle.out());

            Run check = ctl("ipam", "check");
            assertEquals(0, check.code(), check.toString());
            assertTrue(
                    check.out().startsWith("clean: checked 6 allocations and 3 attachments in "),
                    "only the shared pods are left: " + check.out());
            assertEquals(
                    "3",
                    rowsBy("NAME", table(ctl("node", "list").out(), 0))
                            .get(NODE)
                            .get("ATTACHMENTS"));
        } finally {
            // Release is IPAM only: the interfaces are DEL's (idempotent for what IPAM forgot).
            agent.del(a);
            agent.del(b);
        }
    }

    // ---- bad input

    @Test
    void anAddressInNoPoolIsExitTwoWithTheAgentsMessage() {
        Run run = ctl("ipam", "address", IN_NO_POOL);
        assertFailed(
                run,
                IN_NO_POOL + " is in none of the pools",
                "HTTP 404 from GET " + adminUrl + "/v1/addresses/" + IN_NO_POOL);
        Run json = ctl("ipam", "address", IN_NO_POOL, "-o", "json");
        assertFailed(json, "is in none of the pools");
        assertFailed(
                ctl("ipam", "release", "--address", IN_NO_POOL),
                "is in none of the pools",
                "HTTP 404 from POST");
    }

    @Test
    void anUnknownNodeIsExitTwoWithTheAgentsMessage() throws Exception {
        assertFailed(
                ctl("node", "show", "no-such-node"),
                "unknown node no-such-node",
                "HTTP 404 from GET " + adminUrl + "/v1/nodes/no-such-node");
        assertFailed(
                ctl("node", "show", "no-such-node", "-o", "json"), "unknown node no-such-node");
        // Releasing by handle is idempotent, an unknown node included: nothing held, nothing
        // released.
        Run release = ctl("ipam", "release", "--node", "no-such-node", "--handle", "ctl.c0");
        assertEquals(0, release.code(), release.toString());
        assertEquals("nothing released: no allocation held\n", release.out());
    }

    @Test
    void malformedInputIsRefusedBeforeTheAgentIsAsked() {
        assertFailed(
                ctl("ipam", "address", "198.18.112"),
                "'198.18.112' is not an IPv4 or IPv6 address");
        assertFailed(ctl("ipam", "release"), "--address", "--node");
        assertFailed(ctl("node", "show", ""), "NAME must not be empty");
    }

    // ---- helpers

    /**
     * Asserts exit 0 and a row for each configured pool, no other, in the first table.
     *
     * @param column the table's column naming the pool
     * @return the rows by pool
     */
    private static Map<String, Map<String, String>> configuredPools(Run run, String column) {
        assertEquals(0, run.code(), run.toString());
        Map<String, Map<String, String>> pools = rowsBy(column, table(run.out(), 0));
        assertEquals(Set.of("ctl-ipv4", "ctl-ipv6", "ctl-strict"), pools.keySet(), run.out());
        return pools;
    }

    private static Run ctl(String... args) {
        return agent.ctl(args);
    }
}
