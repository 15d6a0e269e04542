package io.cadastre.ipam;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PoolTest {

    private static PoolSpec spec(String cidr, int blockPrefix) {
        return new PoolSpec("p", Cidr.parse(cidr), blockPrefix, false, false, 0);
    }

    @Test
    void handsOutTheLowestUnclaimedBlock() {
        Pool pool = Pool.of(spec("198.18.0.0/24", 26));
        assertEquals(Optional.of(Cidr.parse("198.18.0.0/26")), pool.firstUnclaimedBlock());
        pool.claim(Cidr.parse("198.18.0.0/26"), "a");
        pool.claim(Cidr.parse("198.18.0.128/26"), "b");
        assertEquals(Optional.of(Cidr.parse("198.18.0.64/26")), pool.firstUnclaimedBlock());
        pool.claim(Cidr.parse("198.18.0.64/26"), "a");
        assertEquals(Optional.of(Cidr.parse("198.18.0.192/26")), pool.firstUnclaimedBlock());
        pool.claim(Cidr.parse("198.18.0.192/26"), "c");
        assertTrue(pool.firstUnclaimedBlock().isEmpty());
        assertEquals(
                List.of(Cidr.parse("198.18.0.0/26"), Cidr.parse("198.18.0.64/26")),
                pool.blocksOf("a"));
        pool.release(Cidr.parse("198.18.0.128/26"));
        assertEquals(Optional.of(Cidr.parse("198.18.0.128/26")), pool.firstUnclaimedBlock());
    }

    @Test
    void aBlockHasOneOwner() {
        Pool pool = Pool.of(spec("fd00:198::/120", 122));
        pool.claim(Cidr.parse("fd00:198::/122"), "a");
        pool.claim(Cidr.parse("fd00:198::/122"), "a");
        assertThrows(
                IllegalStateException.class, () -> pool.claim(Cidr.parse("fd00:198::/122"), "b"));
        assertEquals(Optional.of("a"), pool.ownerOf(Cidr.parse("fd00:198::/122")));
    }

    @Test
    void refusesClaimsWhenDisabledOrAtTheNodeLimit() {
        Pool pool = Pool.of(new PoolSpec("p", Cidr.parse("198.18.0.0/24"), 26, false, false, 1));
        assertTrue(pool.refusalToClaim("a").isEmpty());
        pool.claim(Cidr.parse("198.18.0.0/26"), "a");
        assertTrue(pool.refusalToClaim("a").orElseThrow().contains("maxBlocksPerNode"));
        assertTrue(pool.refusalToClaim("b").isEmpty());
        pool.setDisabled(true);
        assertTrue(pool.refusalToClaim("b").orElseThrow().contains("disabled"));
    }

    @Test
    void largeIpv6PoolsAreNotEnumerated() {
        Pool pool = Pool.of(spec("fd00:198::/48", 122));
        pool.claim(Cidr.parse("fd00:198::/122"), "a");
        assertEquals(Optional.of(Cidr.parse("fd00:198::40/122")), pool.firstUnclaimedBlock());
        assertEquals(
                Optional.of(Cidr.parse("fd00:198::1:0/122")),
                pool.blockContaining("fd00:198::1:5"));
        assertTrue(pool.blockContaining("fd00:199::1").isEmpty());
    }

    @ParameterizedTest
    @CsvSource({
        "Bad_Name, 198.18.0.0/16, 26, name",
        "ok, 198.18.0.0/16, 15, larger than the pool",
        "ok, 198.18.0.0/16, 19, between",
        "ok, 198.18.0.0/16, 33, between",
        "ok, fd00:198::/48, 115, between",
    })
    void refusesBadSpecs(String name, String cidr, int blockPrefix, String messagePart) {
        var e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> new PoolSpec(name, Cidr.parse(cidr), blockPrefix, false, false, 0));
        assertTrue(e.getMessage().contains(messagePart), e.getMessage());
    }

    @Test
    void strictAffinityForbidsBorrowing() {
        assertFalse(
                new PoolSpec("p", Cidr.parse("198.18.0.0/16"), 26, true, true, 0)
                        .borrowingAllowed());
        assertTrue(
                new PoolSpec("p", Cidr.parse("198.18.0.0/16"), 26, false, true, 0)
                        .borrowingAllowed());
    }

    @Test
    void blocksWhollyInsideAnExcludedRangeAreNeverHandedOut() {
        PoolSpec spec =
                new PoolSpec(
                        "p",
                        Cidr.parse("198.18.0.0/24"),
                        28,
                        false,
                        false,
                        0,
                        "",
                        List.of(Cidr.parse("198.18.0.0/27"), Cidr.parse("198.18.0.50/32")));
        Pool pool = Pool.of(spec);
        // The first two /28s are excluded; the third holds one excluded address and is claimable.
        assertEquals(Optional.of(Cidr.parse("198.18.0.32/28")), pool.firstUnclaimedBlock());
        pool.claim(Cidr.parse("198.18.0.32/28"), "a");
        assertEquals(Optional.of(Cidr.parse("198.18.0.48/28")), pool.firstUnclaimedBlock());
        assertEquals(
                List.of(Cidr.parse("198.18.0.50/32")),
                spec.excludedWithin(Cidr.parse("198.18.0.48/28")));
        assertEquals(
                List.of(Cidr.parse("198.18.0.16/28")),
                spec.excludedWithin(Cidr.parse("198.18.0.16/28")));
        assertTrue(spec.isExcluded("198.18.0.50"));
        assertFalse(spec.isExcluded("198.18.0.51"));
    }

    @Test
    void anExcludedRangeMustLieInsideThePool() {
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                new PoolSpec(
                                        "p",
                                        Cidr.parse("198.18.0.0/24"),
                                        26,
                                        false,
                                        false,
                                        0,
                                        "",
                                        List.of(Cidr.parse("198.18.1.0/30"))));
        assertTrue(e.getMessage().contains("not inside"), e.getMessage());
    }

    @Test
    void aReleasingBlockStaysClaimedUntilReleased() {
        Pool pool = Pool.of(spec("198.18.0.0/25", 26));
        Cidr first = Cidr.parse("198.18.0.0/26");
        pool.claim(first, "a");
        pool.beginRelease(first);
        assertEquals(java.util.Set.of(first), pool.releasing());
        assertEquals(Optional.of(Cidr.parse("198.18.0.64/26")), pool.firstUnclaimedBlock());
        pool.cancelRelease(first);
        assertTrue(pool.releasing().isEmpty());
        pool.beginRelease(first);
        pool.release(first);
        assertTrue(pool.releasing().isEmpty());
        assertEquals(Optional.of(first), pool.firstUnclaimedBlock());
    }

    @Test
    void aClaimWithinRangesTakesTheLowestUnclaimedBlockHoldingAnAllowedAddress() {
        Pool pool = Pool.of(spec("198.19.64.0/24", 31));
        RangeSet subnet =
                RangeSet.of(
                        new AddressRange(Cidr.parse("198.19.64.0/24"), null, null, "198.19.64.1"));
        assertEquals(
                Optional.of(Cidr.parse("198.19.64.2/31")),
                pool.firstUnclaimedBlock(subnet),
                "198.19.64.0/31 holds only the network address and the gateway");
        pool.claim(Cidr.parse("198.19.64.2/31"), "a");
        assertEquals(Optional.of(Cidr.parse("198.19.64.4/31")), pool.firstUnclaimedBlock(subnet));
        assertEquals(
                Optional.of(Cidr.parse("198.19.64.0/31")),
                pool.firstUnclaimedBlock(),
                "a routed pod may take it");

        Pool wide = Pool.of(spec("198.19.64.0/24", 26));
        RangeSet twoRanges =
                RangeSet.of(
                        new AddressRange(
                                Cidr.parse("198.19.64.0/24"),
                                "198.19.64.200",
                                "198.19.64.210",
                                null),
                        new AddressRange(
                                Cidr.parse("198.19.64.0/24"),
                                "198.19.64.70",
                                "198.19.64.80",
                                null));
        assertEquals(
                Optional.of(Cidr.parse("198.19.64.192/26")),
                wide.firstUnclaimedBlock(twoRanges),
                "ranges in their order");
        wide.claim(Cidr.parse("198.19.64.192/26"), "a");
        assertEquals(
                Optional.of(Cidr.parse("198.19.64.64/26")), wide.firstUnclaimedBlock(twoRanges));
        wide.claim(Cidr.parse("198.19.64.64/26"), "b");
        assertTrue(
                wide.firstUnclaimedBlock(twoRanges).isEmpty(),
                "the free blocks hold no address of the ranges");
        assertEquals(Optional.of(Cidr.parse("198.19.64.0/26")), wide.firstUnclaimedBlock(null));
    }

    @Test
    void aClaimWithinRangesStartsAtTheRangeInAHugePool() {
        Pool pool = Pool.of(spec("fd00:198::/48", 122));
        RangeSet far =
                RangeSet.of(new AddressRange(Cidr.parse("fd00:198:0:ffff::/64"), null, null, null));
        assertEquals(
                Optional.of(Cidr.parse("fd00:198:0:ffff::/122")), pool.firstUnclaimedBlock(far));
        RangeSet outside = RangeSet.of(AddressRange.of(Cidr.parse("fd00:199::/64")));
        assertTrue(pool.firstUnclaimedBlock(outside).isEmpty());
    }
}
