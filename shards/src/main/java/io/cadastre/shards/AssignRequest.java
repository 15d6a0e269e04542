package io.cadastre.shards;

import java.util.List;

/**
 * One attachment's request for addresses.
 *
 * @param handle the IPAM handle, {@code <network>.<containerId>}
 * @param ifname CNI_IFNAME
 * @param network the network name
 * @param containerId CNI_CONTAINERID
 * @param netnsPath CNI_NETNS as the runtime gave it, recorded with the attachment
 *     ({@link AttachmentRecord#netnsPath()}); {@code null} when unknown
 * @param podNamespace Kubernetes namespace, or {@code null}
 * @param podName Kubernetes pod name, or {@code null}
 * @param pools pool names in order of preference; empty for the default pools (one per family).
 *     One address is assigned per family the pools cover (dual-stack: one of each, or nothing).
 * @param requestedIps specific literal addresses, at most one per family; when present they are
 *     the whole request and no other family is assigned
 */
public record AssignRequest(
        String handle,
        String ifname,
        String network,
        String containerId,
        String netnsPath,
        String podNamespace,
        String podName,
        List<String> pools,
        List<String> requestedIps) {
    public AssignRequest {
        pools = List.copyOf(pools);
        requestedIps = List.copyOf(requestedIps);
    }

    /** @return this request with another netns path ({@code null}: unknown) */
    public AssignRequest withNetnsPath(String path) {
        return new AssignRequest(handle, ifname, network, containerId, path, podNamespace, podName, pools, requestedIps);
    }
}
