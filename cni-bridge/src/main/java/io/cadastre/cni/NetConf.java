package io.cadastre.cni;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.cadastre.cni.CniBackend.AttachmentRef;
import io.cadastre.cni.CniBackend.Bandwidth;
import io.cadastre.cni.CniBackend.Route;
import io.cadastre.cni.CniBackend.SubnetRange;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The parts of a request configuration (the plugin's stdin, CNI spec 1.1 §Section 1 and §Deriving
 * request configuration) that Cadastre reads, validated. Unknown fields are ignored, as the spec
 * allows (§Plugin configuration objects, "Other keys").
 *
 * <p>Two roles share one binary (cni-bridge/DESIGN.md): top-level {@code type} {@value #PLUGIN_TYPE}
 * is the full plugin ({@link Mode#PLUGIN}); otherwise {@code ipam.type} {@value #IPAM_TYPE} is the
 * delegated IPAM plugin ({@link Mode#IPAM_ONLY}, §Section 4); otherwise code 7.
 *
 * <p>Error codes from {@link #parse}: 6 for malformed JSON or a value of the wrong JSON type
 * (including duplicate keys); 1 for an unsupported {@code cniVersion}; 2 for {@code ipam.routes},
 * {@code ipam.ranges} or {@code ipam.subnet} (and its {@code rangeStart}, {@code rangeEnd},
 * {@code gateway}) given to the full plugin (which installs its own routes and gives /32 and /128
 * addresses on no subnet); 7 for a missing required field or an invalid value (name, type, mtu,
 * pool names, addresses, routes, ranges, valid attachments, bandwidth limits).
 *
 * @param cniVersion the request's version, one of {@link CniVersions#SUPPORTED}
 * @param name the network name (§Configuration format: alphanumeric start, then alphanumerics and
 *     {@code _ . -})
 * @param type the top-level {@code type}
 * @param mode which role is called
 * @param mtu the MTU in bytes, 68..65535, or 0 when not given; always 0 for IPAM-only (the
 *     top-level {@code mtu} then belongs to the calling plugin)
 * @param agentSocket the role's {@code agentSocket} (top level for the plugin, {@code ipam} for
 *     IPAM-only), or null; the C plugin uses it, the agent only checks its type
 * @param ipam the {@code ipam} section (an empty one when absent)
 * @param runtimeConfigIps {@code runtimeConfig.ips}, canonical addresses (a {@code /prefix} dropped)
 * @param runtimeConfigPools {@code runtimeConfig.pools} (the {@code pools} capability: a pod's own
 *     choice of pools, in order), de-duplicated; empty when not given
 * @param runtimeConfigBandwidth {@code runtimeConfig.bandwidth} (the {@code bandwidth} capability:
 *     {@code ingressRate}, {@code egressRate} in bits per second, 1,000 to 10^15 (the bounds
 *     Kubernetes puts on its bandwidth annotations), {@code ingressBurst}, {@code egressBurst} in
 *     bits, a burst only with its rate; the keys in any case, as containerd and CRI-O send
 *     {@code IngressRate}); {@link Bandwidth#NONE} when not given, and always for IPAM-only
 * @param argsCniIps {@code args.cni.ips}, canonical addresses (a {@code /prefix} dropped)
 * @param prevResult {@code prevResult} as given (an object), or null; see {@link CniResults}
 * @param validAttachments {@code cni.dev/valid-attachments} (GC, §GC), or null when absent
 */
public record NetConf(
        String cniVersion,
        String name,
        String type,
        Mode mode,
        int mtu,
        String agentSocket,
        Ipam ipam,
        List<String> runtimeConfigIps,
        List<String> runtimeConfigPools,
        Bandwidth runtimeConfigBandwidth,
        List<String> argsCniIps,
        JsonNode prevResult,
        List<AttachmentRef> validAttachments) {

    /** The top-level {@code type} of the full plugin. */
    public static final String PLUGIN_TYPE = "cadastre";

    /** The {@code ipam.type} of the IPAM-only role. */
    public static final String IPAM_TYPE = "cadastre-ipam";

    /** The GC key holding the attachments to keep (§GC). */
    public static final String VALID_ATTACHMENTS = "cni.dev/valid-attachments";

    public static final int MIN_MTU = 68;
    public static final int MAX_MTU = 65535;

    public NetConf {
        runtimeConfigIps = List.copyOf(runtimeConfigIps);
        runtimeConfigPools = List.copyOf(runtimeConfigPools);
        argsCniIps = List.copyOf(argsCniIps);
        validAttachments = validAttachments == null ? null : List.copyOf(validAttachments);
    }

    /** Which role the binary plays for this request. */
    public enum Mode {
        /** {@code type: cadastre}: creates the pod's interface and allocates its addresses. */
        PLUGIN,
        /** {@code ipam.type: cadastre-ipam}: allocates addresses for another plugin. */
        IPAM_ONLY
    }

    /**
     * The {@code ipam} section.
     *
     * @param type {@code ipam.type}, or null
     * @param pools {@code ipam.pools}: pool names in order of preference, de-duplicated; empty for
     *     the agent's defaults
     * @param namespacePools {@code ipam.namespacePools}: Kubernetes namespace → its pools in order
     *     (Cilium's per-namespace pools, Calico's namespace annotation), chosen by the pod's
     *     {@code K8S_POD_NAMESPACE}
     * @param routes {@code ipam.routes} (IPAM-only): routes to report in the ADD result, as
     *     host-local does; {@code dst} CIDR, {@code gw} an address or null
     * @param agentSocket {@code ipam.agentSocket}, or null
     * @param ranges (IPAM-only) the L2 subnet's range sets, host-local's {@code ipam.ranges} and
     *     {@code ipam.subnet} with their defaults applied ({@link HostLocalRanges}); empty when
     *     neither is given (each pool's CIDR is then the subnet)
     */
    public record Ipam(
            String type,
            List<String> pools,
            Map<String, List<String>> namespacePools,
            List<Route> routes,
            String agentSocket,
            List<List<SubnetRange>> ranges) {
        public Ipam {
            pools = List.copyOf(pools);
            namespacePools = Map.copyOf(namespacePools);
            routes = List.copyOf(routes);
            ranges = ranges.stream().map(List::copyOf).toList();
        }

        static final Ipam EMPTY = new Ipam(null, List.of(), Map.of(), List.of(), null, List.of());
    }

    /**
     * Which pools an ADD asks for, the most specific choice first, as Calico orders its pod
     * annotation, namespace annotation and netconf: {@code runtimeConfig.pools}, then
     * {@code CADASTRE_POOLS} of {@code CNI_ARGS}, then {@code ipam.namespacePools} of the pod's
     * namespace, then {@code ipam.pools}; empty when none gives any (the agent then uses its
     * default pools, or every enabled pool whose node selector matches the node).
     *
     * @param args the request's CNI_ARGS
     */
    public List<String> poolsFor(CniArgs args) {
        if (!runtimeConfigPools.isEmpty()) {
            return runtimeConfigPools;
        }
        if (!args.pools().isEmpty()) {
            return args.pools();
        }
        List<String> ofNamespace =
                args.podNamespace() == null ? null : ipam.namespacePools().get(args.podNamespace());
        return ofNamespace != null ? ofNamespace : ipam.pools();
    }

    /** @return true for the IPAM-only role */
    public boolean ipamOnly() {
        return mode == Mode.IPAM_ONLY;
    }

    /**
     * Parses and validates stdin. Checks run in this order, so the first problem is reported:
     * JSON syntax, {@code cniVersion}, {@code name}, role ({@code type} / {@code ipam.type}), the
     * rest.
     *
     * @throws CniException with code 1, 2, 6 or 7 as described on the class
     */
    public static NetConf parse(byte[] stdin) {
        ObjectNode root = Json.parseObject(stdin, "netconf");

        String cniVersion = Json.reqString(root, "cniVersion", "");
        if (!CniVersions.isSupported(cniVersion)) {
            CniVersions.requireAllows(cniVersion, CniCommand.ADD); // throws code 1
        }

        String name = Json.reqString(root, "name", "");
        if (!CniNames.isValidName(name)) {
            throw invalid(
                    "network name "
                            + CniText.quoted(name)
                            + " is invalid: it must start with a letter or digit,"
                            + " followed by letters, digits, '_', '.' or '-'");
        }

        String type = Json.reqString(root, "type", "");
        ObjectNode ipamNode = Json.optObject(root, "ipam", "");
        String ipamType = ipamNode == null ? null : Json.optString(ipamNode, "type", "ipam");
        Mode mode;
        if (PLUGIN_TYPE.equals(type)) {
            mode = Mode.PLUGIN;
            if (ipamType != null && !IPAM_TYPE.equals(ipamType)) {
                throw invalid(
                        "the "
                                + PLUGIN_TYPE
                                + " plugin does its own address management: ipam.type must be"
                                + " absent or \""
                                + IPAM_TYPE
                                + "\", not "
                                + CniText.quoted(ipamType));
            }
        } else if (IPAM_TYPE.equals(ipamType)) {
            mode = Mode.IPAM_ONLY;
        } else {
            throw invalid(
                    "netconf is for neither "
                            + PLUGIN_TYPE
                            + " (type) nor "
                            + IPAM_TYPE
                            + " (ipam.type): type is "
                            + CniText.quoted(type)
                            + ", ipam.type is "
                            + (ipamType == null ? "absent" : CniText.quoted(ipamType)));
        }

        int mtu = 0;
        String agentSocket;
        if (mode == Mode.PLUGIN) {
            Integer m = Json.optInt(root, "mtu", "");
            if (m != null) {
                if (m < MIN_MTU || m > MAX_MTU) {
                    throw invalid("mtu " + m + " is out of range " + MIN_MTU + ".." + MAX_MTU);
                }
                mtu = m;
            }
            agentSocket = Json.optString(root, "agentSocket", "");
        } else {
            agentSocket = Json.optString(ipamNode, "agentSocket", "ipam");
        }

        Ipam ipam = ipamNode == null ? Ipam.EMPTY : parseIpam(ipamNode, ipamType, mode);

        List<String> runtimeConfigIps = List.of();
        List<String> runtimeConfigPools = List.of();
        Bandwidth bandwidth = Bandwidth.NONE;
        ObjectNode runtimeConfig = Json.optObject(root, "runtimeConfig", "");
        if (runtimeConfig != null) {
            runtimeConfigIps = addressList(runtimeConfig, "ips", "runtimeConfig");
            runtimeConfigPools =
                    poolNames(
                            Json.optArray(runtimeConfig, "pools", "runtimeConfig"),
                            "runtimeConfig.pools");
            ObjectNode limits = Json.optObject(runtimeConfig, "bandwidth", "runtimeConfig");
            if (limits != null && mode == Mode.PLUGIN) {
                bandwidth = parseBandwidth(limits);
            }
        }
        List<String> argsCniIps = List.of();
        ObjectNode args = Json.optObject(root, "args", "");
        ObjectNode argsCni = args == null ? null : Json.optObject(args, "cni", "args");
        if (argsCni != null) {
            argsCniIps = addressList(argsCni, "ips", "args.cni");
        }

        // Kept as given: CHECK and a chained ADD check its shape (CniResults.parsePrevResult); DEL,
        // GC, STATUS and IPAM-only ADD ignore it, so a malformed one never fails them.
        JsonNode prevResult = Json.present(root, "prevResult");

        List<AttachmentRef> valid = null;
        ArrayNode validNode = Json.optArray(root, VALID_ATTACHMENTS, "");
        if (validNode != null) {
            valid = parseValidAttachments(validNode);
        }

        return new NetConf(
                cniVersion,
                name,
                type,
                mode,
                mtu,
                agentSocket,
                ipam,
                runtimeConfigIps,
                runtimeConfigPools,
                bandwidth,
                argsCniIps,
                prevResult,
                valid);
    }

    /** The least and the most a bandwidth annotation may ask for in Kubernetes, bits per second. */
    public static final long MIN_RATE = 1_000;

    public static final long MAX_RATE = 1_000_000_000_000_000L;

    /**
     * @throws CniException code 6 for a value that is no integer; code 7 for a negative one, a
     *     rate outside {@value #MIN_RATE} to {@value #MAX_RATE} bits per second, or a burst without
     *     its rate
     */
    private static Bandwidth parseBandwidth(ObjectNode limits) {
        long[] values = new long[4];
        String[] fields = {"ingressRate", "ingressBurst", "egressRate", "egressBurst"};
        String[] given = new String[4];
        // Keys match regardless of case, as Go's encoding/json matches them: containerd (go-cni's
        // BandWidth) and CRI-O (ocicni's BandwidthConfig) marshal structs without JSON tags, so
        // they send "IngressRate", and the reference bandwidth plugin, also in Go, reads it.
        for (var it = limits.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            for (int i = 0; i < fields.length; i++) {
                if (!fields[i].equalsIgnoreCase(key)) {
                    continue;
                }
                if (given[i] != null) {
                    throw invalid("runtimeConfig.bandwidth has both " + given[i] + " and " + key);
                }
                given[i] = key;
                Long v = Json.optLong(limits, key, "runtimeConfig.bandwidth");
                if (v != null && v < 0) {
                    throw invalid("runtimeConfig.bandwidth." + key + " " + v + " is negative");
                }
                values[i] = v == null ? 0 : v;
            }
        }
        for (int rate = 0; rate < 4; rate += 2) {
            String name = "runtimeConfig.bandwidth." + fields[rate];
            if (values[rate] == 0 && values[rate + 1] > 0) {
                throw invalid(
                        "runtimeConfig.bandwidth."
                                + fields[rate + 1]
                                + " is set but "
                                + name
                                + " is not");
            }
            if (values[rate] != 0 && (values[rate] < MIN_RATE || values[rate] > MAX_RATE)) {
                throw invalid(
                        name
                                + " "
                                + values[rate]
                                + " bit/s is outside "
                                + MIN_RATE
                                + ".."
                                + MAX_RATE);
            }
        }
        return new Bandwidth(values[0], values[1], values[2], values[3]);
    }

    private static Ipam parseIpam(ObjectNode ipam, String ipamType, Mode mode) {
        List<String> pools = poolNames(Json.optArray(ipam, "pools", "ipam"), "ipam.pools");
        Map<String, List<String>> namespacePools = new TreeMap<>();
        ObjectNode byNamespace = Json.optObject(ipam, "namespacePools", "ipam");
        if (byNamespace != null) {
            for (Map.Entry<String, JsonNode> e : byNamespace.properties()) {
                String p = "ipam.namespacePools[" + CniText.quoted(e.getKey()) + "]";
                if (!e.getValue().isArray()) {
                    throw Json.wrongType(p, "an array of pool names");
                }
                List<String> names = poolNames((ArrayNode) e.getValue(), p);
                if (e.getKey().isBlank() || names.isEmpty()) {
                    throw invalid(p + ": a namespace needs a name and at least one pool");
                }
                namespacePools.put(e.getKey(), names);
            }
        }
        List<List<SubnetRange>> ranges = List.of();
        if (mode == Mode.PLUGIN) {
            for (String key : List.of("ranges", "subnet", "rangeStart", "rangeEnd", "gateway")) {
                if (Json.present(ipam, key) != null) {
                    throw new CniException(
                            CniCodes.UNSUPPORTED_FIELD,
                            "unsupported field ipam."
                                    + key
                                    + ": the "
                                    + PLUGIN_TYPE
                                    + " plugin gives /32 and /128 addresses on no subnet (ipam."
                                    + key
                                    + " is for "
                                    + IPAM_TYPE
                                    + ")");
                }
            }
        } else {
            ranges = HostLocalRanges.parse(ipam);
        }
        List<Route> routes = new ArrayList<>();
        ArrayNode routesNode = Json.optArray(ipam, "routes", "ipam");
        if (routesNode != null) {
            if (mode == Mode.PLUGIN) {
                throw new CniException(
                        CniCodes.UNSUPPORTED_FIELD,
                        "unsupported field ipam.routes: the "
                                + PLUGIN_TYPE
                                + " plugin installs its own routes (ipam.routes is for "
                                + IPAM_TYPE
                                + ")");
            }
            for (int i = 0; i < routesNode.size(); i++) {
                String p = "ipam.routes[" + i + "]";
                JsonNode r = routesNode.get(i);
                if (!r.isObject()) {
                    throw Json.wrongType(p, "an object");
                }
                String dst = Json.reqString(r, "dst", p);
                if (!IpLiterals.isCidr(dst)) {
                    throw invalid(p + ".dst " + CniText.quoted(dst) + " is not in CIDR notation");
                }
                String gw = Json.optString(r, "gw", p);
                if (gw != null && IpLiterals.canonicalAddress(gw).isEmpty()) {
                    throw invalid(p + ".gw " + CniText.quoted(gw) + " is not an IP address");
                }
                Route route = new Route(dst, gw);
                if (!routes.contains(route)) {
                    routes.add(route);
                }
            }
        }
        return new Ipam(
                ipamType,
                pools,
                namespacePools,
                routes,
                Json.optString(ipam, "agentSocket", "ipam"),
                ranges);
    }

    /** @return the pool names of the array (none when absent), de-duplicated, order kept; code 7 for an empty name */
    private static List<String> poolNames(ArrayNode node, String path) {
        if (node == null) {
            return List.of();
        }
        List<String> raw = Json.stringList(node, path);
        for (int i = 0; i < raw.size(); i++) {
            if (raw.get(i).isBlank()) {
                throw invalid(path + "[" + i + "] is empty");
            }
        }
        return new ArrayList<>(new LinkedHashSet<>(raw));
    }

    /** {@code <parent>.<field>}: a list of addresses, each optionally with a /prefix (dropped). */
    private static List<String> addressList(ObjectNode parent, String field, String parentPath) {
        String p = Json.path(parentPath, field);
        ArrayNode node = Json.optArray(parent, field, parentPath);
        if (node == null) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        List<String> raw = Json.stringList(node, p);
        for (String s : raw) {
            String a =
                    IpLiterals.addressDroppingPrefix(s)
                            .orElseThrow(
                                    () ->
                                            invalid(
                                                    p
                                                            + ": "
                                                            + CniText.quoted(s)
                                                            + " is not an IP address"));
            out.add(a);
        }
        return out;
    }

    private static List<AttachmentRef> parseValidAttachments(ArrayNode node) {
        List<AttachmentRef> out = new ArrayList<>(node.size());
        for (int i = 0; i < node.size(); i++) {
            String p = VALID_ATTACHMENTS + "[" + i + "]";
            JsonNode e = node.get(i);
            if (!e.isObject()) {
                throw Json.wrongType(p, "an object");
            }
            String containerId = Json.reqString(e, "containerID", p);
            String ifname = Json.reqString(e, "ifname", p);
            if (!CniNames.isValidName(containerId)) {
                throw invalid(
                        p
                                + ".containerID "
                                + CniText.quoted(containerId)
                                + " is not a valid container ID");
            }
            String problem = CniNames.ifnameProblem(ifname);
            if (problem != null) {
                throw invalid(p + ".ifname " + CniText.quoted(ifname) + " " + problem);
            }
            out.add(new AttachmentRef(containerId, ifname));
        }
        return out;
    }

    private static CniException invalid(String msg) {
        return new CniException(CniCodes.INVALID_NETWORK_CONFIG, msg);
    }
}
