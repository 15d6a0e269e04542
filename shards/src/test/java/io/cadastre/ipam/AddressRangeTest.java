package io.cadastre.ipam;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The L2 subnet rules: which addresses a range, a range set and the rules allow, per address and per block. */
class AddressRangeTest {
    private static final Cidr SUBNET = Cidr.parse("198.19.64.0/24");

    private static AddressRange range(String start, String end, String gateway) {
        return new AddressRange(SUBNET, start, end, gateway);
    }

    @Test
    void neverTheNetworkTheIpv4BroadcastOrTheGateway() {
        AddressRange r = range(null, null, "198.19.64.1");
        assertFalse(r.allows("198.19.64.0"), "network address");
        assertFalse(r.allows("198.19.64.255"), "broadcast address");
        assertFalse(r.allows("198.19.64.1"), "gateway");
        assertTrue(r.allows("198.19.64.2"));
        assertTrue(r.allows("198.19.64.254"));
        assertFalse(r.allows("198.19.65.2"), "outside the subnet");
        assertFalse(r.allows("fd00::2"), "other family");
        assertFalse(r.allows("not an address"));
        // Even when the range's ends name them: a pod holding one cannot talk on the subnet.
        AddressRange wide = range("198.19.64.0", "198.19.64.255", null);
        assertFalse(wide.allows("198.19.64.0"));
        assertFalse(wide.allows("198.19.64.255"));
        assertTrue(wide.allows("198.19.64.1"), "no gateway: .1 is an address like any other");
    }

    @Test
    void rangeStartAndEndAreInclusive() {
        AddressRange r = range("198.19.64.100", "198.19.64.110", "198.19.64.105");
        assertFalse(r.allows("198.19.64.99"));
        assertTrue(r.allows("198.19.64.100"));
        assertFalse(
                r.allows("198.19.64.105"),
                "the gateway inside the range is skipped, as host-local does");
        assertTrue(r.allows("198.19.64.110"));
        assertFalse(r.allows("198.19.64.111"));
    }

    @Test
    void ipv6HasNoBroadcastButItsNetworkAddressIsNeverGiven() {
        AddressRange r = AddressRange.of(Cidr.parse("fd00:198:64::/120"));
        assertFalse(r.allows("fd00:198:64::"));
        assertTrue(r.allows("fd00:198:64::1"));
        assertTrue(
                r.allows("fd00:198:64::ff"),
                "the last address, as host-local's default rangeEnd for IPv6");
    }

    @Test
    void badRangesAreRefusedNamingTheField() {
        assertTrue(
                assertThrows(IllegalArgumentException.class, () -> range("198.19.65.1", null, null))
                        .getMessage()
                        .contains("rangeStart 198.19.65.1 is not inside subnet 198.19.64.0/24"));
        assertTrue(
                assertThrows(IllegalArgumentException.class, () -> range(null, null, "fd00::1"))
                        .getMessage()
                        .contains("gateway"));
        assertTrue(
                assertThrows(
                                IllegalArgumentException.class,
                                () -> range("198.19.64.9", "198.19.64.8", null))
                        .getMessage()
                        .contains("before rangeStart"));
        assertTrue(
                assertThrows(IllegalArgumentException.class, () -> range("198.19.64", null, null))
                        .getMessage()
                        .contains("not an IP address"));
        assertEquals("198.19.64.10", range("198.19.64.10", null, null).rangeStart(), "canonical");
    }

    @Test
    void aBlockHoldsAnAllowedAddressOnlyWhenMoreThanTheExclusionsOverlapIt() {
        AddressRange r = range(null, null, "198.19.64.1");
        assertFalse(r.allowsAnyIn(Cidr.parse("198.19.64.0/31")), "network and gateway only");
        assertTrue(r.allowsAnyIn(Cidr.parse("198.19.64.0/30")));
        assertFalse(r.allowsAnyIn(Cidr.parse("198.19.64.255/32")), "broadcast only");
        assertTrue(r.allowsAnyIn(SUBNET));
        assertTrue(r.allowsAnyIn(Cidr.parse("198.19.0.0/16")), "a pool holding the subnet");
        assertFalse(r.allowsAnyIn(Cidr.parse("198.19.65.0/24")));
        AddressRange narrow = range("198.19.64.100", "198.19.64.110", null);
        assertFalse(narrow.allowsAnyIn(Cidr.parse("198.19.64.0/26")));
        assertTrue(narrow.allowsAnyIn(Cidr.parse("198.19.64.64/26")));
    }

    @Test
    void aRangeSetIsOneFamilyWithoutOverlaps() {
        AddressRange low = range("198.19.64.10", "198.19.64.20", null);
        AddressRange high = range("198.19.64.30", "198.19.64.40", null);
        RangeSet set = RangeSet.of(low, high);
        assertEquals(Optional.of(high), set.rangeOf("198.19.64.35"));
        assertFalse(set.allows("198.19.64.25"));
        assertThrows(
                IllegalArgumentException.class,
                () -> RangeSet.of(low, range("198.19.64.20", "198.19.64.25", null)));
        assertThrows(
                IllegalArgumentException.class,
                () -> RangeSet.of(low, AddressRange.of(Cidr.parse("fd00::/120"))));
        assertThrows(IllegalArgumentException.class, () -> new RangeSet(List.of()));
    }

    /** The per-block predicate the block entity scans with says exactly what the per-address rule says. */
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3})
    void allowedOrdinalsAgreeWithAllows(long seed) {
        Random random = new Random(seed);
        for (int round = 0; round < 20; round++) {
            int a = random.nextInt(256);
            int b = random.nextInt(256);
            String start = "198.19.64." + Math.min(a, b);
            String end = "198.19.64." + Math.max(a, b);
            String gateway = random.nextBoolean() ? null : "198.19.64." + random.nextInt(256);
            RangeSet set = RangeSet.of(range(start, end, gateway));
            for (String block :
                    List.of(
                            "198.19.64.0/26",
                            "198.19.64.192/26",
                            "198.19.64.96/28",
                            "198.19.64.0/24")) {
                Cidr cidr = Cidr.parse(block);
                IntPredicate allowed = set.allowedOrdinals(cidr);
                boolean any = false;
                for (int ordinal = 0; ordinal < cidr.size().intValueExact(); ordinal++) {
                    boolean expected = set.allows(cidr.addressAt(ordinal));
                    any |= expected;
                    assertEquals(
                            expected,
                            allowed.test(ordinal),
                            "seed " + seed + ": " + set + " at " + cidr.addressAt(ordinal));
                }
                assertEquals(
                        any, set.allowsAnyIn(cidr), "seed " + seed + ": " + set + " in " + cidr);
            }
        }
    }

    @Test
    void rulesForRoutedPodsAllowEverythingAndForAPoolSubnetItsEnds() {
        PoolSpec pool = new PoolSpec("l2", SUBNET, 26, false, true, 0);
        assertTrue(AddressRules.ROUTED.allows(pool, "198.19.64.0"));
        assertEquals(null, AddressRules.ROUTED.within(pool));
        assertFalse(AddressRules.POOL_SUBNET.allows(pool, "198.19.64.0"));
        assertFalse(AddressRules.POOL_SUBNET.allows(pool, "198.19.64.255"));
        assertTrue(AddressRules.POOL_SUBNET.allows(pool, "198.19.64.1"));
        AddressRules v4Only =
                AddressRules.onSubnet(List.of(RangeSet.of(range(null, null, "198.19.64.1"))));
        assertFalse(v4Only.allows(pool, "198.19.64.1"));
        PoolSpec v6 = new PoolSpec("l2v6", Cidr.parse("fd00:198:64::/120"), 122, false, true, 0);
        assertFalse(
                v4Only.allows(v6, "fd00:198:64::5"),
                "a family the range sets leave out gets nothing");
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        AddressRules.onSubnet(
                                List.of(
                                        RangeSet.of(range(null, null, null)),
                                        RangeSet.of(range("198.19.64.9", null, null)))));
    }
}
