package io.cadastre.kube;

import io.cadastre.cni.CniCodes;
import io.cadastre.cni.CniException;
import io.cadastre.ipam.IpFamily;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What a pod's and its namespace's annotations choose for an ADD ({@link IpamAnnotations}): the
 * CNI backend asks before it hands the request to the node agent. Implemented over the API's
 * caches ({@link AnnotatedIpamChoice}); {@link #NONE} without Kubernetes.
 */
@FunctionalInterface
public interface PodIpamChoice {

    /**
     * @param namespace {@code K8S_POD_NAMESPACE} (already checked by the CNI layer), or null
     * @param pod {@code K8S_POD_NAME}, or null
     * @return the choice; {@link Choice#NONE} outside Kubernetes. Completes within the API's
     *     request timeout; fails only with a {@code CniException} (code 7) for a malformed annotation
     */
    CompletionStage<Choice> choose(String namespace, String pod);

    /** Nothing is annotated: the netconf and CNI_ARGS decide. */
    PodIpamChoice NONE = (namespace, pod) -> CompletableFuture.completedFuture(Choice.NONE);

    /**
     * @param poolsByFamily family → pool names or CIDRs, in order: the pod's, else the namespace's
     *     ({@code AssignRequest.poolsByFamily})
     * @param addresses the pod's {@code ipAddrs}, canonical, at most one per family; empty for any
     * @param source where it came from, for logs ("pod default/web-1", "namespace default", "")
     */
    record Choice(
            Map<IpFamily, List<String>> poolsByFamily, List<String> addresses, String source) {
        public static final Choice NONE = new Choice(Map.of(), List.of(), "");

        public Choice {
            Map<IpFamily, List<String>> copy = new EnumMap<>(IpFamily.class);
            poolsByFamily.forEach((family, refs) -> copy.put(family, List.copyOf(refs)));
            poolsByFamily = Map.copyOf(copy);
            addresses = List.copyOf(addresses);
        }

        /**
         * @param requested the addresses the request asks for ({@code IP} of CNI_ARGS,
         *     {@code runtimeConfig.ips}, {@code args.cni.ips})
         * @return the addresses the ADD asks for: the pod's {@code ipAddrs} when it has one, else
         *     the request's
         * @throws CniException code 7 when both ask, for different addresses: which the pod
         *     should get is not clear, and nothing is changed
         */
        public List<String> requestedIps(List<String> requested) {
            if (addresses.isEmpty()) {
                return requested;
            }
            if (!requested.isEmpty() && !Set.copyOf(requested).equals(Set.copyOf(addresses))) {
                throw new CniException(
                        CniCodes.INVALID_NETWORK_CONFIG,
                        "the annotation "
                                + IpamAnnotations.IP_ADDRS
                                + " of "
                                + source
                                + " asks for "
                                + addresses
                                + ", the request for "
                                + requested);
            }
            return addresses;
        }

        /** @return whether nothing is chosen */
        public boolean isEmpty() {
            return poolsByFamily.isEmpty() && addresses.isEmpty();
        }
    }
}
