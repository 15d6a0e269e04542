package io.cadastre.cni;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IpLiteralsTest {

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "198.18.0.5, 198.18.0.5",
        "0.0.0.0, 0.0.0.0",
        "255.255.255.255, 255.255.255.255",
        "fd00:198::5, fd00:198::5",
        "FD00:0198:0000:0000:0000:0000:0000:0005, fd00:198::5",
        "::, ::",
        "::1, ::1",
        "2001:db8:0:0:1:0:0:1, 2001:db8::1:0:0:1",
        "2001:db8:0:1:1:1:1:1, 2001:db8:0:1:1:1:1:1",
        "::ffff:198.18.0.5, 198.18.0.5",
    })
    void literalAddressesAreCanonicalised(String in, String canonical) {
        assertEquals(Optional.of(canonical), IpLiterals.canonicalAddress(in));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "localhost",
                "example.com",
                "1",
                "1.2.3",
                "256.1.1.1",
                "01.2.3.4",
                "1.2.3.4.5",
                " 1.2.3.4",
                "1.2.3.4/32",
                "fe80::1%eth0",
                "1::2::3",
                "gggg::1",
                "[::1]",
                ":::",
                "1.2.3.-4"
            })
    void nonLiteralsAreRefused(String in) {
        assertEquals(Optional.empty(), IpLiterals.canonicalAddress(in));
    }

    @ParameterizedTest
    @CsvSource({
        "198.18.0.5/32, true", "198.18.0.0/15, true", "0.0.0.0/0, true", "198.18.0.5/33, false",
        "198.18.0.5/, false", "198.18.0.5/032, false", "198.18.0.5, false", "fd00::/48, true",
        "fd00::1/128, true", "fd00::1/129, false", "host/24, false", "1.2.3.4/+8, false",
    })
    void cidrs(String in, boolean valid) {
        assertEquals(valid, IpLiterals.isCidr(in));
    }

    @ParameterizedTest
    @CsvSource({"198.18.0.5/24, 198.18.0.5", "198.18.0.5, 198.18.0.5", "fd00:0::7/64, fd00::7"})
    void prefixIsDropped(String in, String address) {
        assertEquals(Optional.of(address), IpLiterals.addressDroppingPrefix(in));
    }
}
