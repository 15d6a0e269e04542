package io.cadastre.ipam;

import java.util.List;
import java.util.Optional;

/**
 * Address ranges that no pool may overlap: special-purpose ranges whose addresses a pod cannot
 * use as its own (IANA's IPv4 and IPv6 Special-Purpose Address Registries, RFC 6890), and the
 * link-local ranges that hold every pod's gateway (169.254.1.1, fe80::ecee:eeff:feee:eeee).
 * Pure; a pool's range is checked when the pool is defined (admin API, the agent's configured
 * pools, the pool registry), not when a stored pool is read back.
 */
public final class SpecialRanges {
    /** A refused range and why. */
    private record Range(Cidr cidr, String why) {}

    private static final List<Range> REFUSED =
            List.of(
                    range("0.0.0.0/8", "\"this network\", RFC 791"),
                    range("127.0.0.0/8", "loopback, RFC 1122"),
                    range(
                            "169.254.0.0/16",
                            "link-local, RFC 3927; holds the pods' gateway 169.254.1.1"),
                    range("224.0.0.0/4", "multicast, RFC 5771"),
                    range(
                            "240.0.0.0/4",
                            "reserved, RFC 1112; holds the limited broadcast 255.255.255.255"),
                    range(
                            "::/8",
                            "reserved by the IETF: unspecified, loopback, IPv4-mapped and IPv4-compatible, RFC 4291"),
                    range(
                            "fe80::/10",
                            "link-local unicast, RFC 4291; holds the pods' gateway fe80::ecee:eeff:feee:eeee"),
                    range("fec0::/10", "deprecated site-local, RFC 3879"),
                    range("ff00::/8", "multicast, RFC 4291"));

    private SpecialRanges() {}

    /**
     * @param cidr a pool's range
     * @return why a pool may not have this range ({@code "overlaps 127.0.0.0/8 (loopback, RFC 1122)"}),
     *     or empty when it may
     */
    public static Optional<String> refusal(Cidr cidr) {
        return REFUSED.stream()
                .filter(r -> r.cidr().family() == cidr.family() && r.cidr().overlaps(cidr))
                .findFirst()
                .map(
                        r ->
                                cidr
                                        + " overlaps "
                                        + r.cidr()
                                        + " ("
                                        + r.why()
                                        + "): its addresses cannot be a pod's");
    }

    /**
     * @throws IllegalArgumentException with {@link #refusal}'s text when the range is refused
     */
    public static void requireUsable(Cidr cidr) {
        refusal(cidr)
                .ifPresent(
                        why -> {
                            throw new IllegalArgumentException(why);
                        });
    }

    private static Range range(String cidr, String why) {
        return new Range(Cidr.parse(cidr), why);
    }
}
