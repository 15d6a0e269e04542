package io.cadastre.admin;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.HeldAddress;
import java.math.BigInteger;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The admin API's JSON shapes (contract v1; {@code openapi.yaml} documents the same), as records
 * that Jackson writes field by field in declaration order. Addresses and CIDRs are canonical
 * strings; times are milliseconds since the epoch; absent values are {@code null}, never omitted,
 * so that every key of the contract is always present (the one exception: {@code /readyz} gives a
 * {@code reason} only when not ready, as the contract shows).
 */
public final class AdminViews {
    private AdminViews() {}

    /** {@code {"error": "..."}}: the body of every error response. */
    public record ErrorReply(String error) {}

    /** {@code /healthz} and {@code /readyz}; {@code reason} only when not ready. */
    public record Status(String status, @JsonInclude(JsonInclude.Include.NON_NULL) String reason) {}

    /**
     * One pool with its utilisation.
     *
     * @param blockSize the blocks' prefix length
     * @param size addresses in the pool (an IPv6 pool's count exceeds 64 bits)
     * @param blocks claimed and total blocks
     * @param allocated addresses held, summed over the pool's claimed blocks
     * @param nodeSelector the nodes the pool serves (a Kubernetes label selector), {@code ""} for every node
     * @param excluded the ranges never assigned, CIDRs in address order
     */
    public record Pool(
            String name,
            String cidr,
            int blockSize,
            boolean strictAffinity,
            boolean allowBorrowing,
            int maxBlocksPerNode,
            boolean disabled,
            BigInteger size,
            BlockCount blocks,
            long allocated,
            String nodeSelector,
            List<String> excluded) {}

    /** @param total how many blocks the pool splits into */
    public record BlockCount(long claimed, BigInteger total) {}

    public record Pools(List<Pool> pools) {}

    /**
     * One claimed block.
     *
     * @param affinity the node the pool gave the block to
     * @param size addresses in the block
     * @param borrowedBy the other nodes holding addresses in the block, sorted
     */
    public record Block(
            String cidr,
            String pool,
            String affinity,
            int size,
            int allocated,
            int free,
            List<String> borrowedBy) {}

    public record Blocks(List<Block> blocks) {}

    /** Who holds one address of a block (the block's record of the allocation). */
    public record Allocation(
            String handle,
            String ifname,
            String node,
            String podNamespace,
            String podName,
            long allocatedAtMillis) {
        static Allocation of(io.cadastre.ipam.Allocation a) {
            return new Allocation(
                    a.handle(),
                    a.ifname(),
                    a.node(),
                    a.podNamespace(),
                    a.podName(),
                    a.allocatedAtMillis());
        }
    }

    /** One attachment as its node records it. */
    public record Attachment(
            String handle,
            String ifname,
            String network,
            String containerId,
            String podNamespace,
            String podName,
            List<String> addresses,
            long createdAtMillis) {
        static Attachment of(AttachmentRecord a) {
            return new Attachment(
                    a.handle(),
                    a.ifname(),
                    a.network(),
                    a.containerId(),
                    a.podNamespace(),
                    a.podName(),
                    a.addresses().stream().map(HeldAddress::address).toList(),
                    a.createdAtMillis());
        }
    }

    /**
     * One node.
     *
     * @param member {@code "up"} when the node's agent is a cluster member that is Up (or WeaklyUp),
     *     else {@code "absent"}
     * @param affineBlocks the blocks the pools gave to the node, sorted
     * @param borrowedBlocks the blocks of other nodes in which the node holds addresses, sorted
     * @param attachments how many attachments the node records
     * @param labels the labels the node's agent registered, by key
     * @param removed whether an operator removed the node (DELETE /v1/nodes/{name}) and its agent has not started since
     */
    public record NodeSummary(
            String name,
            String member,
            List<String> affineBlocks,
            List<String> borrowedBlocks,
            int attachments,
            Map<String, String> labels,
            boolean removed) {}

    /**
     * A {@link NodeSummary} with the node's attachments, what it published for other hosts to reach
     * its pods, and its routing as the answering agent computes it.
     *
     * @param peer the node's peer, or {@code null} when its agent never published one (or runs mode none)
     * @param routing its peers and routes, or {@code null} when the answering agent routes nothing
     *     or the node published no peer
     */
    public record NodeDetail(
            String name,
            String member,
            List<String> affineBlocks,
            List<String> borrowedBlocks,
            int attachments,
            Map<String, String> labels,
            boolean removed,
            List<Attachment> attachmentList,
            Peer peer,
            Routing routing) {
        NodeDetail with(Routing routing) {
            return new NodeDetail(
                    name,
                    member,
                    affineBlocks,
                    borrowedBlocks,
                    attachments,
                    labels,
                    removed,
                    attachmentList,
                    peer,
                    routing);
        }
    }

    /**
     * What a node's agent published for other hosts to reach its pods.
     *
     * @param mode its routing mode
     * @param underlayInterface its underlay interface, or null
     * @param ipv4 its underlay IPv4 address with prefix length, or null
     * @param ipv6 its underlay IPv6 address with prefix length, or null
     * @param vtepMac its VXLAN devices' MAC
     * @param tunnelIpv4 its IPv4 tunnel address, or null
     * @param tunnelIpv6 its IPv6 tunnel address, or null
     * @param mtu its underlay's MTU, bytes
     */
    public record Peer(
            String mode,
            String underlayInterface,
            String ipv4,
            String ipv6,
            String vtepMac,
            String tunnelIpv4,
            String tunnelIpv6,
            int mtu) {}

    /**
     * A node's routing as the answering agent computes it from cluster state.
     *
     * @param computedOn the answering agent's node
     * @param programmed true when these are the answering host's own routes, reconciled there
     *     (ask a node's own agent to see what its kernel holds)
     * @param peers every node it routes to and how, per family
     * @param routes every route it wants, by destination
     * @param problems what cannot be routed and why
     * @param outgoingNat which pods' packets the host masquerades, e.g. {@code "masquerade
     *     198.18.0.0/20 except to 198.18.0.0/20"}, or {@code "none"}
     * @param lastReconcile the last reconcile on this host (only when {@code programmed}), or null
     */
    public record Routing(
            String mode,
            String computedOn,
            boolean programmed,
            List<RoutingPeer> peers,
            List<RouteView> routes,
            List<String> problems,
            String outgoingNat,
            Reconcile lastReconcile) {}

    /**
     * @param ipv4 {@code direct}, {@code vxlan}, or null when its IPv4 blocks are not routed (none, or a problem)
     * @param ipv6 likewise for IPv6
     * @param underlay the peer's underlay addresses, comma-separated
     * @param tunnel the peer's tunnel addresses, comma-separated, or null
     */
    public record RoutingPeer(
            String node,
            String ipv4,
            String ipv6,
            String underlay,
            String tunnel,
            String vtepMac) {}

    /**
     * @param type {@code block} (another node's block), {@code borrowed} (a host route to an address
     *     living on another node than its block's), {@code blackhole} (an own block), {@code gateway}
     * @param node the node the route leads to
     * @param route the route as {@code ip route} shows it
     */
    public record RouteView(String destination, String type, String node, String route) {}

    /**
     * @param atMillis when it ended
     * @param summary e.g. {@code "added 3, removed 0, replaced 0, conflicts 0, errors 0 in 4 ms"}
     * @param failure why it could not run (the host's state could not be read), or null
     */
    public record Reconcile(
            long atMillis,
            String summary,
            List<String> errors,
            List<String> conflicts,
            String failure) {}

    public record Nodes(List<NodeSummary> nodes) {}

    /**
     * The answer of a node's removal (DELETE /v1/nodes/{name}).
     *
     * @param releasedBlocks the blocks given back to their pools, sorted
     * @param remainingBlocks the node's blocks that still hold allocations (its own or borrowed
     *     ones of other nodes), sorted
     * @param releasedAddresses the addresses released (with releaseAddresses=true), else empty
     * @param remainingAllocations how many allocations are still held for the node
     */
    public record NodeRemoved(
            String node,
            List<String> releasedBlocks,
            List<String> remainingBlocks,
            List<String> releasedAddresses,
            long remainingAllocations) {}

    /** @param allocation who holds the address, or {@code null} when it is free */
    public record AddressHolder(String address, String pool, String block, Allocation allocation) {}

    /** @param released the addresses freed (release) or the attachment keys released (GC) */
    public record Released(List<String> released) {}

    /**
     * The consistency check's report: a snapshot, see {@link ConsistencyCheck}.
     *
     * @param clean no finding of any kind
     * @param allocationsOfRemovedNodes addresses held for nodes an operator removed (same shape as
     *     an allocation without attachment; not listed there too)
     */
    public record Report(
            boolean clean,
            long checkedAllocations,
            long checkedAttachments,
            long tookMillis,
            List<AllocationWithoutAttachment> allocationsWithoutAttachment,
            List<AttachmentWithoutAllocation> attachmentsWithoutAllocation,
            List<BlockOfUnknownNode> blocksAffineToUnknownNodes,
            List<AllocationWithoutAttachment> allocationsOfRemovedNodes,
            String routesCheckedOn,
            List<RouteFinding> routeFindings) {}

    /**
     * A claimed block whose route on the answering agent's host is not what the claim calls for.
     *
     * @param problem {@code missing}, {@code wrong-node}, {@code differs} (the right node, another
     *     way), {@code conflict} (another protocol's route holds the destination) or
     *     {@code unroutable} (e.g. its node published no peer)
     * @param expected the route the claim calls for, or why there is none
     * @param actual the route the host holds, or null
     * @param actualNode the node the actual route leads to, or null when unknown
     */
    public record RouteFinding(
            String block,
            String pool,
            String affinity,
            String problem,
            String expected,
            String actual,
            String actualNode) {}

    /** An address a block holds for an attachment its node does not record (an orphan), or for a removed node. */
    public record AllocationWithoutAttachment(
            String address, String block, Allocation allocation) {}

    /** An attachment whose node records addresses that its blocks do not hold for it. */
    public record AttachmentWithoutAllocation(
            String node, Attachment attachment, List<String> missing) {}

    /** A block affine to a node that is not a member and records no attachment, or that an operator removed. */
    public record BlockOfUnknownNode(String block, String pool, String affinity) {}

    static List<String> cidrs(Collection<Cidr> blocks) {
        return blocks.stream().sorted().map(Cidr::toString).toList();
    }
}
