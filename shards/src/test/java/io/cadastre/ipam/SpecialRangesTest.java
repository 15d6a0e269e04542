package io.cadastre.ipam;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SpecialRangesTest {

    /** The ranges a probe created pools over (issue 12), and the ranges around them. */
    @ParameterizedTest
    @CsvSource({
        "0.0.0.0/8, 0.0.0.0/8",
        "127.0.0.0/24, 127.0.0.0/8",
        "255.255.255.0/24, 240.0.0.0/4",
        "224.0.0.0/24, 224.0.0.0/4",
        "169.254.1.0/24, 169.254.0.0/16",
        "0.0.0.0/0, 0.0.0.0/8",
        "ff02::/120, ff00::/8",
        "::/120, ::/8",
        "::1/128, ::/8",
        "fe80::/120, fe80::/10",
        "'::ffff:198.19.0.0/120', ::/8",
        "::/0, ::/8"
    })
    void aPoolOverASpecialRangeIsRefusedNamingTheRange(String pool, String special) {
        Optional<String> refusal = SpecialRanges.refusal(Cidr.parse(pool));
        assertTrue(refusal.isPresent(), pool);
        assertTrue(refusal.get().contains("overlaps " + special + " "), refusal.get());
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> SpecialRanges.requireUsable(Cidr.parse(pool)));
        assertEquals(refusal.get(), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "198.18.0.0/15",
                "10.0.0.0/8",
                "100.64.0.0/10",
                "1.0.0.0/8",
                "223.255.255.0/24",
                "169.253.0.0/16",
                "fd00:198::/48",
                "2001:db8::/32",
                "100::/64",
                "fe00::/9"
            })
    void ordinaryRangesAreUsable(String pool) {
        assertEquals(Optional.empty(), SpecialRanges.refusal(Cidr.parse(pool)), pool);
        SpecialRanges.requireUsable(Cidr.parse(pool));
    }
}
