package io.cadastre.ctl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** -o json: the agent's JSON with its values and order as they were, only re-indented. */
class JsonTest {
    @Test
    void prettyPrintingKeepsOrderNumbersAndNulls() {
        String answer =
                "{\"z\":1,\"a\":[],\"big\":1208925819614629174706176,\"dec\":1.50,"
                        + "\"n\":null,\"o\":{},\"s\":\"\\u00e9\\n\",\"l\":[\"x\",{\"k\":true}]}";
        assertEquals(
                """
                {
                  "z": 1,
                  "a": [],
                  "big": 1208925819614629174706176,
                  "dec": 1.50,
                  "n": null,
                  "o": {},
                  "s": "é\\n",
                  "l": [
                    "x",
                    {
                      "k": true
                    }
                  ]
                }""",
                Json.pretty(Json.parseOrNull(answer)));
    }

    @Test
    void compactIsOneLine() {
        assertEquals(
                "{\"address\":\"198.18.0.3\"}",
                Json.compact(Json.parseOrNull("{ \"address\" : \"198.18.0.3\" }")));
    }

    @Test
    void anythingButJsonParsesToNull() {
        assertNull(Json.parseOrNull(""));
        assertNull(Json.parseOrNull("<html>"));
        assertNull(Json.parseOrNull("{\"a\":"));
    }
}
