package io.cadastre.dataplane;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/**
 * An IPv4 or IPv6 network: a route's destination or an address with its prefix length. Host bits
 * must be zero, so that a destination has one spelling and equal prefixes are equal records.
 *
 * @param address the network address (4 or 16 bytes)
 * @param length the prefix length, 0 to 32 or 0 to 128
 */
public record IpPrefix(InetAddress address, int length) {
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    public IpPrefix {
        int bits = address.getAddress().length * 8;
        if (length < 0 || length > bits) {
            throw new IllegalArgumentException(
                    "prefix length "
                            + length
                            + " out of 0.."
                            + bits
                            + " for "
                            + Rtnetlink.text(address));
        }
        byte[] b = address.getAddress();
        for (int bit = length; bit < bits; bit++) {
            if ((b[bit / 8] & (0x80 >>> (bit % 8))) != 0) {
                throw new IllegalArgumentException(
                        "host bits set in " + Rtnetlink.text(address) + "/" + length);
            }
        }
    }

    /**
     * Parses CIDR notation with address literals only (never a name lookup).
     *
     * @throws IllegalArgumentException when it is not {@code address/length}, or host bits are set
     */
    public static IpPrefix parse(String cidr) {
        int slash = cidr.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("not CIDR notation (address/length): " + cidr);
        }
        try {
            return new IpPrefix(
                    literal(cidr.substring(0, slash)), Integer.parseInt(cidr.substring(slash + 1)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not CIDR notation (address/length): " + cidr, e);
        }
    }

    /** @return the host prefix (/32 or /128) of {@code address} */
    public static IpPrefix host(InetAddress address) {
        return new IpPrefix(address, address.getAddress().length * 8);
    }

    /**
     * @throws IllegalArgumentException when {@code text} is not an IPv4 or IPv6 literal
     */
    public static InetAddress literal(String text) {
        // getByName looks names up: only dotted quads and texts with a ':' (which it parses as
        // IPv6 literals or refuses) may reach it.
        if (!IPV4.matcher(text).matches()
                && !(text.contains(":")
                        && text.chars()
                                .allMatch(
                                        c ->
                                                Character.digit(c, 16) >= 0
                                                        || c == '.'
                                                        || c == ':'))) {
            throw new IllegalArgumentException("not an IP address literal: " + text);
        }
        try {
            return InetAddress.getByName(text);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an IP address literal: " + text, e);
        }
    }

    public boolean v4() {
        return address instanceof Inet4Address;
    }

    /** @return e.g. {@code 198.18.1.0/26}, {@code fd00:198::1:0/122} */
    @Override
    public String toString() {
        return Rtnetlink.text(address) + "/" + length;
    }
}
