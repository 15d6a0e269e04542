package io.cadastre.ctl;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Checks that a text is an IPv4 or IPv6 address literal (or a CIDR), before any request is sent. Written out
 * here rather than with {@code InetAddress.getByName}, which resolves whatever is not a literal
 * as a host name (a DNS query for a typo). The agent canonicalises what it receives; this only
 * turns away what can never be an address.
 */
final class IpLiteral {
    private IpLiteral() {}

    /**
     * @return whether {@code text} is a dotted-quad IPv4 address (no leading zeros, which some
     *     parsers read as octal) or an IPv6 address (RFC 4291 text, optionally with {@code ::} and
     *     a trailing dotted quad; no zone index)
     */
    static boolean isValid(String text) {
        return text != null && text.length() <= 45 && (isIpv4(text) || isIpv6(text));
    }

    /**
     * @return whether {@code text} is {@code ADDRESS/LENGTH}: an address as {@link #isValid} takes
     *     it and a decimal prefix length within its family's (0-32, 0-128; no leading zeros).
     *     Host bits set after the prefix are the agent's to judge.
     */
    static boolean isCidr(String text) {
        int slash = text == null ? -1 : text.indexOf('/');
        if (slash < 0) {
            return false;
        }
        String address = text.substring(0, slash);
        String length = text.substring(slash + 1);
        if (!isValid(address) || !length.matches("0|[1-9][0-9]{0,2}")) {
            return false;
        }
        return Integer.parseInt(length) <= (isIpv4(address) ? 32 : 128);
    }

    static boolean isIpv4(String text) {
        String[] parts = text.split("\\.", -1);
        if (parts.length != 4) {
            return false;
        }
        for (String part : parts) {
            if (part.isEmpty()
                    || part.length() > 3
                    || (part.length() > 1 && part.charAt(0) == '0')) {
                return false;
            }
            for (int i = 0; i < part.length(); i++) {
                if (part.charAt(i) < '0' || part.charAt(i) > '9') {
                    return false;
                }
            }
            if (Integer.parseInt(part) > 255) {
                return false;
            }
        }
        return true;
    }

    static boolean isIpv6(String text) {
        int gap = text.indexOf("::");
        if (gap < 0) {
            return groups(text, true) == 8;
        }
        if (text.indexOf("::", gap + 1) >= 0) {
            return false;
        }
        String head = text.substring(0, gap);
        String tail = text.substring(gap + 2);
        int headGroups = head.isEmpty() ? 0 : groups(head, false);
        int tailGroups = tail.isEmpty() ? 0 : groups(tail, true);
        // "::" stands for at least one group of zeros.
        return headGroups >= 0 && tailGroups >= 0 && headGroups + tailGroups <= 7;
    }

    /**
     * @return how many 16-bit groups the colon-separated {@code text} holds (a trailing dotted
     *     quad counts two), or -1 when a group is malformed
     */
    private static int groups(String text, boolean mayEndWithIpv4) {
        String[] parts = text.split(":", -1);
        int count = 0;
        for (int i = 0; i < parts.length; i++) {
            String part = parts[i];
            if (i == parts.length - 1 && mayEndWithIpv4 && part.indexOf('.') >= 0) {
                if (!isIpv4(part)) {
                    return -1;
                }
                count += 2;
            } else if (isHexGroup(part)) {
                count++;
            } else {
                return -1;
            }
        }
        return count;
    }

    private static boolean isHexGroup(String part) {
        if (part.isEmpty() || part.length() > 4) {
            return false;
        }
        for (int i = 0; i < part.length(); i++) {
            char c = part.charAt(i);
            // ASCII only: Character.digit would also take other scripts' digits.
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')) {
                return false;
            }
        }
        return true;
    }

    /** picocli converter: the text unchanged when it is an address literal, else a usage error (exit 2). */
    static final class Converter implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            if (!isValid(value)) {
                throw new TypeConversionException("'" + value + "' is not an IPv4 or IPv6 address");
            }
            return value;
        }
    }

    /** picocli converter: the text unchanged when it is a CIDR ({@link #isCidr}), else a usage error (exit 2). */
    static final class CidrConverter implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            if (!isCidr(value)) {
                throw new TypeConversionException(
                        "'" + value + "' is not a CIDR (ADDRESS/PREFIX-LENGTH)");
            }
            return value;
        }
    }
}
