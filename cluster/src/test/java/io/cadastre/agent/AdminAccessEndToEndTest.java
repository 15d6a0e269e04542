package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlAgent.Pod;
import io.cadastre.testsupport.CniExec;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Who may use a real agent's admin API with the default settings (issue 12, the fifth hole):
 * bound to loopback, with the token the agent generated in its data directory. A client running
 * as the unprivileged user {@code nobody} (uid 65534, through {@code setpriv}) cannot read the
 * token, and every {@code /v1} call it makes, change or read, answers 401 while the probes and
 * {@code /metrics} answer 200; a live pod's allocation, the node's attachments and the pools are
 * the same afterwards, read through the admin API as root. Root's {@code cadastrectl} with no
 * token option finds the token by itself; without it, cadastrectl says how to get it. The data directory, found looser than 0700 at start, is
 * tightened; it and its files are the agent's user's only, and the log names the token's file,
 * never the token.
 */
class AdminAccessEndToEndTest {
    private static final String NODE = "access-node";
    private static final String CONFIG =
            """
            cadastre.pools = [
              { name = "access-ipv4", cidr = "198.18.113.0/24", block-size = 26 }
              { name = "access-ipv6", cidr = "fd00:198:71::/120", block-size = 122 }
            ]
            cadastre.default-pools = ["access-ipv4", "access-ipv6"]
            """;
    private static final int NOBODY = 65534;

    private static CtlAgent agent;
    private static Pod pod;
    private static final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    /**
     * The agent's directory is opened to everyone (0755), so that only the data directory and the
     * token file's own modes keep {@code nobody} out; the data directory exists already, 0755,
     * with a file of an earlier run 0644, as an older agent left them.
     */
    @BeforeAll
    static void startAgentAndPod() throws Exception {
        agent =
                CtlAgent.start(
                        NODE,
                        "access",
                        CONFIG,
                        dir -> {
                            Files.setPosixFilePermissions(
                                    dir, PosixFilePermissions.fromString("rwxr-xr-x"));
                            Path data = Files.createDirectory(dir.resolve("data"));
                            Files.setPosixFilePermissions(
                                    data, PosixFilePermissions.fromString("rwxr-xr-x"));
                            Path old =
                                    Files.writeString(
                                            data.resolve("journal.trace.db"),
                                            "an earlier run's trace\n");
                            Files.setPosixFilePermissions(
                                    old, PosixFilePermissions.fromString("rw-r--r--"));
                        });
        pod = agent.addPod("live");
    }

    @AfterAll
    static void stopPodAndAgent() throws Exception {
        if (agent != null) {
            agent.close();
        }
    }

    @Test
    void nobodyCannotReadTheTokenNorUseV1AndNothingChanges() throws Exception {
        Map<String, JsonNode> before = state();
        String release = "{\"address\":\"" + pod.v4() + "\"}";
        List<String[]> requests =
                List.of(
                        new String[] {"GET", "/healthz", ""},
                        new String[] {"GET", "/readyz", ""},
                        new String[] {"GET", "/metrics", ""},
                        new String[] {"GET", "/openapi.yaml", ""},
                        new String[] {"POST", "/v1/release", release},
                        new String[] {"POST", "/v1/release", "{\"address\":\"" + pod.v6() + "\"}"},
                        new String[] {
                            "POST",
                            "/v1/release",
                            "{\"node\":\"" + NODE + "\",\"handle\":\"" + pod.handle() + "\"}"
                        },
                        new String[] {
                            "POST",
                            "/v1/pools",
                            "{\"name\":\"intruder\",\"cidr\":\"198.19.113.0/24\"}"
                        },
                        new String[] {"POST", "/v1/pools/access-ipv4/disable", ""},
                        new String[] {"DELETE", "/v1/pools/access-ipv6", ""},
                        new String[] {
                            "POST",
                            "/v1/gc",
                            "{\"node\":\""
                                    + NODE
                                    + "\",\"network\":\"access\",\"validAttachments\":[]}"
                        },
                        new String[] {"DELETE", "/v1/nodes/" + NODE + "?releaseAddresses=true", ""},
                        new String[] {"GET", "/v1/pools", ""},
                        new String[] {"GET", "/v1/nodes/" + NODE, ""},
                        new String[] {"GET", "/v1/addresses/" + pod.v4(), ""},
                        new String[] {"GET", "/v1/check", ""});

        Probe.Result nobody = Probe.asNobody(agent.adminUrl, agent.adminTokenFile(), requests);

        assertTrue(nobody.tokenRead().startsWith("unreadable"), "nobody read the token: " + nobody);
        Map<String, String> expected = new LinkedHashMap<>();
        for (String[] r : requests) {
            String status = r[1].startsWith("/v1/") ? "401" : "200";
            expected.put(r[0] + " " + r[1] + " " + r[2] + " without a token", status);
            expected.put(r[0] + " " + r[1] + " " + r[2] + " with a guessed token", status);
        }
        assertEquals(expected, nobody.statuses(), nobody.toString());
        assertEquals(
                before,
                state(),
                "the pod's allocation, the node's attachments and the pools are as they were");
    }

    @Test
    void rootsCadastrectlFindsTheTokenWithoutBeingTold() throws Exception {
        // A real cadastrectl process as root, in a mount namespace of its own where the agent's
        // data directory is /var/lib/cadastre: the machine's own /var/lib is not touched.
        List<String> command =
                List.of(
                        "unshare",
                        "--mount",
                        "--propagation",
                        "private",
                        "sh",
                        "-c",
                        "mount -t tmpfs cadastre-test /var/lib && mkdir /var/lib/cadastre"
                                + " && mount --bind \"$0\" /var/lib/cadastre && exec \"$@\"",
                        agent.dataDir().toString(),
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        System.getProperty("java.class.path"),
                        "io.cadastre.ctl.Cadastrectl",
                        "ipam",
                        "address",
                        pod.v4(),
                        "-o",
                        "json");
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().keySet().removeIf(k -> k.startsWith("CADASTRE_"));
        builder.environment().put("CADASTRE_ADMIN_URL", agent.adminUrl);
        Probe.Output run = Probe.run(builder);
        assertEquals(0, run.exit(), run.toString());
        assertEquals(
                pod.handle(),
                CniExec.JSON.readTree(run.out()).path("allocation").path("handle").asText(),
                run.toString());
    }

    @Test
    void cadastrectlWithoutTheTokenSaysHowToGetIt() {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int code =
                io.cadastre.ctl.Cadastrectl.execute(
                        Map.of(),
                        agent.dataDir().resolve("absent.token"),
                        new java.io.PrintWriter(out, true),
                        new java.io.PrintWriter(err, true),
                        "--server",
                        agent.adminUrl,
                        "ipam",
                        "release",
                        "--address",
                        pod.v4());
        CtlOutput.assertFailed(
                new CtlOutput.Run(code, out.toString(), err.toString()),
                "missing bearer token",
                "HTTP 401 from POST " + agent.adminUrl + "/v1/release",
                "the agent wants its token: run cadastrectl as root",
                "or pass --token-file");
    }

    @Test
    void theDataDirectoryAndItsFilesAreTheAgentsOnly() throws Exception {
        Path data = agent.dataDir();
        assertEquals("rwx------", mode(data));
        List<String> files = new ArrayList<>();
        try (Stream<Path> entries = Files.list(data)) {
            for (Path file :
                    entries.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS))
                            .toList()) {
                files.add(file.getFileName().toString());
                assertEquals("rw-------", mode(file), file.toString());
            }
        }
        assertTrue(files.containsAll(List.of("admin.token", "journal.trace.db")), files.toString());
        assertEquals("rwx------", mode(data.resolve("journal")));
        try (Stream<Path> journalFiles = Files.list(data.resolve("journal"))) {
            List<Path> all = journalFiles.toList();
            assertTrue(!all.isEmpty(), "the embedded journal's files");
            for (Path file : all) {
                assertEquals("rw-------", mode(file), file.toString());
            }
        }
        String token = Files.readString(agent.adminTokenFile()).strip();
        assertTrue(token.matches("[0-9a-f]{64}"), "256 random bits as hex");
        String log = Files.readString(agent.log());
        assertTrue(log.contains("data directory " + data + " was rwxr-xr-x, now rwx------"), log);
        assertTrue(
                log.contains(data.resolve("journal.trace.db") + " was rw-r--r--, now rw-------"),
                log);
        assertTrue(log.contains("admin API token generated in " + agent.adminTokenFile()), log);
        assertFalse(log.contains(token), "the token is never logged");
    }

    /** What must not change: read through the admin API as root, with the token. */
    private static Map<String, JsonNode> state() throws Exception {
        Map<String, JsonNode> state = new LinkedHashMap<>();
        for (String path :
                List.of(
                        "/v1/pools",
                        "/v1/nodes/" + NODE,
                        "/v1/addresses/" + pod.v4(),
                        "/v1/addresses/" + pod.v6())) {
            HttpResponse<String> response =
                    http.send(
                            HttpRequest.newBuilder(URI.create(agent.adminUrl + path))
                                    .header(
                                            "Authorization",
                                            "Bearer "
                                                    + Files.readString(agent.adminTokenFile())
                                                            .strip())
                                    .timeout(Duration.ofSeconds(30))
                                    .GET()
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            assertEquals(200, response.statusCode(), path + ": " + response.body());
            state.put(path, CniExec.JSON.readTree(response.body()));
        }
        assertEquals(
                pod.handle(),
                state.get("/v1/addresses/" + pod.v4()).path("allocation").path("handle").asText(),
                "the pod holds its address");
        return state;
    }

    private static String mode(Path path) throws IOException {
        return PosixFilePermissions.toString(
                Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    /**
     * An HTTP client run as {@code nobody}: a single-file Java program (the JDK's source launcher,
     * so that it needs no class path: root's Maven repository is not readable by nobody), written
     * to a directory of its own that everyone may read, removed afterwards.
     */
    static final class Probe {
        private static final String SOURCE =
                """
                import java.net.URI;
                import java.net.http.HttpClient;
                import java.net.http.HttpRequest;
                import java.nio.file.Files;
                import java.nio.file.Path;
                import java.time.Duration;

                /** args: base URL, token file, then METHOD PATH BODY triples (BODY "" for none). */
                public class Probe {
                    public static void main(String[] a) throws Exception {
                        try {
                            Files.readString(Path.of(a[1]));
                            System.out.println("token\\tread");
                        } catch (Exception e) {
                            System.out.println("token\\tunreadable: " + e);
                        }
                        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
                        for (int i = 2; i + 2 < a.length; i += 3) {
                            for (String bearer : new String[] {null, "guess"}) {
                                HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(a[0] + a[i + 1]))
                                        .timeout(Duration.ofSeconds(30))
                                        .method(a[i], a[i + 2].isEmpty() ? HttpRequest.BodyPublishers.noBody()
                                                : HttpRequest.BodyPublishers.ofString(a[i + 2]));
                                if (!a[i + 2].isEmpty()) {
                                    r.header("Content-Type", "application/json");
                                }
                                if (bearer != null) {
                                    r.header("Authorization", "Bearer " + bearer);
                                }
                                int status = http.send(r.build(), java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
                                System.out.println(a[i] + " " + a[i + 1] + " " + a[i + 2]
                                        + (bearer == null ? " without a token" : " with a guessed token") + "\\t" + status);
                            }
                        }
                    }
                }
                """;

        /** What the probe saw: whether it could read the token, and each request's status. */
        record Result(String tokenRead, Map<String, String> statuses, Output output) {}

        /** A helper process's exit code and output. */
        record Output(int exit, String out, String err) {}

        static Result asNobody(String base, Path tokenFile, List<String[]> requests)
                throws Exception {
            Path dir = Files.createTempDirectory("cad-probe");
            try {
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
                Path source = Files.writeString(dir.resolve("Probe.java"), SOURCE);
                Files.setPosixFilePermissions(source, PosixFilePermissions.fromString("rw-r--r--"));
                List<String> command =
                        new ArrayList<>(
                                List.of(
                                        "setpriv",
                                        "--reuid=" + NOBODY,
                                        "--regid=" + NOBODY,
                                        "--clear-groups",
                                        "--",
                                        Path.of(System.getProperty("java.home"), "bin", "java")
                                                .toString(),
                                        "-XX:-UsePerfData",
                                        "-XX:TieredStopAtLevel=1",
                                        source.toString(),
                                        base,
                                        tokenFile.toString()));
                requests.forEach(r -> command.addAll(List.of(r)));
                ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile());
                Output output = run(builder);
                assertEquals(0, output.exit(), output.toString());
                String tokenRead = null;
                Map<String, String> statuses = new LinkedHashMap<>();
                for (String line : output.out().lines().toList()) {
                    String[] parts = line.split("\t", 2);
                    if (parts[0].equals("token")) {
                        tokenRead = parts[1];
                    } else {
                        statuses.put(parts[0], parts[1]);
                    }
                }
                return new Result(tokenRead, statuses, output);
            } finally {
                CniEndToEndTest.deleteTree(dir);
            }
        }

        /** Runs a helper to its end (at most 120 s; killed by PID after that), its output in files of its own. */
        static Output run(ProcessBuilder builder) throws Exception {
            Path out = Files.createTempFile("cad-helper", ".out");
            Path err = Files.createTempFile("cad-helper", ".err");
            try {
                Process process =
                        builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
                if (!process.waitFor(120, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                    throw new AssertionError(
                            "helper did not finish in 120 s: " + builder.command());
                }
                return new Output(
                        process.exitValue(),
                        Files.readString(out, StandardCharsets.UTF_8),
                        Files.readString(err, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(out);
                Files.deleteIfExists(err);
            }
        }
    }
}
