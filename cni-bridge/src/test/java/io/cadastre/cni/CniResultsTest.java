package io.cadastre.cni;

import static io.cadastre.cni.NetConfTest.j;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.cni.CniBackend.AddResult;
import io.cadastre.cni.CniBackend.Interface;
import io.cadastre.cni.CniBackend.IpConfig;
import io.cadastre.cni.CniBackend.Route;
import java.io.IOException;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class CniResultsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Dual stack, host and container interfaces, a route without gateway, an interface without MAC. */
    static final AddResult DUAL_STACK =
            new AddResult(
                    List.of(
                            new Interface("cali1234abcd", "ee:ee:ee:ee:ee:ee", null),
                            new Interface("eth0", null, "/var/run/netns/pod1")),
                    List.of(
                            new IpConfig("198.18.0.5/32", "169.254.1.1", 1),
                            new IpConfig("fd00:198::5/128", null, 1)),
                    List.of(new Route("0.0.0.0/0", "169.254.1.1"), new Route("::/0", null)));

    static final AddResult IPAM_ONLY =
            new AddResult(
                    List.of(),
                    List.of(new IpConfig("198.18.0.6/24", "198.18.0.1", null)),
                    List.of(new Route("0.0.0.0/0", null)));

    static JsonNode tree(String singleQuoted) throws IOException {
        return JSON.readTree(j(singleQuoted));
    }

    static Stream<Arguments> shapes() {
        String modern =
                "{'cniVersion':'%s','interfaces':[{'name':'cali1234abcd','mac':'ee:ee:ee:ee:ee:ee'},"
                        + "{'name':'eth0','sandbox':'/var/run/netns/pod1'}],"
                        + "'ips':[{'interface':1,'address':'198.18.0.5/32','gateway':'169.254.1.1'},"
                        + "{'interface':1,'address':'fd00:198::5/128'}],"
                        + "'routes':[{'dst':'0.0.0.0/0','gw':'169.254.1.1'},{'dst':'::/0'}],'dns':{}}";
        String legacy =
                "{'cniVersion':'%s','interfaces':[{'name':'cali1234abcd','mac':'ee:ee:ee:ee:ee:ee'},"
                        + "{'name':'eth0','sandbox':'/var/run/netns/pod1'}],"
                        + "'ips':[{'version':'4','interface':1,'address':'198.18.0.5/32','gateway':'169.254.1.1'},"
                        + "{'version':'6','interface':1,'address':'fd00:198::5/128'}],"
                        + "'routes':[{'dst':'0.0.0.0/0','gw':'169.254.1.1'},{'dst':'::/0'}],'dns':{}}";
        return Stream.of(
                Arguments.of("1.1.0", modern.formatted("1.1.0")),
                Arguments.of("1.0.0", modern.formatted("1.0.0")),
                Arguments.of("0.4.0", legacy.formatted("0.4.0")),
                Arguments.of("0.3.1", legacy.formatted("0.3.1")),
                Arguments.of("0.3.0", legacy.formatted("0.3.0")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void addResultShapePerVersion(String version, String expected) throws IOException {
        assertEquals(tree(expected), CniResults.renderAdd(DUAL_STACK, version));
    }

    @Test
    void ipamOnlyResultHasNoInterfaces() throws IOException {
        assertEquals(
                tree(
                        "{'cniVersion':'1.0.0','ips':[{'address':'198.18.0.6/24','gateway':'198.18.0.1'}],"
                                + "'routes':[{'dst':'0.0.0.0/0'}],'dns':{}}"),
                CniResults.renderAdd(IPAM_ONLY, "1.0.0"));
        assertEquals(
                tree(
                        "{'cniVersion':'0.3.1','ips':[{'version':'4','address':'198.18.0.6/24','gateway':'198.18.0.1'}],"
                                + "'routes':[{'dst':'0.0.0.0/0'}],'dns':{}}"),
                CniResults.renderAdd(IPAM_ONLY, "0.3.1"));
    }

    @Test
    void emptyResultIsJustVersionAndDns() throws IOException {
        assertEquals(
                tree("{'cniVersion':'1.1.0','dns':{}}"),
                CniResults.renderAdd(new AddResult(List.of(), List.of(), List.of()), "1.1.0"));
    }

    @Test
    void unsupportedVersionIsAProgrammingError() {
        assertThrows(
                IllegalArgumentException.class, () -> CniResults.renderAdd(DUAL_STACK, "0.2.0"));
    }

    static Stream<Arguments> roundTrips() {
        return CniVersions.SUPPORTED.stream()
                .flatMap(
                        v ->
                                Stream.of(
                                        Arguments.of(v, DUAL_STACK),
                                        Arguments.of(v, IPAM_ONLY),
                                        Arguments.of(v, FakeBackend.DEFAULT_RESULT)));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("roundTrips")
    void prevResultRoundTrip(String version, AddResult result) throws IOException {
        JsonNode rendered =
                JSON.readTree(CniResults.toBytes(CniResults.renderAdd(result, version)));
        assertEquals(result, CniResults.parsePrevResult(rendered));
    }

    @Test
    void prevResultIgnoresFieldsItDoesNotModel() throws IOException {
        AddResult parsed =
                CniResults.parsePrevResult(
                        tree(
                                "{'cniVersion':'1.0.0',"
                                        + "'interfaces':[{'name':'eth0','mtu':1500,'socketPath':'/x','pciID':'0000:00:1f.6'}],"
                                        + "'ips':[{'address':'10.1.0.5/16','interface':0}],"
                                        + "'routes':[{'dst':'0.0.0.0/0','mtu':1400,'priority':5,'table':100,'scope':0}],"
                                        + "'dns':{'nameservers':['10.1.0.1']},'extra':true}"));
        assertEquals(
                new AddResult(
                        List.of(new Interface("eth0", null, null)),
                        List.of(new IpConfig("10.1.0.5/16", null, 0)),
                        List.of(new Route("0.0.0.0/0", null))),
                parsed);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "6|[]",
                "6|{'interfaces':{}}",
                "6|{'interfaces':['eth0']}",
                "6|{'interfaces':[{'name':1}]}",
                "6|{'ips':[{'address':['10.0.0.1/8']}]}",
                "6|{'ips':[{'address':'10.0.0.1/8','interface':'0'}]}",
                "6|{'routes':'0.0.0.0/0'}",
                "7|{'interfaces':[{'mac':'ee:ee:ee:ee:ee:ee'}]}",
                "7|{'ips':[{'gateway':'10.0.0.1'}]}",
                "7|{'ips':[{'address':'10.0.0.1'}]}",
                "7|{'ips':[{'address':'10.0.0.1/8','gateway':'router'}]}",
                "7|{'ips':[{'address':'10.0.0.1/8','interface':0}]}",
                "7|{'interfaces':[{'name':'eth0'}],'ips':[{'address':'10.0.0.1/8','interface':-1}]}",
                "7|{'routes':[{'gw':'10.0.0.1'}]}",
                "7|{'routes':[{'dst':'default'}]}",
                "7|{'routes':[{'dst':'0.0.0.0/0','gw':'::g'}]}",
            })
    void invalidPrevResult(String row) throws IOException {
        String[] parts = row.split("\\|", 2);
        CniException e =
                assertThrows(CniException.class, () -> CniResults.parsePrevResult(tree(parts[1])));
        assertEquals(Integer.parseInt(parts[0]), e.code(), e.getMessage());
    }

    @Test
    void chainingAppendsToPrevResultAndShiftsInterfaceIndices() throws IOException {
        JsonNode prev =
                tree(
                        "{'cniVersion':'1.0.0','interfaces':[{'name':'lo0'}],"
                                + "'ips':[{'address':'10.9.0.1/32','interface':0}],'dns':{'nameservers':['10.9.0.53']},'custom':1}");
        JsonNode chained = CniResults.chain(CniResults.renderAdd(DUAL_STACK, "1.0.0"), prev);

        assertEquals(
                tree(
                        "{'cniVersion':'1.0.0','interfaces':[{'name':'lo0'},"
                                + "{'name':'cali1234abcd','mac':'ee:ee:ee:ee:ee:ee'},{'name':'eth0','sandbox':'/var/run/netns/pod1'}],"
                                + "'ips':[{'address':'10.9.0.1/32','interface':0},"
                                + "{'interface':2,'address':'198.18.0.5/32','gateway':'169.254.1.1'},"
                                + "{'interface':2,'address':'fd00:198::5/128'}],"
                                + "'routes':[{'dst':'0.0.0.0/0','gw':'169.254.1.1'},{'dst':'::/0'}],"
                                + "'dns':{'nameservers':['10.9.0.53']},'custom':1}"),
                chained);
    }

    @Test
    void errorObjects() throws IOException {
        assertEquals(
                tree("{'cniVersion':'1.1.0','code':7,'msg':'bad','details':'longer'}"),
                CniResults.error("1.1.0", 7, "bad", "longer"));
        assertEquals(
                tree("{'cniVersion':'0.4.0','code':11,'msg':'later'}"),
                CniResults.error("0.4.0", 11, "later", null));
    }
}
