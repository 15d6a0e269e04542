package io.cadastre.ctl;

import static io.cadastre.ctl.Fixtures.createBlue;
import static io.cadastre.ctl.Fixtures.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.ctl.Fixtures.Run;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every command against a fake agent serving the contract's JSON: the request it sends, its table,
 * and its {@code -o json} output (the agent's JSON, same values, pretty-printed).
 */
class CommandsTest {
    private FakeAdminServer agent;

    @BeforeEach
    void startAgent() throws IOException {
        agent =
                new FakeAdminServer()
                        .get("/v1/pools", Fixtures.POOLS)
                        .get("/v1/blocks", Fixtures.BLOCKS)
                        .get("/v1/nodes", Fixtures.NODES)
                        .get("/v1/nodes/node-a", Fixtures.NODE_A)
                        .get("/v1/addresses/198.18.0.3", Fixtures.ADDRESS_HELD)
                        .get("/v1/addresses/fd00:198::9", Fixtures.ADDRESS_FREE)
                        .get("/v1/check", Fixtures.CHECK_CLEAN);
    }

    @AfterEach
    void stopAgent() {
        agent.close();
    }

    private Run ctl(String... args) {
        return agent.ctl(args);
    }

    private List<String> targets() {
        return agent.requests().stream().map(r -> r.method() + " " + r.target()).toList();
    }

    /** Asserts a successful run that printed the agent's {@code fixture}, pretty-printed, and nothing on stderr. */
    private static void assertJsonOutput(String fixture, Run run) {
        assertEquals(0, run.code(), run.err());
        assertEquals("", run.err());
        assertEquals(
                Json.parseOrNull(fixture), Json.parseOrNull(run.out()), "same JSON as the agent's");
        assertTrue(run.out().startsWith("{\n  \""), "indented: " + run.out());
        assertTrue(run.out().endsWith("}\n"), "one document and a newline");
    }

    @Test
    void ipamShowPrintsPoolsWithUtilisationAndFlags() {
        Run run = ctl("ipam", "show");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                POOL           CIDR            BLOCK-SIZE   BLOCKS(claimed/total)   ALLOCATED   SIZE    UTIL%   FLAGS
                default-ipv4   198.18.0.0/16   /26          3/1024                  130         65536   0.2     -
                default-ipv6   fd00:198::/48   /122         1/2^74                  2           2^80    <0.1    strict-affinity,no-borrowing,max-blocks-per-node=4
                """,
                run.out());
        assertEquals("", run.err());
        assertEquals(List.of("GET /v1/pools"), targets());
    }

    @Test
    void ipamShowWithBlocksAddsABlockTable() {
        Run run = ctl("ipam", "show", "--show-blocks");
        assertEquals(0, run.code(), run.err());
        assertTrue(
                run.out()
                        .endsWith(
                                """

                BLOCK            POOL           AFFINITY   ALLOCATED   FREE   BORROWED-BY
                198.18.0.0/26    default-ipv4   node-a     12          52     node-b
                198.18.0.64/26   default-ipv4   node-b     64          0      -
                fd00:198::/122   default-ipv6   node-a     2           62     node-b,node-c
                """),
                run.out());
        assertTrue(run.out().startsWith("POOL "), run.out());
        assertEquals(List.of("GET /v1/pools", "GET /v1/blocks"), targets());
    }

    @Test
    void ipamShowJsonIsTheAgentsAnswerWithNumbersIntact() {
        Run run = ctl("ipam", "show", "-o", "json");
        assertJsonOutput(Fixtures.POOLS, run);
        // Beyond a long: read and written as the same digits, not as a double.
        assertTrue(run.out().contains("\"size\": 1208925819614629174706176,"), run.out());
        assertTrue(run.out().contains("\"total\": 18889465931478580854784"), run.out());
    }

    @Test
    void ipamShowBlocksJsonIsOneDocumentWithBothAnswers() {
        Run run = ctl("ipam", "show", "--show-blocks", "-o", "json");
        assertEquals(0, run.code(), run.err());
        JsonNode printed = Json.parseOrNull(run.out());
        assertEquals(Json.parseOrNull(Fixtures.POOLS).get("pools"), printed.get("pools"));
        assertEquals(Json.parseOrNull(Fixtures.BLOCKS).get("blocks"), printed.get("blocks"));
        List<String> keys = new ArrayList<>();
        printed.fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("pools", "blocks"), keys);
    }

    @Test
    void poolListPrintsSettingsTheSelectorLastAndExcludedRangesBelow() {
        Run run = ctl("pool", "list");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                NAME           CIDR            BLOCK-SIZE   STRICT-AFFINITY   ALLOW-BORROWING   MAX-BLOCKS-PER-NODE   DISABLED   NODE-SELECTOR
                default-ipv4   198.18.0.0/16   /26          false             true              no limit              false      all()
                default-ipv6   fd00:198::/48   /122         true              false             4                     false      topology.kubernetes.io/zone in (a,b)

                POOL           EXCLUDED
                default-ipv4   198.18.0.0/28
                default-ipv4   198.18.255.0/24
                """,
                run.out());
        assertJsonOutput(Fixtures.POOLS, ctl("pool", "list", "-o", "json"));
    }

    @Test
    void nodeListCountsBlocksAndShowsRemovedAndLabels() {
        Run run = ctl("node", "list");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                NAME     MEMBER   AFFINE-BLOCKS   BORROWED-BLOCKS   ATTACHMENTS   REMOVED   LABELS
                node-a   up       2               0                 12            false     kubernetes.io/hostname=node-a,topology.kubernetes.io/zone=a
                node-b   absent   1               1                 65            true      -
                """,
                run.out());
        assertJsonOutput(Fixtures.NODES, ctl("node", "list", "-o", "json"));
        assertEquals(List.of("GET /v1/nodes", "GET /v1/nodes"), targets());
    }

    @Test
    void nodeShowPrintsSummaryBlocksAndAttachments() {
        Run run = ctl("node", "show", "node-a");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                NAME     MEMBER   AFFINE-BLOCKS   BORROWED-BLOCKS   ATTACHMENTS   REMOVED   LABELS
                node-a   up       1               1                 2             false     zone=a

                BLOCK            ROLE
                198.18.0.0/26    affine
                198.18.0.64/26   borrowed

                HANDLE                          IFNAME   NETWORK    CONTAINER      POD    ADDRESSES                CREATED
                cadastre.0123456789abcdef0123   eth0     cadastre   0123456789ab   ns/p   198.18.0.3,fd00:198::3   2026-11-22T09:12:14Z
                macvlan.c2                      net1     macvlan    c2             -      198.18.0.4               -

                Peer (what other hosts use to reach its pods):
                MODE           INTERFACE   IPV4               IPV6                 VTEP-MAC            TUNNEL-IPV4   TUNNEL-IPV6   MTU
                cross-subnet   eth0        198.19.255.11/24   fd00:19:255::11/64   0e:3c:91:2a:57:d0   198.18.0.1    -             1500

                Routing of node-a (mode cross-subnet), programmed on this host:
                PEER     IPV4     IPV6     UNDERLAY                               TUNNEL         VTEP-MAC
                node-b   direct   direct   198.19.255.12/24, fd00:19:255::12/64   -              0a:11:22:33:44:55
                node-c   vxlan    -        198.19.254.14/24                       198.18.0.129   0a:66:77:88:99:aa

                DESTINATION       TYPE        NODE     ROUTE
                169.254.1.1/32    gateway     node-a   169.254.1.1/32 dev lo
                198.18.0.0/26     blackhole   node-a   blackhole 198.18.0.0/26
                198.18.0.64/26    block       node-b   198.18.0.64/26 via 198.19.255.12 dev eth0 onlink
                198.18.0.128/26   block       node-c   198.18.0.128/26 via 198.18.0.129 dev cadastre.vx4 onlink

                Outgoing NAT: masquerade 198.18.0.0/16 except to 10.0.0.0/8, 198.18.0.0/16

                Not routed:
                  node node-c has no IPv6 underlay address: fd00:198::80/122 on node-c is not routed

                Last reconcile 2026-11-22T09:12:14Z: added 4, removed 0, replaced 0, conflicts 0, errors 0 in 3 ms
                """,
                run.out());
        assertJsonOutput(Fixtures.NODE_A, ctl("node", "show", "node-a", "-o", "json"));
    }

    @Test
    void nodeNamesAreEncodedAsOnePathSegment() {
        Run run = ctl("node", "show", "a b/c");
        assertEquals(2, run.code(), "the fake has no such node: 404");
        assertEquals(List.of("GET /v1/nodes/a%20b%2Fc"), targets());
    }

    @Test
    void ipamAddressShowsTheHolder() {
        Run run = ctl("ipam", "address", "198.18.0.3");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                ADDRESS      POOL           BLOCK           STATE       NODE     HANDLE        IFNAME   POD    ALLOCATED
                198.18.0.3   default-ipv4   198.18.0.0/26   allocated   node-a   cadastre.c1   eth0     ns/p   2026-11-22T09:12:14Z
                """,
                run.out());
        assertJsonOutput(Fixtures.ADDRESS_HELD, ctl("ipam", "address", "198.18.0.3", "-o", "json"));
    }

    @Test
    void ipamAddressOfAFreeIpv6AddressKeepsItsColonsInThePath() {
        Run run = ctl("ipam", "address", "fd00:198::9");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                ADDRESS       POOL           BLOCK            STATE   NODE   HANDLE   IFNAME   POD   ALLOCATED
                fd00:198::9   default-ipv6   fd00:198::/122   free    -      -        -        -     -
                """,
                run.out());
        assertEquals(List.of("GET /v1/addresses/fd00:198::9"), targets());
        // -o json keeps the explicit null.
        Run json = ctl("ipam", "address", "fd00:198::9", "-o", "json");
        assertJsonOutput(Fixtures.ADDRESS_FREE, json);
        assertTrue(json.out().contains("\"allocation\": null"), json.out());
    }

    @Test
    void ipamReleaseByAddressPostsTheAddress() {
        agent.answer("POST", "/v1/release", 200, "{\"released\":[\"198.18.0.3\"]}");
        Run run = ctl("ipam", "release", "--address", "198.18.0.3");
        assertEquals(0, run.code(), run.err());
        assertEquals("released 198.18.0.3\n", run.out());
        FakeAdminServer.Request sent = agent.requests().get(0);
        assertEquals("POST /v1/release", sent.method() + " " + sent.target());
        assertEquals("application/json", sent.contentType());
        assertEquals(
                Json.parseOrNull("{\"address\":\"198.18.0.3\"}"), Json.parseOrNull(sent.body()));
    }

    @Test
    void ipamReleaseByHandleSendsNodeHandleAndInterfaceDefaultingToEth0() {
        agent.answer("POST", "/v1/release", 200, "{\"released\":[\"198.18.0.3\",\"fd00:198::3\"]}");
        Run run = ctl("ipam", "release", "--node", "node-a", "--handle", "cadastre.c1");
        assertEquals(0, run.code(), run.err());
        assertEquals("released 198.18.0.3\nreleased fd00:198::3\n", run.out());
        assertEquals(
                Json.parseOrNull(
                        "{\"node\":\"node-a\",\"handle\":\"cadastre.c1\",\"ifname\":\"eth0\"}"),
                Json.parseOrNull(agent.requests().get(0).body()));

        Run net1 =
                ctl(
                        "ipam",
                        "release",
                        "--node",
                        "node-a",
                        "--handle",
                        "macvlan.c2",
                        "--ifname",
                        "net1",
                        "-o",
                        "json");
        assertJsonOutput("{\"released\":[\"198.18.0.3\",\"fd00:198::3\"]}", net1);
        assertEquals(
                Json.parseOrNull(
                        "{\"node\":\"node-a\",\"handle\":\"macvlan.c2\",\"ifname\":\"net1\"}"),
                Json.parseOrNull(agent.requests().get(1).body()));
    }

    @Test
    void ipamReleaseOfNothingHeldSaysSoAndSucceeds() {
        agent.answer("POST", "/v1/release", 200, "{\"released\":[]}");
        Run run = ctl("ipam", "release", "--address", "198.18.0.200");
        assertEquals(0, run.code(), "idempotent: not held is not an error");
        assertEquals("nothing released: no allocation held\n", run.out());
    }

    @Test
    void ipamCheckCleanExitsZeroWithCounts() {
        Run run = ctl("ipam", "check");
        assertEquals(0, run.code(), run.err());
        assertEquals(
                """
                clean: checked 130 allocations and 65 attachments in 42 ms
                FINDING                                COUNT
                allocations without attachment         0
                attachments without allocation         0
                blocks affine to unknown nodes         0
                allocations of removed nodes           0
                blocks without their route on node-a   0
                """,
                run.out());
        Run json = ctl("ipam", "check", "-o", "json");
        assertJsonOutput(Fixtures.CHECK_CLEAN, json);
    }

    @Test
    void ipamCheckDirtyExitsOneAndListsEveryFinding() {
        agent.get("/v1/check", Fixtures.CHECK_DIRTY);
        Run run = ctl("ipam", "check");
        assertEquals(1, run.code(), run.err());
        assertEquals("", run.err());
        assertEquals(
                """
                NOT CLEAN: checked 130 allocations and 65 attachments in 42 ms
                FINDING                                COUNT
                allocations without attachment         1
                attachments without allocation         1
                blocks affine to unknown nodes         1
                allocations of removed nodes           1
                blocks without their route on node-a   1

                Allocations without attachment (an address held for an interface its node does not know):
                ADDRESS      BLOCK           NODE     HANDLE        IFNAME   POD     ALLOCATED
                198.18.0.9   198.18.0.0/26   node-a   cadastre.c9   eth0     ns/p9   2026-11-22T09:12:14Z

                Attachments without allocation (an interface whose addresses no block holds for it):
                NODE     HANDLE        IFNAME   POD     CONTAINER   MISSING
                node-b   cadastre.c3   eth0     ns/p3   c3          198.18.0.70

                Blocks affine to unknown nodes (neither a member nor holding an attachment, or removed):
                BLOCK           POOL           AFFINITY
                198.18.1.0/26   default-ipv4   node-x

                Allocations of removed nodes (release them with 'cadastrectl ipam release --address IP'):
                ADDRESS      BLOCK           NODE     HANDLE        IFNAME   POD     ALLOCATED
                198.18.1.5   198.18.1.0/26   node-x   cadastre.c5   eth0     ns/p5   2026-11-22T09:12:14Z

                Blocks whose route on node-a is not what the claim calls for (its agent's log says why):
                BLOCK            POOL           AFFINITY   PROBLEM      EXPECTED                                           ACTUAL                                                       ACTUAL-NODE
                198.18.0.64/26   default-ipv4   node-b     wrong-node   198.18.0.64/26 via 198.19.255.12 dev eth0 onlink   198.18.0.64/26 via 198.19.255.13 dev eth0 onlink proto 202   node-c

                An ADD in flight shows as an allocation without attachment for a moment: run the check again before releasing.
                """,
                run.out());

        Run json = ctl("ipam", "check", "-o", "json");
        assertEquals(1, json.code(), "the exit code follows the verdict in JSON mode too");
        assertEquals(Json.parseOrNull(Fixtures.CHECK_DIRTY), Json.parseOrNull(json.out()));
    }

    // --- pools and nodes changed at run time

    /** @return the one request the fake received */
    private FakeAdminServer.Request onlyRequest() {
        assertEquals(1, agent.requests().size(), targets().toString());
        return agent.requests().get(0);
    }

    private static final String BLUE_TABLE =
            """
            NAME   CIDR            BLOCK-SIZE   STRICT-AFFINITY   ALLOW-BORROWING   MAX-BLOCKS-PER-NODE   DISABLED   NODE-SELECTOR
            blue   198.19.0.0/16   /24          true              false             1                     %s      pool=blue

            POOL   EXCLUDED
            blue   198.19.0.0/24
            """;

    @Test
    void poolCreateSendsTheNameAndCidrAloneWhenNothingElseIsGiven() {
        agent.answer("POST", "/v1/pools", 201, Fixtures.POOL_BLUE);
        Run run = ctl(createBlue());
        assertEquals(0, run.code(), run.err());
        assertEquals("", run.err());
        FakeAdminServer.Request sent = onlyRequest();
        assertEquals("POST /v1/pools", sent.method() + " " + sent.target());
        assertEquals("application/json", sent.contentType());
        // Nothing but what was given: the agent's defaults apply to the rest.
        assertEquals("{\"name\":\"blue\",\"cidr\":\"198.19.0.0/16\"}", sent.body());
        assertEquals("created pool blue\n" + BLUE_TABLE.formatted("false"), run.out());
    }

    @Test
    void poolCreateSendsEveryOptionGivenUnderTheContractsNames() {
        agent.answer("POST", "/v1/pools", 201, Fixtures.POOL_BLUE);
        Run run =
                ctl(
                        createBlue(
                                "--block-size",
                                "24",
                                "--node-selector",
                                "pool=blue",
                                "--strict-affinity",
                                "--no-borrowing",
                                "--max-blocks-per-node",
                                "1",
                                "--exclude",
                                "198.19.0.0/24",
                                "--exclude",
                                "198.19.255.0/24"));
        assertEquals(0, run.code(), run.err());
        assertEquals(
                "{\"name\":\"blue\",\"cidr\":\"198.19.0.0/16\",\"blockSize\":24,\"nodeSelector\":\"pool=blue\","
                        + "\"strictAffinity\":true,\"allowBorrowing\":false,\"maxBlocksPerNode\":1,"
                        + "\"excluded\":[\"198.19.0.0/24\",\"198.19.255.0/24\"]}",
                onlyRequest().body());
    }

    @Test
    void poolCreateWithThePresetSendsThePresetAndLeavesItsRulesToTheAgent() {
        agent.answer("POST", "/v1/pools", 201, Fixtures.POOL_BLUE);
        Run run =
                ctl(
                        "pool",
                        "create",
                        "blue",
                        "--cidr",
                        "fd00:198:70::/112",
                        "--preset",
                        "cluster-pool",
                        "--max-blocks-per-node",
                        "0",
                        "--node-selector",
                        "");
        assertEquals(0, run.code(), run.err());
        // An empty selector is a value (every node), and 0 a limit: both sent as given.
        assertEquals(
                "{\"name\":\"blue\",\"cidr\":\"fd00:198:70::/112\",\"nodeSelector\":\"\",\"maxBlocksPerNode\":0,"
                        + "\"preset\":\"cluster-pool\"}",
                onlyRequest().body());
    }

    @Test
    void poolCreateOfAnExistingDefinitionSaysNothingChanged() {
        agent.answer("POST", "/v1/pools", 200, Fixtures.POOL_BLUE);
        Run run = ctl(createBlue());
        assertEquals(0, run.code(), "idempotent: the same definition again is a success");
        assertEquals(
                "pool blue already exists with this definition; nothing changed\n"
                        + BLUE_TABLE.formatted("false"),
                run.out());
        assertJsonOutput(Fixtures.POOL_BLUE, ctl(createBlue("-o", "json")));
    }

    @Test
    void poolDisableAndEnablePostWithoutABodyAndPrintThePool() {
        agent.answer("POST", "/v1/pools/blue/disable", 200, Fixtures.POOL_BLUE_DISABLED)
                .answer("POST", "/v1/pools/blue/enable", 200, Fixtures.POOL_BLUE);
        Run disable = ctl("pool", "disable", "blue");
        assertEquals(0, disable.code(), disable.err());
        assertEquals("disabled pool blue\n" + BLUE_TABLE.formatted("true "), disable.out());
        FakeAdminServer.Request sent = onlyRequest();
        assertEquals("POST /v1/pools/blue/disable", sent.method() + " " + sent.target());
        assertEquals("", sent.body());
        assertEquals(null, sent.contentType(), "no body, so no content type");

        Run enable = ctl("pool", "enable", "blue");
        assertEquals(0, enable.code(), enable.err());
        assertEquals("enabled pool blue\n" + BLUE_TABLE.formatted("false"), enable.out());
        assertJsonOutput(Fixtures.POOL_BLUE_DISABLED, ctl("pool", "disable", "blue", "-o", "json"));
        assertJsonOutput(Fixtures.POOL_BLUE, ctl("pool", "enable", "blue", "-o", "json"));
        assertEquals(
                List.of(
                        "POST /v1/pools/blue/disable",
                        "POST /v1/pools/blue/enable",
                        "POST /v1/pools/blue/disable",
                        "POST /v1/pools/blue/enable"),
                targets());
    }

    @Test
    void poolDeleteSaysHowManyBlocksItReleased() {
        agent.answer("DELETE", "/v1/pools/blue", 200, Fixtures.POOL_DELETED);
        Run run = ctl("pool", "delete", "blue");
        assertEquals(0, run.code(), run.err());
        assertEquals("deleted pool blue (released 2 blocks)\n", run.out());
        FakeAdminServer.Request sent = onlyRequest();
        assertEquals("DELETE /v1/pools/blue", sent.method() + " " + sent.target());
        assertEquals("", sent.body());
        assertJsonOutput(Fixtures.POOL_DELETED, ctl("pool", "delete", "blue", "-o", "json"));
    }

    @Test
    void poolNamesAreEncodedAsOnePathSegment() {
        agent.answer(
                "DELETE",
                "/v1/pools/a%20b%2Fc",
                200,
                "{\"deleted\":\"a b/c\",\"releasedBlocks\":[\"198.19.0.0/24\"]}");
        Run run = ctl("pool", "delete", "a b/c");
        assertEquals(0, run.code(), run.err());
        assertEquals("deleted pool a b/c (released 1 block)\n", run.out());
        assertEquals(2, ctl("pool", "disable", "a b/c").code(), "the fake has no such route: 404");
        assertEquals(
                List.of("DELETE /v1/pools/a%20b%2Fc", "POST /v1/pools/a%20b%2Fc/disable"),
                targets());
    }

    @Test
    void nodeRemoveSendsReleaseAddressesOnlyWhenAsked() {
        agent.answer(
                        "DELETE",
                        "/v1/nodes/node-b",
                        200,
                        "{\"node\":\"node-b\",\"releasedBlocks\":[],\"remainingBlocks\":[],\"releasedAddresses\":[],"
                                + "\"remainingAllocations\":0}")
                .answer(
                        "DELETE",
                        "/v1/nodes/node-b?releaseAddresses=true",
                        200,
                        Fixtures.NODE_REMOVED);
        Run plain = ctl("node", "remove", "node-b");
        assertEquals(0, plain.code(), plain.err());
        assertEquals(
                "removed node node-b: released 0 blocks and 0 addresses; remaining 0 blocks and 0 allocations\n",
                plain.out());
        assertEquals("", onlyRequest().body());

        Run releasing = ctl("node", "remove", "node-b", "--release-addresses");
        assertEquals(0, releasing.code(), releasing.err());
        assertEquals(
                """
                removed node node-b: released 1 block and 2 addresses; remaining 1 block and 1 allocation
                BLOCK            STATE
                198.18.0.64/26   released
                198.18.1.0/26    remaining

                The remaining allocations show in 'cadastrectl ipam check'; free them with 'cadastrectl ipam release --address IP'.
                """,
                releasing.out());
        assertJsonOutput(
                Fixtures.NODE_REMOVED,
                ctl("node", "remove", "--release-addresses", "node-b", "-o", "json"));
        assertEquals(
                List.of(
                        "DELETE /v1/nodes/node-b",
                        "DELETE /v1/nodes/node-b?releaseAddresses=true",
                        "DELETE /v1/nodes/node-b?releaseAddresses=true"),
                targets());
    }

    @Test
    void globalOptionsWorkAfterTheSubcommandToo() {
        Run run = run(Map.of(), "ipam", "show", "-o", "JSON", "--server", agent.url());
        assertJsonOutput(Fixtures.POOLS, run);
    }
}
