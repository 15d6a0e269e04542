package io.cadastre.node;

import java.util.List;

/**
 * What the node agent needs from the pod network between hosts (the routing layer): the pods'
 * MTU when the netconf gives none, and word of the addresses each ADD and DEL took or gave back.
 */
public interface PodNetwork {
    /** No routing: the kernel's default MTU, nothing told. */
    PodNetwork NONE =
            new PodNetwork() {
                @Override
                public int podMtu() {
                    return 0;
                }

                @Override
                public void addressesChanged(List<String> addresses) {}
            };

    /** @return the pods' MTU in bytes when the netconf gives none; 0 for the kernel's default */
    int podMtu();

    /** The addresses of an ADD (assigned) or a DEL (released) on this node, canonical literals. */
    void addressesChanged(List<String> addresses);
}
