package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
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

    public BlockReleases(ActorSystem<?> system, AskTimeouts timeouts) {
        this(new EntityAsks(ClusterSharding.get(system), timeouts));
    }

    BlockReleases(EntityAsks asks) {
        this.asks = asks;
    }

    /**
     * @param pool the pool that claimed the block
     * @param block the block
     * @param node the node the pool gave the block to
     * @return true when the claim is gone (also when it was gone already), false when the block
     *     holds allocations and stays claimed; fails with INVALID_REQUEST when the pool gave the
     *     block to another node, UNAVAILABLE when an entity did not answer (the block may then stay
     *     marked as releasing until the release is run again)
     */
    public CompletionStage<Boolean> releaseIfEmpty(String pool, Cidr block, String node) {
        return asks.askStatus(asks.pool(pool), (ActorRef<StatusReply<Done>> r) -> new PoolEntity.BeginBlockRelease(block, node, r))
                .thenCompose(begun -> asks.askStatus(asks.block(block),
                                (ActorRef<StatusReply<Done>> r) -> new BlockEntity.ReleaseAffinity(node, r))
                        .handle((released, error) -> {
                            if (error == null) {
                                return finish(pool, block, node);
                            }
                            IpamException failure = EntityAsks.asIpam(error);
                            if (failure.reason() != IpamException.Reason.INVALID_REQUEST) {
                                throw failure;
                            }
                            // The block refused: it holds allocations. It stays the node's.
                            return asks.askStatus(asks.pool(pool),
                                            (ActorRef<StatusReply<Done>> r) -> new PoolEntity.CancelBlockRelease(block, r))
                                    .thenApply(cancelled -> false);
                        })
                        .thenCompose(stage -> stage));
    }

    private CompletionStage<Boolean> finish(String pool, Cidr block, String node) {
        return asks.askStatus(asks.pool(pool), (ActorRef<StatusReply<Done>> r) -> new PoolEntity.FinishBlockRelease(block, r))
                .thenCompose(done -> asks.askStatus(asks.node(node),
                                (ActorRef<StatusReply<Done>> r) -> new NodeEntity.ForgetAffineBlock(block, r))
                        .handle((forgotten, error) -> true));
    }

}
