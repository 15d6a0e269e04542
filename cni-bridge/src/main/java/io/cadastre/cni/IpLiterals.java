package io.cadastre.cni;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Strict parsing of literal IP addresses and CIDR strings, never a name lookup. Pure functions.
 *
 * <p>IPv4 must be a dotted quad of decimal octets without leading zeros (as Go's
 * {@code net.ParseIP} since 1.17, which the reference plugins use). IPv6 is any RFC 4291 text form
 * without a zone; an IPv4-mapped IPv6 address is taken as its IPv4 address, as Go does. Canonical
 * output: dotted quad, or RFC 5952 (lower case, longest zero run as {@code ::}).
 */
final class IpLiterals {
    private static final Pattern IPV4 =
            Pattern.compile(
                    "(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+");
    private static final Pattern PREFIX = Pattern.compile("0|[1-9][0-9]{0,2}");

    private IpLiterals() {}

    /** @return the canonical text of a literal address, or empty when {@code s} is not one */
    static Optional<String> canonicalAddress(String s) {
        if (s == null || s.isEmpty()) {
            return Optional.empty();
        }
        var v4 = IPV4.matcher(s);
        if (v4.matches()) {
            for (int i = 1; i <= 4; i++) {
                if (Integer.parseInt(v4.group(i)) > 255) {
                    return Optional.empty();
                }
            }
            return Optional.of(s);
        }
        // With a ':' present InetAddress parses an IPv6 literal or throws; it never resolves a
        // name.
        if (s.indexOf(':') < 0 || !IPV6_CHARS.matcher(s).matches()) {
            return Optional.empty();
        }
        try {
            InetAddress a = InetAddress.getByName(s);
            if (a instanceof Inet4Address) {
                return Optional.of(a.getHostAddress());
            }
            if (a instanceof Inet6Address) {
                return Optional.of(formatV6(a.getAddress()));
            }
            return Optional.empty();
        } catch (UnknownHostException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * @return the canonical address of {@code s}, which is an address optionally followed by
     *     {@code /prefix} (prefix in range for the family); the prefix is dropped. Empty when
     *     invalid.
     */
    static Optional<String> addressDroppingPrefix(String s) {
        if (s == null) {
            return Optional.empty();
        }
        int slash = s.indexOf('/');
        if (slash < 0) {
            return canonicalAddress(s);
        }
        return isCidr(s) ? canonicalAddress(s.substring(0, slash)) : Optional.empty();
    }

    /** @return true when {@code s} is {@code <literal address>/<prefix>} with the prefix in range */
    static boolean isCidr(String s) {
        if (s == null) {
            return false;
        }
        int slash = s.indexOf('/');
        if (slash < 0) {
            return false;
        }
        Optional<String> addr = canonicalAddress(s.substring(0, slash));
        String prefix = s.substring(slash + 1);
        if (addr.isEmpty() || !PREFIX.matcher(prefix).matches()) {
            return false;
        }
        int max = family(addr.get()) == 4 ? 32 : 128;
        return Integer.parseInt(prefix) <= max;
    }

    /** @return 4 or 6, from an address or CIDR already known to be valid (or at least textual) */
    static int family(String addressOrCidr) {
        return addressOrCidr.indexOf(':') >= 0 ? 6 : 4;
    }

    /** RFC 5952 text of a 16-byte address. */
    static String formatV6(byte[] b) {
        int[] g = new int[8];
        for (int i = 0; i < 8; i++) {
            g[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
        }
        int bestStart = -1;
        int bestLen = 1; // a single zero group is not compressed
        for (int i = 0; i < 8; ) {
            if (g[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && g[j] == 0) {
                j++;
            }
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        StringBuilder sb = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                sb.append("::");
                i += bestLen - 1;
                continue;
            }
            if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
                sb.append(':');
            }
            sb.append(Integer.toHexString(g[i]));
        }
        return sb.toString();
    }
}
