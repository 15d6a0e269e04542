package io.cadastre.cni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.cni.CniBackend.AttachmentRef;
import io.cadastre.cni.CniBackend.Route;
import io.cadastre.cni.NetConf.Mode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class NetConfTest {

    /** JSON with ' for " so that the tables stay readable. */
    static byte[] j(String singleQuoted) {
        return singleQuoted.replace('\'', '"').getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void fullPluginConfig() {
        NetConf c =
                NetConf.parse(
                        j(
                                "{'cniVersion':'1.1.0','name':'k8s-pod-network','type':'cadastre','mtu':1450,"
                                        + "'agentSocket':'/run/cadastre/cni.sock','ipam':{'pools':['v4','v6','v4']},"
                                        + "'runtimeConfig':{'ips':['198.18.0.9/24'],'portMappings':[]},'args':{'cni':{'ips':['fd00:198::9']}},"
                                        + "'unknown':{'kept':'ignored'}}"));

        assertEquals("1.1.0", c.cniVersion());
        assertEquals("k8s-pod-network", c.name());
        assertEquals(Mode.PLUGIN, c.mode());
        assertEquals(1450, c.mtu());
        assertEquals("/run/cadastre/cni.sock", c.agentSocket());
        assertEquals(List.of("v4", "v6"), c.ipam().pools());
        assertEquals(List.of("198.18.0.9"), c.runtimeConfigIps());
        assertEquals(List.of("fd00:198::9"), c.argsCniIps());
        assertNull(c.prevResult());
        assertNull(c.validAttachments());
    }

    @Test
    void ipamOnlyConfig() {
        NetConf c =
                NetConf.parse(
                        j(
                                "{'cniVersion':'0.4.0','name':'macvlan-net','type':'macvlan','mtu':9000,"
                                        + "'ipam':{'type':'cadastre-ipam','pools':['blue'],'agentSocket':'/x.sock',"
                                        + "'routes':[{'dst':'0.0.0.0/0'},{'dst':'fd00::/8','gw':'fd00::1'},{'dst':'0.0.0.0/0'}]}}"));

        assertEquals(Mode.IPAM_ONLY, c.mode());
        assertTrue(c.ipamOnly());
        assertEquals(0, c.mtu(), "the top-level mtu is the calling plugin's");
        assertEquals("/x.sock", c.agentSocket());
        assertEquals(
                List.of(new Route("0.0.0.0/0", null), new Route("fd00::/8", "fd00::1")),
                c.ipam().routes());
    }

    @Test
    void bandwidthLimitsAreTheFullPluginsAndAsGiven() {
        String limits =
                "'runtimeConfig':{'bandwidth':{'ingressRate':10000000,'ingressBurst':4294967295,"
                        + "'egressRate':1000}}";
        NetConf c =
                NetConf.parse(
                        j("{'cniVersion':'1.0.0','name':'n','type':'cadastre'," + limits + "}"));
        assertEquals(
                new CniBackend.Bandwidth(10_000_000, 4_294_967_295L, 1_000, 0),
                c.runtimeConfigBandwidth());
        assertEquals(
                CniBackend.Bandwidth.NONE,
                NetConf.parse(j("{'cniVersion':'1.0.0','name':'n','type':'cadastre'}"))
                        .runtimeConfigBandwidth());
        // What containerd 1.6 sends: go-cni's struct has no JSON tags.
        assertEquals(
                new CniBackend.Bandwidth(10_000_000, 4_294_967_295L, 5_000_000, 4_294_967_295L),
                NetConf.parse(
                                j(
                                        "{'cniVersion':'1.0.0','name':'n','type':'cadastre',"
                                                + "'runtimeConfig':{'bandwidth':{'IngressRate':10000000,"
                                                + "'IngressBurst':4294967295,'EgressRate':5000000,"
                                                + "'EgressBurst':4294967295}}}"))
                        .runtimeConfigBandwidth());
        NetConf ipamOnly =
                NetConf.parse(
                        j(
                                "{'cniVersion':'1.0.0','name':'n','type':'macvlan',"
                                        + "'ipam':{'type':'cadastre-ipam'},"
                                        + limits
                                        + "}"));
        assertEquals(
                CniBackend.Bandwidth.NONE,
                ipamOnly.runtimeConfigBandwidth(),
                "the calling plugin's (or a chained bandwidth plugin's) business");
    }

    @Test
    void gcValidAttachments() {
        NetConf c =
                NetConf.parse(
                        j(
                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre',"
                                        + "'cni.dev/valid-attachments':[{'containerID':'abc','ifname':'eth0'},{'containerID':'d.e-f_1','ifname':'net1'}]}"));
        assertEquals(
                List.of(new AttachmentRef("abc", "eth0"), new AttachmentRef("d.e-f_1", "net1")),
                c.validAttachments());
    }

    static Stream<Arguments> invalid() {
        String base = "'cniVersion':'1.1.0','name':'n','type':'cadastre'";
        return Stream.of(
                // code 6: not JSON, not an object, wrong JSON types, duplicate keys
                Arguments.of("empty", "", 6),
                Arguments.of("not JSON", "{'cniVersion':", 6),
                Arguments.of("trailing garbage", "{" + base + "} x", 6),
                Arguments.of("array", "[1]", 6),
                Arguments.of("string", "'x'", 6),
                Arguments.of("duplicate key", "{" + base + ",'name':'m'}", 6),
                Arguments.of(
                        "cniVersion not a string",
                        "{'cniVersion':1.1,'name':'n','type':'cadastre'}",
                        6),
                Arguments.of(
                        "name not a string",
                        "{'cniVersion':'1.1.0','name':7,'type':'cadastre'}",
                        6),
                Arguments.of(
                        "type not a string",
                        "{'cniVersion':'1.1.0','name':'n','type':['cadastre']}",
                        6),
                Arguments.of("mtu a string", "{" + base + ",'mtu':'1500'}", 6),
                Arguments.of("mtu fractional", "{" + base + ",'mtu':1500.5}", 6),
                Arguments.of("ipam not an object", "{" + base + ",'ipam':'cadastre-ipam'}", 6),
                Arguments.of("pools not a list", "{" + base + ",'ipam':{'pools':'v4'}}", 6),
                Arguments.of("pool not a string", "{" + base + ",'ipam':{'pools':[1]}}", 6),
                Arguments.of("agentSocket not a string", "{" + base + ",'agentSocket':true}", 6),
                Arguments.of("runtimeConfig not an object", "{" + base + ",'runtimeConfig':[]}", 6),
                Arguments.of(
                        "bandwidth not an object",
                        "{" + base + ",'runtimeConfig':{'bandwidth':1000}}",
                        6),
                Arguments.of(
                        "a rate as text",
                        "{" + base + ",'runtimeConfig':{'bandwidth':{'ingressRate':'10M'}}}",
                        6),
                Arguments.of(
                        "a fractional rate",
                        "{" + base + ",'runtimeConfig':{'bandwidth':{'egressRate':1000.5}}}",
                        6),
                Arguments.of(
                        "a negative rate",
                        "{" + base + ",'runtimeConfig':{'bandwidth':{'egressRate':-1000}}}",
                        7),
                Arguments.of(
                        "a rate below 1 kbit/s",
                        "{" + base + ",'runtimeConfig':{'bandwidth':{'ingressRate':999}}}",
                        7),
                Arguments.of(
                        "a rate above 1 Pbit/s",
                        "{"
                                + base
                                + ",'runtimeConfig':{'bandwidth':{'ingressRate':1000000000000001}}}",
                        7),
                Arguments.of(
                        "a rate beyond 64 bits",
                        "{"
                                + base
                                + ",'runtimeConfig':{'bandwidth':{'ingressRate':99999999999999999999}}}",
                        7),
                Arguments.of(
                        "a rate under two spellings",
                        "{"
                                + base
                                + ",'runtimeConfig':{'bandwidth':{'ingressRate':1000000,'IngressRate':2000000}}}",
                        7),
                Arguments.of(
                        "a burst without its rate",
                        "{"
                                + base
                                + ",'runtimeConfig':{'bandwidth':{'ingressRate':1000000,'egressBurst':80000}}}",
                        7),
                Arguments.of(
                        "runtimeConfig.ips not a list",
                        "{" + base + ",'runtimeConfig':{'ips':'1.2.3.4'}}",
                        6),
                Arguments.of(
                        "args.cni.ips element not a string",
                        "{" + base + ",'args':{'cni':{'ips':[1]}}}",
                        6),
                Arguments.of(
                        "valid-attachments not a list",
                        "{" + base + ",'cni.dev/valid-attachments':{}}",
                        6),
                Arguments.of(
                        "valid attachment not an object",
                        "{" + base + ",'cni.dev/valid-attachments':['abc']}",
                        6),
                // code 1: versions
                Arguments.of(
                        "old version", "{'cniVersion':'0.2.0','name':'n','type':'cadastre'}", 1),
                Arguments.of(
                        "future version", "{'cniVersion':'2.0.0','name':'n','type':'cadastre'}", 1),
                Arguments.of(
                        "not a version", "{'cniVersion':'latest','name':'n','type':'cadastre'}", 1),
                // code 2: a field the full plugin does not support
                Arguments.of(
                        "ipam.routes for the full plugin",
                        "{" + base + ",'ipam':{'routes':[{'dst':'0.0.0.0/0'}]}}",
                        2),
                // code 7: missing or invalid values
                Arguments.of("no cniVersion", "{'name':'n','type':'cadastre'}", 7),
                Arguments.of(
                        "null cniVersion", "{'cniVersion':null,'name':'n','type':'cadastre'}", 7),
                Arguments.of("no name", "{'cniVersion':'1.1.0','type':'cadastre'}", 7),
                Arguments.of("no type", "{'cniVersion':'1.1.0','name':'n'}", 7),
                Arguments.of("empty name", "{'cniVersion':'1.1.0','name':'','type':'cadastre'}", 7),
                Arguments.of(
                        "name starts with -",
                        "{'cniVersion':'1.1.0','name':'-n','type':'cadastre'}",
                        7),
                Arguments.of(
                        "name with /", "{'cniVersion':'1.1.0','name':'a/b','type':'cadastre'}", 7),
                Arguments.of(
                        "name with space",
                        "{'cniVersion':'1.1.0','name':'a b','type':'cadastre'}",
                        7),
                Arguments.of(
                        "other plugin",
                        "{'cniVersion':'1.1.0','name':'n','type':'bridge','ipam':{'type':'host-local'}}",
                        7),
                Arguments.of(
                        "other plugin, no ipam",
                        "{'cniVersion':'1.1.0','name':'n','type':'bridge'}",
                        7),
                Arguments.of(
                        "cadastre with another ipam",
                        "{" + base + ",'ipam':{'type':'host-local'}}",
                        7),
                Arguments.of("mtu too small", "{" + base + ",'mtu':67}", 7),
                Arguments.of("mtu too large", "{" + base + ",'mtu':65536}", 7),
                Arguments.of("mtu zero", "{" + base + ",'mtu':0}", 7),
                Arguments.of("mtu beyond 32 bits", "{" + base + ",'mtu':99999999999}", 7),
                Arguments.of("empty pool name", "{" + base + ",'ipam':{'pools':['v4','']}}", 7),
                Arguments.of(
                        "runtimeConfig ip a name",
                        "{" + base + ",'runtimeConfig':{'ips':['host.example']}}",
                        7),
                Arguments.of(
                        "runtimeConfig ip bad prefix",
                        "{" + base + ",'runtimeConfig':{'ips':['198.18.0.1/40']}}",
                        7),
                Arguments.of(
                        "args.cni ip invalid",
                        "{" + base + ",'args':{'cni':{'ips':['1.2.3.256']}}}",
                        7),
                Arguments.of(
                        "ipam route dst not CIDR",
                        "{'cniVersion':'1.1.0','name':'n','type':'bridge',"
                                + "'ipam':{'type':'cadastre-ipam','routes':[{'dst':'0.0.0.0'}]}}",
                        7),
                Arguments.of(
                        "ipam route gw invalid",
                        "{'cniVersion':'1.1.0','name':'n','type':'bridge',"
                                + "'ipam':{'type':'cadastre-ipam','routes':[{'dst':'0.0.0.0/0','gw':'gw'}]}}",
                        7),
                Arguments.of(
                        "ipam route without dst",
                        "{'cniVersion':'1.1.0','name':'n','type':'bridge',"
                                + "'ipam':{'type':'cadastre-ipam','routes':[{'gw':'10.0.0.1'}]}}",
                        7),
                Arguments.of(
                        "valid attachment without ifname",
                        "{" + base + ",'cni.dev/valid-attachments':[{'containerID':'a'}]}",
                        7),
                Arguments.of(
                        "valid attachment bad container ID",
                        "{"
                                + base
                                + ",'cni.dev/valid-attachments':[{'containerID':'_a','ifname':'eth0'}]}",
                        7),
                Arguments.of(
                        "valid attachment bad ifname",
                        "{"
                                + base
                                + ",'cni.dev/valid-attachments':[{'containerID':'a','ifname':'eth0:1'}]}",
                        7));
    }

    @ParameterizedTest(name = "{0} -> code {2}")
    @MethodSource("invalid")
    void invalidConfigIsRefusedWithItsCode(String what, String json, int code) {
        CniException e = assertThrows(CniException.class, () -> NetConf.parse(j(json)));
        assertEquals(code, e.code(), e.getMessage());
    }

    @Test
    void parseErrorsDoNotQuoteTheDocument() {
        CniException e =
                assertThrows(
                        CniException.class,
                        () ->
                                NetConf.parse(
                                        j("{'cniVersion':'1.1.0','name':'n','password':s3cr3t}")));
        assertEquals(6, e.code());
        assertTrue(!e.getMessage().contains("s3cr3t"), e.getMessage());
    }

    @Test
    void badAddressIsNamedInTheMessage() {
        CniException e =
                assertThrows(
                        CniException.class,
                        () ->
                                NetConf.parse(
                                        j(
                                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre','runtimeConfig':{'ips':['10.0.0.300']}}")));
        assertTrue(e.getMessage().contains("10.0.0.300"), e.getMessage());
    }

    /** The most specific choice wins: the pod's (runtimeConfig, then CNI_ARGS), its namespace's, the netconf's. */
    @Test
    void poolsAreChosenPodFirstThenNamespaceThenNetconf() {
        String ipam =
                "'ipam':{'pools':['net-v4'],'namespacePools':{'team-a':['a-v4','a-v6'],'team-b':['b-v4']}}";
        NetConf plain =
                NetConf.parse(
                        j("{'cniVersion':'1.1.0','name':'n','type':'cadastre'," + ipam + "}"));
        assertEquals(List.of("net-v4"), plain.poolsFor(CniArgs.NONE));
        assertEquals(List.of("net-v4"), plain.poolsFor(CniArgs.parse("K8S_POD_NAMESPACE=other")));
        assertEquals(
                List.of("a-v4", "a-v6"), plain.poolsFor(CniArgs.parse("K8S_POD_NAMESPACE=team-a")));
        assertEquals(
                List.of("pod-v4"),
                plain.poolsFor(CniArgs.parse("K8S_POD_NAMESPACE=team-a;CADASTRE_POOLS=pod-v4")));

        NetConf withRuntime =
                NetConf.parse(
                        j(
                                "{'cniVersion':'1.1.0','name':'n','type':'cadastre',"
                                        + ipam
                                        + ",'runtimeConfig':{'pools':['rt-v4','rt-v4']}}"));
        assertEquals(
                List.of("rt-v4"),
                withRuntime.poolsFor(
                        CniArgs.parse("K8S_POD_NAMESPACE=team-a;CADASTRE_POOLS=pod-v4")));

        NetConf none = NetConf.parse(j("{'cniVersion':'1.1.0','name':'n','type':'cadastre'}"));
        assertEquals(List.of(), none.poolsFor(CniArgs.parse("K8S_POD_NAMESPACE=team-a")));
    }

    @Test
    void malformedPoolChoicesAreInvalidConfig() {
        for (String bad :
                List.of(
                        "'ipam':{'namespacePools':{'a':'x'}}",
                        "'ipam':{'namespacePools':{'a':[]}}",
                        "'ipam':{'namespacePools':{'a':['']}}",
                        "'runtimeConfig':{'pools':['']}",
                        "'ipam':{'namespacePools':[]}")) {
            CniException e =
                    assertThrows(
                            CniException.class,
                            () ->
                                    NetConf.parse(
                                            j(
                                                    "{'cniVersion':'1.1.0','name':'n','type':'cadastre',"
                                                            + bad
                                                            + "}")),
                            bad);
            assertTrue(
                    e.code() == CniCodes.INVALID_NETWORK_CONFIG
                            || e.code() == CniCodes.DECODING_FAILURE,
                    bad + ": " + e.code());
        }
    }
}
