package io.cadastre.agent;

import static io.cadastre.agent.CtlOutput.assertCells;
import static io.cadastre.agent.CtlOutput.assertFailed;
import static io.cadastre.agent.CtlOutput.assertOk;
import static io.cadastre.agent.CtlOutput.defaultPoolRow;
import static io.cadastre.agent.CtlOutput.pool;
import static io.cadastre.agent.CtlOutput.rowsBy;
import static io.cadastre.agent.CtlOutput.table;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlAgent.Pod;
import io.cadastre.agent.CtlOutput.Run;
import io.cadastre.cni.CniCodes;
import io.cadastre.ipam.Cidr;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Pools at run time through {@code cadastrectl} against a real agent (as {@link
 * CadastrectlEndToEndTest}): {@code pool create|disable|enable|delete} reaching the agent, their
 * effect on ADDs through the real plugin (pools chosen by the node's labels, or named by the
 * netconf's {@code ipam.pools}), excluded ranges never handed out, and the new fields (node
 * selector, excluded ranges, labels, removed) in the listings.
 *
 * <p>The agent's node has labels and no default pools: an ADD naming no pool gets an address
 * from every enabled pool whose node selector matches the node, here {@value #ZONE_A} alone (IPv4).
 * Each test leaves the agent as it found it ({@link #restoreTheConfiguredPools}): pools it
 * created deleted, configured pools enabled, its pods DELeted; otherwise a pool it created for
 * every node would serve the next test's ADDs.
 */
class CadastrectlPoolsEndToEndTest {
    private static final String NODE = "ctl-pools-node";
    private static final String LABELS = "example.com/rack=r7,zone=e2e-a";

    /** Selects this node by its labels; its first two addresses are excluded. */
    private static final String ZONE_A = "ctlp-zone-a";

    /** Selects other nodes only. */
    private static final String ZONE_B = "ctlp-zone-b";

    private static final Set<String> CONFIGURED = Set.of(ZONE_A, ZONE_B);
    private static final String CONFIG =
            """
            cadastre.node-labels { zone = "e2e-a", "example.com/rack" = "r7" }
            cadastre.pool-catalog-max-age = 100ms
            cadastre.pools = [
              { name = "ctlp-zone-a", cidr = "198.18.130.0/27", block-size = 28, node-selector = "zone=e2e-a",
                excluded = ["198.18.130.0/31"] }
              { name = "ctlp-zone-b", cidr = "fd00:198:80::/120", block-size = 124,
                node-selector = "zone in (e2e-b,e2e-c)" }
            ]
            cadastre.default-pools = []
            """;

    private static CtlAgent agent;
    private static String adminUrl;

    @BeforeAll
    static void startAgent() throws Exception {
        agent = CtlAgent.start(NODE, "ctlpools", CONFIG);
        adminUrl = agent.adminUrl;
    }

    @AfterAll
    static void stopAgent() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    /** DELs the test's pods, deletes the pools it created, enables the configured pools. */
    @AfterEach
    void restoreTheConfiguredPools() throws Exception {
        agent.delAll();
        for (JsonNode pool : assertOk(ctl("pool", "list", "-o", "json")).json().path("pools")) {
            String name = pool.path("name").asText();
            if (!CONFIGURED.contains(name)) {
                assertOk(ctl("pool", "delete", name));
            } else if (pool.path("disabled").asBoolean()) {
                assertOk(ctl("pool", "enable", name));
            }
        }
    }

    // ---- the new fields, from the agent's configuration

    @Test
    void poolListAndIpamShowShowTheConfiguredSelectorsAndExcludedRanges() throws Exception {
        Run list = assertOk(ctl("pool", "list"));
        Map<String, Map<String, String>> pools = rowsBy("NAME", table(list.out(), 0));
        assertEquals(CONFIGURED, pools.keySet(), list.out());
        assertCells(
                pools.get(ZONE_A),
                Map.of(
                        "CIDR",
                        "198.18.130.0/27",
                        "BLOCK-SIZE",
                        "/28",
                        "DISABLED",
                        "false",
                        "NODE-SELECTOR",
                        "zone=e2e-a"));
        assertCells(
                pools.get(ZONE_B),
                Map.of(
                        "CIDR",
                        "fd00:198:80::/120",
                        "BLOCK-SIZE",
                        "/124",
                        "DISABLED",
                        "false",
                        "NODE-SELECTOR",
                        "zone in (e2e-b,e2e-c)"));
        assertEquals(
                List.of(Map.of("POOL", ZONE_A, "EXCLUDED", "198.18.130.0/31")),
                table(list.out(), 1),
                list.out());

        for (String[] command :
                List.of(
                        new String[] {"pool", "list", "-o", "json"},
                        new String[] {"ipam", "show", "-o", "json"})) {
            JsonNode answer = assertOk(ctl(command)).json();
            assertEquals(
                    "zone=e2e-a",
                    pool(answer, ZONE_A).path("nodeSelector").asText(),
                    answer.toString());
            assertEquals(List.of("198.18.130.0/31"), texts(pool(answer, ZONE_A).path("excluded")));
            assertEquals(
                    "zone in (e2e-b,e2e-c)", pool(answer, ZONE_B).path("nodeSelector").asText());
            assertEquals(List.of(), texts(pool(answer, ZONE_B).path("excluded")));
        }
        Map<String, Map<String, String>> usage =
                rowsBy("POOL", table(assertOk(ctl("ipam", "show")).out(), 0));
        assertCells(
                usage.get(ZONE_A),
                Map.of("BLOCKS(claimed/total)", "0/2", "SIZE", "32", "FLAGS", "-"));
    }

    @Test
    void nodeListAndShowShowTheConfiguredLabels() throws Exception {
        Run list = assertOk(ctl("node", "list"));
        assertCells(
                rowsBy("NAME", table(list.out(), 0)).get(NODE),
                Map.of("MEMBER", "up", "REMOVED", "false", "LABELS", LABELS));
        Run show = assertOk(ctl("node", "show", NODE));
        assertCells(
                table(show.out(), 0).get(0),
                Map.of("NAME", NODE, "MEMBER", "up", "REMOVED", "false", "LABELS", LABELS));

        JsonNode summary = assertOk(ctl("node", "list", "-o", "json")).json().path("nodes").get(0);
        JsonNode detail = assertOk(ctl("node", "show", NODE, "-o", "json")).json();
        for (JsonNode node : List.of(summary, detail)) {
            assertEquals(NODE, node.path("name").asText());
            assertEquals(
                    CniExec.JSON.readTree("{\"example.com/rack\":\"r7\",\"zone\":\"e2e-a\"}"),
                    node.path("labels"),
                    node.toString());
            assertTrue(
                    node.path("removed").isBoolean() && !node.path("removed").booleanValue(),
                    node.toString());
        }
    }

    // ---- pool create

    @Test
    void createWithDefaultsOnlyAndTheSameDefinitionAgain() throws Exception {
        String[] create = {"pool", "create", "ctlp-defaults", "--cidr", "198.18.131.0/24"};
        Map<String, String> created = poolRow(ctl(create), "created pool ctlp-defaults");
        assertEquals(defaultPoolRow("ctlp-defaults", "198.18.131.0/24", "/26"), created);
        // The same definition again, also with a default spelled out: 200, nothing changed.
        for (String[] defaults :
                List.of(
                        new String[] {},
                        new String[] {"--block-size", "26", "--max-blocks-per-node", "0"},
                        new String[] {"--node-selector", "all()"})) {
            assertEquals(
                    created,
                    poolRow(
                            ctl(with(create, defaults)),
                            "pool ctlp-defaults already exists with this definition; nothing changed"),
                    String.join(" ", defaults));
        }
        JsonNode json = assertOk(ctl(with(create, "-o", "json"))).json();
        assertEquals(listed("ctlp-defaults"), json, "the answer is the pool as listed");
        assertEquals("", json.path("nodeSelector").asText("missing"));
        assertEquals(List.of(), texts(json.path("excluded")));
        assertEquals(4, json.path("blocks").path("total").asInt());

        Map<String, String> v6 =
                poolRow(
                        ctl("pool", "create", "ctlp-defaults-v6", "--cidr", "fd00:198:81::/112"),
                        "created pool ctlp-defaults-v6");
        assertCells(
                v6,
                Map.of(
                        "CIDR",
                        "fd00:198:81::/112",
                        "BLOCK-SIZE",
                        "/122",
                        "NODE-SELECTOR",
                        "all()"));
        assertEquals(Set.of(ZONE_A, ZONE_B, "ctlp-defaults", "ctlp-defaults-v6"), poolNames());
    }

    @Test
    void createSendsEveryOptionToTheAgent() throws Exception {
        String selector = "zone in (e2e-b,e2e-c),!example.com/spare";
        Run run =
                ctl(
                        "pool",
                        "create",
                        "ctlp-options",
                        "--cidr",
                        "198.18.132.0/24",
                        "--block-size",
                        "28",
                        "--node-selector",
                        selector,
                        "--strict-affinity",
                        "--no-borrowing",
                        "--max-blocks-per-node",
                        "3",
                        "--exclude",
                        "198.18.132.16/28",
                        "--exclude",
                        "198.18.132.0/30");
        assertEquals(
                Map.of(
                        "NAME",
                        "ctlp-options",
                        "CIDR",
                        "198.18.132.0/24",
                        "BLOCK-SIZE",
                        "/28",
                        "STRICT-AFFINITY",
                        "true",
                        "ALLOW-BORROWING",
                        "false",
                        "MAX-BLOCKS-PER-NODE",
                        "3",
                        "DISABLED",
                        "false",
                        "NODE-SELECTOR",
                        selector),
                poolRow(run, "created pool ctlp-options"));
        assertEquals(
                List.of(
                        Map.of("POOL", "ctlp-options", "EXCLUDED", "198.18.132.0/30"),
                        Map.of("POOL", "ctlp-options", "EXCLUDED", "198.18.132.16/28")),
                table(afterFirstLine(run), 1),
                run.out());

        JsonNode pool = listed("ctlp-options");
        assertEquals(28, pool.path("blockSize").asInt());
        assertEquals(selector, pool.path("nodeSelector").asText());
        assertTrue(pool.path("strictAffinity").asBoolean(false), pool.toString());
        assertFalse(pool.path("allowBorrowing").asBoolean(true), pool.toString());
        assertEquals(3, pool.path("maxBlocksPerNode").asInt());
        assertEquals(
                List.of("198.18.132.0/30", "198.18.132.16/28"),
                texts(pool.path("excluded")),
                "canonical, sorted");
        assertEquals(16, pool.path("blocks").path("total").asInt());

        // The selector reaches allocation too: named by the netconf, the pool still serves no other
        // node.
        assertAddRefused(
                agent.tryAdd("options-1", "ctlp-options"),
                CniCodes.POOL_EXHAUSTED,
                "pool ctlp-options selects nodes '" + selector + "', not node " + NODE);
    }

    @Test
    void thePresetClusterPoolAloneAndWithAConflictingOption() throws Exception {
        String[] create = {
            "pool",
            "create",
            "ctlp-cluster",
            "--cidr",
            "198.18.136.0/22",
            "--preset",
            "cluster-pool"
        };
        Map<String, String> created = poolRow(ctl(create), "created pool ctlp-cluster");
        assertCells(
                created,
                Map.of(
                        "BLOCK-SIZE",
                        "/24",
                        "STRICT-AFFINITY",
                        "true",
                        "ALLOW-BORROWING",
                        "false",
                        "MAX-BLOCKS-PER-NODE",
                        "1",
                        "NODE-SELECTOR",
                        "all()"));
        JsonNode pool = listed("ctlp-cluster");
        assertEquals(24, pool.path("blockSize").asInt());
        assertEquals(1, pool.path("maxBlocksPerNode").asInt());
        assertTrue(pool.path("strictAffinity").asBoolean(false), pool.toString());
        assertFalse(pool.path("allowBorrowing").asBoolean(true), pool.toString());
        // Options that agree with the preset are the same definition.
        assertEquals(
                created,
                poolRow(
                        ctl(
                                with(
                                        create,
                                        "--block-size",
                                        "24",
                                        "--strict-affinity",
                                        "--no-borrowing",
                                        "--max-blocks-per-node",
                                        "1")),
                        "pool ctlp-cluster already exists with this definition; nothing changed"));
        assertCells(
                poolRow(
                        ctl(
                                "pool",
                                "create",
                                "ctlp-cluster-v6",
                                "--cidr",
                                "fd00:198:82::/112",
                                "--preset",
                                "cluster-pool"),
                        "created pool ctlp-cluster-v6"),
                Map.of("BLOCK-SIZE", "/120", "MAX-BLOCKS-PER-NODE", "1"));

        assertFailed(
                ctl(
                        "pool",
                        "create",
                        "ctlp-cluster-2",
                        "--cidr",
                        "198.18.140.0/22",
                        "--preset",
                        "cluster-pool",
                        "--max-blocks-per-node",
                        "2"),
                "preset cluster-pool means strictAffinity true, allowBorrowing false and maxBlocksPerNode 1",
                "HTTP 400 from POST " + adminUrl + "/v1/pools");
        assertFailed(
                ctl(
                        "pool",
                        "create",
                        "ctlp-cluster-2",
                        "--cidr",
                        "198.18.140.0/22",
                        "--preset",
                        "calico"),
                "unknown preset calico (known: cluster-pool)",
                "HTTP 400 from POST");
        assertEquals(
                Set.of(ZONE_A, ZONE_B, "ctlp-cluster", "ctlp-cluster-v6"),
                poolNames(),
                "nothing else created");
    }

    @Test
    void anOverlappingRangeOrTheNameWithAnotherDefinitionIsAConflict() throws Exception {
        assertFailed(
                ctl(
                        "pool",
                        "create",
                        "ctlp-overlap",
                        "--cidr",
                        "198.18.130.16/28",
                        "--block-size",
                        "28"),
                "pool ctlp-overlap (198.18.130.16/28) overlaps pool "
                        + ZONE_A
                        + " (198.18.130.0/27)",
                "HTTP 409 from POST " + adminUrl + "/v1/pools");
        assertFailed(
                ctl("pool", "create", "ctlp-overlap", "--cidr", "198.18.128.0/22"),
                "overlaps pool " + ZONE_A);
        assertFailed(
                ctl("pool", "create", ZONE_A, "--cidr", "198.18.141.0/24"),
                "pool " + ZONE_A + " exists as",
                "cannot change",
                "HTTP 409 from POST");
        // The configured definition, through cadastrectl: the same; with one setting more: another.
        String[] configured = {
            "pool",
            "create",
            ZONE_A,
            "--cidr",
            "198.18.130.0/27",
            "--block-size",
            "28",
            "--node-selector",
            "zone=e2e-a",
            "--exclude",
            "198.18.130.0/31"
        };
        poolRow(
                ctl(configured),
                "pool " + ZONE_A + " already exists with this definition; nothing changed");
        assertFailed(
                ctl(with(configured, "--strict-affinity")),
                "pool " + ZONE_A + " exists with other settings",
                "HTTP 409 from POST");
        assertEquals(CONFIGURED, poolNames(), "nothing created");
        assertFalse(listed(ZONE_A).path("strictAffinity").asBoolean(true), "nothing changed");
    }

    @Test
    void aBadSelectorExcludedRangeOrBlockSizeIsRefused() throws Exception {
        String[] pool = {"pool", "create", "ctlp-bad", "--cidr", "198.18.141.0/24"};
        assertFailed(
                ctl(with(pool, "--node-selector", "zone in e2e-a")),
                "pool ctlp-bad: node selector 'zone in e2e-a': 'zone in e2e-a' is not a requirement",
                "HTTP 400 from POST " + adminUrl + "/v1/pools");
        assertFailed(
                ctl(with(pool, "--exclude", "198.18.142.0/30")),
                "pool ctlp-bad: excluded range 198.18.142.0/30 is not inside 198.18.141.0/24",
                "HTTP 400 from POST");
        assertFailed(
                ctl(with(pool, "--block-size", "20")),
                "pool ctlp-bad: block size /20 is larger than the pool 198.18.141.0/24",
                "HTTP 400 from POST");
        assertFailed(
                ctl(with(pool, "--block-size", "33")),
                "pool ctlp-bad: block size /33 must be between /20 and /32",
                "HTTP 400 from POST");
        assertFailed(
                ctl(
                        "pool",
                        "create",
                        "ctlp-bad",
                        "--cidr",
                        "fd00:198:83::/48",
                        "--block-size",
                        "100"),
                "pool ctlp-bad: block size /100 must be between /116 and /128",
                "HTTP 400 from POST");
        assertFailed(
                ctl("pool", "create", "Ctlp_Bad", "--cidr", "198.18.141.0/24"),
                "pool name 'Ctlp_Bad' must be",
                "HTTP 400 from POST");
        // Malformed before the agent is asked.
        assertFailed(
                ctl("pool", "create", "ctlp-bad", "--cidr", "198.18.141.0/33"), "198.18.141.0/33");
        assertEquals(CONFIGURED, poolNames(), "nothing created");
    }

    // ---- pool disable, enable

    /**
     * ADDs naming no pool get their address from the pools selecting the node by its labels: with
     * the only one disabled, an ADD fails; what it gave out stays, and is released by DEL or by
     * cadastrectl; enabled again, ADDs work again. A pool whose selector does not match the node
     * serves it nothing even when named.
     */
    @Test
    void aDisabledPoolSelectedByTheNodesLabelsRefusesAddsUntilEnabled() throws Exception {
        Cidr zoneA = Cidr.parse("198.18.130.0/27");
        Pod first = agent.addPod("zone-1");
        Pod second = agent.addPod("zone-2");
        for (Pod pod : List.of(first, second)) {
            assertEquals(1, pod.addresses().size(), "only the IPv4 pool selects the node: " + pod);
            assertTrue(zoneA.contains(pod.v4()), pod.toString());
            assertFalse(Cidr.parse("198.18.130.0/31").contains(pod.v4()), "excluded: " + pod);
        }
        assertAddRefused(
                agent.tryAdd("zone-b-1", ZONE_B),
                CniCodes.POOL_EXHAUSTED,
                "pool " + ZONE_B + " selects nodes 'zone in (e2e-b,e2e-c)', not node " + NODE);

        Map<String, String> disabled =
                poolRow(ctl("pool", "disable", ZONE_A), "disabled pool " + ZONE_A);
        assertCells(
                disabled,
                Map.of("NAME", ZONE_A, "DISABLED", "true", "NODE-SELECTOR", "zone=e2e-a"));
        assertEquals(
                disabled,
                poolRow(ctl("pool", "disable", ZONE_A), "disabled pool " + ZONE_A),
                "idempotent");
        assertTrue(listed(ZONE_A).path("disabled").asBoolean(false));
        assertCells(
                rowsBy("POOL", table(assertOk(ctl("ipam", "show")).out(), 0)).get(ZONE_A),
                Map.of("ALLOCATED", "2", "FLAGS", "disabled"));

        assertAddRefused(
                agent.tryAdd("zone-3"),
                CniCodes.INVALID_NETWORK_CONFIG,
                "no enabled pool selects node " + NODE);
        assertCells(
                addressRow(first.v4()),
                Map.of("STATE", "allocated", "POOL", ZONE_A, "POD", "e2e/zone-1"));
        agent.del(first);
        assertEquals(
                "free", addressRow(first.v4()).get("STATE"), "DEL releases from a disabled pool");
        assertEquals(
                "released " + second.v4() + "\n",
                assertOk(ctl("ipam", "release", "--address", second.v4())).out());
        assertEquals("free", addressRow(second.v4()).get("STATE"));

        Map<String, String> enabled =
                poolRow(ctl("pool", "enable", ZONE_A), "enabled pool " + ZONE_A);
        assertCells(enabled, Map.of("NAME", ZONE_A, "DISABLED", "false"));
        assertEquals(
                enabled,
                poolRow(ctl("pool", "enable", ZONE_A), "enabled pool " + ZONE_A),
                "idempotent");
        assertTrue(zoneA.contains(agent.addPod("zone-4").v4()));
        assertCells(
                rowsBy("POOL", table(assertOk(ctl("ipam", "show")).out(), 0)).get(ZONE_A),
                Map.of("FLAGS", "-"));
    }

    /** The same for a pool created at run time and named by the netconf's {@code ipam.pools}. */
    @Test
    void aDisabledPoolNamedByTheNetconfRefusesAddsUntilEnabled() throws Exception {
        poolRow(
                ctl(
                        "pool",
                        "create",
                        "ctlp-named",
                        "--cidr",
                        "198.18.133.0/28",
                        "--block-size",
                        "28"),
                "created pool ctlp-named");
        Pod pod = agent.addPod("named-1", "ctlp-named");
        assertTrue(Cidr.parse("198.18.133.0/28").contains(pod.v4()), pod.toString());

        poolRow(ctl("pool", "disable", "ctlp-named"), "disabled pool ctlp-named");
        assertAddRefused(
                agent.tryAdd("named-2", "ctlp-named"),
                CniCodes.POOL_EXHAUSTED,
                "pool ctlp-named is disabled");
        assertCells(
                addressRow(pod.v4()),
                Map.of("STATE", "allocated", "POOL", "ctlp-named", "POD", "e2e/named-1"));
        assertCells(
                rowsBy("POOL", table(assertOk(ctl("ipam", "show")).out(), 0)).get("ctlp-named"),
                Map.of("ALLOCATED", "1", "FLAGS", "disabled"));

        assertTrue(
                assertOk(ctl("pool", "disable", "ctlp-named", "-o", "json"))
                        .json()
                        .path("disabled")
                        .asBoolean(false));
        assertFalse(
                assertOk(ctl("pool", "enable", "ctlp-named", "-o", "json"))
                        .json()
                        .path("disabled")
                        .asBoolean(true));
        Pod again = agent.addPod("named-3", "ctlp-named");
        assertTrue(Cidr.parse("198.18.133.0/28").contains(again.v4()), again.toString());
        assertNotEquals(pod.v4(), again.v4());
        agent.del(pod);
        assertEquals("free", addressRow(pod.v4()).get("STATE"));
    }

    @Test
    void anUnknownPoolIsExitTwoWithTheAgentsMessage() {
        for (String action : List.of("disable", "enable")) {
            assertFailed(
                    ctl("pool", action, "no-such-pool"),
                    "unknown pool no-such-pool",
                    "HTTP 404 from POST " + adminUrl + "/v1/pools/no-such-pool/" + action);
        }
        assertFailed(
                ctl("pool", "delete", "no-such-pool"),
                "unknown pool no-such-pool",
                "HTTP 404 from DELETE " + adminUrl + "/v1/pools/no-such-pool");
        assertFailed(
                ctl("pool", "delete", "no-such-pool", "-o", "json"), "unknown pool no-such-pool");
    }

    // ---- pool delete

    /**
     * An empty pool is deleted with its blocks, a used one too once its pod is gone; the name and
     * range are free again, and the pool created again serves ADDs from its old block.
     */
    @Test
    void deletingAnEmptyPoolReleasesItsBlocksAndFreesTheNameAndRange() throws Exception {
        poolRow(
                ctl("pool", "create", "ctlp-unused", "--cidr", "198.18.134.64/26"),
                "created pool ctlp-unused");
        assertEquals(
                "deleted pool ctlp-unused (released 0 blocks)\n",
                assertOk(ctl("pool", "delete", "ctlp-unused")).out());

        String[] create = {
            "pool", "create", "ctlp-del", "--cidr", "198.18.134.0/26", "--block-size", "28"
        };
        poolRow(ctl(create), "created pool ctlp-del");
        Pod pod = agent.addPod("del-1", "ctlp-del");
        agent.del(pod);
        assertCells(
                rowsBy("BLOCK", table(assertOk(ctl("ipam", "show", "--show-blocks")).out(), 1))
                        .get("198.18.134.0/28"),
                Map.of("POOL", "ctlp-del", "AFFINITY", NODE, "ALLOCATED", "0"));

        assertEquals(
                "deleted pool ctlp-del (released 1 block)\n",
                assertOk(ctl("pool", "delete", "ctlp-del")).out());
        assertEquals(CONFIGURED, poolNames());
        assertFalse(
                assertOk(ctl("ipam", "show", "--show-blocks")).out().contains("198.18.134."),
                "its block is gone");
        assertFalse(
                assertOk(ctl("node", "show", NODE)).out().contains("198.18.134."),
                "the node has no block of it");
        assertTrue(assertOk(ctl("ipam", "check")).out().startsWith("clean: "));

        poolRow(ctl(create), "created pool ctlp-del");
        Pod again = agent.addPod("del-2", "ctlp-del");
        assertTrue(Cidr.parse("198.18.134.0/26").contains(again.v4()), again.toString());
        assertCells(
                addressRow(again.v4()),
                Map.of("STATE", "allocated", "POOL", "ctlp-del", "NODE", NODE));
        agent.del(again);
        JsonNode deleted = assertOk(ctl("pool", "delete", "ctlp-del", "-o", "json")).json();
        assertEquals("ctlp-del", deleted.path("deleted").asText());
        assertEquals(
                List.of("198.18.134.0/28"),
                texts(deleted.path("releasedBlocks")),
                deleted.toString());
    }

    @Test
    void deletingAPoolWithALivePodIsRefusedAndLeavesItDisabled() throws Exception {
        poolRow(
                ctl(
                        "pool",
                        "create",
                        "ctlp-busy",
                        "--cidr",
                        "198.18.135.0/28",
                        "--block-size",
                        "28"),
                "created pool ctlp-busy");
        Pod pod = agent.addPod("busy-1", "ctlp-busy");

        assertFailed(
                ctl("pool", "delete", "ctlp-busy"),
                "pool ctlp-busy still holds 1 allocations in 1 blocks (198.18.135.0/28); it is now disabled",
                "HTTP 409 from DELETE " + adminUrl + "/v1/pools/ctlp-busy");
        assertCells(
                rowsBy("NAME", table(assertOk(ctl("pool", "list")).out(), 0)).get("ctlp-busy"),
                Map.of("DISABLED", "true"));
        assertCells(addressRow(pod.v4()), Map.of("STATE", "allocated", "POOL", "ctlp-busy"));
        assertAddRefused(
                agent.tryAdd("busy-2", "ctlp-busy"),
                CniCodes.POOL_EXHAUSTED,
                "pool ctlp-busy is disabled");

        agent.del(pod);
        assertEquals(
                "deleted pool ctlp-busy (released 1 block)\n",
                assertOk(ctl("pool", "delete", "ctlp-busy")).out());
        assertEquals(CONFIGURED, poolNames());
    }

    // ---- excluded ranges

    /** A pool of one /29 block with three addresses excluded: ADDs get the other five, then none. */
    @Test
    void anExcludedAddressIsNeverGivenToAPod() throws Exception {
        Run created =
                ctl(
                        "pool",
                        "create",
                        "ctlp-tiny",
                        "--cidr",
                        "198.18.129.0/29",
                        "--block-size",
                        "29",
                        "--exclude",
                        "198.18.129.0/31",
                        "--exclude",
                        "198.18.129.5/32");
        poolRow(created, "created pool ctlp-tiny");
        Set<String> given = new TreeSet<>();
        Result refused = null;
        for (int i = 1; i <= 8 && refused == null; i++) {
            Result add = agent.tryAdd("tiny-" + i, "ctlp-tiny");
            if (add.exit() == 0) {
                assertTrue(given.add(agent.lastPod().v4()), "given twice: " + add);
            } else {
                refused = add;
            }
        }
        assertEquals(
                new TreeSet<>(
                        Set.of(
                                "198.18.129.2",
                                "198.18.129.3",
                                "198.18.129.4",
                                "198.18.129.6",
                                "198.18.129.7")),
                given);
        assertTrue(refused != null, "the sixth ADD is refused");
        assertAddRefused(refused, CniCodes.POOL_EXHAUSTED, "no V4 address left for node " + NODE);
        assertCells(
                rowsBy("POOL", table(assertOk(ctl("ipam", "show")).out(), 0)).get("ctlp-tiny"),
                Map.of("ALLOCATED", "5", "BLOCKS(claimed/total)", "1/1"));
        for (String excluded : List.of("198.18.129.0", "198.18.129.1", "198.18.129.5")) {
            assertEquals(
                    "free", addressRow(excluded).get("STATE"), excluded + " is held by nobody");
        }
        assertTrue(assertOk(ctl("ipam", "check")).out().startsWith("clean: "));
    }

    // ---- helpers

    private static Run ctl(String... args) {
        return agent.ctl(args);
    }

    /**
     * @param firstLine the line create, disable and enable print before the pool
     * @return the pool's row of the table after it
     */
    private static Map<String, String> poolRow(Run run, String firstLine) {
        assertOk(run);
        assertTrue(run.out().startsWith(firstLine + "\n"), run.toString());
        List<Map<String, String>> rows = table(afterFirstLine(run), 0);
        assertEquals(1, rows.size(), run.out());
        return rows.get(0);
    }

    private static String afterFirstLine(Run run) {
        return run.out().substring(run.out().indexOf('\n') + 1);
    }

    /** @return {@code pool list -o json}'s entry for the pool */
    private static JsonNode listed(String name) throws Exception {
        return pool(assertOk(ctl("pool", "list", "-o", "json")).json(), name);
    }

    private static Set<String> poolNames() throws Exception {
        Set<String> names = new TreeSet<>();
        assertOk(ctl("pool", "list", "-o", "json"))
                .json()
                .path("pools")
                .forEach(p -> names.add(p.path("name").asText()));
        return names;
    }

    private static Map<String, String> addressRow(String address) {
        return table(assertOk(ctl("ipam", "address", address)).out(), 0).get(0);
    }

    private static List<String> texts(JsonNode array) {
        assertTrue(array.isArray(), "not an array: " + array);
        List<String> texts = new ArrayList<>();
        array.forEach(item -> texts.add(item.asText()));
        return texts;
    }

    private static String[] with(String[] args, String... more) {
        return Stream.concat(Arrays.stream(args), Arrays.stream(more)).toArray(String[]::new);
    }

    /** The plugin failed the ADD with the CNI error code, its message or details holding the text. */
    private static void assertAddRefused(Result add, int code, String text) {
        assertNotEquals(0, add.exit(), add.toString());
        assertEquals(code, add.code(), add.toString());
        assertTrue(add.stdout().contains(text), "'" + text + "' in " + add);
    }
}
