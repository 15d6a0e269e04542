package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What the plugin makes of the agent's reply: stdout and exit status as the runtime sees them. */
class ReplyTest {

    private static final String NETCONF =
            "{\"cniVersion\":\"1.0.0\",\"name\":\"pods\",\"type\":\"cadastre\"}";
    private static final String RESULT =
            "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\"}],"
                    + "\"ips\":[{\"address\":\"198.18.0.5/24\",\"interface\":0}],\"dns\":{},\"note\":\"ünïcode\"}\n";
    private static final String ERROR =
            "{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"Invalid Configuration\","
                    + "\"details\":\"no pool\"}";

    private static Plugin.Result exchange(Path binary, String verb, byte[] response)
            throws Exception {
        try (FakeAgent agent = FakeAgent.start(response)) {
            Map<String, String> env = Plugin.cniEnv(verb);
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            return Plugin.run(binary, env, NETCONF.getBytes(StandardCharsets.UTF_8));
        }
    }

    private static Plugin.Result exchange(String verb, byte[] response) throws Exception {
        return exchange(Plugin.ASAN, verb, response);
    }

    private static Plugin.Result exchange(String verb, String response) throws Exception {
        return exchange(verb, response.getBytes(StandardCharsets.UTF_8));
    }

    private static String http(String status, String body) {
        return "HTTP/1.1 "
                + status
                + "\r\nContent-Type: application/json\r\nContent-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length
                + "\r\nServer: fake\r\n\r\n"
                + body;
    }

    /** Every build: the static one has another C library (musl), the one hosts run. */
    @ParameterizedTest
    @ValueSource(strings = {"asan", "release", "static"})
    void okBodyIsPrintedVerbatim(String build) throws Exception {
        Plugin.Result r =
                exchange(
                        Plugin.build(build),
                        "ADD",
                        http("200 OK", RESULT).getBytes(StandardCharsets.UTF_8));
        assertEquals(0, r.exit());
        assertEquals(RESULT, r.out());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                "HTTP/1.1 200 OK\r\n\r\n",
                "HTTP/1.0 200\r\ncontent-length:0\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            })
    void okWithEmptyBodyPrintsNothing(String response) throws Exception {
        Plugin.Result r = exchange("DEL", response);
        assertEquals(0, r.exit());
        assertEquals("", r.out());
    }

    @Test
    void okBodyWithoutContentLengthRunsToEof() throws Exception {
        Plugin.Result r = exchange("ADD", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + RESULT);
        assertEquals(0, r.exit());
        assertEquals(RESULT, r.out());
    }

    @ParameterizedTest
    @ValueSource(strings = {"asan", "release", "static"})
    void chunkedBodyIsDecoded(String build) throws Exception {
        String response =
                "HTTP/1.1 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n"
                        + "5\r\n"
                        + RESULT.substring(0, 5)
                        + "\r\n"
                        + Integer.toHexString(RESULT.getBytes(StandardCharsets.UTF_8).length - 5)
                                .toUpperCase()
                        + ";ext=1\r\n"
                        + RESULT.substring(5)
                        + "\r\n0\r\nTrailer: x\r\n\r\n";
        Plugin.Result r =
                exchange(Plugin.build(build), "ADD", response.getBytes(StandardCharsets.UTF_8));
        assertEquals(0, r.exit());
        assertEquals(RESULT, r.out());
    }

    @Test
    void largeOkBodyIsPrintedWhole() throws Exception {
        byte[] body = new byte[3 << 20];
        Arrays.fill(body, (byte) 'x');
        ByteArrayOutputStream response = new ByteArrayOutputStream();
        response.writeBytes(
                ("HTTP/1.1 200 OK\r\nContent-Length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
        response.writeBytes(body);
        Plugin.Result r = exchange("ADD", response.toByteArray());
        assertEquals(0, r.exit());
        assertArrayEquals(body, r.stdout());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "400 Bad Request",
                "404 Not Found",
                "409 Conflict",
                "500 Internal Server Error",
                "503 Service Unavailable"
            })
    void errorStatusPrintsTheAgentsErrorObject(String status) throws Exception {
        Plugin.Result r = exchange("ADD", http(status, ERROR));
        assertEquals(1, r.exit());
        assertEquals(ERROR, r.out());
    }

    @ParameterizedTest
    @ValueSource(strings = {"204 No Content", "500 Internal Server Error"})
    void errorStatusWithEmptyBodyIsCode11(String status) throws Exception {
        JsonNode e = Plugin.assertError(exchange("ADD", http(status, "")), 11, "1.0.0");
        assertTrue(e.get("details").textValue().contains(status.substring(0, 3)), e.toString());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "HTTP/1.1 200",
                "HTTP/1.1 200 OK\r\nContent-Length: 10",
                "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cniVersion\":",
                "HTTP/1.1 500 Oops\r\nContent-Length: 100\r\n\r\n{\"cniVersion\":",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"cniVersion\":",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
            })
    void agentClosingMidReplyIsCode11(String partial) throws Exception {
        Plugin.assertError(exchange("ADD", partial), 11, "1.0.0");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "SSH-2.0-OpenSSH\r\n\r\n",
                "HTTP/2 200\r\n\r\n",
                "HTTP/1.1 abc\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n{}",
                "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n{}",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n"
            })
    void replyThatIsNotAcceptableHttpIsCode5(String response) throws Exception {
        Plugin.assertError(exchange("ADD", response), 5, "1.0.0");
    }

    @Test
    void replyOver4MiBIsAnErrorNotACrash() throws Exception {
        byte[] body = new byte[5 << 20];
        Arrays.fill(body, (byte) 'x');
        ByteArrayOutputStream response = new ByteArrayOutputStream();
        response.writeBytes(
                ("HTTP/1.1 200 OK\r\nContent-Length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
        response.writeBytes(body);
        Plugin.assertError(exchange("ADD", response.toByteArray()), 5, "1.0.0");
    }
}
