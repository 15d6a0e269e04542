package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The limits on CNI variables the plugin checks before it sends anything (cni-bridge/DESIGN.md, "Request"),
 * and a refusal the agent sends while the plugin is still sending: the plugin must print it, not
 * report the reset as code 11 (which the runtime would retry for ever).
 */
class LimitsTest {

    private static final String NETCONF =
            "{\"cniVersion\":\"1.0.0\",\"name\":\"pods\",\"type\":\"cadastre\"}";
    private static final String OK = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    private static final String HEADERS_TOO_LARGE =
            "{\"cniVersion\":\"1.0.0\",\"code\":4,"
                    + "\"msg\":\"invalid environment variable\",\"details\":\"request line or headers too long\"}";

    private static String reply(String status, String body) {
        return "HTTP/1.1 "
                + status
                + "\r\nContent-Type: application/json\r\nContent-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length
                + "\r\nConnection: close\r\n\r\n"
                + body;
    }

    /** The CNI environment variables and the plugin's limit on each, in bytes. */
    static Stream<Arguments> limits() {
        return Stream.of(
                Arguments.of("CNI_COMMAND", 64),
                Arguments.of("CNI_CONTAINERID", 255),
                Arguments.of("CNI_NETNS", 4095),
                Arguments.of("CNI_IFNAME", 15),
                Arguments.of("CNI_ARGS", 8192),
                Arguments.of("CNI_PATH", 8192));
    }

    @ParameterizedTest
    @MethodSource("limits")
    void aVariableOverItsLimitIsCode4WithNothingSent(String name, int limit) throws Exception {
        try (FakeAgent agent = FakeAgent.start(OK)) {
            Map<String, String> env = Plugin.cniEnv("ADD", agent.socket());
            // The limit is in bytes: one two-byte character takes this value one byte over.
            env.put(name, "s3cr3t" + "x".repeat(limit - 7) + "\u00e9");
            Plugin.Result r = Plugin.run(env, NETCONF);

            JsonNode e = Plugin.assertError(r, 4, "1.0.0");
            assertEquals("invalid environment variable " + name, e.get("msg").textValue());
            assertTrue(
                    e.get("details").textValue().contains("at most " + limit + " bytes"), r.out());
            assertFalse(
                    r.out().contains("s3cr3t"),
                    "the value is not echoed: CNI_ARGS may carry credentials");
            assertEquals(0, agent.connections(), "nothing is sent");
        }
    }

    @ParameterizedTest
    @MethodSource("limits")
    void aVariableAtItsLimitIsForwarded(String name, int limit) throws Exception {
        try (FakeAgent agent = FakeAgent.start(OK)) {
            Map<String, String> env = Plugin.cniEnv("ADD", agent.socket());
            env.put(
                    name,
                    "%".repeat(limit)); // every byte percent-encoded: the longest header it makes
            Plugin.Result r = Plugin.run(env, NETCONF);

            assertEquals(0, r.exit(), r.out());
            String header =
                    "CNI-"
                            + switch (name) {
                                case "CNI_CONTAINERID" -> "ContainerID";
                                default -> name.charAt(4) + name.substring(5).toLowerCase();
                            };
            assertEquals(Optional.of("%25".repeat(limit)), agent.awaitRequest().header(header));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1 << 20})
    void aRefusalSentBeforeTheRequestWasReadIsPrinted(int padding) throws Exception {
        // As the agent answers a request over one of its limits: at once, then it closes with the
        // rest unread, so the plugin's send fails (1 MiB of stdin) or its read is reset.
        byte[] stdin =
                padding == 0
                        ? NETCONF.getBytes(StandardCharsets.UTF_8)
                        : LocalErrorsTest.padded(NETCONF, padding);
        try (FakeAgent agent =
                FakeAgent.answeringEarly(
                        reply("431 Request Header Fields Too Large", HEADERS_TOO_LARGE))) {
            Map<String, String> env = Plugin.cniEnv("ADD", agent.socket());
            Plugin.Result r = Plugin.run(env, stdin);

            assertEquals(1, r.exit(), r.out());
            assertEquals(HEADERS_TOO_LARGE, r.out());
            assertEquals(1, agent.connections());
        }
    }

    @ParameterizedTest
    @CsvSource({"0,200 OK", "1048576,200 OK", "0,", "1048576,"})
    void anEarlyReplyRunsToTheCloseWithoutContentLengthAndMaySucceed(int padding, String status)
            throws Exception {
        // On a Unix socket the reset loses nothing the agent wrote: it ends the reply as EOF does.
        byte[] stdin =
                padding == 0
                        ? NETCONF.getBytes(StandardCharsets.UTF_8)
                        : LocalErrorsTest.padded(NETCONF, padding);
        String result = "{\"cniVersion\":\"1.0.0\"}";
        String response =
                status == null
                        ? "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n"
                                + HEADERS_TOO_LARGE
                        : reply(status, result);
        try (FakeAgent agent = FakeAgent.answeringEarly(response)) {
            Map<String, String> env = Plugin.cniEnv("ADD", agent.socket());
            Plugin.Result r = Plugin.run(env, stdin);

            assertEquals(status == null ? 1 : 0, r.exit(), r.out());
            assertEquals(status == null ? HEADERS_TOO_LARGE : result, r.out());
        }
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 100\r\n\r\n{\"cniVersion\":"
            })
    void anEarlyCloseWithoutAWholeReplyIsCode11(String partial) throws Exception {
        try (FakeAgent agent = FakeAgent.answeringEarly(partial)) {
            Map<String, String> env = Plugin.cniEnv("ADD", agent.socket());
            JsonNode e =
                    Plugin.assertError(
                            Plugin.run(env, LocalErrorsTest.padded(NETCONF, 1 << 20)), 11, "1.0.0");
            assertTrue(
                    e.get("details").textValue().contains(agent.socket().toString()), e.toString());
        }
    }
}
