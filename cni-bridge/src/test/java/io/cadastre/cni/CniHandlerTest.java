package io.cadastre.cni;

import static io.cadastre.cni.NetConfTest.j;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.cni.CniBackend.AddRequest;
import io.cadastre.cni.CniBackend.AddResult;
import io.cadastre.cni.CniBackend.Attachment;
import io.cadastre.cni.CniBackend.AttachmentRef;
import io.cadastre.cni.CniBackend.Interface;
import io.cadastre.cni.CniBackend.IpConfig;
import io.cadastre.cni.CniBackend.PodRef;
import io.cadastre.cni.CniBackend.Route;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class CniHandlerTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static final String PLUGIN =
            "{'cniVersion':'1.0.0','name':'k8s-pod-network','type':'cadastre','mtu':1450,"
                    + "'ipam':{'pools':['v4','v6']}}";
    static final String IPAM =
            "{'cniVersion':'0.4.0','name':'blue','type':'macvlan','master':'eth1',"
                    + "'ipam':{'type':'cadastre-ipam','pools':['blue-pool'],'routes':[{'dst':'0.0.0.0/0','gw':'198.18.0.1'},"
                    + "{'dst':'198.19.0.0/16'}]}}";
    static final String K8S_ARGS =
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=u1";

    private FakeBackend backend;
    private CniHandler handler;

    @BeforeEach
    void setUp() {
        backend = new FakeBackend();
        handler = new CniHandler(backend);
    }

    static CniRequest req(
            String command,
            String containerId,
            String netns,
            String ifname,
            String args,
            String netconf) {
        return new CniRequest(
                command,
                containerId,
                netns,
                ifname,
                args,
                "/opt/cni/bin",
                netconf == null ? null : j(netconf));
    }

    static CniRequest add(String netconf) {
        return req("ADD", "abc123", "/var/run/netns/pod1", "eth0", K8S_ARGS, netconf);
    }

    private CniResponse run(CniRequest request) {
        return handler.handle(request).toCompletableFuture().join();
    }

    private static JsonNode body(CniResponse r) throws IOException {
        return JSON.readTree(r.body());
    }

    // --- bad input: the right code, and the backend is never called ---

    static Stream<Arguments> badRequests() {
        String gc = "{'cniVersion':'1.1.0','name':'n','type':'cadastre'}";
        String v11 = "{'cniVersion':'1.1.0','name':'n','type':'cadastre'}";
        return Stream.of(
                // CNI_COMMAND
                Arguments.of("no command", req(null, "c", "/n", "eth0", null, PLUGIN), 4),
                Arguments.of("empty command", req("", "c", "/n", "eth0", null, PLUGIN), 4),
                Arguments.of("lower-case command", req("add", "c", "/n", "eth0", null, PLUGIN), 4),
                Arguments.of("unknown command", req("UPDATE", "c", "/n", "eth0", null, PLUGIN), 4),
                // environment per verb
                Arguments.of(
                        "ADD without container ID",
                        req("ADD", null, "/n", "eth0", null, PLUGIN),
                        4),
                Arguments.of(
                        "ADD with empty container ID",
                        req("ADD", "", "/n", "eth0", null, PLUGIN),
                        4),
                Arguments.of(
                        "ADD container ID starting with _",
                        req("ADD", "_c", "/n", "eth0", null, PLUGIN),
                        4),
                Arguments.of(
                        "ADD container ID with /",
                        req("ADD", "a/b", "/n", "eth0", null, PLUGIN),
                        4),
                Arguments.of(
                        "ADD container ID with space",
                        req("ADD", "a b", "/n", "eth0", null, PLUGIN),
                        4),
                Arguments.of("ADD without netns", req("ADD", "c", null, "eth0", null, PLUGIN), 4),
                Arguments.of("ADD with empty netns", req("ADD", "c", "", "eth0", null, PLUGIN), 4),
                Arguments.of(
                        "ADD with relative netns",
                        req("ADD", "c", "netns/x", "eth0", null, PLUGIN),
                        4),
                Arguments.of("ADD without ifname", req("ADD", "c", "/n", null, null, PLUGIN), 4),
                Arguments.of("ADD with empty ifname", req("ADD", "c", "/n", "", null, PLUGIN), 4),
                Arguments.of(
                        "ADD ifname of 16 chars",
                        req("ADD", "c", "/n", "abcdefghijklmnop", null, PLUGIN),
                        4),
                Arguments.of("ADD ifname with /", req("ADD", "c", "/n", "eth/0", null, PLUGIN), 4),
                Arguments.of("ADD ifname with :", req("ADD", "c", "/n", "eth0:1", null, PLUGIN), 4),
                Arguments.of(
                        "ADD ifname with space", req("ADD", "c", "/n", "eth 0", null, PLUGIN), 4),
                Arguments.of(
                        "ADD ifname with tab", req("ADD", "c", "/n", "eth\t0", null, PLUGIN), 4),
                Arguments.of("ADD ifname .", req("ADD", "c", "/n", ".", null, PLUGIN), 4),
                Arguments.of("ADD ifname ..", req("ADD", "c", "/n", "..", null, PLUGIN), 4),
                Arguments.of(
                        "DEL without container ID",
                        req("DEL", null, null, "eth0", null, PLUGIN),
                        4),
                Arguments.of("DEL without ifname", req("DEL", "c", null, null, null, PLUGIN), 4),
                Arguments.of(
                        "CHECK without netns", req("CHECK", "c", null, "eth0", null, PLUGIN), 4),
                // netconf
                Arguments.of("ADD without stdin", req("ADD", "c", "/n", "eth0", null, null), 6),
                Arguments.of(
                        "ADD malformed netconf",
                        req("ADD", "c", "/n", "eth0", null, "{'name':"),
                        6),
                Arguments.of(
                        "ADD another plugin's netconf",
                        add(
                                "{'cniVersion':'1.0.0','name':'n','type':'bridge','ipam':{'type':'host-local'}}"),
                        7),
                Arguments.of(
                        "ADD mtu out of range",
                        add("{'cniVersion':'1.0.0','name':'n','type':'cadastre','mtu':65536}"),
                        7),
                Arguments.of(
                        "ADD invalid network name",
                        add("{'cniVersion':'1.0.0','name':'a:b','type':'cadastre'}"),
                        7),
                Arguments.of(
                        "ADD unsupported version",
                        add("{'cniVersion':'0.2.0','name':'n','type':'cadastre'}"),
                        1),
                Arguments.of(
                        "DEL unsupported version",
                        req(
                                "DEL",
                                "c",
                                null,
                                "eth0",
                                null,
                                "{'cniVersion':'0.1.0','name':'n','type':'cadastre'}"),
                        1),
                Arguments.of(
                        "CHECK at 0.3.1",
                        req(
                                "CHECK",
                                "c",
                                "/n",
                                "eth0",
                                null,
                                "{'cniVersion':'0.3.1','name':'n','type':'cadastre','prevResult':{}}"),
                        1),
                Arguments.of(
                        "GC at 1.0.0",
                        req(
                                "GC",
                                null,
                                null,
                                null,
                                null,
                                "{'cniVersion':'1.0.0','name':'n','type':'cadastre','cni.dev/valid-attachments':[]}"),
                        1),
                Arguments.of(
                        "STATUS at 0.4.0",
                        req(
                                "STATUS",
                                null,
                                null,
                                null,
                                null,
                                "{'cniVersion':'0.4.0','name':'n','type':'cadastre'}"),
                        1),
                Arguments.of(
                        "CHECK without prevResult", req("CHECK", "c", "/n", "eth0", null, v11), 7),
                Arguments.of(
                        "CHECK with invalid prevResult",
                        req(
                                "CHECK",
                                "c",
                                "/n",
                                "eth0",
                                null,
                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre','prevResult':{'ips':[{'address':'x'}]}}"),
                        7),
                Arguments.of(
                        "chained ADD with invalid prevResult",
                        add(
                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre','prevResult':{'interfaces':[{}]}}"),
                        7),
                Arguments.of(
                        "GC without valid attachments", req("GC", null, null, null, null, gc), 7),
                Arguments.of(
                        "ADD with a bad runtimeConfig IP",
                        add(
                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre','runtimeConfig':{'ips':['198.18.0.1/99']}}"),
                        7),
                // CNI_ARGS
                Arguments.of(
                        "ADD with unknown CNI_ARGS",
                        req("ADD", "c", "/n", "eth0", "FOO=bar", PLUGIN),
                        2),
                Arguments.of(
                        "DEL with unknown CNI_ARGS",
                        req("DEL", "c", null, "eth0", "FOO=bar", PLUGIN),
                        2),
                Arguments.of(
                        "ADD with malformed CNI_ARGS",
                        req("ADD", "c", "/n", "eth0", "K8S_POD_NAME", PLUGIN),
                        4),
                Arguments.of(
                        "ADD with a bad IP in CNI_ARGS",
                        req("ADD", "c", "/n", "eth0", "IP=198.18.0.300", PLUGIN),
                        7));
    }

    @ParameterizedTest(name = "{0} -> code {2}")
    @MethodSource("badRequests")
    void badInputIsRefusedAndChangesNothing(String what, CniRequest request, int code)
            throws IOException {
        CniResponse r = run(request);

        assertEquals(400, r.httpStatus());
        JsonNode error = body(r);
        assertEquals(code, error.get("code").asInt(), error.toString());
        assertFalse(error.get("msg").asText().isEmpty());
        assertTrue(backend.calls.isEmpty(), "backend called: " + backend.calls);
    }

    @Test
    void environmentErrorNamesEveryBadVariable() throws IOException {
        JsonNode error = body(run(req("ADD", null, null, "eth/0", null, PLUGIN)));
        String msg = error.get("msg").asText();
        assertTrue(
                msg.contains("CNI_CONTAINERID")
                        && msg.contains("CNI_NETNS")
                        && msg.contains("CNI_IFNAME"),
                msg);
    }

    @Test
    void errorObjectEchoesTheRequestVersionWhenItLooksLikeOne() throws IOException {
        assertEquals(
                "0.2.0",
                body(run(add("{'cniVersion':'0.2.0','name':'n','type':'cadastre'}")))
                        .get("cniVersion")
                        .asText());
        assertEquals(
                "1.1.0",
                body(run(add("{'cniVersion':'latest','name':'n','type':'cadastre'}")))
                        .get("cniVersion")
                        .asText());
        assertEquals(
                "1.1.0",
                body(run(req("ADD", "c", "/n", "eth0", null, "nonsense")))
                        .get("cniVersion")
                        .asText());
    }

    // --- VERSION ---

    @Test
    void versionIsAnsweredWithoutTheBackend() {
        CniResponse r = run(req("VERSION", null, null, null, null, "{'cniVersion':'1.0.0'}"));
        assertEquals(200, r.httpStatus());
        assertArrayEquals(CniVersions.versionReply(j("{'cniVersion':'1.0.0'}")), r.body());
        assertEquals(
                CniResponse.ok(CniVersions.versionReply(null)),
                run(req("VERSION", null, null, null, null, null)));
        assertTrue(backend.calls.isEmpty());
    }

    // --- ADD ---

    @Test
    void addOfTheFullPlugin() throws IOException {
        String conf =
                "{'cniVersion':'1.0.0','name':'k8s-pod-network','type':'cadastre','mtu':1450,"
                        + "'ipam':{'pools':['v4','v6']},'runtimeConfig':{'ips':['198.18.0.9/24','198.18.0.7']},"
                        + "'args':{'cni':{'ips':['fd00:198::9']}}}";
        CniResponse r =
                run(
                        req(
                                "ADD",
                                "abc123",
                                "/var/run/netns/pod1",
                                "eth0",
                                K8S_ARGS + ";IP=198.18.0.7",
                                conf));

        assertEquals(200, r.httpStatus());
        assertEquals(CniResults.renderAdd(FakeBackend.DEFAULT_RESULT, "1.0.0"), body(r));
        AddRequest sent = (AddRequest) backend.calls.get(0).args().get(0);
        assertEquals(
                new AddRequest(
                        new Attachment("k8s-pod-network", "abc123", "eth0", "/var/run/netns/pod1"),
                        new PodRef("default", "web-0"),
                        false,
                        List.of("v4", "v6"),
                        List.of("198.18.0.7", "fd00:198::9", "198.18.0.9"),
                        1450),
                sent);
    }

    @Test
    void addOfTheIpamPluginDropsInterfacesAndAddsIpamRoutes() throws IOException {
        backend.onAdd =
                r ->
                        CompletableFuture.completedFuture(
                                new AddResult(
                                        List.of(new Interface("eth0", null, "/n")),
                                        List.of(new IpConfig("198.18.0.20/24", "198.18.0.1", 0)),
                                        List.of(new Route("0.0.0.0/0", "198.18.0.1"))));
        CniResponse r = run(req("ADD", "c1", "/var/run/netns/p", "net1", null, IPAM));

        assertEquals(200, r.httpStatus());
        assertEquals(
                JSON.readTree(
                        j(
                                "{'cniVersion':'0.4.0',"
                                        + "'ips':[{'version':'4','address':'198.18.0.20/24','gateway':'198.18.0.1'}],"
                                        + "'routes':[{'dst':'0.0.0.0/0','gw':'198.18.0.1'},{'dst':'198.19.0.0/16'}],'dns':{}}")),
                body(r));
        AddRequest sent = (AddRequest) backend.calls.get(0).args().get(0);
        assertTrue(sent.ipamOnly());
        assertEquals(List.of("blue-pool"), sent.pools());
        assertEquals(0, sent.mtu());
        assertEquals(new PodRef(null, null), sent.pod());
    }

    /**
     * An address on a range of the netconf's L2 subnet is reported as host-local reports it: with
     * the subnet's prefix length (not the pool's) and the range's gateway; the ranges go to the
     * backend with their defaults applied.
     */
    @Test
    void addOfTheIpamPluginOnASubnetReportsItsPrefixAndGateway() throws IOException {
        backend.onAdd =
                r ->
                        CompletableFuture.completedFuture(
                                new AddResult(
                                        List.of(),
                                        List.of(
                                                new IpConfig("198.19.64.7/16", null, null),
                                                new IpConfig("fd00:198:64::7/112", null, null)),
                                        List.of()));
        String conf =
                "{'cniVersion':'1.0.0','name':'l2','type':'macvlan','master':'eth1','ipam':{'type':'cadastre-ipam',"
                        + "'ranges':[[{'subnet':'198.19.64.0/24','rangeStart':'198.19.64.5','gateway':'198.19.64.254'}]],"
                        + "'routes':[{'dst':'0.0.0.0/0'}]}}";
        CniResponse r = run(req("ADD", "c1", "/var/run/netns/p", "net1", null, conf));

        assertEquals(200, r.httpStatus(), new String(r.body(), StandardCharsets.UTF_8));
        assertEquals(
                JSON.readTree(
                        j(
                                "{'cniVersion':'1.0.0','ips':[{'address':'198.19.64.7/24','gateway':'198.19.64.254'},"
                                        + "{'address':'fd00:198:64::7/112'}],'routes':[{'dst':'0.0.0.0/0'}],'dns':{}}")),
                body(r),
                "an address on no range keeps the backend's prefix and no gateway");
        AddRequest sent = (AddRequest) backend.calls.get(0).args().get(0);
        assertEquals(
                List.of(
                        List.of(
                                new CniBackend.SubnetRange(
                                        "198.19.64.0/24",
                                        "198.19.64.5",
                                        "198.19.64.254",
                                        "198.19.64.254"))),
                sent.rangeSets());
    }

    @Test
    void chainedAddKeepsThePrevResult() throws IOException {
        String conf =
                "{'cniVersion':'1.1.0','name':'n','type':'cadastre',"
                        + "'prevResult':{'cniVersion':'1.1.0','interfaces':[{'name':'dummy0'}],'dns':{'domain':'x'}}}";
        JsonNode result = body(run(add(conf)));

        assertEquals("dummy0", result.at("/interfaces/0/name").asText());
        assertEquals("eth0", result.at("/interfaces/1/name").asText());
        assertEquals(1, result.at("/ips/0/interface").asInt());
        assertEquals("x", result.at("/dns/domain").asText());
    }

    @Test
    void duplicateRequestedIpsAreSentOnce() {
        run(
                req(
                        "ADD",
                        "c",
                        "/n",
                        "eth0",
                        "IP=198.18.0.7,198.18.0.7",
                        "{'cniVersion':'1.1.0','name':'n','type':'cadastre',"
                                + "'runtimeConfig':{'ips':['198.18.0.7/32']}}"));
        assertEquals(
                List.of("198.18.0.7"),
                ((AddRequest) backend.calls.get(0).args().get(0)).requestedIps());
    }

    // --- DEL, CHECK, GC, STATUS ---

    @Test
    void delWithoutNetnsAndWithAnUnusablePrevResult() {
        String conf =
                "{'cniVersion':'1.0.0','name':'n','type':'cadastre','prevResult':{'ips':'garbage'}}";
        CniResponse r = run(req("DEL", "c", "", "eth0", K8S_ARGS, conf));

        assertEquals(CniResponse.empty(), r);
        assertEquals(
                List.of(
                        new FakeBackend.Call(
                                "del", List.of(new Attachment("n", "c", "eth0", null), false))),
                backend.calls);
    }

    @Test
    void delIgnoresAPrevResultThatIsNotAnObject() {
        for (String prev : new String[] {"[]", "'text'", "42"}) {
            backend.calls.clear();
            String conf =
                    "{'cniVersion':'1.0.0','name':'n','type':'cadastre','prevResult':" + prev + "}";
            assertEquals(CniResponse.empty(), run(req("DEL", "c", "", "eth0", null, conf)), prev);
            assertEquals(1, backend.calls.size(), prev);
        }
    }

    @Test
    void checkStillNeedsAnObjectPrevResult() throws IOException {
        String conf = "{'cniVersion':'1.1.0','name':'n','type':'cadastre','prevResult':[]}";
        assertEquals(6, body(run(req("CHECK", "c", "/n", "eth0", null, conf))).get("code").asInt());
        assertTrue(backend.calls.isEmpty());
    }

    @Test
    void containerIdsAndNetworkNamesAreCappedAt255Characters() throws IOException {
        assertEquals(
                CniResponse.empty(), run(req("DEL", "c".repeat(255), null, "eth0", null, PLUGIN)));
        JsonNode tooLong = body(run(req("DEL", "c".repeat(256), null, "eth0", null, PLUGIN)));
        assertEquals(4, tooLong.get("code").asInt());
        assertTrue(
                tooLong.get("msg").asText().length() < 400,
                "the value is cut in the message: " + tooLong);
        JsonNode longName =
                body(
                        run(
                                req(
                                        "DEL",
                                        "c",
                                        null,
                                        "eth0",
                                        null,
                                        "{'cniVersion':'1.0.0','name':'"
                                                + "n".repeat(256)
                                                + "','type':'cadastre'}")));
        assertEquals(7, longName.get("code").asInt());
        assertEquals(1, backend.calls.size(), "only the first DEL reached the backend");
    }

    @Test
    void valuesEchoedInErrorsAreEscapedAndCut() throws IOException {
        JsonNode error = body(run(req("ADD", "c\r\nINFO forged line", "/n", "eth0", null, PLUGIN)));
        String msg = error.get("msg").asText();
        assertFalse(msg.contains("\n") || msg.contains("\r"), msg);
        assertTrue(msg.contains("c\\r\\nINFO forged line"), msg);
    }

    @Test
    void routesOfTheWrongRoleAreRefusedWithoutEchoingThem() throws IOException {
        String conf =
                "{'cniVersion':'1.1.0','name':'n','type':'cadastre','ipam':{'routes':[{'dst':'0.0.0.0/0','token':'s3cret'}]}}";
        JsonNode error = body(run(req("ADD", "c", "/n", "eth0", null, conf)));
        assertEquals(2, error.get("code").asInt());
        assertFalse(error.toString().contains("s3cret"), error.toString());
    }

    @Test
    void delOfTheIpamPlugin() {
        assertEquals(CniResponse.empty(), run(req("DEL", "c", "/n", "net1", null, IPAM)));
        assertEquals(
                List.of(new Attachment("blue", "c", "net1", "/n"), true),
                backend.calls.get(0).args());
    }

    @Test
    void checkPassesThePrevResultAndTheBandwidthLimits() {
        String conf =
                "{'cniVersion':'0.4.0','name':'n','type':'cadastre',"
                        + "'runtimeConfig':{'bandwidth':{'egressRate':5000000}},'prevResult':"
                        + "{'cniVersion':'0.4.0','interfaces':[{'name':'eth0','sandbox':'/n'}],"
                        + "'ips':[{'version':'4','interface':0,'address':'198.18.0.5/32'}]}}";
        assertEquals(CniResponse.empty(), run(req("CHECK", "c", "/n", "eth0", null, conf)));

        assertEquals(
                List.of(
                        new Attachment("n", "c", "eth0", "/n"),
                        false,
                        new AddResult(
                                List.of(new Interface("eth0", null, "/n")),
                                List.of(new IpConfig("198.18.0.5/32", null, 0)),
                                List.of()),
                        new CniBackend.Bandwidth(0, 0, 5_000_000, 0)),
                backend.calls.get(0).args());
    }

    @Test
    void checkDifferencesAreAnError() throws IOException {
        backend.onCheck =
                CompletableFuture.completedFuture(
                        List.of("address 198.18.0.5/32 missing", "route ::/0 missing"));
        CniResponse r =
                run(
                        req(
                                "CHECK",
                                "c",
                                "/n",
                                "eth0",
                                null,
                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre','prevResult':{}}"));

        assertEquals(500, r.httpStatus());
        JsonNode e = body(r);
        assertEquals(CniCodes.CHECK_FAILED, e.get("code").asInt());
        assertEquals(
                "address 198.18.0.5/32 missing\nroute ::/0 missing", e.get("details").asText());
    }

    @Test
    void gcWithValidAttachmentsAndNoEnvironment() {
        String conf =
                "{'cniVersion':'1.1.0','name':'n','type':'cadastre',"
                        + "'cni.dev/valid-attachments':[{'containerID':'a','ifname':'eth0'},{'containerID':'b','ifname':'eth0'}]}";
        assertEquals(
                CniResponse.empty(), run(req("GC", null, null, null, "ignored;malformed", conf)));
        assertEquals(
                List.of(
                        "n",
                        Set.of(new AttachmentRef("a", "eth0"), new AttachmentRef("b", "eth0"))),
                backend.calls.get(0).args());
    }

    @Test
    void statusReportsTheBackendsAnswer() throws IOException {
        String conf = "{'cniVersion':'1.1.0','name':'n','type':'cadastre','ipam':{'pools':['p1']}}";
        assertEquals(CniResponse.empty(), run(req("STATUS", null, null, null, null, conf)));
        assertEquals(List.of(List.of("p1")), backend.calls.get(0).args());

        backend.onStatus =
                CompletableFuture.failedFuture(
                        new CniException(CniCodes.NOT_AVAILABLE, "no pool has room"));
        CniResponse r = run(req("STATUS", null, null, null, null, conf));
        assertEquals(503, r.httpStatus());
        assertEquals(50, body(r).get("code").asInt());
    }

    // --- backend failures ---

    @Test
    void backendCniExceptionKeepsItsCodeAndDetails() throws IOException {
        backend.onAdd =
                r ->
                        CompletableFuture.failedFuture(
                                new CniException(
                                        CniCodes.POOL_EXHAUSTED,
                                        "pool v4 exhausted",
                                        "no free block"));
        CniResponse r = run(add(PLUGIN));

        assertEquals(500, r.httpStatus());
        assertEquals(
                JSON.readTree(
                        j(
                                "{'cniVersion':'1.0.0','code':100,'msg':'pool v4 exhausted','details':'no free block'}")),
                body(r));
    }

    @Test
    void otherBackendFailuresAreTryAgainLater() throws IOException {
        backend.onAdd = r -> CompletableFuture.failedFuture(new IllegalStateException("boom"));
        assertTryAgainLater(run(add(PLUGIN)));

        backend.onAdd =
                r -> {
                    throw new RuntimeException("thrown");
                };
        assertTryAgainLater(run(add(PLUGIN)));

        backend.onAdd = r -> CompletableFuture.completedFuture(null);
        assertTryAgainLater(run(add(PLUGIN)));

        backend.onAdd = r -> null;
        assertTryAgainLater(run(add(PLUGIN)));

        backend.onDel =
                CompletableFuture.failedFuture(
                        new java.util.concurrent.CompletionException(new Error("wrapped")));
        assertTryAgainLater(run(req("DEL", "c", null, "eth0", null, PLUGIN)));
    }

    private static void assertTryAgainLater(CniResponse r) throws IOException {
        assertEquals(503, r.httpStatus());
        JsonNode e = body(r);
        assertEquals(CniCodes.TRY_AGAIN_LATER, e.get("code").asInt());
        assertNull(e.get("details"));
    }

    @Test
    void headerDecodingErrorsAreAnswered() throws IOException {
        CniResponse r =
                handler.handle(
                                name ->
                                        name.equals(CniRequest.HEADER_IFNAME)
                                                ? java.util.Optional.of("%zz")
                                                : java.util.Optional.empty(),
                                j(PLUGIN))
                        .toCompletableFuture()
                        .join();
        assertEquals(400, r.httpStatus());
        assertEquals(4, body(r).get("code").asInt());
        assertEquals("1.0.0", body(r).get("cniVersion").asText());
    }

    @Test
    void responseBodiesAreUtf8Json() {
        CniResponse r = run(add("{'cniVersion':'1.0.0','name':'n','type':'caf\u00e9'}"));
        String text = new String(r.body(), StandardCharsets.UTF_8);
        assertTrue(text.contains("caf\u00e9"), text);
    }
}
