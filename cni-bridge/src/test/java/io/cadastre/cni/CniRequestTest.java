package io.cadastre.cni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CniRequestTest {

    /** Case-insensitive like HTTP. */
    static Function<String, Optional<String>> headers(Map<String, String> values) {
        Map<String, String> ci = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        ci.putAll(values);
        return name -> Optional.ofNullable(ci.get(name));
    }

    @Test
    void headersMapToVariablesAbsentStaysNullEmptyStaysEmpty() {
        byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
        CniRequest r =
                CniRequest.fromHeaders(
                        headers(
                                Map.of(
                                        "cni-command", "ADD",
                                        "CNI-ContainerID", "abc",
                                        "CNI-Netns", "",
                                        "CNI-Ifname", "eth0",
                                        "CNI-Args", "K8S_POD_NAME=web-0")),
                        body);

        assertEquals("ADD", r.command());
        assertEquals("abc", r.containerId());
        assertEquals("", r.netns());
        assertEquals("eth0", r.ifname());
        assertEquals("K8S_POD_NAME=web-0", r.args());
        assertNull(r.path());
        assertArrayEquals(body, r.netconf());
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "/var/run/netns/pod%201|/var/run/netns/pod 1",
                "a%25b|a%b",
                "caf%C3%A9|café",
                "%e2%82%ac|€",
                "plain|plain",
                "%3B%3D|;=",
            })
    void percentDecodingAsUtf8(String encoded, String decoded) {
        CniRequest r = CniRequest.fromHeaders(headers(Map.of("CNI-Netns", encoded)), null);
        assertEquals(decoded, r.netns());
    }

    @ParameterizedTest
    @ValueSource(strings = {"%", "%4", "%zz", "abc%C3", "%C3%28", "caf\u00e9"})
    void badEncodingIsCode4NamingTheVariable(String encoded) {
        CniException e =
                assertThrows(
                        CniException.class,
                        () -> CniRequest.fromHeaders(headers(Map.of("CNI-Ifname", encoded)), null));
        assertEquals(CniCodes.INVALID_ENVIRONMENT, e.code());
        assertTrue(e.getMessage().contains("CNI_IFNAME"), e.getMessage());
    }

    @Test
    void toStringLeavesTheNetconfOut() {
        CniRequest r =
                new CniRequest(
                        "ADD",
                        "c",
                        null,
                        "eth0",
                        null,
                        null,
                        "{\"password\":\"hunter2\"}".getBytes(StandardCharsets.UTF_8));
        assertFalse(r.toString().contains("hunter2"), r.toString());
    }
}
