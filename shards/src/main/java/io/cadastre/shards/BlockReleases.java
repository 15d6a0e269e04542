package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.StatusReply;

/**
 * Gives a claimed block back to its pool, only if it holds no allocation — for a pool being
 * deleted, a node removed, a node gone from the cluster for longer than a grace period. Three
 * idempotent steps, each persisted by its single writer:
 * <ol>
 *   <li>the pool marks the block as being released ({@link PoolEntity.BeginBlockRelease}): the
 *       node stops using it, and does not tell it its affinity again;
 *   <li>the block gives up its affinity if it is empty ({@link BlockEntity.ReleaseAffinity}); the
 *       emptiness check and the change are one step of the block's single writer, so no ADD can
 *       slip in between; from then on it allocates to nobody, borrowers included;
 *   <li>the pool drops the claim ({@link PoolEntity.FinishBlockRelease}), or, when the block
 *       refused because it holds allocations, gives up the release
 *       ({@link PoolEntity.CancelBlockRelease}).
 * </ol>
 * A crash between two steps leaves the block marked as releasing; running the release again
 * completes it or gives it up. The node's cache of its affine blocks is told last (best effort).
 */
public final class BlockReleases {
    private final EntityAsks asks;

    /** Told the pool of every block given back (routes to it go away at once). */
    private final MeshHints hints;

    /** One claimed block: its pool and the node the pool gave it to. */
    public record Claim(String pool, String node) {}

    /**
     * What {@link #releaseEachIfEmpty} did; every block given is in exactly one list or map.
     *
     * @param released the blocks given back (or found given back already), in the order given
     * @param kept the blocks that hold allocations and stay claimed
     * @param failed the blocks whose release failed, with why ({@link #releaseIfEmpty}'s failures)
     */
    public record Outcome(List<Cidr> released, List<Cidr> kept, Map<Cidr, IpamException> failed) {}

    public BlockReleases(ActorSystem<?> system, AskTimeouts timeouts) {
        this(new EntityAsks(system, timeouts), MeshHints.get(system));
    }

    /** @param hints told of every block given back */
    BlockReleases(EntityAsks asks, MeshHints hints) {
        this.asks = asks;
        this.hints = hints;
    }

    /**
     * @param pool the pool that claimed the block
     * @param block the block
     * @param node the node the pool gave the block to
     * @return true when the claim is gone (also when it was gone already), false when the block
     *     holds allocations and stays claimed; fails with AFFINE_TO_OTHER_NODE when the pool gave the
     *     block to another node, UNAVAILABLE when an entity did not answer (the block may then stay
     *     marked as releasing until the release is run again)
     */
    public CompletionStage<Boolean> releaseIfEmpty(String pool, Cidr block, String node) {
        return asks.askStatus(
                        asks.pool(pool),
                        (ActorRef<StatusReply<Done>> r) ->
                                new PoolEntity.BeginBlockRelease(block, node, r))
                .thenCompose(
                        begun ->
                                asks.askStatus(
                                                asks.block(block),
                                                (ActorRef<StatusReply<Done>> r) ->
                                                        new BlockEntity.ReleaseAffinity(node, r))
                                        .handle(
                                                (released, error) -> {
                                                    if (error == null) {
                                                        return finish(pool, block, node);
                                                    }
                                                    IpamException failure =
                                                            EntityAsks.asIpam(error);
                                                    if (failure.reason()
                                                                    != IpamException.Reason.CONFLICT
                                                            && failure.reason()
                                                                    != IpamException.Reason
                                                                            .AFFINE_TO_OTHER_NODE) {
                                                        throw failure;
                                                    }
                                                    // The block refused: it holds allocations, or
                                                    // serves another node. The claim stays.
                                                    return asks.askStatus(
                                                                    asks.pool(pool),
                                                                    (ActorRef<StatusReply<Done>>
                                                                                    r) ->
                                                                            new PoolEntity
                                                                                    .CancelBlockRelease(
                                                                                    block, r))
                                                            .thenApply(cancelled -> false);
                                                })
                                        .thenCompose(stage -> stage));
    }

    /**
     * Runs {@link #releaseIfEmpty} for every block at once.
     *
     * @param claims block → its claim
     * @return the outcome of each; the stage itself does not fail
     */
    public CompletionStage<Outcome> releaseEachIfEmpty(Map<Cidr, Claim> claims) {
        Map<Cidr, CompletableFuture<Boolean>> each = new LinkedHashMap<>();
        claims.forEach(
                (block, claim) ->
                        each.put(
                                block,
                                releaseIfEmpty(claim.pool(), block, claim.node())
                                        .toCompletableFuture()));
        return CompletableFuture.allOf(each.values().toArray(CompletableFuture[]::new))
                .handle(
                        (v, ignored) -> {
                            List<Cidr> released = new ArrayList<>();
                            List<Cidr> kept = new ArrayList<>();
                            Map<Cidr, IpamException> failed = new LinkedHashMap<>();
                            each.forEach(
                                    (block, outcome) -> {
                                        if (outcome.isCompletedExceptionally()) {
                                            failed.put(
                                                    block,
                                                    EntityAsks.asIpam(
                                                            outcome.handle((r, e) -> e).join()));
                                        } else {
                                            (outcome.join() ? released : kept).add(block);
                                        }
                                    });
                            return new Outcome(released, kept, failed);
                        });
    }

    private CompletionStage<Boolean> finish(String pool, Cidr block, String node) {
        return asks.askStatus(
                        asks.pool(pool),
                        (ActorRef<StatusReply<Done>> r) ->
                                new PoolEntity.FinishBlockRelease(block, r))
                .thenCompose(
                        done -> {
                            hints.poolChanged(pool);
                            return asks.askStatus(
                                            asks.node(node),
                                            (ActorRef<StatusReply<Done>> r) ->
                                                    new NodeEntity.ForgetAffineBlock(block, r))
                                    .handle((forgotten, error) -> true);
                        });
    }
}
