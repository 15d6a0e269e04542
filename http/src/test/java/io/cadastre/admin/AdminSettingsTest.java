package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Where the admin server binds; it always has a token. */
class AdminSettingsTest {
    @Test
    void loopbackAndOtherAddressesParse() {
        AdminServer.Settings v4 = AdminServer.Settings.parse("127.0.0.1:9467", "t");
        assertEquals("127.0.0.1", v4.host());
        assertEquals(9467, v4.port());
        assertEquals("t", v4.token());
        AdminServer.Settings v6 = AdminServer.Settings.parse("[::1]:0", "t");
        assertEquals("::1", v6.host());
        assertEquals(0, v6.port());
        assertEquals("0.0.0.0", AdminServer.Settings.parse("0.0.0.0:9467", "t").host());
    }

    @Test
    void aBlankTokenIsRefusedWhereverTheServerListens() {
        for (String bind : new String[] {"127.0.0.1:9467", "[::1]:9467", "0.0.0.0:9467"}) {
            assertTrue(
                    assertThrows(
                                    IllegalArgumentException.class,
                                    () -> AdminServer.Settings.parse(bind, " "))
                            .getMessage()
                            .contains("token is empty"),
                    bind);
        }
    }

    @Test
    void theSettingsNeverPrintTheToken() {
        assertFalse(
                AdminServer.Settings.parse("127.0.0.1:9467", "s3cret")
                        .toString()
                        .contains("s3cret"));
    }

    @Test
    void malformedBindAddressesAreRefused() {
        for (String bad :
                new String[] {
                    "9467",
                    "127.0.0.1",
                    "127.0.0.1:",
                    ":9467",
                    "127.0.0.1:http",
                    "127.0.0.1:70000",
                    "::1:9467",
                    "no-such-host.invalid:9467"
                }) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> AdminServer.Settings.parse(bad, "t"),
                    bad);
        }
    }
}
