package io.cadastre.agent;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Ip;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What a network namespace holds, as text to compare before and after a request that must change
 * nothing: its links (index, name, MAC, MTU, kind, admin state), their addresses other than the
 * kernel's link-local ones (which come and go with DAD), and its IPv4 and IPv6 routes of every
 * table. Fields the kernel changes by itself (counters, operstate, lifetimes) are left out.
 */
final class NetnsState {
    private NetnsState() {}

    /** @param netns a named netns, or null for the test's own */
    static String of(String netns) throws IOException, InterruptedException {
        ArrayNode links = CniExec.JSON.createArrayNode();
        for (JsonNode l : ip(netns, "-j", "-d", "link", "show")) {
            ObjectNode link = links.addObject();
            for (String field : new String[] {"ifindex", "ifname", "address", "mtu", "link_type"}) {
                link.set(field, l.get(field));
            }
            link.set("kind", l.path("linkinfo").get("info_kind"));
            boolean up = false;
            for (JsonNode flag : l.path("flags")) {
                up |= flag.asText().equals("UP");
            }
            link.put("up", up);
        }
        return "links "
                + links
                + "\naddresses "
                + addresses(netns)
                + "\nroutes4 "
                + routes(netns, "-4")
                + "\nroutes6 "
                + routes(netns, "-6");
    }

    /** @return "ifname local/prefixlen" of every address but link-scope ones, as a JSON array text */
    static String addresses(String netns) throws IOException, InterruptedException {
        List<String> out = new ArrayList<>();
        for (JsonNode l : ip(netns, "-j", "addr", "show")) {
            for (JsonNode a : l.path("addr_info")) {
                if (!"link".equals(a.path("scope").asText())) {
                    out.add(
                            l.path("ifname").asText()
                                    + " "
                                    + a.path("local").asText()
                                    + "/"
                                    + a.path("prefixlen").asInt());
                }
            }
        }
        return CniExec.JSON.valueToTree(out).toString();
    }

    private static String routes(String netns, String family)
            throws IOException, InterruptedException {
        ArrayNode routes = (ArrayNode) ip(netns, family, "-j", "route", "show", "table", "all");
        for (JsonNode r : routes) {
            ((ObjectNode) r).remove(List.of("expires", "pref"));
        }
        return routes.toString();
    }

    private static JsonNode ip(String netns, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        if (netns != null) {
            command.add("-n");
            command.add(netns);
        }
        command.addAll(List.of(args));
        return CniExec.JSON.readTree(Ip.run(command.toArray(String[]::new)));
    }
}
