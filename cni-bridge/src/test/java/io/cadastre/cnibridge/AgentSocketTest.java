package io.cadastre.cnibridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Which socket the plugin talks to: the netconf's {@code agentSocket} only where the agent reads
 * it (the top level for type {@code cadastre}, {@code ipam} for ipam.type {@code cadastre-ipam}),
 * never from {@code args}, {@code runtimeConfig}, {@code prevResult} or a document it could not
 * walk; and any socket only if no other uid can have put it there.
 */
class AgentSocketTest {

    private static final String AGENT_BODY = "{\"from\":\"agent\"}";
    private static final String DECOY_BODY = "{\"from\":\"decoy\"}";
    private static final String HEAD = "{\"cniVersion\":\"1.0.0\",\"name\":\"pods\",";

    @TempDir Path dir;

    private static String ok(String body) {
        return "HTTP/1.1 200 OK\r\nContent-Length: " + body.length() + "\r\n\r\n" + body;
    }

    private static Named<String> named(String name, String netconf) {
        return Named.of(name, netconf);
    }

    /**
     * Netconfs in which DECOY (replaced by a second agent's socket) must not be followed. The
     * malformed ones are also hostile inputs for the walk, run under the sanitizers: each must
     * reach the configured agent, which gives the verdict on the document.
     */
    static Stream<Named<String>> decoys() {
        return Stream.of(
                named(
                        "args.cni (Multus cni-args)",
                        HEAD
                                + "\"type\":\"cadastre\",\"args\":{\"cni\":{\"agentSocket\":\"DECOY\"}}}"),
                named(
                        "runtimeConfig",
                        HEAD
                                + "\"type\":\"cadastre\",\"runtimeConfig\":{\"agentSocket\":\"DECOY\"}}"),
                named(
                        "prevResult and deeper",
                        HEAD
                                + "\"type\":\"cadastre\",\"prevResult\":{\"agentSocket\":\"DECOY\","
                                + "\"interfaces\":[{\"name\":\"eth0\",\"agentSocket\":\"DECOY\"}]}}"),
                named(
                        "ipam section of the full plugin",
                        HEAD
                                + "\"type\":\"cadastre\","
                                + "\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\"DECOY\"}}"),
                named(
                        "top level of an IPAM-only netconf",
                        HEAD
                                + "\"type\":\"bridge\",\"agentSocket\":\"DECOY\","
                                + "\"ipam\":{\"type\":\"cadastre-ipam\"}}"),
                named(
                        "a netconf for neither role",
                        HEAD
                                + "\"type\":\"bridge\",\"agentSocket\":\"DECOY\","
                                + "\"ipam\":{\"type\":\"host-local\",\"agentSocket\":\"DECOY\"}}"),
                named(
                        "below the ipam section",
                        HEAD
                                + "\"type\":\"bridge\","
                                + "\"ipam\":{\"type\":\"cadastre-ipam\",\"routes\":[{\"agentSocket\":\"DECOY\"}],\"x\":{\"agentSocket\":\"DECOY\"}}}"),
                named(
                        "keys that only contain agentSocket",
                        HEAD
                                + "\"type\":\"cadastre\",\"\\\"agentSocket\\\"\":\"DECOY\","
                                + "\"agentSocket \":\"DECOY\",\"agentSocket\\u0000\":\"DECOY\",\"\\\\\\\"agentSocket\":\"DECOY\"}"),
                named(
                        "agentSocket as a string value",
                        HEAD
                                + "\"type\":\"cadastre\",\"note\":\"agentSocket\","
                                + "\"list\":[\"agentSocket\",\"DECOY\"],\"s\":\"\\\"agentSocket\\\":\\\"DECOY\\\"\"}"),
                named(
                        "600 levels deep",
                        HEAD
                                + "\"type\":\"cadastre\",\"a\":"
                                + "[".repeat(600)
                                + "{\"agentSocket\":\"DECOY\"}"
                                + "]".repeat(600)
                                + "}"),
                named(
                        "a repeated agentSocket (the agent refuses duplicate keys)",
                        HEAD
                                + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"agentSocket\":\"DECOY\"}"),
                named(
                        "a repeated type",
                        HEAD
                                + "\"type\":\"bridge\",\"t\\u0079pe\":\"cadastre\",\"agentSocket\":\"DECOY\"}"),
                named("trailing comma", HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",}"),
                named(
                        "trailing garbage",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\"} x"),
                named("two documents", HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\"}{}"),
                named(
                        "a comment",
                        HEAD + "\"type\":\"cadastre\",/* c */\"agentSocket\":\"DECOY\"}"),
                named("single-quoted key", HEAD + "'type':\"cadastre\",\"agentSocket\":\"DECOY\"}"),
                named(
                        "unterminated document",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\""),
                named(
                        "unterminated string",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":\"abc"),
                named(
                        "escaped quote at the end",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":\"\\\"}"),
                named(
                        "backslash at the end",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":\"\\"),
                named(
                        "bad escape",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":\"\\q\"}"),
                named(
                        "truncated \\u escape",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":\"\\u12\"}"),
                named(
                        "raw control character in a string",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":\"a\tb\"}"),
                named(
                        "misspelt literal",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":nul}"),
                named(
                        "leading zero",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":01}"),
                named(
                        "number without digits",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":-}"),
                named(
                        "fraction without digits",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":1.}"),
                named(
                        "exponent without digits",
                        HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"x\":1e+}"),
                named("missing colon", HEAD + "\"type\":\"cadastre\",\"agentSocket\" \"DECOY\"}"),
                named(
                        "1001 levels deep (past the agent's limit)",
                        HEAD
                                + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"a\":"
                                + "[".repeat(1000)
                                + "]".repeat(1000)
                                + "}"),
                named(
                        "100,000 unclosed arrays",
                        HEAD
                                + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"a\":"
                                + "[".repeat(100_000)),
                named(
                        "100,000 unclosed objects",
                        HEAD
                                + "\"type\":\"cadastre\",\"agentSocket\":\"DECOY\",\"a\":"
                                + "{\"a\":".repeat(100_000)),
                named(
                        "a NUL byte between members",
                        HEAD + "\"type\":\"cadastre\",\u0000\"agentSocket\":\"DECOY\"}"),
                named("empty", ""),
                named("not JSON", "agentSocket: DECOY"));
    }

    @ParameterizedTest
    @MethodSource("decoys")
    void agentSocketIsNotFollowedFromAnywhereElse(String netconf) throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY));
                FakeAgent decoy = FakeAgent.start(ok(DECOY_BODY))) {
            byte[] stdin =
                    netconf.replace("DECOY", decoy.socket().toString())
                            .getBytes(StandardCharsets.UTF_8);
            Map<String, String> env = Plugin.cniEnv("ADD", agent.socket());
            Plugin.Result r = Plugin.run(env, stdin);

            assertEquals(0, decoy.connections(), "the decoy was contacted; stdout: " + r.out());
            assertEquals(0, r.exit(), r.out());
            assertEquals(AGENT_BODY, r.out());
            assertArrayEquals(
                    stdin,
                    agent.awaitRequest().body(),
                    "the configured agent gets the netconf verbatim");
        }
    }

    /** Netconfs whose AGENT (replaced by the agent's socket) is followed; DECOY is in the environment. */
    static Stream<Named<String>> followed() {
        return Stream.of(
                named(
                        "top level, type cadastre",
                        HEAD
                                + "\"type\":\"cadastre\",\"agentSocket\":\"AGENT\","
                                + "\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\"DECOY\"}}"),
                named(
                        "ipam section, ipam.type cadastre-ipam",
                        HEAD
                                + "\"type\":\"bridge\",\"agentSocket\":\"DECOY\","
                                + "\"ipam\":{\"agentSocket\":\"AGENT\",\"type\":\"cadastre-ipam\"}}"),
                named(
                        "type after agentSocket",
                        "{\"agentSocket\":\"AGENT\",\"cniVersion\":\"1.0.0\",\"type\":\"cadastre\"}"),
                named(
                        "escaped key and type, decoded as the agent does",
                        HEAD
                                + "\"t\\u0079pe\":\"cad\\u0061stre\",\"agent\\u0053ocket\":\"AGENT\"}"),
                named(
                        "after hostile but valid members",
                        HEAD
                                + "\"s\":\"\\\"agentSocket\\\":\\\"DECOY\\\" \\\\\",\"big\":"
                                + "9".repeat(100_000)
                                + ",\"e\":-0.5E+999999999,\"z\":0,\"u\":\"\\ud83d\\ude00 \u00fcn\u00efc\u00f6de\",\"l\":[true,false,null,{}],"
                                + "\"deep\":"
                                + "[".repeat(999)
                                + "]".repeat(999)
                                + ",\r\n\t\"type\" : \"cadastre\" , \"agentSocket\" : \"AGENT\" }"));
    }

    @ParameterizedTest
    @MethodSource("followed")
    void agentSocketIsFollowedWhereTheAgentReadsIt(String netconf) throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY));
                FakeAgent decoy = FakeAgent.start(ok(DECOY_BODY))) {
            String stdin =
                    netconf.replace("AGENT", agent.socket().toString())
                            .replace("DECOY", decoy.socket().toString());
            Map<String, String> env = Plugin.cniEnv("ADD", decoy.socket());
            Plugin.Result r = Plugin.run(env, stdin);

            assertEquals(0, decoy.connections(), "the decoy was contacted; stdout: " + r.out());
            assertEquals(0, r.exit(), r.out());
            assertEquals(AGENT_BODY, r.out());
            agent.awaitRequest();
        }
    }

    // ---- the socket's own rules --------------------------------------------------------------

    private Plugin.Result addVia(String agentSocket) throws Exception {
        Map<String, String> env = Plugin.cniEnv("ADD", dir.resolve("no-agent.sock"));
        return Plugin.run(
                env, HEAD + "\"type\":\"cadastre\",\"agentSocket\":\"" + agentSocket + "\"}");
    }

    private static JsonNode assertRefused(Plugin.Result r, String rule) {
        JsonNode e = Plugin.assertError(r, 7, "1.0.0");
        assertTrue(e.get("details").textValue().contains(rule), r.out());
        return e;
    }

    /** chown needs root; the tests run as root (they create network namespaces elsewhere). */
    private void assumeRoot() throws Exception {
        assumeTrue((Integer) Files.getAttribute(dir, "unix:uid") == 0, "chown needs root");
    }

    @ParameterizedTest
    @ValueSource(strings = {"rwxrwxrwx", "rwxrwx---", "rwx----w-"})
    void socketInADirectoryOthersCanWriteIsRefused(String mode) throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY))) {
            Files.setPosixFilePermissions(
                    agent.socket().getParent(), PosixFilePermissions.fromString(mode));
            assertRefused(addVia(agent.socket().toString()), "writable by group or others");
            assertEquals(0, agent.connections());
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void socketOrDirectoryOwnedByAnotherUidIsRefused(boolean directory) throws Exception {
        assumeRoot();
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY))) {
            Path owned = directory ? agent.socket().getParent() : agent.socket();
            Files.setAttribute(owned, "unix:uid", 65534, LinkOption.NOFOLLOW_LINKS);
            assertRefused(
                    addVia(agent.socket().toString()),
                    (directory ? "its directory " + owned : owned) + " is owned by uid 65534");
            assertEquals(0, agent.connections());
        }
    }

    @Test
    void somethingOtherThanASocketIsRefused() throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY))) {
            Path file = Files.writeString(dir.resolve("file.sock"), "");
            Path directory = Files.createDirectory(dir.resolve("dir.sock"));
            Path link = Files.createSymbolicLink(dir.resolve("link.sock"), agent.socket());
            for (Path p : new Path[] {file, directory, link}) {
                assertRefused(addVia(p.toString()), p + " is not a socket");
            }
            assertEquals(0, agent.connections(), "a symbolic link is not followed to the socket");
        }
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "cni.sock",
                "run/cadastre/cni.sock",
                "./cni.sock",
                "DIR/./cni.sock",
                "DIR/../NAME/cni.sock",
                "DIR//cni.sock",
                "DIR/cni.sock/",
                "/"
            })
    void pathsThatAreNotAbsoluteAndNormalisedAreRefused(String path) throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY))) {
            Path agentDir = agent.socket().getParent();
            String p =
                    path.replace("DIR", agentDir.toString())
                            .replace("NAME", agentDir.getFileName().toString());
            JsonNode e = Plugin.assertError(addVia(p), 7, "1.0.0");
            assertTrue(
                    e.get("details")
                            .textValue()
                            .matches(
                                    ".* must (be an absolute path|not have '.', '..' or empty components)"),
                    e.toString());
            assertEquals(0, agent.connections());
        }
    }

    @Test
    void symbolicLinksInTheDirectoryPartLeadToTheDirectoryThatIsChecked() throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY))) {
            Path link = Files.createSymbolicLink(dir.resolve("run"), agent.socket().getParent());
            Plugin.Result r = addVia(link.resolve("cni.sock").toString());
            assertEquals(0, r.exit(), r.out());
            agent.awaitRequest();

            Files.setPosixFilePermissions(
                    agent.socket().getParent(), PosixFilePermissions.fromString("rwxrwxrwx"));
            assertRefused(
                    addVia(link.resolve("cni.sock").toString()), "writable by group or others");
            assertEquals(1, agent.connections());
        }
    }

    @Test
    void theEnvironmentsSocketObeysTheSameRules() throws Exception {
        try (FakeAgent agent = FakeAgent.start(ok(AGENT_BODY))) {
            Map<String, String> env = Plugin.cniEnv("ADD");
            env.put("CADASTRE_AGENT_SOCKET", "run/cadastre/cni.sock");
            JsonNode e =
                    Plugin.assertError(
                            Plugin.run(env, HEAD + "\"type\":\"cadastre\"}"), 4, "1.0.0");
            assertEquals(
                    "invalid environment variable CADASTRE_AGENT_SOCKET", e.get("msg").textValue());

            Files.setPosixFilePermissions(
                    agent.socket().getParent(), PosixFilePermissions.fromString("rwxrwxrwx"));
            env.put("CADASTRE_AGENT_SOCKET", agent.socket().toString());
            assertRefused(
                    Plugin.run(env, HEAD + "\"type\":\"cadastre\"}"),
                    "writable by group or others");
            assertEquals(0, agent.connections());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"no-agent.sock", "not-yet/cni.sock"})
    void aSocketOrDirectoryNotThereYetIsTryAgainLater(String path) throws Exception {
        // The agent creates both when it starts: the runtime should retry, not give up.
        Map<String, String> env = Plugin.cniEnv("ADD", dir.resolve(path));
        JsonNode e =
                Plugin.assertError(Plugin.run(env, HEAD + "\"type\":\"cadastre\"}"), 11, "1.0.0");
        assertTrue(
                e.get("details").textValue().contains(dir.resolve(path).toString()), e.toString());
    }
}
