package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * The DEL flow of one {@link ShardedIpam} (root DESIGN.md, "A DEL"): the node forgets the
 * attachment ({@code NodeEntity.ForgetAttachment}), then each block that may hold its addresses
 * frees them ({@code BlockEntity.Release}). For an attachment the node does not know, the blocks
 * are swept: every block affine to this node per the pools (read afresh, releasing ones included)
 * and every block it borrowed from ({@link BorrowedBlocks}). Also the node's lookup of one
 * attachment, which ADD uses too, and the freeing in blocks, which ADD (giving back a family) and
 * GC (orphans) use.
 *
 * <p>Invariants of the root DESIGN.md it upholds: 1 (the node forgets <em>before</em> the blocks
 * free, so a crash in between leaves an orphan allocation, never a record whose address is free
 * and that a retried ADD would hand back), 4 (idempotent: an unknown attachment is success, and a
 * repeated DEL sweeps for an orphan), 9 (the sweep brings back what a half-done ADD or DEL left).
 * Invariant 6 (the pod off the network before its addresses are free) is the caller's: call
 * {@link #free} only after the pod's interface is gone (node-actor, {@code NodeAgent.releaseForDel}).
 *
 * <p>All methods return stages that fail with {@link IpamException}.
 */
final class IpamRelease extends IpamFlow {
    IpamRelease(IpamContext context) {
        super(context);
    }

    /** {@link Ipam#lookup}. */
    CompletionStage<Optional<AttachmentRecord>> lookup(String handle, String ifname) {
        return asks.ask(
                        asks.node(node),
                        (ActorRef<NodeEntity.AttachmentLookup> r) ->
                                new NodeEntity.GetAttachment(handle, ifname, r))
                .thenApply(found -> Optional.ofNullable(found.attachment()));
    }

    /** {@link Ipam#release}: {@link #forget}, then {@link #free}. */
    CompletionStage<List<String>> release(String handle, String ifname) {
        return forget(handle, ifname).thenCompose(forgotten -> free(handle, ifname, forgotten));
    }

    /**
     * {@link Ipam#forget}: one ask, which answers what the node forgot. The forget is written
     * without a sync of its own: {@link #free} follows with a write in every block of the record.
     * A retry after a lost reply finds nothing to forget and sweeps, as for an unknown attachment.
     */
    CompletionStage<Ipam.Forgotten> forget(String handle, String ifname) {
        return asks.askStatus(
                        asks.node(node),
                        (ActorRef<StatusReply<NodeEntity.AttachmentLookup>> r) ->
                                new NodeEntity.ForgetAttachment(handle, ifname, true, r))
                .thenCompose(
                        forgotten ->
                                forgotten.attachment() == null
                                        ? blocksToSweep()
                                                .thenApply(
                                                        blocks -> new Ipam.Forgotten(blocks, false))
                                        : CompletableFuture.completedFuture(
                                                new Ipam.Forgotten(
                                                        blocksOf(
                                                                forgotten.attachment().addresses()),
                                                        true)));
    }

    /** {@link Ipam#free}: after a recorded forget, every block of the record writes. */
    CompletionStage<List<String>> free(String handle, String ifname, Ipam.Forgotten forgotten) {
        return releaseFromBlocks(handle, ifname, forgotten.blocks(), forgotten.recorded());
    }

    private CompletionStage<List<Cidr>> blocksToSweep() {
        return allAffineBlocks()
                .thenCombine(
                        context.borrowed.all(),
                        (affine, borrowedFrom) ->
                                Stream.concat(affine.stream(), borrowedFrom.keySet().stream())
                                        .distinct()
                                        .toList());
    }

    /**
     * @return every block affine to this node per the pools, releasing ones included (a DEL must
     *     still find its address there), read afresh
     */
    private CompletionStage<List<Cidr>> allAffineBlocks() {
        return context.allPoolViews()
                .thenApply(
                        views ->
                                views.stream()
                                        .flatMap(v -> v.claims().entrySet().stream())
                                        .filter(e -> e.getValue().equals(node))
                                        .map(Map.Entry::getKey)
                                        .distinct()
                                        .toList());
    }

    /**
     * Has each block free what the attachment holds there ({@code BlockEntity.Release}, idempotent);
     * a block that freed something is no longer taken for full ({@link IpamContext#fullHint}).
     *
     * @param afterForget the node forgot the attachment's record without a sync of its own: each
     *     block writes, an empty release if it holds nothing ({@link FollowedBySyncedWrite})
     * @return the addresses released (IP literals), from all blocks
     */
    CompletionStage<List<String>> releaseFromBlocks(
            String handle, String ifname, List<Cidr> blocks, boolean afterForget) {
        List<CompletableFuture<List<String>>> all =
                blocks.stream()
                        .map(
                                block ->
                                        asks.ask(
                                                        asks.block(block),
                                                        (ActorRef<BlockEntity.Released> r) ->
                                                                new BlockEntity.Release(
                                                                        handle,
                                                                        ifname,
                                                                        afterForget,
                                                                        r))
                                                .thenApply(BlockEntity.Released::addresses)
                                                .thenApply(
                                                        released -> {
                                                            if (!released.isEmpty()) {
                                                                context.fullHint.remove(block);
                                                            }
                                                            return released;
                                                        })
                                                .toCompletableFuture())
                        .toList();
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> all.stream().flatMap(f -> f.join().stream()).toList());
    }

    /** @return the blocks holding the addresses, each once */
    static List<Cidr> blocksOf(List<HeldAddress> held) {
        return held.stream().map(HeldAddress::block).distinct().toList();
    }
}
