package io.cadastre.routing;

import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import java.util.List;

/**
 * A node's tunnel addresses are held by one reserved attachment of the node, assigned through the
 * IPAM like a pod's (Calico assigns its VXLAN tunnel address through IPAM under a handle of its
 * own): from the node's default pools, so from one of its own blocks when it has room, and never
 * handed to a pod. Its network name holds a ':', which no CNI network name may (alphanumerics,
 * '_', '.', '-'), so no CNI GC of any network ever releases it, and it records no netns, so the
 * node agent's reclaim never does either. An operator's release frees it; the agent assigns one
 * again at its next resync.
 */
public final class TunnelAttachment {
    /** The reserved network name. */
    public static final String NETWORK = "cadastre:tunnel";

    /** The reserved interface name. */
    public static final String IFNAME = "tunnel";

    private TunnelAttachment() {}

    /** @return the handle of {@code node}'s tunnel attachment: {@code cadastre:tunnel.<node>} */
    public static String handle(String node) {
        return NETWORK + "." + node;
    }

    /** @return whether the record is the node's tunnel attachment */
    public static boolean is(AttachmentRecord record, String node) {
        return record.handle().equals(handle(node)) && record.ifname().equals(IFNAME);
    }

    /** @return the request that assigns {@code node}'s tunnel addresses from its default pools */
    public static AssignRequest request(String node) {
        return new AssignRequest(
                handle(node), IFNAME, NETWORK, node, null, null, null, List.of(), List.of());
    }
}
