package io.cadastre.ipam;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CidrTest {

    @ParameterizedTest
    @CsvSource({
        "198.18.0.0/15, V4, 15, 131072",
        "198.18.0.64/26, V4, 26, 64",
        "198.18.0.5/32, V4, 32, 1",
        "fd00:198::/48, V6, 48, 1208925819614629174706176",
        "FD00:0198:0:0::/122, V6, 122, 64",
    })
    void parsesNetworks(String text, IpFamily family, int prefix, String size) {
        Cidr cidr = Cidr.parse(text);
        assertEquals(family, cidr.family());
        assertEquals(prefix, cidr.prefixLength());
        assertEquals(new BigInteger(size), cidr.size());
        assertEquals(cidr, Cidr.parse(cidr.toString()));
        assertEquals(cidr, Cidr.fromEntityId(cidr.entityId()));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "198.18.0.1/24",
                "198.18.0.0",
                "198.18.0.0/33",
                "fd00::1/64",
                "not-a-cidr",
                "",
                "198.18.0.0/-1",
                "fe80::/64%eth0",
                "198.18.0.0/15/2"
            })
    void refusesMalformedOrHostBits(String text) {
        assertThrows(IllegalArgumentException.class, () -> Cidr.parse(text));
    }

    @Test
    void canonicalFormIsRfc5952() {
        assertEquals("fd00:198::/122", Cidr.parse("fd00:0198:0000::0/122").toString());
        assertEquals("fd00:198::-122", Cidr.parse("fd00:198::/122").entityId());
    }

    @Test
    void carvesSubnets() {
        Cidr pool = Cidr.parse("198.18.0.0/24");
        assertEquals(BigInteger.valueOf(4), pool.subnetCount(26));
        assertEquals(Cidr.parse("198.18.0.192/26"), pool.subnet(26, BigInteger.valueOf(3)));
        assertEquals(BigInteger.valueOf(2), pool.subnetIndex(Cidr.parse("198.18.0.128/26")));
        assertEquals(Cidr.parse("198.18.0.64/26"), pool.subnetContaining("198.18.0.100", 26));
        assertThrows(IllegalArgumentException.class, () -> pool.subnet(26, BigInteger.valueOf(4)));
        assertThrows(IllegalArgumentException.class, () -> pool.subnetCount(23));
        assertThrows(IllegalArgumentException.class, () -> pool.subnetContaining("198.18.1.1", 26));

        Cidr v6 = Cidr.parse("fd00:198::/120");
        assertEquals(Cidr.parse("fd00:198::c0/122"), v6.subnet(122, BigInteger.valueOf(3)));
    }

    @Test
    void addressesByOffset() {
        Cidr block = Cidr.parse("198.18.0.64/26");
        assertEquals("198.18.0.64", block.addressAt(0));
        assertEquals("198.18.0.127", block.addressAt(63));
        assertEquals(5, block.offsetOf("198.18.0.69"));
        assertThrows(IllegalArgumentException.class, () -> block.addressAt(64));
        assertThrows(IllegalArgumentException.class, () -> block.offsetOf("198.18.0.128"));
        assertEquals("fd00:198::3f", Cidr.parse("fd00:198::/122").addressAt(63));
    }

    @Test
    void containmentAndOverlap() {
        Cidr pool = Cidr.parse("198.18.0.0/15");
        assertTrue(pool.contains("198.19.255.255"));
        assertFalse(pool.contains("198.20.0.0"));
        assertFalse(pool.contains("fd00::1"));
        assertFalse(pool.contains("garbage"));
        assertTrue(pool.contains(Cidr.parse("198.19.0.0/16")));
        assertFalse(Cidr.parse("198.19.0.0/16").contains(pool));
        assertTrue(Cidr.parse("198.19.0.0/16").overlaps(pool));
        assertFalse(Cidr.parse("198.18.0.0/16").overlaps(Cidr.parse("198.19.0.0/16")));
        assertFalse(pool.overlaps(Cidr.parse("fd00::/8")));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "198.18.0.1/32",
                "198.18.0.256",
                "fe80::1%eth0",
                "",
                " ",
                "1.2.3",
                "198.18.0.0/24"
            })
    void refusesNonLiteralAddresses(String literal) {
        assertThrows(IllegalArgumentException.class, () -> IpAddresses.parse(literal));
    }
}
