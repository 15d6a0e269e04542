package io.cadastre.routing;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/** A node's VTEP MAC, derived from its name so that every agent computes the same without asking. */
public final class Vtep {
    private Vtep() {}

    /**
     * @return six bytes of SHA-256 over {@code "cadastre-vtep:" + node}, with the first byte's
     *     multicast bit cleared and its locally administered bit set (IEEE 802: no vendor's
     *     address, never a group), e.g. {@code 0e:3c:...}; lower-case colon notation
     */
    public static String mac(String node) {
        byte[] digest;
        try {
            digest =
                    MessageDigest.getInstance("SHA-256")
                            .digest(("cadastre-vtep:" + node).getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JVM has SHA-256", e);
        }
        byte[] mac = Arrays.copyOf(digest, 6);
        mac[0] = (byte) ((mac[0] & 0xfc) | 0x02);
        return HexFormat.ofDelimiter(":").formatHex(mac);
    }
}
