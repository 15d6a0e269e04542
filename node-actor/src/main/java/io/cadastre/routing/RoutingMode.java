package io.cadastre.routing;

import java.util.Arrays;
import java.util.Locale;

/**
 * How this host reaches other hosts' pods ({@code cadastre.routing.mode}).
 *
 * <ul>
 *   <li>{@link #DIRECT}: a route per remote block via the peer's underlay address, onlink out of the
 *       underlay interface; the peers must share its L2 segment (Calico's BGP without an overlay,
 *       Flannel's host-gw).
 *   <li>{@link #VXLAN}: one kernel VXLAN device per underlay family, learning off, a permanent FDB
 *       and neighbour entry per peer, a route per remote block via the peer's tunnel address onlink
 *       out of the device; works across routed underlays.
 *   <li>{@link #CROSS_SUBNET} (the default): direct to peers whose underlay address is on this
 *       host's underlay subnet, VXLAN to the others (Calico's CrossSubnet, Flannel's DirectRouting).
 *   <li>{@link #NONE}: the agent changes nothing host-wide (no forwarding, routes, devices): for
 *       IPAM-only use, where another plugin or a routing daemon carries pod traffic (Cadastre's
 *       blackhole routes would cut a bridge plugin's subnet into pieces), and for agents run in a
 *       namespace shared with others.
 * </ul>
 */
public enum RoutingMode {
    NONE("none"),
    DIRECT("direct"),
    VXLAN("vxlan"),
    CROSS_SUBNET("cross-subnet");

    private final String spelling;

    RoutingMode(String spelling) {
        this.spelling = spelling;
    }

    /** @return the setting's spelling, e.g. {@code cross-subnet} */
    public String spelling() {
        return spelling;
    }

    /** @return whether this mode may use VXLAN towards some peers */
    public boolean overlay() {
        return this == VXLAN || this == CROSS_SUBNET;
    }

    /**
     * @throws IllegalArgumentException naming the valid spellings for anything else
     */
    public static RoutingMode parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        return Arrays.stream(values())
                .filter(m -> m.spelling.equals(t))
                .findFirst()
                .orElseThrow(
                        () ->
                                new IllegalArgumentException(
                                        "unknown routing mode '"
                                                + text
                                                + "' (known: "
                                                + String.join(
                                                        ", ",
                                                        Arrays.stream(values())
                                                                .map(RoutingMode::spelling)
                                                                .toList())
                                                + ")"));
    }

    @Override
    public String toString() {
        return spelling;
    }
}
