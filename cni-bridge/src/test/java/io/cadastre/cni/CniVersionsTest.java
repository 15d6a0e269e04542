package io.cadastre.cni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CniVersionsTest {

    @ParameterizedTest(name = "{0} {1} -> {2}")
    @CsvSource({
        "0.3.0, ADD, true",
        "0.3.0, DEL, true",
        "0.3.0, CHECK, false",
        "0.3.0, GC, false",
        "0.3.1, CHECK, false",
        "0.4.0, CHECK, true",
        "0.4.0, GC, false",
        "0.4.0, STATUS, false",
        "1.0.0, CHECK, true",
        "1.0.0, GC, false",
        "1.0.0, STATUS, false",
        "1.1.0, ADD, true",
        "1.1.0, CHECK, true",
        "1.1.0, GC, true",
        "1.1.0, STATUS, true",
        "0.2.0, ADD, false",
        "0.1.0, DEL, false",
        "1.2.0, ADD, false",
        "1.1, ADD, false",
        "'', ADD, false",
    })
    void verbsPerVersion(String version, CniCommand command, boolean allowed) {
        assertEquals(allowed, CniVersions.allows(version, command));
        if (!allowed) {
            CniException e =
                    assertThrows(
                            CniException.class, () -> CniVersions.requireAllows(version, command));
            assertEquals(CniCodes.INCOMPATIBLE_VERSION, e.code());
        }
    }

    private static final String SUPPORTED =
            "\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}";

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "{\"cniVersion\":\"0.4.0\"}|0.4.0",
                "{\"cniVersion\":\"0.2.0\",\"name\":\"x\"}|0.2.0",
                "{\"cniVersion\":\"1.0.0-rc1\"}|1.1.0",
                "{\"cniVersion\":1}|1.1.0",
                "{}|1.1.0",
                "not json|1.1.0",
                "''|1.1.0",
            })
    void versionReplyIsWhatThePluginPrints(String stdin, String echoed) {
        byte[] reply = CniVersions.versionReply(stdin.getBytes(StandardCharsets.UTF_8));
        assertEquals(
                "{\"cniVersion\":\"" + echoed + "\"," + SUPPORTED,
                new String(reply, StandardCharsets.UTF_8));
    }
}
