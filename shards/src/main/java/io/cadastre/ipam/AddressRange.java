package io.cadastre.ipam;

import java.math.BigInteger;
import java.util.Objects;
import java.util.TreeSet;

/**
 * One range of an L2 subnet from which pods attached to that subnet (bridge, macvlan, ipvlan
 * through {@code cadastre-ipam}) are given addresses: host-local's "range" ({@code subnet},
 * {@code rangeStart}, {@code rangeEnd}, {@code gateway}; containernetworking/plugins,
 * {@code plugins/ipam/host-local/backend/allocator/range.go}).
 *
 * <p>An address is <em>allowed</em> when it lies in {@code subnet}, between {@code rangeStart} and
 * {@code rangeEnd} inclusive, and is none of: the subnet's network address (all host bits zero),
 * its IPv4 broadcast address (all host bits one), the gateway. Those three are never allowed, even
 * when the range's ends name them (host-local keeps them out only through its default range
 * ends and skips the gateway): a pod holding one of them cannot talk on the subnet. IPv6 has no
 * broadcast; its last address is allowed, as in host-local.
 *
 * <p>This is the domain's form, explicit and without defaults: a {@code null} end means the
 * subnet's own end (then excluded only by the rule above), a {@code null} gateway means none to
 * keep free. Host-local's defaults (gateway = network + 1) are the netconf's to apply (module
 * http). Immutable; sent inside entity commands (Jackson).
 *
 * @param subnet the L2 subnet (host bits zero)
 * @param rangeStart the first address that may be given, canonical, inside the subnet; {@code null}: the subnet's first
 * @param rangeEnd the last address that may be given, canonical, inside the subnet, not before
 *     {@code rangeStart}; {@code null}: the subnet's last
 * @param gateway the subnet's gateway, canonical, inside the subnet; {@code null} for none
 */
public record AddressRange(Cidr subnet, String rangeStart, String rangeEnd, String gateway) {

    /**
     * @throws IllegalArgumentException naming the field: a missing subnet, an address that is not a
     *     literal, outside the subnet or of the other family, or an end before the start
     */
    public AddressRange {
        Objects.requireNonNull(subnet, "subnet");
        rangeStart = inside(subnet, rangeStart, "rangeStart");
        rangeEnd = inside(subnet, rangeEnd, "rangeEnd");
        gateway = inside(subnet, gateway, "gateway");
        if (rangeStart != null
                && rangeEnd != null
                && value(rangeStart).compareTo(value(rangeEnd)) > 0) {
            throw new IllegalArgumentException(
                    "rangeEnd " + rangeEnd + " lies before rangeStart " + rangeStart);
        }
    }

    /** @return the whole subnet as one range, without a gateway */
    public static AddressRange of(Cidr subnet) {
        return new AddressRange(subnet, null, null, null);
    }

    private static String inside(Cidr subnet, String address, String field) {
        if (address == null) {
            return null;
        }
        String canonical;
        try {
            canonical = IpAddresses.canonical(address);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(field + " " + address + " is not an IP address", e);
        }
        if (!subnet.contains(canonical)) {
            throw new IllegalArgumentException(
                    field + " " + canonical + " is not inside subnet " + subnet);
        }
        return canonical;
    }

    private static BigInteger value(String canonical) {
        return IpAddresses.parse(canonical).getValue();
    }

    /** @return the subnet's family */
    public IpFamily family() {
        return subnet.family();
    }

    /** @return the value of the first address the range spans (before the exclusions) */
    BigInteger firstValue() {
        return rangeStart == null ? subnet.firstValue() : value(rangeStart);
    }

    /** @return the value of the last address the range spans (before the exclusions) */
    BigInteger lastValue() {
        return rangeEnd == null ? subnet.lastValue() : value(rangeEnd);
    }

    /** @return the values that are never given: network, IPv4 broadcast, gateway (distinct, sorted) */
    TreeSet<BigInteger> excludedValues() {
        TreeSet<BigInteger> out = new TreeSet<>();
        out.add(subnet.firstValue());
        if (subnet.family() == IpFamily.V4) {
            out.add(subnet.lastValue());
        }
        if (gateway != null) {
            out.add(value(gateway));
        }
        return out;
    }

    /** @return whether the literal address may be given (see the class comment); false for a malformed one */
    public boolean allows(String address) {
        try {
            var parsed = IpAddresses.parse(address);
            if ((parsed.isIPv4() ? IpFamily.V4 : IpFamily.V6) != family()) {
                return false;
            }
            return allowsValue(parsed.getValue());
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    boolean allowsValue(BigInteger v) {
        return v.compareTo(firstValue()) >= 0
                && v.compareTo(lastValue()) <= 0
                && !excludedValues().contains(v);
    }

    /** @return whether the network (a block, a pool) holds at least one address this range allows */
    public boolean allowsAnyIn(Cidr network) {
        if (network.family() != family()) {
            return false;
        }
        BigInteger lo = network.firstValue().max(firstValue());
        BigInteger hi = network.lastValue().min(lastValue());
        if (lo.compareTo(hi) > 0) {
            return false;
        }
        BigInteger spanned = hi.subtract(lo).add(BigInteger.ONE);
        long excludedInside = excludedValues().subSet(lo, true, hi, true).size();
        return spanned.compareTo(BigInteger.valueOf(excludedInside)) > 0;
    }

    @Override
    public String toString() {
        return subnet
                + " "
                + (rangeStart == null ? subnet.networkAddress() : rangeStart)
                + "-"
                + (rangeEnd == null ? "end" : rangeEnd)
                + (gateway == null ? "" : " gateway " + gateway);
    }
}
