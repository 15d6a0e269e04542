package io.cadastre.dataplane;

import java.util.List;

/**
 * The outcome of {@link Dataplane#attach}: what the CNI result reports.
 *
 * @param hostIfname the host end's name
 * @param hostMac the host end's MAC, lower-case colon notation
 * @param podIfname the pod end's name (CNI_IFNAME)
 * @param podMac the pod end's MAC, lower-case colon notation
 * @param netnsPath the pod's netns path (the CNI result's {@code sandbox})
 * @param addresses the addresses configured on the pod end
 * @param routes the routes configured in the pod, e.g. {@code 0.0.0.0/0 via 169.254.1.1}
 */
public record WiredPod(
        String hostIfname,
        String hostMac,
        String podIfname,
        String podMac,
        String netnsPath,
        List<PodAddress> addresses,
        List<PodRoute> routes) {
    public WiredPod {
        addresses = List.copyOf(addresses);
        routes = List.copyOf(routes);
    }
}
