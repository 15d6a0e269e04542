package io.cadastre.ipam;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import inet.ipaddr.AddressStringException;
import inet.ipaddr.IPAddress;
import inet.ipaddr.IPAddressString;
import java.math.BigInteger;
import java.util.Objects;

/**
 * An IPv4 or IPv6 network in CIDR notation ({@code 198.18.0.0/26}, {@code fd00:198::/122}), with
 * the subnet arithmetic pools and blocks need. Host bits must be zero. Immutable; serialized as its
 * CIDR string.
 */
public final class Cidr implements Comparable<Cidr> {
    private final IpFamily family;
    private final BigInteger network;
    private final int prefixLength;

    private Cidr(IpFamily family, BigInteger network, int prefixLength) {
        this.family = family;
        this.network = network;
        this.prefixLength = prefixLength;
    }

    /**
     * Parses CIDR notation.
     *
     * @throws IllegalArgumentException naming the value when it is not CIDR notation, has no
     *     prefix length, or has host bits set ({@code 198.18.0.1/24})
     */
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    public static Cidr parse(String text) {
        if (text == null || !text.contains("/")) {
            throw new IllegalArgumentException("not CIDR notation (address/prefix): " + text);
        }
        IPAddress address;
        try {
            address = new IPAddressString(text.trim(), IpAddresses.STRICT).toAddress();
        } catch (AddressStringException e) {
            throw new IllegalArgumentException("not CIDR notation: " + text, e);
        }
        if (address.isIPv6() && address.toIPv6().hasZone()) {
            throw new IllegalArgumentException("a CIDR has no zone: " + text);
        }
        if (!address.isPrefixBlock()) {
            throw new IllegalArgumentException(
                    "host bits set in CIDR "
                            + text
                            + " (did you mean "
                            + address.toPrefixBlock().toCanonicalString()
                            + "?)");
        }
        IpFamily family = address.isIPv4() ? IpFamily.V4 : IpFamily.V6;
        return new Cidr(family, address.getLower().getValue(), address.getNetworkPrefixLength());
    }

    /** The entity-ID form back to a CIDR: {@code 198.18.0.0-26} → {@code 198.18.0.0/26}. */
    public static Cidr fromEntityId(String entityId) {
        int dash = entityId.lastIndexOf('-');
        if (dash < 0) {
            throw new IllegalArgumentException("not a block entity id: " + entityId);
        }
        return parse(entityId.substring(0, dash) + "/" + entityId.substring(dash + 1));
    }

    public IpFamily family() {
        return family;
    }

    /** @return the prefix length in bits (0-32 for IPv4, 0-128 for IPv6) */
    public int prefixLength() {
        return prefixLength;
    }

    /** @return how many addresses the network holds: 2^(bits - prefix length) */
    public BigInteger size() {
        return BigInteger.ONE.shiftLeft(family.bits() - prefixLength);
    }

    /** @return the network address's value as an unsigned integer */
    BigInteger firstValue() {
        return network;
    }

    /** @return the last address's value (all host bits set) as an unsigned integer */
    BigInteger lastValue() {
        return network.add(size()).subtract(BigInteger.ONE);
    }

    /** @return the first address, canonical */
    public String networkAddress() {
        return IpAddresses.fromValue(family, network).toCanonicalString();
    }

    /**
     * @return the address at {@code offset} (0 = the network address), canonical
     * @throws IllegalArgumentException when the offset lies outside the network
     */
    public String addressAt(long offset) {
        if (offset < 0 || BigInteger.valueOf(offset).compareTo(size()) >= 0) {
            throw new IllegalArgumentException("offset " + offset + " outside " + this);
        }
        return IpAddresses.fromValue(family, network.add(BigInteger.valueOf(offset)))
                .toCanonicalString();
    }

    /**
     * @return the offset of a literal address from the network address
     * @throws IllegalArgumentException when the address is malformed or outside the network
     */
    public long offsetOf(String address) {
        IPAddress parsed = IpAddresses.parse(address);
        if (!contains(parsed)) {
            throw new IllegalArgumentException(address + " is outside " + this);
        }
        return parsed.getValue().subtract(network).longValueExact();
    }

    /** @return whether the literal address lies in this network; false for a malformed one */
    public boolean contains(String address) {
        try {
            return contains(IpAddresses.parse(address));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private boolean contains(IPAddress address) {
        if ((address.isIPv4() ? IpFamily.V4 : IpFamily.V6) != family) {
            return false;
        }
        BigInteger offset = address.getValue().subtract(network);
        return offset.signum() >= 0 && offset.compareTo(size()) < 0;
    }

    /** @return whether this network contains all of {@code other} */
    public boolean contains(Cidr other) {
        return other.family == family
                && other.prefixLength >= prefixLength
                && other.network
                        .shiftRight(family.bits() - prefixLength)
                        .equals(network.shiftRight(family.bits() - prefixLength));
    }

    /** @return whether the two networks share any address */
    public boolean overlaps(Cidr other) {
        return contains(other) || other.contains(this);
    }

    /**
     * @return how many subnets of {@code subnetPrefix} this network splits into
     * @throws IllegalArgumentException when the subnet prefix is shorter than this one's
     */
    public BigInteger subnetCount(int subnetPrefix) {
        requireSubnetPrefix(subnetPrefix);
        return BigInteger.ONE.shiftLeft(subnetPrefix - prefixLength);
    }

    /**
     * @return the {@code index}-th subnet of {@code subnetPrefix} (0 = the first)
     * @throws IllegalArgumentException when the index is outside {@link #subnetCount}
     */
    public Cidr subnet(int subnetPrefix, BigInteger index) {
        if (index.signum() < 0 || index.compareTo(subnetCount(subnetPrefix)) >= 0) {
            throw new IllegalArgumentException(
                    "subnet " + index + " of /" + subnetPrefix + " outside " + this);
        }
        return new Cidr(
                family, network.add(index.shiftLeft(family.bits() - subnetPrefix)), subnetPrefix);
    }

    /**
     * @return the index of the subnet of {@code subnetPrefix} that holds {@code other}
     * @throws IllegalArgumentException when {@code other} is not a subnet of that size inside this
     */
    public BigInteger subnetIndex(Cidr other) {
        requireSubnetPrefix(other.prefixLength);
        if (!contains(other)) {
            throw new IllegalArgumentException(other + " is outside " + this);
        }
        return other.network.subtract(network).shiftRight(family.bits() - other.prefixLength);
    }

    /**
     * @return the subnet of {@code subnetPrefix} that holds the literal address
     * @throws IllegalArgumentException when the address is outside this network
     */
    public Cidr subnetContaining(String address, int subnetPrefix) {
        requireSubnetPrefix(subnetPrefix);
        IPAddress parsed = IpAddresses.parse(address);
        if (!contains(parsed)) {
            throw new IllegalArgumentException(address + " is outside " + this);
        }
        int hostBits = family.bits() - subnetPrefix;
        return new Cidr(
                family, parsed.getValue().shiftRight(hostBits).shiftLeft(hostBits), subnetPrefix);
    }

    private void requireSubnetPrefix(int subnetPrefix) {
        if (subnetPrefix < prefixLength || subnetPrefix > family.bits()) {
            throw new IllegalArgumentException(
                    "/" + subnetPrefix + " is not a subnet size of " + this);
        }
    }

    /** @return the block's entity id: the CIDR with '/' replaced by '-' ({@code 198.18.0.0-26}) */
    public String entityId() {
        return networkAddress() + "-" + prefixLength;
    }

    @JsonValue
    @Override
    public String toString() {
        return networkAddress() + "/" + prefixLength;
    }

    @Override
    public int compareTo(Cidr other) {
        int byFamily = family.compareTo(other.family);
        if (byFamily != 0) {
            return byFamily;
        }
        int byNetwork = network.compareTo(other.network);
        return byNetwork != 0 ? byNetwork : Integer.compare(prefixLength, other.prefixLength);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Cidr c
                && c.family == family
                && c.prefixLength == prefixLength
                && c.network.equals(network);
    }

    @Override
    public int hashCode() {
        return Objects.hash(family, network, prefixLength);
    }
}
