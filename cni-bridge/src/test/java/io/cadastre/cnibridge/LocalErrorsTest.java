package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The errors the plugin detects itself, before or instead of a reply from the agent. */
class LocalErrorsTest {

    private static final String NETCONF =
            "{\"cniVersion\":\"1.0.0\",\"name\":\"pods\",\"type\":\"cadastre\",\"password\":\"s3cr3t-value\"}";

    @TempDir Path dir;

    private Map<String, String> env(String command) {
        Map<String, String> env = Plugin.cniEnv(command);
        env.put("CADASTRE_AGENT_SOCKET", dir.resolve("no-agent.sock").toString());
        return env;
    }

    @ParameterizedTest
    @ValueSource(strings = {"ADD", "DEL", "CHECK", "GC", "STATUS", "SOMETHING-NEW"})
    void everyVerbButVersionWithNoAgentIsTryAgainLater(String verb) throws Exception {
        Plugin.Result r = Plugin.run(env(verb), NETCONF);
        JsonNode e = Plugin.assertError(r, 11, "1.0.0");
        assertTrue(
                e.get("details").textValue().contains(dir.resolve("no-agent.sock").toString()),
                r.out());
        assertFalse(r.out().contains("s3cr3t"), "stdin must never be echoed");
    }

    @Test
    void cniCommandUnsetIsCode4() throws Exception {
        Map<String, String> env = env("ADD");
        env.remove("CNI_COMMAND");
        JsonNode e = Plugin.assertError(Plugin.run(env, NETCONF), 4, "1.0.0");
        assertTrue(
                e.get("msg").textValue().contains("CNI_COMMAND"),
                "the spec wants the variable named");
    }

    @Test
    void cniCommandEmptyIsCode4() throws Exception {
        Plugin.assertError(Plugin.run(env(""), NETCONF), 4, "1.0.0");
    }

    @ParameterizedTest
    @ValueSource(ints = {(1 << 20) + 1, 3 << 20})
    void stdinOver1MiBIsCode5(int size) throws Exception {
        byte[] stdin = padded(NETCONF, size);
        Plugin.Result r = Plugin.run(env("ADD"), stdin);
        Plugin.assertError(r, 5, "1.0.0");
        assertFalse(r.out().contains("s3cr3t"), "stdin must never be echoed");
    }

    @Test
    void stdinOver1MiBIsCode5EvenForVersion() throws Exception {
        Plugin.assertError(Plugin.run(env("VERSION"), padded(NETCONF, (1 << 20) + 1)), 5, "1.0.0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\"\"", "\"/tmp/a\\/b.sock\"", "\"/tmp/a\\u0041.sock\"", "LONG"})
    void unusableAgentSocketInNetconfIsCode7(String value) throws Exception {
        String json = value.equals("LONG") ? "\"/" + "s".repeat(107) + "\"" : value;
        Plugin.Result r =
                Plugin.run(
                        env("ADD"),
                        "{\"cniVersion\":\"0.4.0\",\"type\":\"cadastre\",\"agentSocket\":"
                                + json
                                + "}");
        Plugin.assertError(r, 7, "0.4.0");
    }

    @Test
    void agentSocketOf107BytesIsAccepted() throws Exception {
        // The longest path sun_path holds: the plugin must try it (and find nothing there).
        String path = "/" + "s".repeat(106);
        Plugin.Result r =
                Plugin.run(
                        env("ADD"),
                        "{\"cniVersion\":\"0.4.0\",\"type\":\"cadastre\",\"agentSocket\":\""
                                + path
                                + "\"}");
        JsonNode e = Plugin.assertError(r, 11, "0.4.0");
        assertTrue(e.get("details").textValue().contains(path), r.out());
    }

    @Test
    void agentSocketEnvTooLongIsCode4() throws Exception {
        Map<String, String> env = env("ADD");
        env.put("CADASTRE_AGENT_SOCKET", "/" + "s".repeat(107));
        JsonNode e = Plugin.assertError(Plugin.run(env, NETCONF), 4, "1.0.0");
        assertTrue(
                e.get("msg").textValue().contains("CADASTRE_AGENT_SOCKET"),
                "the spec wants the variable named");
    }

    @Test
    void errorDetailsAreJsonEscaped() throws Exception {
        // The path ends up in the details: quotes, backslashes, control and non-ASCII characters.
        Map<String, String> env = env("DEL");
        String path = dir.resolve("a \"b\" \\ c\té.sock").toString();
        env.put("CADASTRE_AGENT_SOCKET", path);
        JsonNode e = Plugin.assertError(Plugin.run(env, NETCONF), 11, "1.0.0");
        assertTrue(e.get("details").textValue().contains(path), e.toString());
    }

    @Test
    void invalidUtf8InDetailsBecomesReplacementCharacter() throws Exception {
        // Only stdin can carry bytes that are not UTF-8; Jackson rejects invalid UTF-8, so
        // parsing the output at all is part of the check.
        ByteArrayOutputStream stdin = new ByteArrayOutputStream();
        stdin.writeBytes(
                ("{\"cniVersion\":\"1.1.0\",\"type\":\"cadastre\",\"agentSocket\":\"" + dir + "/x")
                        .getBytes(StandardCharsets.UTF_8));
        stdin.writeBytes(
                new byte[] {(byte) 0xff, (byte) 0xc3, 'y', (byte) 0xed, (byte) 0xa0, (byte) 0x80});
        stdin.writeBytes(".sock\"}".getBytes(StandardCharsets.UTF_8));
        JsonNode e = Plugin.assertError(Plugin.run(env("ADD"), stdin.toByteArray()), 11, "1.1.0");
        assertTrue(
                e.get("details")
                        .textValue()
                        .contains(dir + "/x\uFFFD\uFFFDy\uFFFD\uFFFD\uFFFD.sock"),
                e.toString());
    }

    @Test
    void cniVersionOfErrorsFallsBackTo110() throws Exception {
        Plugin.assertError(Plugin.run(env("ADD"), "{\"cniVersion\":\"v1\"}"), 11, "1.1.0");
    }

    /** {@code json} followed by spaces up to {@code size} bytes (still one JSON document). */
    static byte[] padded(String json, int size) {
        byte[] b = Arrays.copyOf(json.getBytes(StandardCharsets.UTF_8), size);
        Arrays.fill(b, json.length(), size, (byte) ' ');
        assertEquals(size, b.length);
        return b;
    }
}
