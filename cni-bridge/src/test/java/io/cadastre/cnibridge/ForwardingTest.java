package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The request the plugin sends the agent, and where it finds the agent's socket. */
class ForwardingTest {

    private static final String OK_EMPTY = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    private static final List<String> CNI_HEADERS =
            List.of(
                    "CNI-Command",
                    "CNI-ContainerID",
                    "CNI-Netns",
                    "CNI-Ifname",
                    "CNI-Args",
                    "CNI-Path");

    @TempDir Path dir;

    /** Every build: the static one has another C library (musl), the one hosts run. */
    @ParameterizedTest
    @ValueSource(strings = {"asan", "release", "static"})
    void addIsForwardedWithEveryHeaderAndTheBodyByteForByte(String build) throws Exception {
        Map<String, String> env = Plugin.cniEnv("ADD");
        env.put("CNI_CONTAINERID", "c0ffee");
        env.put("CNI_NETNS", "/var/run/netns/with space");
        env.put("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=café-0;NOTE=100% sure; tab\there");
        env.put("CNI_PATH", "/opt/cni/bin:/usr/lib/cni:/日本");
        // Not UTF-8-clean JSON on purpose: the body must pass untouched, whatever it holds.
        ByteArrayOutputStream stdin = new ByteArrayOutputStream();
        stdin.writeBytes(
                "{\"cniVersion\":\"1.1.0\",\r\n\t\"name\":\"n\u00e9t\",\"x\":\""
                        .getBytes(StandardCharsets.UTF_8));
        stdin.writeBytes(new byte[] {0, 1, (byte) 0xff, '\\', '%'});
        stdin.writeBytes("\"}\n".getBytes(StandardCharsets.UTF_8));
        byte[] body = stdin.toByteArray();

        try (FakeAgent agent = FakeAgent.start(OK_EMPTY)) {
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            Plugin.Result r = Plugin.run(Plugin.build(build), env, body);
            assertEquals(0, r.exit(), r.out());

            FakeAgent.Request req = agent.awaitRequest();
            assertEquals("POST", req.method());
            assertEquals("/v1/cni", req.target());
            assertEquals("HTTP/1.1", req.version());
            assertEquals(Optional.of("cadastre"), req.header("Host"));
            assertEquals(Optional.of("application/json"), req.header("Content-Type"));
            assertEquals(Optional.of("close"), req.header("Connection"));
            assertEquals(Optional.of(Integer.toString(body.length)), req.header("Content-Length"));
            assertArrayEquals(body, req.body());

            assertEquals(Optional.of("ADD"), req.header("CNI-Command"));
            assertEquals(Optional.of("c0ffee"), req.header("CNI-ContainerID"));
            assertEquals(Optional.of("eth0"), req.header("CNI-Ifname"));
            for (var h :
                    Map.of("CNI-Netns", "CNI_NETNS", "CNI-Args", "CNI_ARGS", "CNI-Path", "CNI_PATH")
                            .entrySet()) {
                String raw = req.header(h.getKey()).orElseThrow();
                assertTrue(
                        raw.chars().allMatch(c -> c >= 0x21 && c <= 0x7e), "not encoded: " + raw);
                assertEquals(env.get(h.getValue()), percentDecode(raw), h.getKey());
            }
            assertEquals(
                    Optional.of(
                            "IgnoreUnknown=1;K8S_POD_NAME=caf%C3%A9-0;NOTE=100%25%20sure;%20tab%09here"),
                    req.header("CNI-Args"),
                    "exact encoding: upper-case hex, only what must be encoded");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ADD", "DEL", "CHECK", "GC", "STATUS"})
    void everyVerbButVersionIsForwarded(String verb) throws Exception {
        try (FakeAgent agent = FakeAgent.start(OK_EMPTY)) {
            Map<String, String> env = Plugin.cniEnv(verb);
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            assertEquals(0, Plugin.run(env, "{\"cniVersion\":\"1.1.0\"}").exit());
            assertEquals(Optional.of(verb), agent.awaitRequest().header("CNI-Command"));
        }
    }

    @Test
    void unsetVariablesSendNoHeaderAndEmptyOnesAnEmptyHeader() throws Exception {
        try (FakeAgent agent = FakeAgent.start(OK_EMPTY)) {
            Map<String, String> env = Plugin.cniEnv("GC");
            env.remove("CNI_CONTAINERID");
            env.remove("CNI_NETNS");
            env.remove("CNI_IFNAME");
            env.put("CNI_ARGS", "");
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            assertEquals(0, Plugin.run(env, "{}").exit());

            FakeAgent.Request req = agent.awaitRequest();
            List<String> sent = req.headerNames().stream().filter(CNI_HEADERS::contains).toList();
            assertEquals(List.of("CNI-Command", "CNI-Args", "CNI-Path"), sent);
            assertEquals(Optional.of(""), req.header("CNI-Args"));
        }
    }

    @Test
    void stdinOfExactly1MiBIsForwarded() throws Exception {
        byte[] body = LocalErrorsTest.padded("{\"cniVersion\":\"1.0.0\"}", 1 << 20);
        try (FakeAgent agent = FakeAgent.start(OK_EMPTY)) {
            Map<String, String> env = Plugin.cniEnv("ADD");
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            assertEquals(0, Plugin.run(env, body).exit());
            assertArrayEquals(body, agent.awaitRequest().body());
        }
    }

    @Test
    void socketComesFromAgentSocketInStdinBeforeTheEnvironment() throws Exception {
        try (FakeAgent agent = FakeAgent.start(OK_EMPTY)) {
            Map<String, String> env = Plugin.cniEnv("ADD");
            env.put("CADASTRE_AGENT_SOCKET", dir.resolve("not-this-one.sock").toString());
            // cadastre-ipam: the key sits in the ipam section; a non-string occurrence is skipped.
            String netconf =
                    "{\"cniVersion\":\"1.0.0\",\"type\":\"bridge\",\"agentSocket\" : null,"
                            + "\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\" :\n \""
                            + agent.socket()
                            + "\"}}";
            Plugin.Result r = Plugin.run(env, netconf);
            assertEquals(0, r.exit(), r.out());
            agent.awaitRequest();
        }
    }

    @Test
    void socketComesFromTheEnvironmentWhenStdinHasNone() throws Exception {
        try (FakeAgent agent = FakeAgent.start(OK_EMPTY)) {
            Map<String, String> env = Plugin.cniEnv("ADD");
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            // Neither a string value "agentSocket" nor a key that only contains it counts.
            Plugin.Result r =
                    Plugin.run(
                            env,
                            "{\"cniVersion\":\"1.0.0\",\"note\":\"agentSocket\","
                                    + "\"\\\"agentSocket\":\"/nowhere.sock\",\"a\":[\"agentSocket\" ,\"/nowhere.sock\"]}");
            assertEquals(0, r.exit(), r.out());
            agent.awaitRequest();
        }
    }

    /** What the agent does with a header value: %XX to bytes, the bytes as UTF-8. */
    static String percentDecode(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                out.write(c);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
