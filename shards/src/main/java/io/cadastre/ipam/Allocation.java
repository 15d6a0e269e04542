package io.cadastre.ipam;

/**
 * Who holds one address of a block: the attachment (handle and ifname) and the attributes an
 * operator asks about (Calico keeps the same per allocation).
 *
 * @param handle the IPAM handle, {@code <network>.<containerId>}
 * @param ifname the attachment's interface name (CNI_IFNAME)
 * @param podNamespace the Kubernetes namespace, or {@code null} outside Kubernetes
 * @param podName the Kubernetes pod name, or {@code null}
 * @param node the node the attachment lives on
 * @param allocatedAtMillis when it was allocated, milliseconds since the epoch
 */
public record Allocation(
        String handle,
        String ifname,
        String podNamespace,
        String podName,
        String node,
        long allocatedAtMillis) {

    /** @return whether this allocation belongs to the attachment (handle, ifname) */
    public boolean isFor(String handle, String ifname) {
        return this.handle.equals(handle) && this.ifname.equals(ifname);
    }
}
