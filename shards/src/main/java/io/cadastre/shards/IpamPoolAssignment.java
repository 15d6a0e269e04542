package io.cadastre.shards;

import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import io.cadastre.shards.BlockEntity.AssignOutcome;
import io.cadastre.shards.BlockEntity.AssignStatus;
import io.cadastre.shards.PoolEntity.ClaimOutcome;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * One address from one pool, for the ADD flow of {@link IpamAssignment}: in a block affine to this
 * node with room (the fast path, without coordination), else, serialized per pool (the slow path),
 * in a new block claimed for the node (the pool persists the claim first), else — only when the
 * pool allows borrowing — in another node's block. A requested address is assigned in the block
 * holding it ({@link #assignSpecific}). An IPAM-only request's {@link AddressRules} narrow this to
 * the addresses its L2 subnet allows (never the subnet's network, IPv4 broadcast or gateway
 * address; within its ranges): only blocks holding such an address are asked or claimed, and the
 * block picks among them (shards/DESIGN.md, "IPAM-only on an L2 subnet").
 *
 * <p>It caches the node's affine blocks per pool (its {@link ShardedIpam} is the only caller that
 * allocates for the node) and repairs the cache when a block refuses as not affine; the blocks last
 * seen full ({@link IpamContext#fullHint}) are skipped on the fast path.
 *
 * <p>Invariants of the root DESIGN.md it upholds: 3 (a block learns its affinity from the pool:
 * the pool persists the claim, {@code ClaimBlock} or {@code ClaimSpecificBlock}, before the block
 * is told, {@code ClaimAffinity}), 1 (the block's single writer picks the address; claims are
 * serialized per pool, so concurrent ADDs claim one block between them), 4 (every step is
 * idempotent per attachment, so a crash between steps leaves at worst an orphan allocation that a
 * retry reuses or GC releases, never a duplicate), 8 (a slow reply to a claim or an assignment is
 * read back from the live incarnation). Before it borrows from a block, the node entity lists the
 * block ({@link BorrowedBlocks}), so that a DEL the node cannot match to an attachment sweeps that
 * block too (shards/DESIGN.md, "The node lists the blocks it borrowed from, before it borrows").
 *
 * <p>All methods return stages that fail with {@link IpamException}.
 */
final class IpamPoolAssignment extends IpamFlow {
    /** Tells every agent that a pool's claims changed, so that routes follow claims at once. */
    private final MeshHints hints;

    /** pool name → blocks of that pool affine to this node (loaded from the pool on first use). */
    private final Map<String, CompletableFuture<List<Cidr>>> affineBlocks =
            new ConcurrentHashMap<>();

    IpamPoolAssignment(IpamContext context, MeshHints hints) {
        super(context);
        this.hints = hints;
    }

    /**
     * Fast path without coordination; on a miss, the slow path serialized per pool.
     *
     * @param reasons collects why the pool could not serve, for the caller's POOL_EXHAUSTED message
     * @param within the ranges the address must lie in ({@link AddressRules#within}), or null for any
     * @return the address held, or empty when the pool has none for this node
     */
    CompletionStage<Optional<HeldAddress>> assignInPool(
            PoolSpec pool, Allocation allocation, List<String> reasons, RangeSet within) {
        return affineBlocksOf(pool.name())
                .thenCompose(
                        blocks ->
                                tryBlocks(
                                        pool,
                                        blocks.stream()
                                                .filter(b -> !context.fullHint.contains(b))
                                                .toList(),
                                        allocation,
                                        false,
                                        within))
                .thenCompose(
                        found ->
                                found.isPresent()
                                        ? CompletableFuture.completedFuture(found)
                                        : context.serializedPerPool(
                                                pool.name(),
                                                () -> slowPath(pool, allocation, reasons, within)));
    }

    private CompletionStage<Optional<HeldAddress>> slowPath(
            PoolSpec pool, Allocation allocation, List<String> reasons, RangeSet within) {
        // Another ADD may have claimed a block while we waited: try every affine block first.
        return affineBlocksOf(pool.name())
                .thenCompose(
                        blocks ->
                                tryBlocks(pool, blocks, allocation, false, within)
                                        .thenCompose(
                                                found ->
                                                        found.isPresent()
                                                                ? CompletableFuture.completedFuture(
                                                                        found)
                                                                : claimAndAssign(
                                                                        pool,
                                                                        Set.copyOf(blocks),
                                                                        allocation,
                                                                        reasons,
                                                                        within)));
    }

    /**
     * Claims a new block and assigns in it. The claim names the blocks this node already uses, so
     * that it may be sent again: an attempt whose reply was lost with a crashed member is
     * answered with the block it claimed (PoolEntity.ClaimBlock), and the ADD waits for the
     * pool's failover rather than the whole ask timeout.
     *
     * @param known the pool's blocks this node uses, as the cache has them
     */
    private CompletionStage<Optional<HeldAddress>> claimAndAssign(
            PoolSpec pool,
            Set<Cidr> known,
            Allocation allocation,
            List<String> reasons,
            RangeSet within) {
        return asks.confirmedIfSlow(
                        asks.askStatus(
                                asks.pool(pool.name()),
                                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                                        new PoolEntity.ClaimBlock(node, within, known, r)),
                        asks.pool(pool.name()),
                        outcome -> claimConfirmed(pool.name(), outcome))
                .thenCompose(
                        outcome -> {
                            if (outcome.status() == PoolEntity.ClaimStatus.CLAIMED) {
                                return adoptBlock(pool, outcome.block())
                                        .thenCompose(
                                                d ->
                                                        tryBlocks(
                                                                pool,
                                                                List.of(outcome.block()),
                                                                allocation,
                                                                false,
                                                                within));
                            }
                            reasons.add(outcome.detail());
                            if (outcome.status() == PoolEntity.ClaimStatus.DISABLED) {
                                return CompletableFuture.completedFuture(
                                        Optional.<HeldAddress>empty());
                            }
                            if (!pool.borrowingAllowed()) {
                                reasons.add(
                                        pool.strictAffinity()
                                                ? "pool "
                                                        + pool.name()
                                                        + " has strict affinity: no borrowing"
                                                : "pool "
                                                        + pool.name()
                                                        + " does not allow borrowing");
                                return CompletableFuture.completedFuture(
                                        Optional.<HeldAddress>empty());
                            }
                            return borrow(pool, allocation, reasons, within);
                        });
    }

    private CompletionStage<Optional<HeldAddress>> borrow(
            PoolSpec pool, Allocation allocation, List<String> reasons, RangeSet within) {
        return asks.poolView(pool.name())
                .thenCompose(
                        view -> {
                            List<Cidr> others =
                                    view.claims().entrySet().stream()
                                            .filter(
                                                    e ->
                                                            !e.getValue().equals(node)
                                                                    && !view.releasing()
                                                                            .contains(e.getKey()))
                                            .map(Map.Entry::getKey)
                                            .toList();
                            return tryBlocks(pool, others, allocation, true, within)
                                    .thenApply(
                                            found -> {
                                                if (found.isEmpty()) {
                                                    reasons.add(
                                                            "no block of pool "
                                                                    + pool.name()
                                                                    + " has a free address to borrow");
                                                }
                                                return found;
                                            });
                        });
    }

    /**
     * Tries the blocks in order; the first that assigns wins. Borrowing runs in the pool's claim
     * chain. Blocks without an address {@code within} allows (when not null) are not asked.
     */
    private CompletionStage<Optional<HeldAddress>> tryBlocks(
            PoolSpec pool,
            List<Cidr> blocks,
            Allocation allocation,
            boolean borrow,
            RangeSet within) {
        CompletionStage<Optional<HeldAddress>> chain =
                CompletableFuture.completedFuture(Optional.empty());
        for (Cidr block : blocks) {
            if (within != null && !within.allowsAnyIn(block)) {
                continue;
            }
            chain =
                    chain.thenCompose(
                            found ->
                                    found.isPresent()
                                            ? CompletableFuture.completedFuture(found)
                                            : autoAssign(pool, block, allocation, borrow, within));
        }
        return chain;
    }

    private CompletionStage<Optional<HeldAddress>> autoAssign(
            PoolSpec pool, Cidr block, Allocation allocation, boolean borrow, RangeSet within) {
        if (!borrow) {
            return assignIn(pool, block, allocation, false, within);
        }
        return context.borrowed
                .worthTrying(block, allocation)
                .thenCompose(
                        worth ->
                                worth
                                        ? context.borrowed
                                                .note(pool.name(), block)
                                                .thenCompose(
                                                        d ->
                                                                assignIn(
                                                                        pool,
                                                                        block,
                                                                        allocation,
                                                                        true,
                                                                        within))
                                        : CompletableFuture.completedFuture(
                                                Optional.<HeldAddress>empty()));
    }

    private CompletionStage<Optional<HeldAddress>> assignIn(
            PoolSpec pool, Cidr block, Allocation allocation, boolean borrow, RangeSet within) {
        return assignConfirmed(
                        block,
                        allocation,
                        r -> new BlockEntity.AutoAssign(allocation, borrow, within, r))
                .thenCompose(
                        outcome -> {
                            if (outcome.status() == AssignStatus.ASSIGNED) {
                                return CompletableFuture.completedFuture(
                                        Optional.of(
                                                new HeldAddress(
                                                        outcome.address(), pool.name(), block)));
                            }
                            if (outcome.status() == AssignStatus.FULL) {
                                context.fullHint.add(block);
                            }
                            if (outcome.status() == AssignStatus.NOT_AFFINE && !borrow) {
                                return repairAffinity(pool, block)
                                        .thenCompose(
                                                repaired ->
                                                        !repaired
                                                                ? CompletableFuture.completedFuture(
                                                                        Optional
                                                                                .<HeldAddress>
                                                                                        empty())
                                                                : assignConfirmed(
                                                                                block,
                                                                                allocation,
                                                                                r ->
                                                                                        new BlockEntity
                                                                                                .AutoAssign(
                                                                                                allocation,
                                                                                                false,
                                                                                                within,
                                                                                                r))
                                                                        .thenApply(
                                                                                again ->
                                                                                        again
                                                                                                                .status()
                                                                                                        == AssignStatus
                                                                                                                .ASSIGNED
                                                                                                ? Optional
                                                                                                        .of(
                                                                                                                new HeldAddress(
                                                                                                                        again
                                                                                                                                .address(),
                                                                                                                        pool
                                                                                                                                .name(),
                                                                                                                        block))
                                                                                                : Optional
                                                                                                        .<HeldAddress>
                                                                                                                empty()));
                            }
                            return CompletableFuture.completedFuture(Optional.<HeldAddress>empty());
                        });
    }

    /**
     * A block the node's cache holds refused as not affine: the pool says it is ours but the block
     * was not told (a crash between the two steps), or the block is being released or was
     * released. The pool decides: tell the block when the pool still gives it to this node and
     * is not releasing it; otherwise forget it here.
     *
     * @return whether the block was told and may be tried again
     */
    private CompletionStage<Boolean> repairAffinity(PoolSpec pool, Cidr block) {
        return asks.poolView(pool.name())
                .thenCompose(
                        view -> {
                            if (view.usableBlocksOf(node).contains(block)) {
                                return tellAffinity(pool, block).thenApply(d -> true);
                            }
                            affineBlocksOf(pool.name()).thenAccept(blocks -> blocks.remove(block));
                            return CompletableFuture.completedFuture(false);
                        });
    }

    /**
     * A requested address ({@code IP=}, {@code ips}): the pool claims the block holding it for this
     * node unless another node holds that block, in which case the address is borrowed (never
     * under strict affinity); then the block assigns exactly that address.
     *
     * @param address an IP literal in canonical form
     * @param poolNames the pools it may lie in, in order; empty: any pool of the catalogue
     * @throws IpamException ADDRESS_NOT_IN_POOL, before any ask, when none of those pools holds
     *     it, its pool may not serve this node, or it lies in an excluded range; the stage fails
     *     with ADDRESS_NOT_IN_POOL when the pool or block refuses, with ADDRESS_TAKEN when another
     *     attachment holds the address
     */
    CompletionStage<HeldAddress> assignSpecific(
            String address,
            PoolRegistry.Catalog pools,
            List<String> poolNames,
            Allocation allocation) {
        List<String> candidates =
                poolNames.isEmpty() ? List.copyOf(pools.pools().keySet()) : poolNames;
        PoolSpec pool =
                PoolChoice.holding(pools, candidates, address)
                        .orElseThrow(
                                () ->
                                        new IpamException(
                                                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                                address
                                                        + " is in none of the pools "
                                                        + candidates));
        Optional<String> refusal = PoolChoice.refusal(pools, pool, node, context.labels());
        if (refusal.isPresent()) {
            throw new IpamException(
                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                    address + " cannot be assigned: " + refusal.get());
        }
        if (pool.isExcluded(address)) {
            throw new IpamException(
                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                    address
                            + " lies in an excluded range of pool "
                            + pool.name()
                            + " "
                            + pool.excluded());
        }
        Cidr block = pool.cidr().subnetContaining(address, pool.blockPrefix());
        return asks.confirmedIfSlow(
                        asks.askStatus(
                                asks.pool(pool.name()),
                                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                                        new PoolEntity.ClaimSpecificBlock(block, node, r)),
                        asks.pool(pool.name()),
                        outcome -> claimConfirmed(pool.name(), outcome))
                .thenCompose(
                        outcome ->
                                switch (outcome.status()) {
                                    case CLAIMED -> adoptBlock(pool, block).thenApply(d -> false);
                                    case OWNED_BY_OTHER -> {
                                        if (pool.strictAffinity()) {
                                            throw new IpamException(
                                                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                                    address
                                                            + " lies in block "
                                                            + block
                                                            + " affine to node "
                                                            + outcome.detail()
                                                            + ", and pool "
                                                            + pool.name()
                                                            + " has strict affinity");
                                        }
                                        yield CompletableFuture.completedFuture(true);
                                    }
                                    default ->
                                            throw new IpamException(
                                                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                                    address
                                                            + " cannot be assigned on node "
                                                            + node
                                                            + ": "
                                                            + outcome.detail());
                                })
                .thenCompose(
                        borrow ->
                                !borrow
                                        ? assignConfirmed(
                                                block,
                                                allocation,
                                                r ->
                                                        new BlockEntity.AssignSpecific(
                                                                address, allocation, false, r))
                                        : context.serializedPerPool(
                                                pool.name(),
                                                () ->
                                                        context.borrowed
                                                                .note(pool.name(), block)
                                                                .thenCompose(
                                                                        d ->
                                                                                assignConfirmed(
                                                                                        block,
                                                                                        allocation,
                                                                                        r ->
                                                                                                new BlockEntity
                                                                                                        .AssignSpecific(
                                                                                                        address,
                                                                                                        allocation,
                                                                                                        true,
                                                                                                        r)))))
                .thenApply(
                        outcome ->
                                switch (outcome.status()) {
                                    case ASSIGNED -> new HeldAddress(address, pool.name(), block);
                                    case TAKEN ->
                                            throw new IpamException(
                                                    IpamException.Reason.ADDRESS_TAKEN,
                                                    outcome.detail());
                                    default ->
                                            throw new IpamException(
                                                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                                    outcome.detail());
                                });
    }

    /**
     * Makes a freshly claimed block ours everywhere: its home (this member), the block entity, the
     * node cache, the local cache.
     */
    private CompletionStage<Done> adoptBlock(PoolSpec pool, Cidr block) {
        String poolName = pool.name();
        homes.claimed(block);
        return tellAffinity(pool, block)
                .thenCompose(
                        d ->
                                asks.askStatus(
                                        asks.node(node),
                                        (ActorRef<StatusReply<Done>> r) ->
                                                new NodeEntity.NoteAffineBlock(poolName, block, r)))
                .thenCompose(d -> affineBlocksOf(poolName))
                .thenApply(
                        blocks -> {
                            if (!blocks.contains(block)) {
                                blocks.add(block);
                            }
                            // The claim is persisted: other hosts may route to the block now.
                            hints.poolChanged(poolName);
                            return Done.getInstance();
                        });
    }

    private CompletionStage<Done> tellAffinity(PoolSpec pool, Cidr block) {
        return asks.askStatus(
                asks.block(block),
                (ActorRef<StatusReply<Done>> r) ->
                        new BlockEntity.ClaimAffinity(node, pool.excludedWithin(block), r));
    }

    private CompletionStage<List<Cidr>> affineBlocksOf(String poolName) {
        return affineBlocks.computeIfAbsent(
                poolName,
                name ->
                        asks.poolView(name)
                                .thenApply(
                                        view ->
                                                (List<Cidr>)
                                                        new CopyOnWriteArrayList<>(
                                                                homed(view.usableBlocksOf(node))))
                                .toCompletableFuture()
                                .whenComplete(
                                        (blocks, error) -> {
                                            if (error != null) {
                                                affineBlocks.remove(name);
                                            }
                                        }));
    }

    /** @return {@code affine}, each block published as living on this node's member */
    private List<Cidr> homed(List<Cidr> affine) {
        homes.blocks(affine);
        return affine;
    }

    // ---- confirmation of slow replies ----

    /** An assignment whose reply, if slow, is confirmed against the block's live incarnation. */
    private CompletionStage<AssignOutcome> assignConfirmed(
            Cidr block,
            Allocation allocation,
            Function<ActorRef<AssignOutcome>, BlockEntity.Command> command) {
        return asks.confirmedIfSlow(
                asks.ask(asks.block(block), command),
                asks.block(block),
                outcome ->
                        outcome.status() != AssignStatus.ASSIGNED
                                ? CompletableFuture.completedFuture(true)
                                : asks.blockView(block)
                                        .thenApply(
                                                view -> {
                                                    Allocation held =
                                                            view.allocations()
                                                                    .get(outcome.address());
                                                    return held != null
                                                            && held.isFor(
                                                                    allocation.handle(),
                                                                    allocation.ifname());
                                                }));
    }

    private CompletionStage<Boolean> claimConfirmed(String poolName, ClaimOutcome outcome) {
        return outcome.status() != PoolEntity.ClaimStatus.CLAIMED
                ? CompletableFuture.completedFuture(true)
                : asks.poolView(poolName)
                        .thenApply(view -> node.equals(view.claims().get(outcome.block())));
    }
}
