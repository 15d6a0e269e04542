package io.cadastre.cni;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;

/**
 * What the CNI protocol layer ({@link CniHandler}) needs from the agent, after it has parsed and
 * validated a request. Implemented by the agent over the node agent actor; unit tests use a fake.
 *
 * <p>Every stage completes exceptionally with a {@link CniException} carrying the CNI error code
 * to report (CNI spec 1.1 §Error); any other exception is reported as code 11 (try again later).
 */
public interface CniBackend {

    /**
     * Allocates the addresses and, unless {@link AddRequest#ipamOnly()}, wires the pod.
     * Idempotent per attachment: a repeated ADD returns the same addresses.
     */
    CompletionStage<AddResult> add(AddRequest request);

    /**
     * Unwires the pod (unless IPAM-only) and releases its addresses. Idempotent: an unknown or
     * already removed attachment is success (CNI spec 1.1 §DEL).
     */
    CompletionStage<Void> del(Attachment attachment, boolean ipamOnly);

    /**
     * Verifies the attachment against {@code prevResult} (CNI spec 1.1 §CHECK) and, for the full
     * plugin, the wiring against the netconf (its bandwidth limits among it).
     *
     * @param bandwidth the limits the request's {@code runtimeConfig} asks for
     * @return one line per difference; empty when all is as expected
     */
    CompletionStage<List<String>> check(
            Attachment attachment, boolean ipamOnly, AddResult prevResult, Bandwidth bandwidth);

    /**
     * Releases every allocation of {@code network} on this node whose attachment is not in
     * {@code validAttachments} (CNI spec 1.1 §GC, {@code cni.dev/valid-attachments}).
     */
    CompletionStage<Void> gc(String network, Set<AttachmentRef> validAttachments);

    /**
     * Completes normally when ADD can be served; exceptionally with code 50 when it cannot
     * (CNI spec 1.1 §STATUS).
     */
    CompletionStage<Void> status(List<String> pools);

    /**
     * One CNI attachment (CNI spec 1.1 §Attachment Parameters).
     *
     * @param network the netconf's {@code name}
     * @param containerId CNI_CONTAINERID
     * @param ifname CNI_IFNAME
     * @param netns CNI_NETNS (a path); may be {@code null} for DEL and GC
     */
    record Attachment(String network, String containerId, String ifname, String netns) {}

    /** A (container ID, ifname) pair from {@code cni.dev/valid-attachments}. */
    record AttachmentRef(String containerId, String ifname) {}

    /**
     * The Kubernetes pod behind an attachment, from {@code K8S_POD_NAMESPACE} and
     * {@code K8S_POD_NAME} in CNI_ARGS; both {@code null} outside Kubernetes.
     */
    record PodRef(String namespace, String name) {}

    /**
     * A validated ADD.
     *
     * @param attachment the attachment
     * @param pod the pod, or {@code PodRef(null, null)}
     * @param ipamOnly true when called as the IPAM plugin {@code cadastre-ipam} (addresses only)
     * @param pools the pool names to allocate from, in order of preference (netconf
     *     {@code ipam.pools}); empty means the agent's default pools, one per family
     * @param requestedIps specific addresses asked for ({@code IP=} in CNI_ARGS,
     *     {@code runtimeConfig.ips}, {@code args.cni.ips}), as literal IPv4/IPv6 addresses; empty
     *     for automatic assignment
     * @param mtu the MTU in bytes from the netconf, 0 for the default
     * @param rangeSets IPAM-only: the L2 subnet's ranges from the netconf (host-local's
     *     {@code ranges}; {@link NetConf.Ipam#ranges}), one address per set; empty when the netconf
     *     gives none, and then each pool's own CIDR is the subnet. An IPAM-only address is never the
     *     subnet's network address, its IPv4 broadcast address or a range's gateway. Always empty
     *     for the full plugin, whose /32 and /128 pods may have any address of a pool
     * @param bandwidth the pod's bandwidth limits ({@code runtimeConfig.bandwidth}); always {@link
     *     Bandwidth#NONE} for IPAM-only, whose calling plugin wires the pod
     */
    record AddRequest(
            Attachment attachment,
            PodRef pod,
            boolean ipamOnly,
            List<String> pools,
            List<String> requestedIps,
            int mtu,
            List<List<SubnetRange>> rangeSets,
            Bandwidth bandwidth) {
        public AddRequest {
            pools = List.copyOf(pools);
            requestedIps = List.copyOf(requestedIps);
            rangeSets = rangeSets.stream().map(List::copyOf).toList();
            bandwidth = bandwidth == null ? Bandwidth.NONE : bandwidth;
        }

        /** An ADD without ranges. */
        public AddRequest(
                Attachment attachment,
                PodRef pod,
                boolean ipamOnly,
                List<String> pools,
                List<String> requestedIps,
                int mtu) {
            this(attachment, pod, ipamOnly, pools, requestedIps, mtu, List.of(), Bandwidth.NONE);
        }
    }

    /**
     * One range of an L2 subnet, host-local's {@code range} after its defaults are applied
     * ({@link HostLocalRanges}): the addresses from {@code rangeStart} to {@code rangeEnd}
     * inclusive, skipping {@code gateway}; all canonical, inside {@code subnet}, one family.
     *
     * @param subnet CIDR notation, host bits zero ({@code 198.19.64.0/24})
     * @param rangeStart the first address that may be given
     * @param rangeEnd the last address that may be given, not before {@code rangeStart}
     * @param gateway the subnet's gateway, never given, reported with each address
     */
    record SubnetRange(String subnet, String rangeStart, String rangeEnd, String gateway) {}

    /**
     * A version-neutral ADD result; {@link CniResults} renders it for a cniVersion.
     *
     * @param interfaces the interfaces created (empty for IPAM-only)
     * @param ips the addresses, each in CIDR notation with the prefix configured on the interface
     * @param routes routes to report (IPAM-only: to be configured by the calling plugin)
     */
    record AddResult(List<Interface> interfaces, List<IpConfig> ips, List<Route> routes) {
        public AddResult {
            interfaces = List.copyOf(interfaces);
            ips = List.copyOf(ips);
            routes = List.copyOf(routes);
        }
    }

    /** @param sandbox the netns path for interfaces inside the container, else {@code null} */
    record Interface(String name, String mac, String sandbox) {}

    /**
     * @param address CIDR notation, e.g. {@code 198.18.0.5/32}
     * @param gateway an address, or {@code null}
     * @param interfaceIndex index into {@link AddResult#interfaces()}, or {@code null}
     */
    record IpConfig(String address, String gateway, Integer interfaceIndex) {}

    /** @param dst CIDR notation; @param gw an address, or {@code null} */
    record Route(String dst, String gw) {}

    /**
     * A pod's bandwidth limits as the runtime asked (the {@code bandwidth} capability, CNI
     * conventions: {@code runtimeConfig.bandwidth}), validated by {@link NetConf#parse}. Ingress
     * is what the pod receives, egress what it sends.
     *
     * @param ingressRate bits per second, 0 for no limit
     * @param ingressBurst bits, 0 when not given (the agent then chooses)
     * @param egressRate bits per second, 0 for no limit
     * @param egressBurst bits, 0 when not given
     */
    record Bandwidth(long ingressRate, long ingressBurst, long egressRate, long egressBurst) {
        /** No limit. */
        public static final Bandwidth NONE = new Bandwidth(0, 0, 0, 0);

        /** @return whether a direction is limited */
        public boolean limited() {
            return ingressRate > 0 || egressRate > 0;
        }
    }
}
