package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** VERSION is the one verb the plugin answers itself, without the agent. */
class VersionTest {

    private static final String SUPPORTED =
            "\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]";

    @TempDir Path dir;

    private Map<String, String> env() {
        Map<String, String> env = Plugin.cniEnv("VERSION");
        env.put("CADASTRE_AGENT_SOCKET", dir.resolve("no-agent.sock").toString());
        return env;
    }

    @ParameterizedTest
    @ValueSource(strings = {"0.3.0", "0.4.0", "1.0.0", "1.1.0", "2.0"})
    void echoesTheStdinCniVersionWithNoAgentRunning(String version) throws Exception {
        Plugin.Result r = Plugin.run(env(), "{\"cniVersion\": \"" + version + "\",\"name\":\"n\"}");
        assertEquals(0, r.exit());
        assertEquals("{\"cniVersion\":\"" + version + "\"," + SUPPORTED + "}", r.out());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "{\"cniVersion\":\"1.0.0-rc1\"}",
                "{\"cniVersion\":\"\"}",
                "{\"cniVersion\":\"1.0\\u002e0\"}",
                "{\"cniVersion\":\"\\\",\\\"x\\\":\\\"\"}",
                "{\"cniVersion\":1.0}",
                "{\"name\":\"no version\"}",
                "",
                "not json at all"
            })
    void answers110WhenTheStdinCniVersionIsNotDigitsAndDots(String stdin) throws Exception {
        Plugin.Result r = Plugin.run(env(), stdin);
        assertEquals(0, r.exit());
        assertEquals("{\"cniVersion\":\"1.1.0\"," + SUPPORTED + "}", r.out());
    }

    @Test
    void doesNotAskTheAgentEvenWhenOneIsRunning() throws Exception {
        try (FakeAgent agent =
                FakeAgent.start("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n\"forward\"")) {
            Map<String, String> env = env();
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            Plugin.Result r = Plugin.run(env, "{\"cniVersion\":\"1.0.0\"}");
            assertEquals(0, r.exit());
            assertEquals("{\"cniVersion\":\"1.0.0\"," + SUPPORTED + "}", r.out());
        }
    }

    @Test
    void releaseBuildAnswersVersionToo() throws Exception {
        Plugin.Result r =
                Plugin.run(
                        Plugin.RELEASE,
                        env(),
                        "{\"cniVersion\":\"0.4.0\"}".getBytes(StandardCharsets.UTF_8));
        assertEquals(0, r.exit());
        assertEquals("{\"cniVersion\":\"0.4.0\"," + SUPPORTED + "}", r.out());
    }
}
