package io.cadastre.shards;

import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.IpFamily;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

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
 * @param rules which addresses of a pool may be given: {@link AddressRules#ROUTED} for the full
 *     plugin's pods, {@link AddressRules#onSubnet} for an interface on an L2 subnet (IPAM-only);
 *     requested addresses must obey them too
 * @param poolsByFamily the pools the pod's or its namespace's annotations choose for a family
 *     (Calico's {@code ipv4pools} / {@code ipv6pools}): names or CIDRs, in order. They replace,
 *     for their family, the pools {@code pools} would give; a family those pools do not cover is
 *     not added. Empty when no annotation chooses
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
        List<String> requestedIps,
        AddressRules rules,
        Map<IpFamily, List<String>> poolsByFamily) {
    public AssignRequest {
        pools = List.copyOf(pools);
        requestedIps = List.copyOf(requestedIps);
        if (rules == null) {
            throw new IllegalArgumentException(
                    "rules are required (AddressRules.ROUTED for any address)");
        }
        Map<IpFamily, List<String>> copy = new EnumMap<>(IpFamily.class);
        poolsByFamily.forEach((family, refs) -> copy.put(family, List.copyOf(refs)));
        poolsByFamily = Map.copyOf(copy);
    }

    /**
     * A request for a routed pod ({@link AddressRules#ROUTED}: any address of the pools) whose
     * pools no annotation chooses.
     */
    public AssignRequest(
            String handle,
            String ifname,
            String network,
            String containerId,
            String netnsPath,
            String podNamespace,
            String podName,
            List<String> pools,
            List<String> requestedIps) {
        this(
                handle,
                ifname,
                network,
                containerId,
                netnsPath,
                podNamespace,
                podName,
                pools,
                requestedIps,
                AddressRules.ROUTED,
                Map.of());
    }

    /** @return this request with another netns path ({@code null}: unknown) */
    public AssignRequest withNetnsPath(String path) {
        return new AssignRequest(
                handle,
                ifname,
                network,
                containerId,
                path,
                podNamespace,
                podName,
                pools,
                requestedIps,
                rules,
                poolsByFamily);
    }
}
