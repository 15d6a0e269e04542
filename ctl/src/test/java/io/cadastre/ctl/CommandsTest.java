package io.cadastre.ctl;

import static io.cadastre.ctl.Fixtures.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.ctl.Fixtures.Run;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
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
        agent = new FakeAdminServer()
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
        return run(Map.of(), Stream.concat(Stream.of("--server", agent.url()), Stream.of(args)).toArray(String[]::new));
    }

    private List<String> targets() {
        return agent.requests().stream().map(r -> r.method() + " " + r.target()).toList();
    }

    /** Asserts a successful run that printed the agent's {@code fixture}, pretty-printed, and nothing on stderr. */
    private static void assertJsonOutput(String fixture, Run run) {
        assertEquals(0, run.code(), run.err());
        assertEquals("", run.err());
        assertEquals(Json.parseOrNull(fixture), Json.parseOrNull(run.out()), "same JSON as the agent's");
        assertTrue(run.out().startsWith("{\n  \""), "indented: " + run.out());
        assertTrue(run.out().endsWith("}\n"), "one document and a newline");
    }

    @Test
    void ipamShowPrintsPoolsWithUtilisationAndFlags() {
        Run run = ctl("ipam", "show");
        assertEquals(0, run.code(), run.err());
        assertEquals("""
                POOL           CIDR            BLOCK-SIZE   BLOCKS(claimed/total)   ALLOCATED   SIZE    UTIL%   FLAGS
                default-ipv4   198.18.0.0/16   /26          3/1024                  130         65536   0.2     -
                default-ipv6   fd00:198::/48   /122         1/2^74                  2           2^80    <0.1    strict-affinity,no-borrowing,max-blocks-per-node=4
                """, run.out());
        assertEquals("", run.err());
        assertEquals(List.of("GET /v1/pools"), targets());
    }

    @Test
    void ipamShowWithBlocksAddsABlockTable() {
        Run run = ctl("ipam", "show", "--show-blocks");
        assertEquals(0, run.code(), run.err());
        assertTrue(run.out().endsWith("""

                BLOCK            POOL           AFFINITY   ALLOCATED   FREE   BORROWED-BY
                198.18.0.0/26    default-ipv4   node-a     12          52     node-b
                198.18.0.64/26   default-ipv4   node-b     64          0      -
                fd00:198::/122   default-ipv6   node-a     2           62     node-b,node-c
                """), run.out());
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
    void poolListPrintsSettings() {
        Run run = ctl("pool", "list");
        assertEquals(0, run.code(), run.err());
        assertEquals("""
                NAME           CIDR            BLOCK-SIZE   STRICT-AFFINITY   ALLOW-BORROWING   MAX-BLOCKS-PER-NODE   DISABLED
                default-ipv4   198.18.0.0/16   /26          false             true              no limit              false
                default-ipv6   fd00:198::/48   /122         true              false             4                     false
                """, run.out());
        assertJsonOutput(Fixtures.POOLS, ctl("pool", "list", "-o", "json"));
    }

    @Test
    void nodeListCountsBlocks() {
        Run run = ctl("node", "list");
        assertEquals(0, run.code(), run.err());
        assertEquals("""
                NAME     MEMBER   AFFINE-BLOCKS   BORROWED-BLOCKS   ATTACHMENTS
                node-a   up       2               0                 12
                node-b   absent   1               1                 65
                """, run.out());
        assertJsonOutput(Fixtures.NODES, ctl("node", "list", "-o", "json"));
        assertEquals(List.of("GET /v1/nodes", "GET /v1/nodes"), targets());
    }

    @Test
    void nodeShowPrintsSummaryBlocksAndAttachments() {
        Run run = ctl("node", "show", "node-a");
        assertEquals(0, run.code(), run.err());
        assertEquals("""
                NAME     MEMBER   AFFINE-BLOCKS   BORROWED-BLOCKS   ATTACHMENTS
                node-a   up       1               1                 2

                BLOCK            ROLE
                198.18.0.0/26    affine
                198.18.0.64/26   borrowed

                HANDLE                          IFNAME   NETWORK    CONTAINER      POD    ADDRESSES                CREATED
                cadastre.0123456789abcdef0123   eth0     cadastre   0123456789ab   ns/p   198.18.0.3,fd00:198::3   2026-11-22T09:12:14Z
                macvlan.c2                      net1     macvlan    c2             -      198.18.0.4               -
                """, run.out());
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
        assertEquals("""
                ADDRESS      POOL           BLOCK           STATE       NODE     HANDLE        IFNAME   POD    ALLOCATED
                198.18.0.3   default-ipv4   198.18.0.0/26   allocated   node-a   cadastre.c1   eth0     ns/p   2026-11-22T09:12:14Z
                """, run.out());
        assertJsonOutput(Fixtures.ADDRESS_HELD, ctl("ipam", "address", "198.18.0.3", "-o", "json"));
    }

    @Test
    void ipamAddressOfAFreeIpv6AddressKeepsItsColonsInThePath() {
        Run run = ctl("ipam", "address", "fd00:198::9");
        assertEquals(0, run.code(), run.err());
        assertEquals("""
                ADDRESS       POOL           BLOCK            STATE   NODE   HANDLE   IFNAME   POD   ALLOCATED
                fd00:198::9   default-ipv6   fd00:198::/122   free    -      -        -        -     -
                """, run.out());
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
        assertEquals(Json.parseOrNull("{\"address\":\"198.18.0.3\"}"), Json.parseOrNull(sent.body()));
    }

    @Test
    void ipamReleaseByHandleSendsNodeHandleAndInterfaceDefaultingToEth0() {
        agent.answer("POST", "/v1/release", 200, "{\"released\":[\"198.18.0.3\",\"fd00:198::3\"]}");
        Run run = ctl("ipam", "release", "--node", "node-a", "--handle", "cadastre.c1");
        assertEquals(0, run.code(), run.err());
        assertEquals("released 198.18.0.3\nreleased fd00:198::3\n", run.out());
        assertEquals(Json.parseOrNull("{\"node\":\"node-a\",\"handle\":\"cadastre.c1\",\"ifname\":\"eth0\"}"),
                Json.parseOrNull(agent.requests().get(0).body()));

        Run net1 = ctl("ipam", "release", "--node", "node-a", "--handle", "macvlan.c2", "--ifname", "net1", "-o", "json");
        assertJsonOutput("{\"released\":[\"198.18.0.3\",\"fd00:198::3\"]}", net1);
        assertEquals(Json.parseOrNull("{\"node\":\"node-a\",\"handle\":\"macvlan.c2\",\"ifname\":\"net1\"}"),
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
        assertEquals("""
                clean: checked 130 allocations and 65 attachments in 42 ms
                FINDING                          COUNT
                allocations without attachment   0
                attachments without allocation   0
                blocks affine to unknown nodes   0
                """, run.out());
        Run json = ctl("ipam", "check", "-o", "json");
        assertJsonOutput(Fixtures.CHECK_CLEAN, json);
    }

    @Test
    void ipamCheckDirtyExitsOneAndListsEveryFinding() {
        agent.get("/v1/check", Fixtures.CHECK_DIRTY);
        Run run = ctl("ipam", "check");
        assertEquals(1, run.code(), run.err());
        assertEquals("", run.err());
        assertEquals("""
                NOT CLEAN: checked 130 allocations and 65 attachments in 42 ms
                FINDING                          COUNT
                allocations without attachment   1
                attachments without allocation   1
                blocks affine to unknown nodes   1

                Allocations without attachment (an address held for an interface its node does not know):
                ADDRESS      BLOCK           NODE     HANDLE        IFNAME   POD     ALLOCATED
                198.18.0.9   198.18.0.0/26   node-a   cadastre.c9   eth0     ns/p9   2026-11-22T09:12:14Z

                Attachments without allocation (an interface whose addresses no block holds for it):
                NODE     HANDLE        IFNAME   POD     CONTAINER   MISSING
                node-b   cadastre.c3   eth0     ns/p3   c3          198.18.0.70

                Blocks affine to unknown nodes (neither a member nor holding an attachment):
                BLOCK           POOL           AFFINITY
                198.18.1.0/26   default-ipv4   node-x

                An ADD in flight shows as an allocation without attachment for a moment: run the check again before releasing.
                """, run.out());

        Run json = ctl("ipam", "check", "-o", "json");
        assertEquals(1, json.code(), "the exit code follows the verdict in JSON mode too");
        assertEquals(Json.parseOrNull(Fixtures.CHECK_DIRTY), Json.parseOrNull(json.out()));
    }

    @Test
    void globalOptionsWorkAfterTheSubcommandToo() {
        Run run = run(Map.of(), "ipam", "show", "-o", "JSON", "--server", agent.url());
        assertJsonOutput(Fixtures.POOLS, run);
    }
}
