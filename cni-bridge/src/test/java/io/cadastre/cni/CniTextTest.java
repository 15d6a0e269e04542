package io.cadastre.cni;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CniTextTest {
    @Test
    void controlCharactersQuotesAndBackslashesAreEscaped() {
        assertEquals(
                "\"a\\r\\nb\\t\\\"c\\\\ \\u0000\\u007f\\u0085\"",
                CniText.quoted("a\r\nb\t\"c\\ \u0000\u007f\u0085"));
        assertEquals("\"caf\u00e9\"", CniText.quoted("caf\u00e9"));
        assertEquals("null", CniText.quoted(null));
    }

    @Test
    void longValuesAreCutAndTheirLengthTold() {
        assertEquals(
                "\"" + "x".repeat(CniText.MAX_SHOWN) + "\"",
                CniText.quoted("x".repeat(CniText.MAX_SHOWN)));
        assertEquals(
                "\"" + "x".repeat(CniText.MAX_SHOWN) + "\u2026\" (120000 characters)",
                CniText.quoted("x".repeat(120_000)));
    }
}
