package io.cadastre.shards;

import java.util.List;

/** The tests' plain ADD requests. Shared with other modules' tests through the shards test-jar. */
public final class AssignRequests {
    private AssignRequests() {}

    /**
     * @return a runtime's ADD of {@code container} on {@code eth0} of {@code network} (handle
     *     {@code <network>.<container>}), no netns recorded, for pod {@code podNamespace/podName}:
     *     the default pools, no address requested, any address of a pool
     */
    public static AssignRequest plain(
            String network, String container, String podNamespace, String podName) {
        return new AssignRequest(
                network + "." + container,
                "eth0",
                network,
                container,
                null,
                podNamespace,
                podName,
                List.of(),
                List.of());
    }
}
