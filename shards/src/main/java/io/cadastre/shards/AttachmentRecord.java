package io.cadastre.shards;

import java.util.List;

/**
 * What a node knows of one attachment: its addresses and who it is.
 *
 * @param handle the IPAM handle, {@code <network>.<containerId>}
 * @param ifname CNI_IFNAME
 * @param network the netconf's network name
 * @param containerId CNI_CONTAINERID
 * @param netnsPath CNI_NETNS as the runtime gave it at ADD (a path such as {@code /var/run/netns/x}
 *     or {@code /proc/<pid>/ns/net}); {@code null} when unknown: recorded before this field existed
 *     (old events and snapshots restore it as null), or not visible to the agent at ADD. An
 *     attachment without it is never reclaimed for a vanished netns; DEL and GC still release it
 * @param podNamespace the Kubernetes namespace, or {@code null}
 * @param podName the Kubernetes pod name, or {@code null}
 * @param addresses the addresses held, at most one per family
 * @param createdAtMillis when ADD recorded it, milliseconds since the epoch
 */
public record AttachmentRecord(
        String handle,
        String ifname,
        String network,
        String containerId,
        String netnsPath,
        String podNamespace,
        String podName,
        List<HeldAddress> addresses,
        long createdAtMillis)
        implements CborSerializable {

    public AttachmentRecord {
        addresses = List.copyOf(addresses);
    }

    /** @return the key of the attachment within its node: {@code handle/ifname} */
    public String key() {
        return key(handle, ifname);
    }

    /** @return the key of an attachment within its node: {@code handle/ifname} ('/' is in neither) */
    public static String key(String handle, String ifname) {
        return handle + "/" + ifname;
    }
}
