package io.cadastre.ipam;

import inet.ipaddr.AddressStringException;
import inet.ipaddr.AddressStringParameters;
import inet.ipaddr.IPAddress;
import inet.ipaddr.IPAddressString;
import inet.ipaddr.IPAddressStringParameters;
import inet.ipaddr.ipv4.IPv4Address;
import inet.ipaddr.ipv6.IPv6Address;
import java.math.BigInteger;
import java.net.InetAddress;

/**
 * Parsing and formatting of single addresses, on the IPAddress library. Cadastre keeps addresses
 * in events and replies as canonical strings ({@code 198.18.0.5}, {@code fd00:198::5}: RFC 5952
 * for IPv6) so that equal addresses are equal strings.
 */
public final class IpAddresses {
    /**
     * Strict literals only: no inet_aton forms ("1.2.3"), no ranges, masks, wildcards or empty
     * strings — an operator who typed {@code 198.18.1} meant something, and we must not guess.
     */
    static final IPAddressStringParameters STRICT =
            new IPAddressStringParameters.Builder()
                    .allowEmpty(false)
                    .allowSingleSegment(false)
                    .allowMask(false)
                    .allowPrefixOnly(false)
                    .allowAll(false)
                    .allowWildcardedSeparator(false)
                    .setRangeOptions(AddressStringParameters.RangeParameters.NO_RANGE)
                    .allow_inet_aton(false)
                    .toParams();

    private IpAddresses() {}

    /**
     * Parses a literal address without prefix length or zone.
     *
     * @throws IllegalArgumentException naming the value when it is not a literal IPv4/IPv6 address
     */
    public static IPAddress parse(String literal) {
        if (literal == null || literal.isBlank()) {
            throw new IllegalArgumentException("empty IP address");
        }
        try {
            IPAddress address = new IPAddressString(literal.trim(), STRICT).toAddress();
            if (address.isPrefixed()
                    || address.isMultiple()
                    || (address.isIPv6() && address.toIPv6().hasZone())) {
                throw new IllegalArgumentException("not a single IP address: " + literal);
            }
            return address;
        } catch (AddressStringException e) {
            throw new IllegalArgumentException("not an IP address: " + literal, e);
        }
    }

    /** @return the canonical form of a literal address; see {@link #parse} for errors */
    public static String canonical(String literal) {
        return parse(literal).toCanonicalString();
    }

    /** @return the family of a literal address; see {@link #parse} for errors */
    public static IpFamily familyOf(String literal) {
        return parse(literal).isIPv4() ? IpFamily.V4 : IpFamily.V6;
    }

    /** @return the address's value as an unsigned integer */
    static BigInteger value(IPAddress address) {
        return address.getValue();
    }

    /** @return the address of {@code family} whose unsigned value is {@code value} */
    static IPAddress fromValue(IpFamily family, BigInteger value) {
        return family == IpFamily.V4 ? new IPv4Address(value.intValue()) : new IPv6Address(value);
    }

    /** @return the JDK form, for the dataplane */
    public static InetAddress toInet(String literal) {
        return parse(literal).toInetAddress();
    }
}
