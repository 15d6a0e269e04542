package io.cadastre.cni;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The CNI spec versions Cadastre speaks and which verbs each allows (CNI spec 1.1 §Version
 * considerations, §VERSION; the spec's released-versions table for when a verb appeared).
 *
 * <ul>
 *   <li>Supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0. Anything else is code 1.
 *   <li>ADD, DEL, VERSION: every supported version. CHECK: 0.4.0 and later. GC, STATUS: 1.1.0.
 *   <li>Result shape: before 1.0.0 each {@code ips} entry carries {@code "version":"4"|"6"}.
 * </ul>
 */
public final class CniVersions {
    /** The newest version; also what VERSION and error objects report when stdin gives none. */
    public static final String LATEST = "1.1.0";

    /** In ascending order; the same list the C plugin prints for VERSION. */
    public static final List<String> SUPPORTED =
            List.of("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0");

    private static final Pattern DIGITS_AND_DOTS = Pattern.compile("[0-9.]+");

    private CniVersions() {}

    /** @return true when {@code version} is one of {@link #SUPPORTED} */
    public static boolean isSupported(String version) {
        return version != null && SUPPORTED.contains(version);
    }

    /** @return true when {@code version} is supported and defines {@code command} */
    public static boolean allows(String version, CniCommand command) {
        if (!isSupported(version)) {
            return false;
        }
        int v = SUPPORTED.indexOf(version);
        return switch (command) {
            case CHECK -> v >= SUPPORTED.indexOf("0.4.0");
            case GC, STATUS -> v >= SUPPORTED.indexOf("1.1.0");
            default -> true;
        };
    }

    /**
     * @throws CniException code 1 when {@code version} is unsupported, or does not define
     *     {@code command} (CHECK before 0.4.0, GC and STATUS before 1.1.0)
     */
    public static void requireAllows(String version, CniCommand command) {
        if (!isSupported(version)) {
            throw new CniException(
                    CniCodes.INCOMPATIBLE_VERSION,
                    "incompatible CNI version " + CniText.quoted(version),
                    "supported versions: " + String.join(", ", SUPPORTED));
        }
        if (!allows(version, command)) {
            String since = command == CniCommand.CHECK ? "0.4.0" : "1.1.0";
            throw new CniException(
                    CniCodes.INCOMPATIBLE_VERSION,
                    "cniVersion "
                            + version
                            + " does not define "
                            + command
                            + " (needs "
                            + since
                            + " or later)");
        }
    }

    /** @return true when results for {@code version} use the pre-1.0.0 shape ({@code ips[].version}) */
    public static boolean legacyResultShape(String version) {
        return version.startsWith("0.");
    }

    /**
     * The version to put in a VERSION reply or an error object: {@code requested} when it is made
     * of digits and dots, else {@link #LATEST} (the C plugin's rule, cni-bridge/DESIGN.md).
     */
    public static String echoVersion(String requested) {
        return requested != null && DIGITS_AND_DOTS.matcher(requested).matches()
                ? requested
                : LATEST;
    }

    /**
     * The reply to {@code CNI_COMMAND=VERSION}, byte for byte what the C plugin prints itself:
     * {@code {"cniVersion":"<stdin cniVersion, or 1.1.0>","supportedVersions":[...]}} (CNI spec 1.1
     * §VERSION Success). Never fails: unreadable stdin gives {@code 1.1.0}.
     */
    public static byte[] versionReply(byte[] stdin) {
        String version = echoVersion(peekVersion(stdin));
        StringBuilder sb =
                new StringBuilder("{\"cniVersion\":\"")
                        .append(version)
                        .append("\",\"supportedVersions\":[");
        for (int i = 0; i < SUPPORTED.size(); i++) {
            sb.append(i == 0 ? "" : ",").append('"').append(SUPPORTED.get(i)).append('"');
        }
        return sb.append("]}").toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** @return the top-level string {@code cniVersion} of a JSON body, or null; never throws */
    static String peekVersion(byte[] stdin) {
        if (stdin == null || stdin.length == 0) {
            return null;
        }
        try {
            JsonNode tree = Json.MAPPER.readTree(stdin);
            JsonNode v = tree == null ? null : tree.get("cniVersion");
            return v != null && v.isTextual() ? v.textValue() : null;
        } catch (Exception e) {
            return null;
        }
    }
}
