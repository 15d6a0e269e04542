package io.cadastre.ctl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** The number formats of the tables, and answers that are partial or not the contract's. */
class ViewsTest {
    private static JsonNode json(String text) {
        return Json.parseOrNull(text);
    }

    @Test
    void utilisationIsAPercentageToOneDecimal() {
        assertEquals("0.0", Views.percent(json("0"), json("64")));
        assertEquals("18.8", Views.percent(json("12"), json("64")));
        assertEquals("100.0", Views.percent(json("64"), json("64")));
        assertEquals("<0.1", Views.percent(json("2"), json("1208925819614629174706176")));
        assertEquals("-", Views.percent(json("2"), json("0")));
        assertEquals("-", Views.percent(json("null"), json("64")));
        assertEquals(
                "50.0", Views.percent(json("\"1\""), json("\"2\"")), "integers sent as strings");
    }

    @Test
    void largePowersOfTwoPrintAsPowers() {
        assertEquals("65536", Views.quantity(json("65536")));
        assertEquals("4294967296", Views.quantity(json("4294967296")), "2^32 still in digits");
        assertEquals("2^33", Views.quantity(json("8589934592")));
        assertEquals("2^80", Views.quantity(json("1208925819614629174706176")));
        assertEquals(
                "1208925819614629174706175", Views.quantity(json("1208925819614629174706175")));
        assertEquals("-", Views.quantity(json("null")));
    }

    @Test
    void missingFieldsPrintAsDashes() {
        String out = Views.nodes(json("{\"nodes\":[{\"name\":\"node-a\"}]}"));
        assertEquals(
                """
                NAME     MEMBER   AFFINE-BLOCKS   BORROWED-BLOCKS   ATTACHMENTS   REMOVED   LABELS
                node-a   -        -               -                 -             -         -
                """,
                out);
    }

    @Test
    void poolsFromAnAgentBeforeSelectorsAndExclusionsShowDashesAndNoExcludedTable() {
        String out =
                Views.poolSettings(
                        json(
                                """
                {"pools":[{"name":"p","cidr":"198.18.0.0/24","blockSize":26,"strictAffinity":false,
                  "allowBorrowing":true,"maxBlocksPerNode":0,"disabled":false}]}
                """));
        assertEquals(
                """
                NAME   CIDR            BLOCK-SIZE   STRICT-AFFINITY   ALLOW-BORROWING   MAX-BLOCKS-PER-NODE   DISABLED   NODE-SELECTOR
                p      198.18.0.0/24   /26          false             true              no limit              false      -
                """,
                out);
    }

    @Test
    void anEmptySelectorMeansEveryNodeAndPrintsAsAll() {
        String out = Views.pool(json("{\"name\":\"p\",\"nodeSelector\":\"\",\"excluded\":[]}"));
        assertTrue(out.endsWith("   all()\n"), out);
        assertTrue(
                Views.pool(json("{\"name\":\"p\",\"nodeSelector\":\"all()\"}"))
                        .endsWith("   all()\n"));
        assertTrue(
                Views.pool(json("{\"name\":\"p\",\"nodeSelector\":\"!gpu\"}"))
                        .endsWith("   !gpu\n"));
    }

    @Test
    void countsInSentencesAgreeWithTheirNouns() {
        assertEquals(
                "deleted pool p (released 1 block)\n",
                Views.poolDeleted(
                        json("{\"deleted\":\"p\",\"releasedBlocks\":[\"198.18.0.0/26\"]}")));
        assertEquals(
                "deleted pool p (released 0 blocks)\n",
                Views.poolDeleted(json("{\"deleted\":\"p\",\"releasedBlocks\":[]}")));
        assertEquals(
                "deleted pool - (released - blocks)\n",
                Views.poolDeleted(json("{}")),
                "missing fields as dashes");
        assertEquals(
                "removed node n: released 0 blocks and 1 address; remaining 2 blocks and 3 allocations\n"
                        + "BLOCK           STATE\n198.18.0.0/26   remaining\n198.18.1.0/26   remaining\n\n"
                        + "The remaining allocations show in 'cadastrectl ipam check'; free them with 'cadastrectl ipam release --address IP'.\n",
                Views.nodeRemoved(
                        json(
                                """
                        {"node":"n","releasedBlocks":[],"remainingBlocks":["198.18.0.0/26","198.18.1.0/26"],
                         "releasedAddresses":["198.18.0.7"],"remainingAllocations":3}
                        """)));
        assertEquals(
                "removed node n: released - blocks and - addresses; remaining - blocks and - allocations\n",
                Views.nodeRemoved(json("{\"node\":\"n\"}")));
    }

    @Test
    void aMissingTopLevelListIsAnError() {
        CtlException e =
                assertThrows(CtlException.class, () -> Views.blocks(json("{\"pools\":[]}")));
        assertTrue(e.getMessage().contains("no 'blocks' list"), e.getMessage());
        assertThrows(CtlException.class, () -> Views.released(json("{}")));
    }

    @Test
    void aReportWithoutFindingListsShowsZeroCounts() {
        String out =
                Views.check(
                        json(
                                "{\"clean\":true,\"checkedAllocations\":0,\"checkedAttachments\":0,\"tookMillis\":1}"));
        assertTrue(out.startsWith("clean: checked 0 allocations and 0 attachments in 1 ms\n"), out);
        assertTrue(out.matches("(?s).*allocations without attachment +0\n.*"), out);
        assertTrue(out.contains("blocks without their route (routes not checked)   0\n"), out);
    }
}
