package io.cadastre.ipam;

import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Which addresses of a pool one attachment may be given.
 *
 * <ul>
 *   <li>{@link #ROUTED}: any address of the pool. The full plugin's pods get /32 and /128 routes,
 *       so every address of a block is usable, its first and last included.
 *   <li>{@link #onSubnet} without range sets: the attachment sits on an L2 subnet that is the
 *       pool's own CIDR (an IPAM-only result reports the pool's prefix length), so the pool's
 *       network address and IPv4 broadcast address are never given ({@link AddressRange#of}).
 *   <li>{@link #onSubnet} with range sets (host-local's {@code ranges}): one address per range set,
 *       allowed by the set ({@link RangeSet}), from the pools of its family whose CIDR holds an
 *       allowed address; families without a set get no address.
 * </ul>
 *
 * @param onSubnet false for a routed pod (the full plugin), true for an interface on an L2 subnet
 *     (the IPAM-only role)
 * @param rangeSets at most one per family, in the netconf's order; empty unless {@code onSubnet}
 */
public record AddressRules(boolean onSubnet, List<RangeSet> rangeSets) {
    /** Any address of the pool. */
    public static final AddressRules ROUTED = new AddressRules(false, List.of());

    /** On an L2 subnet that is the pool's CIDR. */
    public static final AddressRules POOL_SUBNET = new AddressRules(true, List.of());

    /** @throws IllegalArgumentException for two sets of one family, or sets without {@code onSubnet} */
    public AddressRules {
        rangeSets = List.copyOf(rangeSets);
        if (!onSubnet && !rangeSets.isEmpty()) {
            throw new IllegalArgumentException("range sets are for attachments on an L2 subnet");
        }
        Set<IpFamily> seen = EnumSet.noneOf(IpFamily.class);
        for (RangeSet set : rangeSets) {
            if (!seen.add(set.family())) {
                throw new IllegalArgumentException(
                        "two "
                                + set.family()
                                + " range sets: an attachment holds at most one"
                                + " address per family");
            }
        }
    }

    /** @return rules for an interface on an L2 subnet described by the range sets (none: the pools' own CIDRs) */
    public static AddressRules onSubnet(List<RangeSet> rangeSets) {
        return new AddressRules(true, rangeSets);
    }

    /** @return the family's range set, if the rules name one */
    public Optional<RangeSet> rangeSet(IpFamily family) {
        return rangeSets.stream().filter(s -> s.family() == family).findFirst();
    }

    /**
     * @return whether an address of the pool may be given under these rules (for a requested
     *     address): always for {@link #ROUTED}; otherwise when the family's range set allows it,
     *     or, without range sets, the pool's own CIDR as the subnet does; never for a family the
     *     range sets leave out
     */
    public boolean allows(PoolSpec pool, String address) {
        if (!onSubnet) {
            return true;
        }
        if (rangeSets.isEmpty()) {
            return AddressRange.of(pool.cidr()).allows(address);
        }
        return rangeSet(pool.family()).map(s -> s.allows(address)).orElse(false);
    }

    /**
     * @return the ranges an address of this pool must lie in, or {@code null} when any address of
     *     the pool may be given ({@link #ROUTED})
     */
    public RangeSet within(PoolSpec pool) {
        if (!onSubnet) {
            return null;
        }
        return rangeSet(pool.family()).orElseGet(() -> RangeSet.of(AddressRange.of(pool.cidr())));
    }
}
