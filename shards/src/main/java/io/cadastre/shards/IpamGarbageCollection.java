package io.cadastre.shards;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The IPAM part of a CNI GC for one {@link ShardedIpam} (CNI spec 1.1 §GC; root DESIGN.md,
 * "Cleanup"): the network's attachments this node knows that the runtime does not keep are
 * released as a DEL releases them ({@link IpamRelease#release}), and the orphans (allocations made
 * for this node in any claimed block, borrowed ones included, that no attachment record holds) are
 * freed in their blocks; then the blocks borrowed from that hold nothing of the node are no longer
 * listed ({@link BorrowedBlocks#forgetIdle}, in the pool's claim chain). Also the list of the
 * node's attachments.
 *
 * <p>Invariants of the root DESIGN.md it upholds: 1 (an attachment with an ADD in flight,
 * {@link IpamContext#inFlight}, is never released: its record may not be written yet), 9 (what no
 * DEL released comes back: the node's known and orphan allocations alike).
 *
 * <p>All methods return stages that fail with {@link IpamException}.
 */
final class IpamGarbageCollection extends IpamFlow {
    private final IpamRelease release;

    IpamGarbageCollection(IpamContext context, IpamRelease release) {
        super(context);
        this.release = release;
    }

    /** {@link Ipam#attachments}. */
    CompletionStage<List<AttachmentRecord>> attachments() {
        return asks.nodeView(node).thenApply(NodeEntity.NodeView::attachments);
    }

    /** {@link Ipam#collectGarbage}. */
    CompletionStage<List<String>> collectGarbage(String network, Set<String> keep) {
        String prefix = network + ".";
        return asks.nodeView(node)
                .thenCompose(
                        view -> {
                            Set<String> known = new HashSet<>();
                            List<AttachmentRecord> stale = new ArrayList<>();
                            for (AttachmentRecord a : view.attachments()) {
                                known.add(a.key());
                                if (a.network().equals(network)
                                        && !keep.contains(a.key())
                                        && !context.inFlight.contains(a.key())) {
                                    stale.add(a);
                                }
                            }
                            return orphansIn(prefix, known, keep)
                                    .thenCompose(
                                            orphans -> {
                                                List<CompletableFuture<String>> releases =
                                                        new ArrayList<>();
                                                for (AttachmentRecord a : stale) {
                                                    releases.add(
                                                            release.release(a.handle(), a.ifname())
                                                                    .thenApply(r -> a.key())
                                                                    .toCompletableFuture());
                                                }
                                                for (Map.Entry<Cidr, Allocation> o : orphans) {
                                                    Allocation a = o.getValue();
                                                    releases.add(
                                                            release.releaseFromBlocks(
                                                                            a.handle(),
                                                                            a.ifname(),
                                                                            List.of(o.getKey()),
                                                                            false)
                                                                    .thenApply(
                                                                            r ->
                                                                                    AttachmentRecord
                                                                                            .key(
                                                                                                    a
                                                                                                            .handle(),
                                                                                                    a
                                                                                                            .ifname()))
                                                                    .toCompletableFuture());
                                                }
                                                return CompletableFuture.allOf(
                                                                releases.toArray(
                                                                        CompletableFuture[]::new))
                                                        .thenApply(
                                                                v ->
                                                                        releases.stream()
                                                                                .map(
                                                                                        CompletableFuture
                                                                                                ::join)
                                                                                .distinct()
                                                                                .toList());
                                            });
                        })
                .thenCompose(
                        released ->
                                context.borrowed
                                        .forgetIdle(context::serializedPerPool)
                                        .thenApply(d -> released));
    }

    /** @return orphan allocations of this node for handles with the prefix, by the block holding them */
    private CompletionStage<List<Map.Entry<Cidr, Allocation>>> orphansIn(
            String handlePrefix, Set<String> known, Set<String> keep) {
        return allClaimedBlocks()
                .thenCompose(asks::blockViews)
                .thenApply(
                        views -> {
                            List<Map.Entry<Cidr, Allocation>> orphans = new ArrayList<>();
                            for (BlockEntity.BlockView view : views) {
                                for (Allocation a : view.allocations().values()) {
                                    String key = AttachmentRecord.key(a.handle(), a.ifname());
                                    if (a.node().equals(node)
                                            && a.handle().startsWith(handlePrefix)
                                            && !known.contains(key)
                                            && !keep.contains(key)
                                            && !context.inFlight.contains(key)) {
                                        orphans.add(Map.entry(view.cidr(), a));
                                    }
                                }
                            }
                            return orphans;
                        });
    }

    /** @return every claimed block of every pool, whichever node it is affine to */
    private CompletionStage<List<Cidr>> allClaimedBlocks() {
        return context.allPoolViews()
                .thenApply(
                        views ->
                                views.stream().flatMap(v -> v.claims().keySet().stream()).toList());
    }
}
