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
    @ValueSource(strings = {
        "198.18.0.3", "0.0.0.0", "255.255.255.255", "10.0.0.1",
        "::", "::1", "1::", "fd00:198::3", "FD00:198::3", "fe80::ecee:eeff:feee:eeee",
        "2001:db8:0:0:0:0:0:1", "2001:db8::0:1", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8",
        "::ffff:198.18.0.3", "64:ff9b::198.18.0.3", "1:2:3:4:5:6:1.2.3.4"})
    void addressesAreAccepted(String text) {
        assertEquals(true, IpLiteral.isValid(text), text);
        assertEquals(text, new IpLiteral.Converter().convert(text));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "", " ", "198.18.0.300", "198.18.0", "198.18.0.3.4", "198.18.0.03", "198.18..3", "198.18.0.3 ",
        "+1.2.3.4", "1.2.3.-4", "node-a", "localhost", "198.18.0.0/26", "١.٢.٣.٤",
        ":", ":::", "1:::2", "1::2::3", "fd00:198:::1", "12345::1", "g::1", "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7", "1:2:3:4:5:6:7::8", "::1.2.3", "1.2.3.4::", "::1.2.3.4:5", "fe80::1%eth0",
        "[::1]", "1:2:3:4:5:6:7:1.2.3.4", ":1::2", "1::2:"})
    void nonAddressesAreRefused(String text) {
        assertEquals(false, IpLiteral.isValid(text), text);
        assertThrows(TypeConversionException.class, () -> new IpLiteral.Converter().convert(text));
    }

    @Test
    void nullIsNotAnAddress() {
        assertEquals(false, IpLiteral.isValid(null));
    }
}
