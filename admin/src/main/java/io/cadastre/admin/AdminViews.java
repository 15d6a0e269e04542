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
    public record Pool(String name, String cidr, int blockSize, boolean strictAffinity, boolean allowBorrowing,
            int maxBlocksPerNode, boolean disabled, BigInteger size, BlockCount blocks, long allocated,
            String nodeSelector, List<String> excluded) {}

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
    public record Block(String cidr, String pool, String affinity, int size, int allocated, int free,
            List<String> borrowedBy) {}

    public record Blocks(List<Block> blocks) {}

    /** Who holds one address of a block (the block's record of the allocation). */
    public record Allocation(String handle, String ifname, String node, String podNamespace, String podName,
            long allocatedAtMillis) {
        static Allocation of(io.cadastre.ipam.Allocation a) {
            return new Allocation(a.handle(), a.ifname(), a.node(), a.podNamespace(), a.podName(), a.allocatedAtMillis());
        }
    }

    /** One attachment as its node records it. */
    public record Attachment(String handle, String ifname, String network, String containerId, String podNamespace,
            String podName, List<String> addresses, long createdAtMillis) {
        static Attachment of(AttachmentRecord a) {
            return new Attachment(a.handle(), a.ifname(), a.network(), a.containerId(), a.podNamespace(), a.podName(),
                    a.addresses().stream().map(HeldAddress::address).toList(), a.createdAtMillis());
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
    public record NodeSummary(String name, String member, List<String> affineBlocks, List<String> borrowedBlocks,
            int attachments, Map<String, String> labels, boolean removed) {}

    /** A {@link NodeSummary} with the node's attachments. */
    public record NodeDetail(String name, String member, List<String> affineBlocks, List<String> borrowedBlocks,
            int attachments, Map<String, String> labels, boolean removed, List<Attachment> attachmentList) {}

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
    public record NodeRemoved(String node, List<String> releasedBlocks, List<String> remainingBlocks,
            List<String> releasedAddresses, long remainingAllocations) {}

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
    public record Report(boolean clean, long checkedAllocations, long checkedAttachments, long tookMillis,
            List<AllocationWithoutAttachment> allocationsWithoutAttachment,
            List<AttachmentWithoutAllocation> attachmentsWithoutAllocation,
            List<BlockOfUnknownNode> blocksAffineToUnknownNodes,
            List<AllocationWithoutAttachment> allocationsOfRemovedNodes) {}

    /** An address a block holds for an attachment its node does not record (an orphan), or for a removed node. */
    public record AllocationWithoutAttachment(String address, String block, Allocation allocation) {}

    /** An attachment whose node records addresses that its blocks do not hold for it. */
    public record AttachmentWithoutAllocation(String node, Attachment attachment, List<String> missing) {}

    /** A block affine to a node that is not a member and records no attachment, or that an operator removed. */
    public record BlockOfUnknownNode(String block, String pool, String affinity) {}

    static List<String> cidrs(Collection<Cidr> blocks) {
        return blocks.stream().sorted().map(Cidr::toString).toList();
    }
}
