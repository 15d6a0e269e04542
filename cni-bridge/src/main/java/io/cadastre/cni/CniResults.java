package io.cadastre.cni;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.cadastre.cni.CniBackend.AddResult;
import io.cadastre.cni.CniBackend.Interface;
import io.cadastre.cni.CniBackend.IpConfig;
import io.cadastre.cni.CniBackend.Route;
import java.util.ArrayList;
import java.util.List;

/**
 * CNI result objects (CNI spec 1.1 §Section 5) to and from {@link AddResult}. Pure functions.
 *
 * <p>ADD success, every version: {@code cniVersion} (the request's), {@code interfaces} ({@code name},
 * {@code mac}?, {@code sandbox}?), {@code ips} ({@code address} in CIDR notation, {@code gateway}?,
 * {@code interface}? an index into {@code interfaces}), {@code routes} ({@code dst} CIDR, {@code gw}?)
 * and {@code dns} (always {@code {}}). Empty lists and absent values are left out, as libcni's Go
 * types do ({@code omitempty}); so an IPAM-only result has no {@code interfaces} and no
 * {@code interface} in its ips (§Delegated plugins). For 0.3.0, 0.3.1 and 0.4.0 every {@code ips}
 * entry also carries {@code "version":"4"} or {@code "6"} (removed in 1.0.0).
 */
public final class CniResults {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private CniResults() {}

    /**
     * Renders an ADD result.
     *
     * @param cniVersion one of {@link CniVersions#SUPPORTED}
     * @throws IllegalArgumentException for an unsupported version
     */
    public static ObjectNode renderAdd(AddResult result, String cniVersion) {
        if (!CniVersions.isSupported(cniVersion)) {
            throw new IllegalArgumentException("unsupported cniVersion " + cniVersion);
        }
        boolean legacy = CniVersions.legacyResultShape(cniVersion);
        ObjectNode out = NODES.objectNode();
        out.put("cniVersion", cniVersion);
        if (!result.interfaces().isEmpty()) {
            ArrayNode a = out.putArray("interfaces");
            for (Interface i : result.interfaces()) {
                ObjectNode n = a.addObject().put("name", i.name());
                putIfPresent(n, "mac", i.mac());
                putIfPresent(n, "sandbox", i.sandbox());
            }
        }
        if (!result.ips().isEmpty()) {
            ArrayNode a = out.putArray("ips");
            for (IpConfig ip : result.ips()) {
                ObjectNode n = a.addObject();
                if (legacy) {
                    n.put("version", IpLiterals.family(ip.address()) == 6 ? "6" : "4");
                }
                if (ip.interfaceIndex() != null) {
                    n.put("interface", ip.interfaceIndex());
                }
                n.put("address", ip.address());
                putIfPresent(n, "gateway", ip.gateway());
            }
        }
        if (!result.routes().isEmpty()) {
            ArrayNode a = out.putArray("routes");
            for (Route r : result.routes()) {
                ObjectNode n = a.addObject().put("dst", r.dst());
                putIfPresent(n, "gw", r.gw());
            }
        }
        out.putObject("dns");
        return out;
    }

    /**
     * Chains an ADD result after a previous plugin's (§ADD: "If the plugin was supplied a
     * prevResult ... it MUST handle prevResult by either passing it through, or modifying it"):
     * a copy of {@code prevResult} (its other fields kept, {@code dns} included) with this
     * result's interfaces, ips and routes appended, the appended ips' {@code interface} indices
     * shifted past the previous interfaces, and {@code cniVersion} set to this result's.
     *
     * @param rendered from {@link #renderAdd}
     * @param prevResult an object, already checked by {@link #parsePrevResult}
     */
    public static ObjectNode chain(ObjectNode rendered, JsonNode prevResult) {
        ObjectNode out = prevResult.deepCopy();
        out.put("cniVersion", rendered.get("cniVersion").textValue());
        int offset = out.path("interfaces").size();
        appendAll(out, "interfaces", rendered.path("interfaces"));
        ArrayNode ips = NODES.arrayNode();
        for (JsonNode ip : rendered.path("ips")) {
            ObjectNode copy = ip.deepCopy();
            if (copy.has("interface")) {
                copy.put("interface", copy.get("interface").intValue() + offset);
            }
            ips.add(copy);
        }
        appendAll(out, "ips", ips);
        appendAll(out, "routes", rendered.path("routes"));
        if (!out.has("dns")) {
            out.putObject("dns");
        }
        return out;
    }

    private static void appendAll(ObjectNode out, String field, JsonNode items) {
        if (items.isEmpty()) {
            return;
        }
        ArrayNode target = out.get(field) instanceof ArrayNode a ? a : out.putArray(field);
        items.forEach(target::add);
    }

    /**
     * Reads a {@code prevResult} of any supported version (the {@code version} of 0.x ips is
     * accepted and ignored; {@code dns}, {@code mtu} and other fields are ignored).
     *
     * @throws CniException code 6 for a value of the wrong JSON type, code 7 for a missing
     *     {@code name}/{@code address}/{@code dst}, an address or route not in CIDR notation, a
     *     gateway that is not an address, or an {@code interface} index outside {@code interfaces}
     */
    public static AddResult parsePrevResult(JsonNode prev) {
        String p = "prevResult";
        if (!prev.isObject()) {
            throw Json.wrongType(p, "an object");
        }
        List<Interface> interfaces = new ArrayList<>();
        ArrayNode ifs = Json.optArray(prev, "interfaces", p);
        if (ifs != null) {
            for (int i = 0; i < ifs.size(); i++) {
                String ip = p + ".interfaces[" + i + "]";
                JsonNode n = object(ifs.get(i), ip);
                interfaces.add(
                        new Interface(
                                Json.reqString(n, "name", ip),
                                Json.optString(n, "mac", ip),
                                Json.optString(n, "sandbox", ip)));
            }
        }
        List<IpConfig> ips = new ArrayList<>();
        ArrayNode ipsNode = Json.optArray(prev, "ips", p);
        if (ipsNode != null) {
            for (int i = 0; i < ipsNode.size(); i++) {
                String ip = p + ".ips[" + i + "]";
                JsonNode n = object(ipsNode.get(i), ip);
                String address = Json.reqString(n, "address", ip);
                if (!IpLiterals.isCidr(address)) {
                    throw invalid(
                            ip
                                    + ".address "
                                    + CniText.quoted(address)
                                    + " is not in CIDR notation");
                }
                String gateway = Json.optString(n, "gateway", ip);
                if (gateway != null && IpLiterals.canonicalAddress(gateway).isEmpty()) {
                    throw invalid(
                            ip + ".gateway " + CniText.quoted(gateway) + " is not an IP address");
                }
                Json.optString(n, "version", ip);
                Integer index = Json.optInt(n, "interface", ip);
                if (index != null && (index < 0 || index >= interfaces.size())) {
                    throw invalid(
                            ip
                                    + ".interface "
                                    + index
                                    + " is not an index into prevResult.interfaces");
                }
                ips.add(new IpConfig(address, gateway, index));
            }
        }
        List<Route> routes = new ArrayList<>();
        ArrayNode routesNode = Json.optArray(prev, "routes", p);
        if (routesNode != null) {
            for (int i = 0; i < routesNode.size(); i++) {
                String rp = p + ".routes[" + i + "]";
                JsonNode n = object(routesNode.get(i), rp);
                String dst = Json.reqString(n, "dst", rp);
                if (!IpLiterals.isCidr(dst)) {
                    throw invalid(rp + ".dst " + CniText.quoted(dst) + " is not in CIDR notation");
                }
                String gw = Json.optString(n, "gw", rp);
                if (gw != null && IpLiterals.canonicalAddress(gw).isEmpty()) {
                    throw invalid(rp + ".gw " + CniText.quoted(gw) + " is not an IP address");
                }
                routes.add(new Route(dst, gw));
            }
        }
        return new AddResult(interfaces, ips, routes);
    }

    /**
     * An error object (§Error): {@code cniVersion}, {@code code}, {@code msg} and, when not null,
     * {@code details}.
     */
    public static ObjectNode error(String cniVersion, int code, String msg, String details) {
        ObjectNode out = NODES.objectNode();
        out.put("cniVersion", cniVersion);
        out.put("code", code);
        out.put("msg", msg == null ? "" : msg);
        putIfPresent(out, "details", details);
        return out;
    }

    /** @return compact UTF-8 JSON */
    public static byte[] toBytes(JsonNode node) {
        return Json.bytes(node);
    }

    private static JsonNode object(JsonNode n, String path) {
        if (!n.isObject()) {
            throw Json.wrongType(path, "an object");
        }
        return n;
    }

    private static void putIfPresent(ObjectNode n, String field, String value) {
        if (value != null) {
            n.put(field, value);
        }
    }

    private static CniException invalid(String msg) {
        return new CniException(CniCodes.INVALID_NETWORK_CONFIG, msg);
    }
}
