package io.cadastre.cni;

import java.util.regex.Pattern;

/** The spec's name rules for networks, container IDs and interfaces. Pure functions. */
final class CniNames {
    /**
     * Network names (CNI spec 1.1 §Configuration format, {@code name}) and container IDs (§Parameters,
     * {@code CNI_CONTAINERID}): an alphanumeric, then alphanumerics, {@code _ . -}. ASCII only, as
     * libcni's {@code ValidateContainerID} and {@code ValidateNetworkName}.
     */
    private static final Pattern NAME = Pattern.compile("[a-zA-Z0-9][a-zA-Z0-9_.\\-]*");

    /** Linux IFNAMSIZ (16) less the terminating NUL. */
    static final int MAX_IFNAME_BYTES = 15;

    private CniNames() {}

    static boolean isValidName(String s) {
        return s != null && NAME.matcher(s).matches();
    }

    /**
     * Linux interface name rules, as libcni's {@code ValidateInterfaceName}: 1 to 15 bytes, not
     * {@code .} or {@code ..}, no {@code /}, {@code :} or whitespace.
     *
     * @return what is wrong, or null when {@code s} is a valid interface name
     */
    static String ifnameProblem(String s) {
        if (s == null || s.isEmpty()) {
            return "is empty";
        }
        if (s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_IFNAME_BYTES) {
            return "is longer than " + MAX_IFNAME_BYTES + " bytes";
        }
        if (s.equals(".") || s.equals("..")) {
            return "may not be . or ..";
        }
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            if (cp == '/' || cp == ':' || cp == 0x85 || Character.isWhitespace(cp) || Character.isSpaceChar(cp)) {
                return "contains '/', ':' or whitespace";
            }
            i += Character.charCount(cp);
        }
        return null;
    }
}
