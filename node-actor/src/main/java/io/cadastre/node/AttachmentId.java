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

    /**
     * Whether another attachment may share this one's handle: {@code <network>.<containerId>}
     * joins two values that may both hold dots (CNI spec 1.1: network names and container IDs
     * may), so network {@code a} with container {@code b.c} and network {@code a.b} with
     * container {@code c} both give {@code a.b.c}. A handle with one dot has one reading.
     *
     * @return true when the handle holds more than one dot
     */
    public boolean handleMayBeShared() {
        String handle = handle();
        return handle.indexOf('.') != handle.lastIndexOf('.');
    }

    /**
     * @param record a record filed under this attachment's key
     * @return whether it is this attachment's own, not another's whose network and container ID
     *     give the same handle ({@link #handleMayBeShared}); a record without them (none is
     *     written so) is taken as this one's
     */
    public boolean owns(AttachmentRecord record) {
        return record.network() == null
                || record.containerId() == null
                || (record.network().equals(network) && record.containerId().equals(containerId));
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
