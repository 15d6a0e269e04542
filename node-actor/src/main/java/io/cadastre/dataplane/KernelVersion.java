package io.cadastre.dataplane;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The running kernel's version, as far as Cadastre's workarounds depend on it.
 *
 * @param major e.g. 6 for {@code 6.18.44-fc-v657}
 * @param minor e.g. 18
 */
public record KernelVersion(int major, int minor) {
    private static final Path OSRELEASE = Path.of("/proc/sys/kernel/osrelease");
    private static final Pattern LEADING = Pattern.compile("^(\\d+)\\.(\\d+)");

    /**
     * @return the version in {@code /proc/sys/kernel/osrelease} (what uname -r prints), or empty
     *     when it cannot be read or parsed
     */
    public static Optional<KernelVersion> running() {
        try {
            return parse(Files.readString(OSRELEASE).trim());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** @return the major and minor number at the start of a release string, e.g. {@code 5.4.0-150-generic} */
    public static Optional<KernelVersion> parse(String release) {
        Matcher m = LEADING.matcher(release);
        if (!m.find()) {
            return Optional.empty();
        }
        try {
            return Optional.of(
                    new KernelVersion(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** @return whether this version is {@code major.minor} or older */
    public boolean atMost(int maxMajor, int maxMinor) {
        return major < maxMajor || (major == maxMajor && minor <= maxMinor);
    }

    /**
     * On kernels up to 5.7, VXLAN packets whose checksum is left to TX offload can leave with a bad
     * checksum once netfilter rewrites them (kube-proxy's SNAT; Calico#3145, Flannel#1279), and
     * the receiver drops them; both projects turn the offload off on their VXLAN devices there.
     */
    public boolean vxlanTxChecksumBroken() {
        return atMost(5, 7);
    }

    @Override
    public String toString() {
        return major + "." + minor;
    }
}
