package io.cadastre.cni;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.cadastre.cni.CniBackend.SubnetRange;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The L2 subnet of an IPAM-only netconf, in host-local's terms (containernetworking/plugins
 * {@code plugins/ipam/host-local}: {@code backend/allocator/config.go}, {@code range.go},
 * {@code range_set.go}), read from the {@code ipam} object, validated, with host-local's defaults
 * applied. Pure functions.
 *
 * <p>Two forms, as host-local reads them:
 * <ul>
 *   <li>{@code ipam.ranges}: an array of range sets, each an array of ranges {@code {"subnet",
 *       "rangeStart"?, "rangeEnd"?, "gateway"?}}; one address per range set, the set's ranges
 *       tried in order;
 *   <li>{@code ipam.subnet} with {@code ipam.rangeStart}, {@code rangeEnd}, {@code gateway} beside
 *       it: the older single range, put before the {@code ranges} (host-local prepends it too).
 * </ul>
 *
 * <p>Defaults and checks, as host-local's {@code Range.Canonicalize}: {@code subnet} must be CIDR
 * notation with its host bits zero and hold at least 4 addresses (IPv4 /30, IPv6 /126: "too small
 * to allocate from"); {@code gateway} defaults to the subnet's network address + 1;
 * {@code rangeStart} to network + 1; {@code rangeEnd} to the broadcast address − 1 (IPv4) or the
 * last address (IPv6); each given address must be a literal of the subnet's family inside it, and
 * {@code rangeStart} not after {@code rangeEnd}. The ranges of a set must be of one family and
 * must not overlap (range_set.go). Beyond host-local: at most one set per family, since an
 * attachment holds at most one address per family. Whatever the ends say, the subnet's network
 * address, its IPv4 broadcast address and the gateway are never given (the IPAM's rule,
 * shards/DESIGN.md).
 *
 * <p>Errors: code 6 ({@link CniCodes#DECODING_FAILURE}) for a value of the wrong JSON type, code 7
 * ({@link CniCodes#INVALID_NETWORK_CONFIG}) for a missing or invalid value, naming its path.
 */
final class HostLocalRanges {
    /** The keys of the older single-range form, beside {@code subnet} in {@code ipam}. */
    static final List<String> SINGLE_RANGE_KEYS =
            List.of("subnet", "rangeStart", "rangeEnd", "gateway");

    private HostLocalRanges() {}

    /** An IP network in numbers: family 4 or 6, the network address's value, the prefix length. */
    private record Net(int family, BigInteger network, int prefix) {
        int bits() {
            return family == 4 ? 32 : 128;
        }

        BigInteger last() {
            return network.add(BigInteger.ONE.shiftLeft(bits() - prefix)).subtract(BigInteger.ONE);
        }

        boolean contains(int addressFamily, BigInteger value) {
            return addressFamily == family
                    && value.compareTo(network) >= 0
                    && value.compareTo(last()) <= 0;
        }
    }

    /**
     * @return the range sets of the {@code ipam} object, defaults applied, in order (the single
     *     range first); empty when it names none
     * @throws CniException code 6 or 7 as described on the class
     */
    static List<List<SubnetRange>> parse(ObjectNode ipam) {
        List<List<SubnetRange>> sets = new ArrayList<>();
        String subnet = Json.optString(ipam, "subnet", "ipam");
        if (subnet != null) {
            sets.add(List.of(range(ipam, "ipam")));
        } else {
            for (String key : SINGLE_RANGE_KEYS) {
                if (Json.present(ipam, key) != null) {
                    throw invalid("ipam." + key + " needs ipam.subnet (or use ipam.ranges)");
                }
            }
        }
        ArrayNode ranges = Json.optArray(ipam, "ranges", "ipam");
        if (ranges != null) {
            for (int i = 0; i < ranges.size(); i++) {
                String p = "ipam.ranges[" + i + "]";
                JsonNode set = ranges.get(i);
                if (!set.isArray()) {
                    throw Json.wrongType(p, "an array of ranges");
                }
                if (set.isEmpty()) {
                    throw invalid(p + " holds no range");
                }
                List<SubnetRange> parsed = new ArrayList<>();
                for (int j = 0; j < set.size(); j++) {
                    String rp = p + "[" + j + "]";
                    if (!set.get(j).isObject()) {
                        throw Json.wrongType(rp, "an object");
                    }
                    parsed.add(range(set.get(j), rp));
                }
                sets.add(checkSet(parsed, p));
            }
        }
        Set<Integer> families = new HashSet<>();
        for (List<SubnetRange> set : sets) {
            int family = IpLiterals.family(set.get(0).subnet());
            if (!families.add(family)) {
                throw invalid(
                        "two IPv"
                                + family
                                + " range sets in ipam: an attachment holds at most one address per family");
            }
        }
        return sets;
    }

    /** One range object at {@code path}, defaults applied. */
    private static SubnetRange range(JsonNode r, String path) {
        String subnetText = Json.reqString(r, "subnet", path);
        Net net = net(subnetText, path + ".subnet");
        String start = address(r, "rangeStart", path, net);
        String end = address(r, "rangeEnd", path, net);
        String gateway = address(r, "gateway", path, net);
        String network = text(net.family(), net.network());
        if (gateway == null) {
            gateway = text(net.family(), net.network().add(BigInteger.ONE));
        }
        if (start == null) {
            start = text(net.family(), net.network().add(BigInteger.ONE));
        }
        if (end == null) {
            end =
                    text(
                            net.family(),
                            net.family() == 4 ? net.last().subtract(BigInteger.ONE) : net.last());
        }
        if (value(start).compareTo(value(end)) > 0) {
            throw invalid(path + ".rangeEnd " + end + " lies before rangeStart " + start);
        }
        return new SubnetRange(network + "/" + net.prefix(), start, end, gateway);
    }

    private static Net net(String cidr, String path) {
        if (!IpLiterals.isCidr(cidr)) {
            throw invalid(path + " " + CniText.quoted(cidr) + " is not in CIDR notation");
        }
        int slash = cidr.indexOf('/');
        String address = IpLiterals.canonicalAddress(cidr.substring(0, slash)).orElseThrow();
        int family = IpLiterals.family(address);
        int prefix = Integer.parseInt(cidr.substring(slash + 1));
        if (family == 4 && address.indexOf(':') < 0 && cidr.indexOf(':') >= 0) {
            throw invalid(
                    path
                            + " "
                            + CniText.quoted(cidr)
                            + " is an IPv4-mapped IPv6 network; write it as IPv4");
        }
        Net net = new Net(family, value(address), prefix);
        BigInteger hostMask =
                BigInteger.ONE.shiftLeft(net.bits() - prefix).subtract(BigInteger.ONE);
        if (!net.network().and(hostMask).equals(BigInteger.ZERO)) {
            throw invalid(
                    path
                            + " "
                            + CniText.quoted(cidr)
                            + " has host bits set: its network is "
                            + text(family, net.network().andNot(hostMask))
                            + "/"
                            + prefix);
        }
        if (prefix > net.bits() - 2) {
            throw invalid(
                    path
                            + " "
                            + CniText.quoted(cidr)
                            + " is too small to allocate from (at most /"
                            + (net.bits() - 2)
                            + ")");
        }
        return net;
    }

    /** An optional address field of a range: canonical, of the subnet's family, inside it. */
    private static String address(JsonNode r, String field, String path, Net net) {
        String text = Json.optString(r, field, path);
        if (text == null) {
            return null;
        }
        String p = path + "." + field;
        String canonical =
                IpLiterals.canonicalAddress(text)
                        .orElseThrow(
                                () ->
                                        invalid(
                                                p
                                                        + " "
                                                        + CniText.quoted(text)
                                                        + " is not an IP address"));
        if (!net.contains(IpLiterals.family(canonical), value(canonical))) {
            throw invalid(
                    p
                            + " "
                            + canonical
                            + " is not inside "
                            + text(net.family(), net.network())
                            + "/"
                            + net.prefix());
        }
        return canonical;
    }

    /** A set's ranges: one family, no overlaps (host-local's RangeSet.Canonicalize). */
    private static List<SubnetRange> checkSet(List<SubnetRange> set, String path) {
        int family = IpLiterals.family(set.get(0).subnet());
        for (int i = 0; i < set.size(); i++) {
            SubnetRange r = set.get(i);
            if (IpLiterals.family(r.subnet()) != family) {
                throw invalid(path + " mixes IPv4 and IPv6 ranges");
            }
            for (int j = 0; j < i; j++) {
                SubnetRange o = set.get(j);
                if (value(r.rangeStart()).compareTo(value(o.rangeEnd())) <= 0
                        && value(o.rangeStart()).compareTo(value(r.rangeEnd())) <= 0) {
                    throw invalid(path + "[" + j + "] and [" + i + "] overlap");
                }
            }
        }
        return set;
    }

    /**
     * @param address a canonical address
     * @return the first range of the sets whose subnet holds the address, if any: its subnet's
     *     prefix length and gateway are what the result reports with the address
     */
    static Optional<SubnetRange> rangeOf(List<List<SubnetRange>> sets, String address) {
        int family = IpLiterals.family(address);
        BigInteger v = value(address);
        for (List<SubnetRange> set : sets) {
            for (SubnetRange r : set) {
                int slash = r.subnet().indexOf('/');
                String network = r.subnet().substring(0, slash);
                if (IpLiterals.family(network) == family
                        && new Net(
                                        family,
                                        value(network),
                                        Integer.parseInt(r.subnet().substring(slash + 1)))
                                .contains(family, v)) {
                    return Optional.of(r);
                }
            }
        }
        return Optional.empty();
    }

    /** @return the unsigned value of a canonical literal (parsed as a literal: never a lookup) */
    private static BigInteger value(String canonical) {
        try {
            return new BigInteger(1, InetAddress.getByName(canonical).getAddress());
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an address literal: " + canonical, e);
        }
    }

    /** @return the canonical text of the family's address with this value */
    private static String text(int family, BigInteger value) {
        byte[] raw = value.toByteArray();
        byte[] bytes = new byte[family == 4 ? 4 : 16];
        int copy = Math.min(raw.length, bytes.length);
        System.arraycopy(raw, raw.length - copy, bytes, bytes.length - copy, copy);
        if (family == 4) {
            return (bytes[0] & 0xff)
                    + "."
                    + (bytes[1] & 0xff)
                    + "."
                    + (bytes[2] & 0xff)
                    + "."
                    + (bytes[3] & 0xff);
        }
        return IpLiterals.formatV6(bytes);
    }

    private static CniException invalid(String msg) {
        return new CniException(CniCodes.INVALID_NETWORK_CONFIG, msg);
    }
}
