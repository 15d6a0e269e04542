package io.cadastre.node;

import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.shards.AttachmentRecord;

/**
 * Names one CNI attachment (CNI spec 1.1 §Attachment Parameters: container ID, ifname, network).
 *
 * @param network the netconf's network name
 * @param containerId CNI_CONTAINERID
 * @param ifname CNI_IFNAME
 */
public record AttachmentId(String network, String containerId, String ifname) {
    /** @return the IPAM handle, {@code <network>.<containerId>} (root DESIGN.md, "Names") */
    public String handle() {
        return network + "." + containerId;
    }

    /** @return the key the node entity files the attachment under */
    public String key() {
        return AttachmentRecord.key(handle(), ifname);
    }

    /** @return the host-side veth name, stable for the attachment */
    public String hostIfname() {
        return HostInterfaceName.of(network, containerId, ifname);
    }
}
