package io.cadastre.dataplane;

import java.util.List;

/**
 * What to wire for one CNI attachment.
 *
 * @param netnsPath the pod's network namespace, as a path (CNI_NETNS, e.g. {@code /var/run/netns/x})
 * @param podIfname the interface name inside the pod (CNI_IFNAME), at most 15 characters
 * @param hostIfname the host end's name, at most 15 characters ({@link HostInterfaceName#of})
 * @param mtu the MTU of both veth ends in bytes; 0 means the kernel default (1500)
 * @param addresses the pod's addresses, each a host address (/32 or /128), at most one per family
 * @param bandwidth the pod's bandwidth limits; {@link Bandwidth#NONE} for none
 */
public record PodAttachment(
        String netnsPath,
        String podIfname,
        String hostIfname,
        int mtu,
        List<PodAddress> addresses,
        Bandwidth bandwidth) {
    public PodAttachment {
        addresses = List.copyOf(addresses);
        bandwidth = bandwidth == null ? Bandwidth.NONE : bandwidth;
    }

    /** An attachment without bandwidth limits. */
    public PodAttachment(
            String netnsPath,
            String podIfname,
            String hostIfname,
            int mtu,
            List<PodAddress> addresses) {
        this(netnsPath, podIfname, hostIfname, mtu, addresses, Bandwidth.NONE);
    }
}
