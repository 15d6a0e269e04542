package io.cadastre.dataplane;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Names the host end of a pod's veth pair: {@code "cad"} followed by the first 12 lower-case hex
 * digits (48 bits) of SHA-256 over the CNI network name, container id and CNI_IFNAME, 15
 * characters in all, which is the most Linux allows (IFNAMSIZ - 1).
 *
 * <p>Why derived, not allocated: CNI retries ADD and sends DEL after crashes and restarts, often
 * with nothing but these three values. The same attachment always gets the same name, so DEL finds
 * the link without any stored state, and a retried ADD runs into its own leftover link
 * (EEXIST) instead of creating a second one. Each value is length-prefixed before hashing, so no
 * two different triples feed the hash the same bytes ({@code ("a","bc",…)} vs {@code ("ab","c",…)}).
 *
 * <p>Collisions: with n attachments on one host, the chance that any two share a name is about
 * n² / 2⁴⁹: about 2·10⁻⁹ for 1,000 pods. A collision does not hijack a link: the create is
 * exclusive, so the second ADD fails with "File exists" and can be retried under a new container id.
 */
public final class HostInterfaceName {
    /** The prefix that marks Cadastre's links in {@code ip link}. */
    public static final String PREFIX = "cad";

    private static final int HEX_DIGITS = 12;

    private HostInterfaceName() {}

    /**
     * @param network the CNI network name (netconf {@code name})
     * @param containerId CNI_CONTAINERID
     * @param ifname CNI_IFNAME, the interface name inside the pod
     * @return a 15-character name such as {@code cad1a2b3c4d5e6f}, the same for the same values
     * @throws NullPointerException if any value is null
     */
    public static String of(String network, String containerId, String ifname) {
        MessageDigest sha256;
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every Java platform has SHA-256", e);
        }
        for (String value : new String[] {network, containerId, ifname}) {
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            sha256.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
            sha256.update(bytes);
        }
        return PREFIX + HexFormat.of().formatHex(sha256.digest(), 0, HEX_DIGITS / 2);
    }

    /** The prefix of the IFB devices that shape pods' egress ({@link Bandwidth}). */
    public static final String IFB_PREFIX = "cbw";

    /**
     * @param hostIfname a host end's name
     * @return the name of the IFB device that shapes what that pod sends: {@code cbw} and the
     *     host end's 12 hex digits ({@code cad1a2b3c4d5e6f} → {@code cbw1a2b3c4d5e6f}), so the two
     *     read as a pair in {@code ip link}; for a name not made by {@link #of}, {@code cbw} and
     *     12 hex digits of SHA-256 over it
     */
    public static String ifbOf(String hostIfname) {
        String digits = hostIfname.substring(Math.min(PREFIX.length(), hostIfname.length()));
        if (hostIfname.startsWith(PREFIX)
                && digits.length() == HEX_DIGITS
                && digits.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            return IFB_PREFIX + digits;
        }
        try {
            byte[] hash =
                    MessageDigest.getInstance("SHA-256")
                            .digest(hostIfname.getBytes(StandardCharsets.UTF_8));
            return IFB_PREFIX + HexFormat.of().formatHex(hash, 0, HEX_DIGITS / 2);
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every Java platform has SHA-256", e);
        }
    }
}
