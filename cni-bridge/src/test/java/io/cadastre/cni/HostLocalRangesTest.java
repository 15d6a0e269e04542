package io.cadastre.cni;

import static io.cadastre.cni.NetConfTest.j;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.cni.CniBackend.SubnetRange;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** host-local's {@code ranges} and {@code subnet} in an IPAM-only netconf: defaults, checks, error codes. */
class HostLocalRangesTest {

    private static NetConf ipamOnly(String ipamFields) {
        return NetConf.parse(
                j(
                        "{'cniVersion':'1.0.0','name':'l2','type':'macvlan','master':'eth1',"
                                + "'ipam':{'type':'cadastre-ipam'"
                                + (ipamFields.isEmpty() ? "" : "," + ipamFields)
                                + "}}"));
    }

    @Test
    void theSingleRangeFormGetsHostLocalsDefaults() {
        assertEquals(
                List.of(
                        List.of(
                                new SubnetRange(
                                        "198.19.64.0/24",
                                        "198.19.64.1",
                                        "198.19.64.254",
                                        "198.19.64.1"))),
                ipamOnly("'subnet':'198.19.64.0/24'").ipam().ranges(),
                "gateway and rangeStart network+1, rangeEnd broadcast-1");
        assertEquals(
                List.of(
                        List.of(
                                new SubnetRange(
                                        "fd00:198:64::/120",
                                        "fd00:198:64::1",
                                        "fd00:198:64::ff",
                                        "fd00:198:64::1"))),
                ipamOnly("'subnet':'fd00:198:64::/120'").ipam().ranges(),
                "IPv6: rangeEnd is the last address");
        assertEquals(
                List.of(
                        List.of(
                                new SubnetRange(
                                        "198.19.64.0/24",
                                        "198.19.64.100",
                                        "198.19.64.200",
                                        "198.19.64.254"))),
                ipamOnly(
                                "'subnet':'198.19.64.0/24','rangeStart':'198.19.64.100','rangeEnd':'198.19.64.200',"
                                        + "'gateway':'198.19.64.254'")
                        .ipam()
                        .ranges());
        assertEquals(
                List.of(),
                ipamOnly("'pools':['l2']").ipam().ranges(),
                "no range: the pools' own CIDRs");
    }

    @Test
    void rangesAreReadInOrderCanonicalAfterTheSingleRange() {
        NetConf c =
                ipamOnly(
                        "'subnet':'198.19.64.0/24','ranges':[[{'subnet':'FD00:198:64:0::/120','gateway':'fd00:198:64:0::fe'},"
                                + "{'subnet':'fd00:198:65::/120'}]]");
        assertEquals(
                List.of(
                        List.of(
                                new SubnetRange(
                                        "198.19.64.0/24",
                                        "198.19.64.1",
                                        "198.19.64.254",
                                        "198.19.64.1")),
                        List.of(
                                new SubnetRange(
                                        "fd00:198:64::/120",
                                        "fd00:198:64::1",
                                        "fd00:198:64::ff",
                                        "fd00:198:64::fe"),
                                new SubnetRange(
                                        "fd00:198:65::/120",
                                        "fd00:198:65::1",
                                        "fd00:198:65::ff",
                                        "fd00:198:65::1"))),
                c.ipam().ranges());
        assertEquals(
                Optional.of(c.ipam().ranges().get(1).get(1)),
                HostLocalRanges.rangeOf(c.ipam().ranges(), "fd00:198:65::7"));
        assertEquals(Optional.empty(), HostLocalRanges.rangeOf(c.ipam().ranges(), "198.19.65.7"));
    }

    static Stream<Arguments> badRanges() {
        return Stream.of(
                Arguments.of(
                        "'subnet':'198.19.64.1/24'",
                        7,
                        "host bits set: its network is 198.19.64.0/24"),
                Arguments.of(
                        "'subnet':'198.19.64.0/31'", 7, "too small to allocate from (at most /30)"),
                Arguments.of("'subnet':'fd00::/127'", 7, "at most /126"),
                Arguments.of("'subnet':'198.19.64.0'", 7, "not in CIDR notation"),
                Arguments.of("'subnet':'::ffff:198.19.64.0/24'", 7, "IPv4-mapped"),
                Arguments.of("'subnet':24", 6, "ipam.subnet must be a string"),
                Arguments.of(
                        "'subnet':'198.19.64.0/24','rangeStart':'198.19.65.1'",
                        7,
                        "ipam.rangeStart 198.19.65.1 is not inside"),
                Arguments.of(
                        "'subnet':'198.19.64.0/24','gateway':'fd00::1'",
                        7,
                        "ipam.gateway fd00::1 is not inside"),
                Arguments.of(
                        "'subnet':'198.19.64.0/24','rangeEnd':'198.19.64'",
                        7,
                        "ipam.rangeEnd \"198.19.64\" is not an IP address"),
                Arguments.of(
                        "'subnet':'198.19.64.0/24','rangeStart':'198.19.64.9','rangeEnd':'198.19.64.8'",
                        7,
                        "lies before rangeStart"),
                Arguments.of("'gateway':'198.19.64.1'", 7, "ipam.gateway needs ipam.subnet"),
                Arguments.of("'ranges':{}", 6, "ipam.ranges must be an array"),
                Arguments.of(
                        "'ranges':[{'subnet':'198.19.64.0/24'}]",
                        6,
                        "ipam.ranges[0] must be an array of ranges"),
                Arguments.of("'ranges':[[]]", 7, "ipam.ranges[0] holds no range"),
                Arguments.of(
                        "'ranges':[['198.19.64.0/24']]", 6, "ipam.ranges[0][0] must be an object"),
                Arguments.of(
                        "'ranges':[[{'rangeStart':'198.19.64.1'}]]",
                        7,
                        "missing required field ipam.ranges[0][0].subnet"),
                Arguments.of(
                        "'ranges':[[{'subnet':'198.19.64.0/24'},{'subnet':'fd00::/120'}]]",
                        7,
                        "mixes IPv4 and IPv6"),
                Arguments.of(
                        "'ranges':[[{'subnet':'198.19.64.0/24'},{'subnet':'198.19.64.0/25'}]]",
                        7,
                        "overlap"),
                Arguments.of(
                        "'ranges':[[{'subnet':'198.19.64.0/24'}],[{'subnet':'198.19.65.0/24'}]]",
                        7,
                        "two IPv4 range sets"),
                Arguments.of(
                        "'subnet':'198.19.64.0/24','ranges':[[{'subnet':'198.19.65.0/24'}]]",
                        7,
                        "two IPv4 range sets"));
    }

    @ParameterizedTest
    @MethodSource("badRanges")
    void badRangesGetACodeAndAMessageNamingThePath(String fields, int code, String message) {
        CniException e = assertThrows(CniException.class, () -> ipamOnly(fields));
        assertEquals(code, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }

    @Test
    void theFullPluginRefusesSubnetFields() {
        for (String field :
                List.of(
                        "'ranges':[[{'subnet':'198.19.64.0/24'}]]",
                        "'subnet':'198.19.64.0/24'",
                        "'gateway':'198.19.64.1'")) {
            CniException e =
                    assertThrows(
                            CniException.class,
                            () ->
                                    NetConf.parse(
                                            j(
                                                    "{'cniVersion':'1.0.0','name':'n',"
                                                            + "'type':'cadastre','ipam':{"
                                                            + field
                                                            + "}}")));
            assertEquals(CniCodes.UNSUPPORTED_FIELD, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("on no subnet"), e.getMessage());
        }
    }
}
