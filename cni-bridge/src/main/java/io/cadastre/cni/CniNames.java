package io.cadastre.cni;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/** The spec's name rules for networks, container IDs and interfaces. Pure functions. */
final class CniNames {
    /**
     * Network names (CNI spec 1.1 §Configuration format, {@code name}) and container IDs (§Parameters,
     * {@code CNI_CONTAINERID}): an alphanumeric, then alphanumerics, {@code _ . -}. ASCII only, as
     * libcni's {@code ValidateContainerID} and {@code ValidateNetworkName}; at most {@value
     * #MAX_NAME_LENGTH} characters (Cadastre's cap: the handle is stored and logged).
     */
    private static final Pattern NAME = Pattern.compile("[a-zA-Z0-9][a-zA-Z0-9_.\\-]*");

    /** Linux IFNAMSIZ (16) less the terminating NUL. */
    static final int MAX_IFNAME_BYTES = 15;

    /**
     * The longest container ID or network name accepted (runtimes use 64 hex digits); the plugin
     * refuses a longer CNI_CONTAINERID before it sends anything (cni-bridge/DESIGN.md).
     */
    static final int MAX_NAME_LENGTH = 255;

    /** Kubernetes object names (pods): a DNS-1123 subdomain, at most 253 characters. */
    private static final Pattern DNS_SUBDOMAIN =
            Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

    private static final int MAX_SUBDOMAIN_LENGTH = 253;

    /** Kubernetes namespaces: a DNS-1123 label, at most 63 characters. */
    private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");

    /** Kubernetes UIDs are UUIDs; a little room for other runtimes' forms. */
    private static final Pattern UID = Pattern.compile("[A-Za-z0-9-]{1,128}");

    private CniNames() {}

    static boolean isValidName(String s) {
        return s != null && s.length() <= MAX_NAME_LENGTH && NAME.matcher(s).matches();
    }

    /** @return whether {@code s} may be a Kubernetes pod name (Kubernetes' ValidateObjectMeta rules) */
    static boolean isPodName(String s) {
        return s.length() <= MAX_SUBDOMAIN_LENGTH && DNS_SUBDOMAIN.matcher(s).matches();
    }

    /** @return whether {@code s} may be a Kubernetes namespace name */
    static boolean isNamespaceName(String s) {
        return DNS_LABEL.matcher(s).matches();
    }

    /** @return whether {@code s} may be a Kubernetes UID */
    static boolean isUid(String s) {
        return UID.matcher(s).matches();
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
        if (s.getBytes(StandardCharsets.UTF_8).length > MAX_IFNAME_BYTES) {
            return "is longer than " + MAX_IFNAME_BYTES + " bytes";
        }
        if (s.equals(".") || s.equals("..")) {
            return "may not be . or ..";
        }
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            if (cp == '/'
                    || cp == ':'
                    || cp == 0x85
                    || Character.isWhitespace(cp)
                    || Character.isSpaceChar(cp)) {
                return "contains '/', ':' or whitespace";
            }
            i += Character.charCount(cp);
        }
        return null;
    }
}
