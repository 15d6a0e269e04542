package io.cadastre.shards;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * For {@link Ipam}: the blocks of other nodes that its node has borrowed from, as the node's
 * {@link NodeEntity} lists them (persisted), so that a DEL the node cannot match to an attachment
 * sweeps them as well as the affine blocks. A block is listed before it is asked to assign a
 * borrowed address, so a crash after the assignment cannot leave an allocation in an unlisted
 * block; GC stops listing a block once it holds no allocation of the node.
 *
 * <p>A local cache of the blocks known to be listed spares borrowing an ask per ADD. Listing and
 * unlisting must not interleave with a borrowing assignment (a block read as idle, then assigned,
 * then unlisted would hide the allocation), so {@link Ipam} runs {@link #note} with the assignment
 * that follows it, and {@link #forgetIdle} runs each block's read and forget, in the block's pool's
 * claim chain.
 */
final class BorrowedBlocks {
    private final EntityAsks asks;
    private final String node;

    /** Blocks the node entity is known to list; changed only inside the block's pool's claim chain. */
    private final Set<Cidr> listed = ConcurrentHashMap.newKeySet();

    BorrowedBlocks(EntityAsks asks, String node) {
        this.asks = asks;
        this.node = node;
    }

    /** @return block → pool name, every block the node entity lists as borrowed from */
    CompletionStage<Map<Cidr, String>> all() {
        return asks.ask(asks.node(node), NodeEntity.GetBorrowedBlocks::new)
                .thenApply(NodeEntity.BorrowedBlocks::blocks);
    }

    /**
     * @return whether to try borrowing from a block: it is listed already, or (read) it has room or
     *     holds the attachment. A full block is not listed, so the DEL sweep does not grow with them.
     */
    CompletionStage<Boolean> worthTrying(Cidr block, Allocation allocation) {
        if (listed.contains(block)) {
            return CompletableFuture.completedFuture(true);
        }
        return asks.blockView(block)
                .thenApply(
                        view ->
                                view.free() > 0
                                        || view.allocations().values().stream()
                                                .anyMatch(
                                                        a ->
                                                                a.isFor(
                                                                        allocation.handle(),
                                                                        allocation.ifname())));
    }

    /**
     * Has the node entity list the block, unless it is known to. Call it in the pool's claim chain,
     * before the block is asked to assign.
     *
     * @return done once listed; fails with UNAVAILABLE (also when a slow reply is not confirmed)
     */
    CompletionStage<Done> note(String pool, Cidr block) {
        if (listed.contains(block)) {
            return CompletableFuture.completedFuture(Done.getInstance());
        }
        return asks.confirmedIfSlow(
                        asks.askStatus(
                                asks.node(node),
                                (ActorRef<StatusReply<Done>> r) ->
                                        new NodeEntity.NoteBorrowedBlock(pool, block, r)),
                        asks.node(node),
                        done -> all().thenApply(blocks -> blocks.containsKey(block)))
                .thenApply(
                        done -> {
                            listed.add(block);
                            return done;
                        });
    }

    /**
     * Stops listing every listed block that holds no allocation of the node. Best effort: failures
     * are ignored, the next GC tries again.
     *
     * @param inPoolChain runs work in the named pool's claim chain
     */
    CompletionStage<Done> forgetIdle(
            BiFunction<String, Supplier<CompletionStage<Done>>, CompletionStage<Done>>
                    inPoolChain) {
        return all().thenCompose(
                        blocks -> {
                            List<CompletableFuture<Done>> each =
                                    blocks.entrySet().stream()
                                            .map(
                                                    e ->
                                                            inPoolChain
                                                                    .apply(
                                                                            e.getValue(),
                                                                            () ->
                                                                                    forgetIfIdle(
                                                                                            e
                                                                                                    .getKey()))
                                                                    .exceptionally(
                                                                            error ->
                                                                                    Done
                                                                                            .getInstance())
                                                                    .toCompletableFuture())
                                            .toList();
                            return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new));
                        })
                .handle((v, error) -> Done.getInstance());
    }

    private CompletionStage<Done> forgetIfIdle(Cidr block) {
        return asks.blockView(block)
                .thenCompose(
                        view -> {
                            if (view.allocations().values().stream()
                                    .anyMatch(a -> a.node().equals(node))) {
                                return CompletableFuture.completedFuture(Done.getInstance());
                            }
                            // The cache first: whatever happens to the ask, the next borrow from
                            // the block notes it again.
                            listed.remove(block);
                            return asks.askStatus(
                                    asks.node(node),
                                    (ActorRef<StatusReply<Done>> r) ->
                                            new NodeEntity.ForgetBorrowedBlock(block, r));
                        });
    }
}
