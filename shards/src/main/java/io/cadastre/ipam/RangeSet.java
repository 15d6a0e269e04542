package io.cadastre.ipam;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntPredicate;

/**
 * The ranges one attachment may be given its address of one family from, tried in order:
 * host-local's "range set" (an element of {@code ipam.ranges}). An address is allowed when one of
 * the ranges allows it ({@link AddressRange}). Immutable; sent inside entity commands (Jackson).
 *
 * @param ranges at least one, all of one family, none overlapping another (host-local refuses
 *     overlapping ranges in a set too)
 */
public record RangeSet(List<AddressRange> ranges) {

    /** @throws IllegalArgumentException for no range, mixed families or overlapping ranges */
    public RangeSet {
        ranges = List.copyOf(ranges);
        if (ranges.isEmpty()) {
            throw new IllegalArgumentException("a range set needs at least one range");
        }
        IpFamily family = ranges.get(0).family();
        for (int i = 0; i < ranges.size(); i++) {
            AddressRange r = ranges.get(i);
            if (r.family() != family) {
                throw new IllegalArgumentException(
                        "range "
                                + r
                                + " is "
                                + r.family()
                                + ", range "
                                + ranges.get(0)
                                + " "
                                + family
                                + ": a range set holds one family");
            }
            for (int j = 0; j < i; j++) {
                AddressRange o = ranges.get(j);
                if (r.firstValue().compareTo(o.lastValue()) <= 0
                        && o.firstValue().compareTo(r.lastValue()) <= 0) {
                    throw new IllegalArgumentException("ranges " + o + " and " + r + " overlap");
                }
            }
        }
    }

    /** @return a set of the given ranges */
    public static RangeSet of(AddressRange... ranges) {
        return new RangeSet(List.of(ranges));
    }

    /** @return the ranges' family */
    public IpFamily family() {
        return ranges.get(0).family();
    }

    /** @return whether one of the ranges allows the literal address */
    public boolean allows(String address) {
        return rangeOf(address).isPresent();
    }

    /** @return the first range that allows the literal address, if any */
    public Optional<AddressRange> rangeOf(String address) {
        return ranges.stream().filter(r -> r.allows(address)).findFirst();
    }

    /** @return whether the network (a block, a pool) holds an address one of the ranges allows */
    public boolean allowsAnyIn(Cidr network) {
        return ranges.stream().anyMatch(r -> r.allowsAnyIn(network));
    }

    /**
     * Which ordinals of a block (0 = the block's network address) the set allows, computed once
     * for the block so that a scan of its free addresses costs a comparison or two per address.
     */
    public IntPredicate allowedOrdinals(Cidr block) {
        record Window(long lo, long hi, Set<Long> excluded) {}
        List<Window> windows = new ArrayList<>();
        BigInteger base = block.firstValue();
        for (AddressRange r : ranges) {
            BigInteger lo = block.firstValue().max(r.firstValue());
            BigInteger hi = block.lastValue().min(r.lastValue());
            if (lo.compareTo(hi) > 0) {
                continue;
            }
            Set<Long> excluded = new HashSet<>();
            for (BigInteger v : r.excludedValues().subSet(lo, true, hi, true)) {
                excluded.add(v.subtract(base).longValueExact());
            }
            windows.add(
                    new Window(
                            lo.subtract(base).longValueExact(),
                            hi.subtract(base).longValueExact(),
                            excluded));
        }
        return ordinal -> {
            for (Window w : windows) {
                if (ordinal >= w.lo()
                        && ordinal <= w.hi()
                        && !w.excluded().contains((long) ordinal)) {
                    return true;
                }
            }
            return false;
        };
    }

    @Override
    public String toString() {
        return ranges.toString();
    }
}
