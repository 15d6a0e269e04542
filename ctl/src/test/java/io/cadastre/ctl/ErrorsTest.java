package io.cadastre.ctl;

import static io.cadastre.ctl.Fixtures.createBlue;
import static io.cadastre.ctl.Fixtures.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ctl.Fixtures.Run;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Authentication, where the server and token come from, and every way a command fails: exit 2
 * with one message on stderr (the agent's {@code error} and the status, or the URL that could not
 * be reached), and no request at all when the input is wrong on its face.
 */
class ErrorsTest {
    private FakeAdminServer agent;

    @TempDir Path dir;

    @BeforeEach
    void startAgent() throws IOException {
        agent =
                new FakeAdminServer()
                        .get("/v1/pools", Fixtures.POOLS)
                        .get("/v1/check", Fixtures.CHECK_CLEAN);
    }

    @AfterEach
    void stopAgent() {
        agent.close();
    }

    private Run ctl(String... args) {
        return agent.ctl(args);
    }

    private static void assertFailed(Run run, String... inErr) {
        assertEquals(2, run.code(), run.err());
        assertEquals("", run.out(), "nothing on stdout");
        for (String text : inErr) {
            assertTrue(run.err().contains(text), "stderr has '" + text + "': " + run.err());
        }
    }

    // --- token and server

    @Test
    void theTokenFilesTrimmedContentIsSentAsBearer() throws IOException {
        Path token = Files.writeString(dir.resolve("token"), "  s3cret-token.42\n\n");
        Run run = ctl("--token-file", token.toString(), "pool", "list");
        assertEquals(0, run.code(), run.err());
        assertEquals("Bearer s3cret-token.42", agent.requests().get(0).authorization());
    }

    @Test
    void theTokenFileCanComeFromTheEnvironment() throws IOException {
        Path token = Files.writeString(dir.resolve("token"), "from-env\n");
        Run run =
                run(
                        Map.of("CADASTRE_ADMIN_TOKEN_FILE", token.toString()),
                        "--server",
                        agent.url(),
                        "pool",
                        "list");
        assertEquals(0, run.code(), run.err());
        assertEquals("Bearer from-env", agent.requests().get(0).authorization());
    }

    @Test
    void withoutATokenFileNoAuthorizationIsSent() {
        assertEquals(0, ctl("pool", "list").code());
        assertNull(agent.requests().get(0).authorization());
    }

    @Test
    void theAgentsOwnTokenFileIsUsedWhenNoneIsNamed() throws IOException {
        Path agentsOwn = Files.writeString(dir.resolve("admin.token"), "agents-own\n");
        Run run = run(Map.of(), agentsOwn, "--server", agent.url(), "pool", "list");
        assertEquals(0, run.code(), run.err());
        assertEquals("Bearer agents-own", agent.requests().get(0).authorization());

        Path fromEnv = Files.writeString(dir.resolve("env-token"), "from-env\n");
        Path named = Files.writeString(dir.resolve("named-token"), "named\n");
        assertEquals(
                0,
                run(
                                Map.of("CADASTRE_ADMIN_TOKEN_FILE", fromEnv.toString()),
                                agentsOwn,
                                "--server",
                                agent.url(),
                                "pool",
                                "list")
                        .code());
        assertEquals(
                "Bearer from-env",
                agent.requests().get(1).authorization(),
                "the environment before the default");
        assertEquals(
                0,
                run(
                                Map.of("CADASTRE_ADMIN_TOKEN_FILE", fromEnv.toString()),
                                agentsOwn,
                                "--server",
                                agent.url(),
                                "--token-file",
                                named.toString(),
                                "pool",
                                "list")
                        .code());
        assertEquals(
                "Bearer named", agent.requests().get(2).authorization(), "the option before both");
    }

    @Test
    void theLocalAgentsTokenIsNeverSentToAnotherHost() throws IOException {
        InetAddress other = nonLoopbackAddress();
        Assumptions.assumeTrue(other != null, "this host has no non-loopback address up");
        try (FakeAdminServer remote = new FakeAdminServer(other).get("/v1/pools", Fixtures.POOLS)) {
            Path agentsOwn = Files.writeString(dir.resolve("admin.token"), "agents-own\n");
            String url =
                    "http://"
                            + (other instanceof java.net.Inet6Address
                                    ? "[" + other.getHostAddress() + "]"
                                    : other.getHostAddress())
                            + ":"
                            + remote.port();
            Run run = run(Map.of(), agentsOwn, "--server", url, "pool", "list");
            assertEquals(0, run.code(), run.err());
            assertNull(remote.requests().get(0).authorization());
        }
    }

    private static InetAddress nonLoopbackAddress() throws IOException {
        for (java.net.NetworkInterface nic :
                java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
            if (nic.isUp() && !nic.isLoopback()) {
                for (InetAddress address : java.util.Collections.list(nic.getInetAddresses())) {
                    if (address instanceof java.net.Inet4Address) {
                        return address;
                    }
                }
            }
        }
        return null;
    }

    @Test
    void anEmptyOrMissingTokenFileIsAnErrorBeforeAnyRequest() throws IOException {
        Path empty = Files.writeString(dir.resolve("empty"), " \n");
        assertFailed(
                ctl("--token-file", empty.toString(), "pool", "list"), "token file", "is empty");
        assertFailed(
                ctl("--token-file", dir.resolve("absent").toString(), "pool", "list"),
                "cannot read the token file " + dir.resolve("absent"));
        Path twoLines = Files.writeString(dir.resolve("two"), "abc\ndef\n");
        assertFailed(
                ctl("--token-file", twoLines.toString(), "pool", "list"), "more than one word");
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void theServerComesFromTheEnvironmentUnlessGiven() throws IOException {
        Run fromEnv = run(Map.of("CADASTRE_ADMIN_URL", agent.url()), "pool", "list");
        assertEquals(0, fromEnv.code(), fromEnv.err());
        assertEquals(1, agent.requests().size());

        String refused = "http://127.0.0.1:" + closedPort();
        Run given =
                run(Map.of("CADASTRE_ADMIN_URL", refused), "--server", agent.url(), "pool", "list");
        assertEquals(0, given.code(), given.err());
        assertEquals(2, agent.requests().size());
    }

    @Test
    void aMalformedServerUrlIsAUsageError() {
        assertFailed(
                run(Map.of(), "--server", "ftp://127.0.0.1:9467", "pool", "list"),
                "--server",
                "ftp://127.0.0.1:9467");
        assertFailed(run(Map.of(), "--server", "not a url", "pool", "list"), "not a url");
        assertFailed(
                run(Map.of("CADASTRE_ADMIN_URL", "127.0.0.1:9467"), "pool", "list"),
                "CADASTRE_ADMIN_URL");
    }

    // --- the agent answers an error

    @Test
    void unauthorizedPrintsTheAgentsMessageTheStatusAndWhatToDo() throws IOException {
        agent.answer("GET", "/v1/pools", 401, "{\"error\":\"missing bearer token\"}");
        assertFailed(
                ctl("pool", "list"),
                "cadastrectl: missing bearer token",
                "HTTP 401",
                "GET " + agent.url() + "/v1/pools",
                "the agent wants its token: run cadastrectl as root",
                "or pass --token-file");
        Path token = Files.writeString(dir.resolve("token"), "stale\n");
        assertFailed(
                ctl("--token-file", token.toString(), "pool", "list"),
                "HTTP 401",
                "the agent refused the token from " + token + ": run cadastrectl as root",
                "or pass --token-file");
    }

    @Test
    void badRequestPrintsTheAgentsMessage() {
        agent.answer("POST", "/v1/release", 400, "{\"error\":\"unknown node node-z\"}");
        assertFailed(
                ctl("ipam", "release", "--node", "node-z", "--handle", "cadastre.c1"),
                "unknown node node-z",
                "HTTP 400",
                "POST " + agent.url() + "/v1/release");
    }

    @Test
    void notFoundPrintsTheAgentsMessage() {
        agent.answer(
                "GET", "/v1/addresses/10.0.0.1", 404, "{\"error\":\"10.0.0.1 is in no pool\"}");
        assertFailed(ctl("ipam", "address", "10.0.0.1"), "10.0.0.1 is in no pool", "HTTP 404");
    }

    @Test
    void unavailableIsExitTwoNotOneEvenForCheck() {
        agent.answer(
                "GET",
                "/v1/check",
                503,
                "{\"error\":\"block 198.18.0.0/26 did not answer in time\"}");
        assertFailed(
                ctl("ipam", "check"), "block 198.18.0.0/26 did not answer in time", "HTTP 503");
    }

    @Test
    void anErrorBodyThatIsNotJsonStillShowsTheStatus() {
        agent.answer(
                "GET", "/v1/pools", 502, "<html><body>Bad Gateway</body></html>\n<p>nginx</p>");
        assertFailed(ctl("pool", "list"), "<html><body>Bad Gateway</body></html> (HTTP 502");
    }

    @Test
    void anAnswerNotOfTheContractsShapeIsAnError() {
        agent.get("/v1/pools", "{}");
        assertFailed(ctl("pool", "list"), "unexpected answer: no 'pools' list");
        agent.get("/v1/pools", "ok");
        assertFailed(
                ctl("pool", "list"),
                "unexpected answer to GET " + agent.url() + "/v1/pools: not a JSON object");
        // Without a verdict, check must not exit 0 or 1.
        agent.get("/v1/check", "{\"checkedAllocations\":3}");
        assertFailed(ctl("ipam", "check"), "no boolean 'clean'");
        assertFailed(ctl("ipam", "check", "-o", "json"), "no boolean 'clean'");
    }

    // --- the agent cannot be reached

    @Test
    void connectionRefusedNamesTheUrl() throws IOException {
        String url = "http://127.0.0.1:" + closedPort();
        Run run = run(Map.of(), "--server", url, "ipam", "check");
        assertFailed(run, "cannot connect to " + url + ": ");
        assertTrue(run.err().toLowerCase(Locale.ROOT).contains("connection refused"), run.err());
    }

    @Test
    void anAgentThatDoesNotAnswerTimesOutAfterTimeoutSeconds() {
        agent.hang("GET", "/v1/check");
        assertFailed(
                ctl("--timeout", "1", "ipam", "check"),
                "no answer to GET " + agent.url() + "/v1/check within 1 s");
        assertEquals(1, agent.requests().size(), "the request was sent once, not retried");

        agent.hang("POST", "/v1/release");
        assertFailed(
                ctl("--timeout", "1", "ipam", "release", "--address", "198.18.0.3"),
                "no answer to POST " + agent.url() + "/v1/release within 1 s",
                "may have taken effect");
        assertEquals(2, agent.requests().size());
    }

    @Test
    void aTimeoutBelowOneSecondIsAUsageError() {
        assertFailed(ctl("--timeout", "0", "pool", "list"), "--timeout");
        assertEquals(List.of(), agent.requests());
    }

    // --- usage: refused locally, nothing sent

    @Test
    void aMalformedAddressIsRefusedWithoutARequest() {
        assertFailed(
                ctl("ipam", "address", "198.18.0.300"),
                "'198.18.0.300' is not an IPv4 or IPv6 address");
        assertFailed(
                ctl("ipam", "address", "fd00:198:::1"),
                "'fd00:198:::1' is not an IPv4 or IPv6 address");
        assertFailed(ctl("ipam", "address", "node-a"), "not an IPv4 or IPv6 address");
        assertFailed(
                ctl("ipam", "release", "--address", "198.18.0"),
                "--address",
                "not an IPv4 or IPv6 address");
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void releaseTakesAnAddressOrAnAttachmentNotBothNorNeither() {
        assertFailed(ctl("ipam", "release"), "--address", "--node");
        assertFailed(
                ctl(
                        "ipam",
                        "release",
                        "--address",
                        "198.18.0.3",
                        "--node",
                        "node-a",
                        "--handle",
                        "h"),
                "cadastrectl: --address=IP and (--node=NODE",
                "mutually exclusive");
        assertFailed(ctl("ipam", "release", "--node", "node-a"), "--handle");
        assertFailed(ctl("ipam", "release", "--ifname", "eth1"), "--node", "--handle");
        assertFailed(
                ctl("ipam", "release", "--node", " ", "--handle", "h"), "--node must not be empty");
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void poolCreateWithoutACidrOrWithABadOneIsRefusedWithoutARequest() {
        assertFailed(ctl("pool", "create", "blue"), "Missing required option: '--cidr=CIDR'");
        assertFailed(
                ctl("pool", "create", "--cidr", "198.19.0.0/16"),
                "Missing required parameter: 'NAME'");
        assertFailed(
                ctl("pool", "create", "blue", "--cidr", "198.19.0.0"),
                "'198.19.0.0' is not a CIDR");
        assertFailed(
                ctl("pool", "create", "blue", "--cidr", "198.19.0.0/33"),
                "'198.19.0.0/33' is not a CIDR");
        assertFailed(ctl("pool", "create", "blue", "--cidr", "fd00:198::/129"), "is not a CIDR");
        assertFailed(
                ctl(createBlue("--exclude", "198.19.0.0/16", "--exclude", "198.19.1")),
                "--exclude",
                "'198.19.1' is not a CIDR");
        assertFailed(
                ctl("pool", "create", " ", "--cidr", "198.19.0.0/16"), "NAME must not be empty");
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void negativeOrNonNumericCountsAreRefusedWithoutARequest() {
        assertFailed(
                ctl(createBlue("--max-blocks-per-node", "-1")),
                "--max-blocks-per-node",
                "'-1' is not a non-negative integer");
        assertFailed(
                ctl(createBlue("--max-blocks-per-node=-1")), "'-1' is not a non-negative integer");
        assertFailed(
                ctl(createBlue("--block-size", "x26")),
                "--block-size",
                "'x26' is not a non-negative integer");
        assertFailed(
                ctl(createBlue("--block-size", "99999999999")),
                "'99999999999' is not a non-negative integer");
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void aBlockSizeThatDoesNotFitIsTheAgentsToRefuse() {
        agent.answer(
                "POST",
                "/v1/pools",
                400,
                "{\"error\":\"block size 40 does not fit an IPv4 pool (16..32)\"}");
        assertFailed(
                ctl(createBlue("--block-size", "40")),
                "cadastrectl: block size 40 does not fit an IPv4 pool (16..32) (HTTP 400 from POST "
                        + agent.url()
                        + "/v1/pools)");
        assertEquals(1, agent.requests().size());
    }

    @Test
    void poolCreateConflictsPrintTheAgentsMessage() {
        agent.answer(
                "POST",
                "/v1/pools",
                409,
                "{\"error\":\"pool blue's CIDR 198.19.0.0/16 overlaps pool default-ipv4\"}");
        assertFailed(
                ctl(createBlue()),
                "overlaps pool default-ipv4",
                "HTTP 409 from POST " + agent.url() + "/v1/pools");
        agent.answer(
                "POST",
                "/v1/pools",
                400,
                "{\"error\":\"preset cluster-pool takes strictAffinity true\"}");
        assertFailed(
                ctl(createBlue("--preset", "cluster-pool", "--no-borrowing")),
                "preset cluster-pool takes strictAffinity true",
                "HTTP 400");
    }

    @Test
    void unknownPoolsAndNodesArePrintedAsTheAgentSaysThem() {
        assertUnknown(
                "POST /v1/pools/gone/disable", "unknown pool gone", "pool", "disable", "gone");
        assertUnknown("POST /v1/pools/gone/enable", "unknown pool gone", "pool", "enable", "gone");
        assertUnknown("DELETE /v1/pools/gone", "unknown pool gone", "pool", "delete", "gone");
        assertUnknown("DELETE /v1/nodes/node-z", "unknown node node-z", "node", "remove", "node-z");
    }

    /**
     * The agent answers {@code request} ("METHOD /path") with 404 and {@code error}: the command
     * fails with the agent's message and the request it refused.
     */
    private void assertUnknown(String request, String error, String... command) {
        String[] methodAndPath = request.split(" ");
        agent.answer(methodAndPath[0], methodAndPath[1], 404, "{\"error\":\"" + error + "\"}");
        assertFailed(
                ctl(command),
                error,
                "HTTP 404 from " + methodAndPath[0] + " " + agent.url() + methodAndPath[1]);
    }

    @Test
    void refusedDeletionsPrintTheAgentsMessage() {
        agent.answer(
                        "DELETE",
                        "/v1/pools/blue",
                        409,
                        "{\"error\":\"pool blue still holds 3 allocations in 1 blocks"
                                + " (198.19.0.0/24); it is now disabled; release them first\"}")
                .answer(
                        "DELETE",
                        "/v1/nodes/node-a?releaseAddresses=true",
                        409,
                        "{\"error\":\"node node-a is a cluster member (up); stop its agent first\"}");
        assertFailed(
                ctl("pool", "delete", "blue"),
                "pool blue still holds 3 allocations",
                "it is now disabled",
                "HTTP 409");
        assertFailed(
                ctl("node", "remove", "node-a", "--release-addresses"),
                "node node-a is a cluster member (up); stop its agent first",
                "HTTP 409");
    }

    @Test
    void aDeleteWhoseAnswerIsLostMayHaveTakenEffect() {
        agent.hang("DELETE", "/v1/nodes/node-b");
        Run run = ctl("--timeout", "1", "node", "remove", "node-b");
        assertFailed(
                run,
                "no answer to DELETE " + agent.url() + "/v1/nodes/node-b within 1 s",
                "may have taken effect");
        assertFalse(
                run.err().contains("safe to repeat"),
                "a second DELETE may answer otherwise: " + run.err());
    }

    @Test
    void emptyNamesAreRefusedWithoutARequest() {
        for (String[] command :
                List.of(
                        new String[] {"pool", "disable"},
                        new String[] {"pool", "enable"},
                        new String[] {"pool", "delete"},
                        new String[] {"node", "remove"},
                        new String[] {"node", "show"})) {
            assertFailed(ctl(command[0], command[1], ""), "NAME must not be empty");
            assertFailed(ctl(command[0], command[1]), "Missing required parameter: 'NAME'");
        }
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void aGroupWithoutSubcommandOrAnUnknownOneIsAUsageError() {
        assertFailed(run(Map.of()), "missing command: one of ipam, node, pool");
        assertFailed(ctl("ipam"), "missing command: one of show, check, release, address");
        assertFailed(ctl("pool"), "missing command: one of list, create, disable, enable, delete");
        assertFailed(ctl("node"), "missing command: one of list, show, remove");
        assertFailed(ctl("ipam", "shwo"), "shwo", "show");
        assertFailed(ctl("pool", "list", "-o", "yaml"), "yaml");
        assertEquals(List.of(), agent.requests());
    }

    @Test
    void helpListsTheExitCodes() {
        Run run = run(Map.of(), "--help");
        assertEquals(0, run.code());
        assertTrue(run.out().contains("Usage: cadastrectl"), run.out());
        assertTrue(run.out().contains("1   ipam check: not clean"), run.out());
        Run sub = run(Map.of(), "ipam", "release", "--help");
        assertEquals(0, sub.code());
        for (String text :
                List.of(
                        "--address=IP",
                        "--node=NODE",
                        "--handle=HANDLE",
                        "(default: eth0)",
                        "--server=URL")) {
            assertTrue(sub.out().contains(text), "help has '" + text + "': " + sub.out());
        }
    }

    /** A loopback port nothing listens on (bound, then closed: refused until someone else takes it). */
    private static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
