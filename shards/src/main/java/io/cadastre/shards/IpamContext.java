package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.PoolEntity.PoolView;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * What the flows of one {@link ShardedIpam} share: who the node is (its name, labels and default
 * pools), the one typed client of the entities ({@link EntityAsks}), the cluster's pools
 * ({@link PoolCatalog}), the clock that stamps allocations and records (ms since the epoch), and
 * the node-local state more than one flow reads or changes — the blocks last seen full, the
 * attachments with an ADD in flight, the blocks borrowed from, and the per-pool claim chains.
 * Thread-safe: concurrent sets and maps, the labels replaced whole (volatile).
 */
final class IpamContext {
    final EntityAsks asks;
    final String node;

    /** Publishes this member as the home of the node's entities ({@link EntityHomes}). */
    final EntityHomes homes;

    /** This node's labels, replaced when they change (the Node object's, live: module kube). */
    private volatile Map<String, String> labels;

    final PoolCatalog catalog;

    /** The pools used, in this order, when a request names none; empty: every pool selecting the node. */
    final List<String> defaultPools;

    final Clock clock;

    /**
     * Blocks last seen full; skipped on the fast path until something is released in them
     * ({@link IpamPoolAssignment} adds, {@link IpamRelease} removes).
     */
    final Set<Cidr> fullHint = ConcurrentHashMap.newKeySet();

    /**
     * Attachment keys ({@link AttachmentRecord#key}) with an ADD in flight
     * ({@link IpamAssignment}); GC ({@link IpamGarbageCollection}) leaves them alone.
     */
    final Set<String> inFlight = ConcurrentHashMap.newKeySet();

    /** The blocks of other nodes this node has borrowed from. */
    final BorrowedBlocks borrowed;

    /** Per pool: the tail of the chain that serializes claiming, so concurrent ADDs claim one block. */
    private final Map<String, CompletableFuture<?>> claimTails = new ConcurrentHashMap<>();

    IpamContext(
            EntityAsks asks,
            EntityHomes homes,
            String node,
            Map<String, String> labels,
            PoolCatalog catalog,
            List<String> defaultPools,
            Clock clock) {
        this.asks = asks;
        this.homes = homes;
        this.node = node;
        this.labels = Map.copyOf(labels);
        this.catalog = catalog;
        this.borrowed = new BorrowedBlocks(asks, node);
        this.defaultPools = List.copyOf(defaultPools);
        this.clock = clock;
    }

    /** @return this node's labels as last set */
    Map<String, String> labels() {
        return labels;
    }

    /** Replaces this node's labels; an ADD already choosing its pools keeps the labels it read. */
    void setLabels(Map<String, String> labels) {
        this.labels = labels;
    }

    /**
     * Runs {@code work} after everything queued before it for the pool has finished, failed or
     * not: claiming (slow path), borrowing and GC's unlisting of borrowed blocks.
     *
     * @return the work's outcome
     */
    <T> CompletionStage<T> serializedPerPool(String poolName, Supplier<CompletionStage<T>> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        claimTails.compute(
                poolName,
                (name, tail) -> {
                    CompletableFuture<?> previous =
                            tail == null ? CompletableFuture.completedFuture(null) : tail;
                    return previous.handle((v, e) -> null)
                            .thenCompose(v -> work.get())
                            .whenComplete(
                                    (v, e) -> {
                                        if (e != null) {
                                            result.completeExceptionally(e);
                                        } else {
                                            result.complete(v);
                                        }
                                    });
                });
        return result;
    }

    /**
     * @return the view of each pool of the catalogue this agent holds ({@link PoolCatalog#current}),
     *     read from the pool's entity (not cached)
     */
    CompletionStage<List<PoolView>> allPoolViews() {
        return catalog.current()
                .thenCompose(pools -> asks.poolViews(List.copyOf(pools.pools().keySet())));
    }
}
