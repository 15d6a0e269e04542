package io.cadastre.node;

import io.cadastre.shards.AssignRequest;

/**
 * An ADD as the node agent sees it: the IPAM request plus what the dataplane needs.
 *
 * @param ipam the attachment and the addresses asked for
 * @param netnsPath CNI_NETNS (a path)
 * @param ipamOnly true: addresses only, no interface (the {@code cadastre-ipam} plugin)
 * @param mtu the pod interface's MTU in bytes, 0 for the kernel default
 */
public record PodRequest(AssignRequest ipam, String netnsPath, boolean ipamOnly, int mtu) {}
