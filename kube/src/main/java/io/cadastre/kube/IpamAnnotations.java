package io.cadastre.kube;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.cadastre.cni.CniCodes;
import io.cadastre.cni.CniException;
import io.cadastre.cni.CniText;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.IpFamily;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The IPAM annotations of a pod or namespace, Calico's {@code cni.projectcalico.org/ipv4pools},
 * {@code ipv6pools} and {@code ipAddrs} under Cadastre's prefix: {@value #IPV4_POOLS},
 * {@value #IPV6_POOLS}, {@value #IP_ADDRS}. Each value is a JSON array of strings:
 * <ul>
 *   <li>{@code ipv4pools}, {@code ipv6pools}: the pools of that family to allocate from, in
 *       order, each by name (lower-case letters, digits, {@code -} and {@code .}, up to 63) or by
 *       its CIDR ({@code ["blue", "198.18.64.0/18"]}); 1 to {@value #MAX_POOLS} entries;
 *   <li>{@code ipAddrs} (pods only: a namespace's is ignored): the pod's addresses, literal IPv4
 *       or IPv6 without prefix, at most one per family ({@code ["198.18.64.7", "fd00:198::7"]}).
 * </ul>
 *
 * <p>Annotations are written by whoever may edit the pod or namespace: untrusted. A value longer
 * than {@value #MAX_VALUE_CHARS} characters, not a JSON array of strings (duplicate keys and
 * trailing text refused), empty, with too many entries or with an entry of the wrong shape is
 * refused with CNI code 7 ({@link CniCodes#INVALID_NETWORK_CONFIG}), naming the annotation and
 * its object and showing the value escaped and cut ({@link CniText#quoted}); the ADD then changes
 * nothing. Whether a pool exists, is of the family, or holds an address is the IPAM's to say
 * (codes 7, 102, 101). Other annotations, {@code cadastre.io/} ones included, are not read.
 *
 * @param ipv4Pools the {@code ipv4pools} entries, empty when not annotated
 * @param ipv6Pools the {@code ipv6pools} entries, empty when not annotated
 * @param addresses the {@code ipAddrs} addresses, canonical; empty when not annotated
 */
public record IpamAnnotations(
        Optional<List<String>> ipv4Pools,
        Optional<List<String>> ipv6Pools,
        List<String> addresses) {
    /** The prefix of Cadastre's annotations. */
    public static final String PREFIX = "cadastre.io/";

    public static final String IPV4_POOLS = PREFIX + "ipv4pools";
    public static final String IPV6_POOLS = PREFIX + "ipv6pools";
    public static final String IP_ADDRS = PREFIX + "ipAddrs";

    /** The longest annotation value read, in characters. */
    public static final int MAX_VALUE_CHARS = 4096;

    /** The most pools one annotation may name. */
    public static final int MAX_POOLS = 16;

    public static final IpamAnnotations NONE =
            new IpamAnnotations(Optional.empty(), Optional.empty(), List.of());

    private static final Pattern POOL_NAME = Pattern.compile("[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?");
    private static final ObjectMapper JSON =
            JsonMapper.builder()
                    .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                    .build();

    public IpamAnnotations {
        ipv4Pools = ipv4Pools.map(List::copyOf);
        ipv6Pools = ipv6Pools.map(List::copyOf);
        addresses = List.copyOf(addresses);
    }

    /**
     * @param annotations the object's annotations (null: none)
     * @param object what carries them, for messages ({@code pod default/web-1}, {@code namespace default})
     * @param readAddresses whether {@code ipAddrs} is read (pods) or ignored (namespaces)
     * @throws CniException code 7 for a malformed value, as the class says
     */
    public static IpamAnnotations parse(
            Map<String, String> annotations, String object, boolean readAddresses) {
        if (annotations == null || annotations.isEmpty()) {
            return NONE;
        }
        Optional<List<String>> v4 =
                Optional.ofNullable(annotations.get(IPV4_POOLS))
                        .map(
                                v ->
                                        pools(
                                                strings(v, IPV4_POOLS, object, MAX_POOLS),
                                                IPV4_POOLS,
                                                object));
        Optional<List<String>> v6 =
                Optional.ofNullable(annotations.get(IPV6_POOLS))
                        .map(
                                v ->
                                        pools(
                                                strings(v, IPV6_POOLS, object, MAX_POOLS),
                                                IPV6_POOLS,
                                                object));
        List<String> addresses = List.of();
        String ips = readAddresses ? annotations.get(IP_ADDRS) : null;
        if (ips != null) {
            addresses = addresses(strings(ips, IP_ADDRS, object, 2), object);
        }
        return new IpamAnnotations(v4, v6, addresses);
    }

    /** @return whether no annotation chooses anything */
    public boolean isEmpty() {
        return ipv4Pools.isEmpty() && ipv6Pools.isEmpty() && addresses.isEmpty();
    }

    /**
     * The pod's choice over its namespace's: per family for pools, and the pod's addresses.
     *
     * @return the pools per family ({@code AssignRequest.poolsByFamily}) and the addresses
     */
    public static Map<IpFamily, List<String>> poolsByFamily(
            IpamAnnotations pod, IpamAnnotations namespace) {
        Map<IpFamily, List<String>> byFamily = new EnumMap<>(IpFamily.class);
        pod.ipv4Pools().or(namespace::ipv4Pools).ifPresent(p -> byFamily.put(IpFamily.V4, p));
        pod.ipv6Pools().or(namespace::ipv6Pools).ifPresent(p -> byFamily.put(IpFamily.V6, p));
        return byFamily;
    }

    private static List<String> strings(String value, String key, String object, int maxEntries) {
        if (value.length() > MAX_VALUE_CHARS) {
            throw refused(
                    key,
                    object,
                    "is " + value.length() + " characters long, more than " + MAX_VALUE_CHARS);
        }
        JsonNode tree;
        try {
            tree = JSON.readTree(value);
        } catch (JsonProcessingException e) {
            throw refused(key, object, CniText.quoted(value) + " is not JSON");
        }
        if (tree == null || !tree.isArray()) {
            throw refused(key, object, CniText.quoted(value) + " is not a JSON array of strings");
        }
        if (tree.isEmpty()) {
            throw refused(
                    key, object, "is an empty list (remove the annotation to choose nothing)");
        }
        if (tree.size() > maxEntries) {
            throw refused(key, object, "has " + tree.size() + " entries, more than " + maxEntries);
        }
        List<String> entries = new ArrayList<>();
        for (JsonNode item : tree) {
            if (!item.isTextual()) {
                throw refused(
                        key, object, CniText.quoted(value) + " is not a JSON array of strings");
            }
            entries.add(item.textValue().strip());
        }
        return entries;
    }

    private static List<String> pools(List<String> entries, String key, String object) {
        Set<String> pools = new LinkedHashSet<>();
        for (String entry : entries) {
            if (!POOL_NAME.matcher(entry).matches() && !isCidr(entry)) {
                throw refused(
                        key, object, CniText.quoted(entry) + " is neither a pool name nor a CIDR");
            }
            pools.add(entry);
        }
        return List.copyOf(pools);
    }

    private static boolean isCidr(String entry) {
        try {
            Cidr.parse(entry);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static List<String> addresses(List<String> entries, String object) {
        Map<IpFamily, String> byFamily = new EnumMap<>(IpFamily.class);
        for (String entry : entries) {
            String canonical;
            try {
                if (entry.contains("/")) {
                    throw new IllegalArgumentException("has a prefix");
                }
                canonical = IpAddresses.canonical(entry);
            } catch (IllegalArgumentException e) {
                throw refused(IP_ADDRS, object, CniText.quoted(entry) + " is not an IP address");
            }
            if (byFamily.put(IpAddresses.familyOf(canonical), canonical) != null) {
                throw refused(IP_ADDRS, object, "asks for two addresses of one family");
            }
        }
        return List.copyOf(byFamily.values());
    }

    private static CniException refused(String key, String object, String problem) {
        return new CniException(
                CniCodes.INVALID_NETWORK_CONFIG,
                "annotation " + key + " of " + object + " " + problem);
    }
}
