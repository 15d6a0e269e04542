package io.cadastre.ctl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

/** Address literals: what passes to the agent and what is refused locally. */
class IpLiteralTest {
    @ParameterizedTest
    @ValueSource(
            strings = {
                "198.18.0.3",
                "0.0.0.0",
                "255.255.255.255",
                "10.0.0.1",
                "::",
                "::1",
                "1::",
                "fd00:198::3",
                "FD00:198::3",
                "fe80::ecee:eeff:feee:eeee",
                "2001:db8:0:0:0:0:0:1",
                "2001:db8::0:1",
                "1:2:3:4:5:6:7::",
                "::2:3:4:5:6:7:8",
                "::ffff:198.18.0.3",
                "64:ff9b::198.18.0.3",
                "1:2:3:4:5:6:1.2.3.4"
            })
    void addressesAreAccepted(String text) {
        assertEquals(true, IpLiteral.isValid(text), text);
        assertEquals(text, new IpLiteral.Converter().convert(text));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                " ",
                "198.18.0.300",
                "198.18.0",
                "198.18.0.3.4",
                "198.18.0.03",
                "198.18..3",
                "198.18.0.3 ",
                "+1.2.3.4",
                "1.2.3.-4",
                "node-a",
                "localhost",
                "198.18.0.0/26",
                "١.٢.٣.٤",
                ":",
                ":::",
                "1:::2",
                "1::2::3",
                "fd00:198:::1",
                "12345::1",
                "g::1",
                "1:2:3:4:5:6:7:8:9",
                "1:2:3:4:5:6:7",
                "1:2:3:4:5:6:7::8",
                "::1.2.3",
                "1.2.3.4::",
                "::1.2.3.4:5",
                "fe80::1%eth0",
                "[::1]",
                "1:2:3:4:5:6:7:1.2.3.4",
                ":1::2",
                "1::2:"
            })
    void nonAddressesAreRefused(String text) {
        assertEquals(false, IpLiteral.isValid(text), text);
        assertThrows(TypeConversionException.class, () -> new IpLiteral.Converter().convert(text));
    }

    @Test
    void nullIsNotAnAddress() {
        assertEquals(false, IpLiteral.isValid(null));
        assertEquals(false, IpLiteral.isCidr(null));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "198.18.0.0/15",
                "198.18.0.0/0",
                "198.18.0.3/32",
                "0.0.0.0/0",
                "fd00:198::/48",
                "fd00:198:70::/112",
                "::/0",
                "::1/128",
                "::ffff:198.18.0.0/120",
                "198.18.0.1/16"
            })
    void cidrsAreAccepted(String text) {
        assertEquals(true, IpLiteral.isCidr(text), text);
        assertEquals(text, new IpLiteral.CidrConverter().convert(text));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "/",
                "198.18.0.0",
                "198.18.0.0/",
                "/16",
                "198.18.0.0/33",
                "198.18.0.0/016",
                "198.18.0.0/-1",
                "198.18.0.0/+8",
                "198.18.0.0/16/16",
                "198.18.0.0/ 16",
                "198.18.0/16",
                "fd00:198::/129",
                "fd00:198::/1000",
                "fd00:198::/4a",
                "fd00:198:::/48",
                "node-a/16",
                "198.18.0.0/١٦"
            })
    void nonCidrsAreRefused(String text) {
        assertEquals(false, IpLiteral.isCidr(text), text);
        assertThrows(
                TypeConversionException.class, () -> new IpLiteral.CidrConverter().convert(text));
    }
}
