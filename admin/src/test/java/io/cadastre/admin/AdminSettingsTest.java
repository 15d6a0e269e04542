package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the admin server binds, and when it must have a token. */
class AdminSettingsTest {
    @TempDir
    Path dir;

    @Test
    void loopbackNeedsNoToken() {
        AdminServer.Settings v4 = AdminServer.Settings.parse("127.0.0.1:9467", Optional.empty());
        assertEquals("127.0.0.1", v4.host());
        assertEquals(9467, v4.port());
        assertFalse(v4.requiresToken());
        AdminServer.Settings v6 = AdminServer.Settings.parse("[::1]:0", Optional.empty());
        assertEquals("::1", v6.host());
        assertEquals(0, v6.port());
        assertFalse(v6.requiresToken());
    }

    @Test
    void anyOtherAddressNeedsATokenFile() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> AdminServer.Settings.parse("0.0.0.0:9467", Optional.empty()));
        assertTrue(e.getMessage().contains("needs a bearer token"), e.getMessage());

        Path file = Files.writeString(dir.resolve("token"), "  abc123\n");
        AdminServer.Settings any = AdminServer.Settings.parse("0.0.0.0:9467", Optional.of(file));
        assertTrue(any.requiresToken());
        assertEquals(Optional.of("abc123"), any.token(), "trimmed");
    }

    @Test
    void aLoopbackServerCanBeToldToRequireTheToken() {
        assertTrue(new AdminServer.Settings("127.0.0.1", 0, Optional.of("t"), true).requiresToken());
        assertThrows(IllegalArgumentException.class, () -> new AdminServer.Settings("127.0.0.1", 0, Optional.empty(), true));
    }

    @Test
    void malformedBindAddressesAndTokenFilesAreRefused() throws Exception {
        for (String bad : new String[] {"9467", "127.0.0.1", "127.0.0.1:", ":9467", "127.0.0.1:http", "127.0.0.1:70000",
                "::1:9467", "no-such-host.invalid:9467"}) {
            assertThrows(IllegalArgumentException.class, () -> AdminServer.Settings.parse(bad, Optional.empty()), bad);
        }
        Path empty = Files.writeString(dir.resolve("empty"), " \n");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AdminServer.Settings.parse("0.0.0.0:1", Optional.of(empty)))
                .getMessage().contains("is empty"));
        Path missing = dir.resolve("missing");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AdminServer.Settings.parse("0.0.0.0:1", Optional.of(missing)))
                .getMessage().contains("cannot read"));
    }
}
