package io.cadastre.node;

import io.cadastre.dataplane.Bandwidth;
import io.cadastre.shards.AssignRequest;

/**
 * An ADD as the node agent sees it: the IPAM request plus what the dataplane needs.
 *
 * @param ipam the attachment and the addresses asked for
 * @param netnsPath CNI_NETNS (a path)
 * @param ipamOnly true: addresses only, no interface (the {@code cadastre-ipam} plugin)
 * @param mtu the pod interface's MTU in bytes, 0 for the kernel default
 * @param bandwidth the pod's bandwidth limits; {@link Bandwidth#NONE} for none (and IPAM-only)
 */
public record PodRequest(
        AssignRequest ipam, String netnsPath, boolean ipamOnly, int mtu, Bandwidth bandwidth) {
    public PodRequest {
        bandwidth = bandwidth == null ? Bandwidth.NONE : bandwidth;
    }

    /** An ADD without bandwidth limits. */
    public PodRequest(AssignRequest ipam, String netnsPath, boolean ipamOnly, int mtu) {
        this(ipam, netnsPath, ipamOnly, mtu, Bandwidth.NONE);
    }
}
