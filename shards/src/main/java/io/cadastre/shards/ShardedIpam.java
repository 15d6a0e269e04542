package io.cadastre.shards;

import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import io.cadastre.shards.BlockEntity.AssignOutcome;
import io.cadastre.shards.BlockEntity.AssignStatus;
import io.cadastre.shards.PoolEntity.ClaimOutcome;
import io.cadastre.shards.PoolEntity.PoolView;
import java.time.Clock;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.pattern.StatusReply;

/**
 * {@link Ipam} over the sharded entities: the ADD and DEL flows of the root DESIGN.md.
 * There is one per agent, for the agent's own node, and it is the only caller that allocates for
 * that node, so it may cache the node's affine blocks.
 *
 * <p>Which pools: those the request names, in its order; when it names none, the agent's default
 * pools, and when there are none, every enabled pool whose node selector matches this node's
 * labels, by name (Calico's order: the pod's choice, the namespace's, the netconf's, then the
 * pools that select the node — the first three are resolved at the CNI edge). The pod's and
 * namespace's annotations may replace the pools of a family ({@link AssignRequest#poolsByFamily},
 * {@link PoolChoice}). A disabled pool, or
 * one whose selector does not match the node, serves nothing new to it, even when named. Pools
 * come from the cluster's {@link PoolCatalog}.
 *
 * <p>ADD for one family: an affine block with room, else a new block claimed for the node (the
 * pool persists the claim first), else — only when the pool allows borrowing — another node's
 * block. An IPAM-only request's {@link AddressRules} narrow this to the addresses its L2 subnet
 * allows (never the subnet's network, IPv4 broadcast or gateway address; within its ranges): only
 * blocks holding such an address are asked or claimed, and the block picks among them
 * (shards/DESIGN.md, "IPAM-only on an L2 subnet"). Pools are tried in the order given. Every step is idempotent per attachment, so a crash
 * between steps leaves at worst an orphan allocation that a retry reuses or GC releases, never a
 * duplicate. Before it borrows from a block, the node entity lists the block ({@link BorrowedBlocks}),
 * so that a DEL the node cannot match to an attachment sweeps that block too.
 *
 * <p><b>Slow replies are confirmed.</b> A reply to a command that changes state and that arrives
 * later than {@code confirmSlowerThan} is checked by reading the same fact back from the entity
 * before it counts. The case it guards: a member paused (GC, SIGSTOP) longer than failover resumes
 * and completes a write in its stale incarnation of the entity after the entity has moved; the
 * read is routed to the live incarnation, which does not have that write, so the ADD fails with a
 * retryable error instead of acknowledging an allocation the cluster does not hold. Normal
 * replies take milliseconds and skip the read.
 *
 * <p>All methods return stages that fail with {@link IpamException}.
 */
public final class ShardedIpam implements Ipam {
    private final EntityAsks asks;
    private final String node;

    /** This node's labels, replaced when they change (the Node object's, live: module kube). */
    private volatile Map<String, String> labels;

    private final PoolCatalog catalog;
    private final List<String> defaultPools;
    private final Clock clock;

    /** pool name → blocks of that pool affine to this node (loaded from the pool on first use). */
    private final Map<String, CompletableFuture<List<Cidr>>> affineBlocks =
            new ConcurrentHashMap<>();

    /** Blocks last seen full; skipped on the fast path until something is released in them. */
    private final Set<Cidr> fullHint = ConcurrentHashMap.newKeySet();

    /** Per pool: the tail of the chain that serializes claiming, so concurrent ADDs claim one block. */
    private final Map<String, CompletableFuture<?>> claimTails = new ConcurrentHashMap<>();

    /** Attachments with an ADD in flight; GC leaves them alone. */
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();

    /** The blocks of other nodes this node has borrowed from. */
    private final BorrowedBlocks borrowed;

    /** Tells every agent that a pool's claims changed, so that routes follow claims at once. */
    private final MeshHints hints;

    /**
     * @param labels this node's labels, for the pools' node selectors
     * @param catalog the cluster's pools as this agent sees them
     * @param defaultPools the pools used, in this order, when a request names none; empty to use
     *     every enabled pool that selects this node
     * @param timeouts how long to wait for the entities' replies, and which replies to confirm
     */
    public ShardedIpam(
            ActorSystem<?> system,
            String node,
            Map<String, String> labels,
            PoolCatalog catalog,
            List<String> defaultPools,
            AskTimeouts timeouts,
            Clock clock) {
        this.asks = new EntityAsks(ClusterSharding.get(system), timeouts);
        this.node = node;
        this.labels = Map.copyOf(labels);
        this.catalog = catalog;
        this.borrowed = new BorrowedBlocks(asks, node);
        this.defaultPools = List.copyOf(defaultPools);
        this.clock = clock;
        this.hints = MeshHints.get(system);
    }

    /** @return this node's name */
    @Override
    public String node() {
        return node;
    }

    /** @return this node's labels */
    @Override
    public Map<String, String> labels() {
        return labels;
    }

    /** @return the pool's definition as this agent last read the catalogue, if it knows the pool */
    @Override
    public Optional<PoolSpec> poolSpec(String name) {
        return catalog.last().flatMap(c -> c.spec(name));
    }

    /** Records this node's labels on its entity and clears an operator's removal; idempotent. */
    @Override
    public CompletionStage<Done> registerNode() {
        Map<String, String> now = labels;
        return asks.askStatus(
                asks.node(node),
                (ActorRef<StatusReply<Done>> r) -> new NodeEntity.Register(now, r));
    }

    /**
     * The node's labels changed: the pools' node selectors are matched against these from now on
     * (an ADD already choosing its pools keeps the labels it read), and they are recorded on the
     * node's entity ({@link #registerNode}).
     *
     * @param newLabels label key → value, already checked ({@code NodeSelector.isLabelKey}, {@code isLabelValue})
     * @return when the entity has recorded them; at once when they are the labels already held
     */
    @Override
    public CompletionStage<Done> updateLabels(Map<String, String> newLabels) {
        Map<String, String> copy = Map.copyOf(newLabels);
        if (copy.equals(labels)) {
            return CompletableFuture.completedFuture(Done.getInstance());
        }
        labels = copy;
        return registerNode();
    }

    /**
     * Assigns the attachment's addresses, one per family, all or nothing, and records them on the
     * node. A repeated request for a known attachment returns the addresses it already holds.
     */
    @Override
    public CompletionStage<AttachmentRecord> assign(AssignRequest request) {
        return assignOrFind(request).thenApply(Assignment::record);
    }

    /** As {@link #assign}, telling a new assignment from one the node held already. */
    @Override
    public CompletionStage<Assignment> assignOrFind(AssignRequest request) {
        String key = AttachmentRecord.key(request.handle(), request.ifname());
        inFlight.add(key);
        return lookup(request.handle(), request.ifname())
                .thenCompose(
                        known ->
                                known.isPresent()
                                        ? CompletableFuture.completedFuture(
                                                new Assignment(known.get(), false))
                                        : assignNew(request)
                                                .thenApply(record -> new Assignment(record, true)))
                .whenComplete((r, e) -> inFlight.remove(key));
    }

    private CompletionStage<AttachmentRecord> assignNew(AssignRequest request) {
        Allocation allocation =
                new Allocation(
                        request.handle(),
                        request.ifname(),
                        request.podNamespace(),
                        request.podName(),
                        node,
                        clock.millis());
        AddressRules rules = request.rules();
        if (!request.requestedIps().isEmpty()) {
            Map<IpFamily, String> requested = requestedByFamily(request.requestedIps());
            return catalogHolding(
                            request.poolsByFamily().values().stream()
                                    .flatMap(List::stream)
                                    .toList())
                    .thenCompose(
                            pools -> {
                                // Every address is checked against the rules, and its pools
                                // resolved, before any is assigned.
                                Map<String, List<String>> candidates = new java.util.HashMap<>();
                                requested.forEach(
                                        (family, ip) ->
                                                candidates.put(
                                                        ip,
                                                        candidatePools(pools, request, family)));
                                requested
                                        .values()
                                        .forEach(
                                                ip ->
                                                        requireAllowed(
                                                                ip,
                                                                pools,
                                                                candidates.get(ip),
                                                                rules));
                                return assignAll(
                                        request,
                                        requested.values().stream()
                                                .map(
                                                        ip ->
                                                                assignSpecific(
                                                                                ip,
                                                                                pools,
                                                                                candidates.get(ip),
                                                                                allocation)
                                                                        .toCompletableFuture())
                                                .toList());
                            });
        }
        return choosePools(request.pools(), request.poolsByFamily())
                .thenApply(chosen -> forRangeSets(chosen, rules))
                .thenCompose(
                        chosen ->
                                assignAll(
                                        request,
                                        chosen.entrySet().stream()
                                                .map(
                                                        family ->
                                                                assignFromPools(
                                                                                family.getKey(),
                                                                                family.getValue(),
                                                                                allocation,
                                                                                rules)
                                                                        .toCompletableFuture())
                                                .toList()));
    }

    /**
     * With range sets (host-local's {@code ranges}): one family per set, from the chosen pools of
     * that family whose CIDR holds an address the set allows; families without a set get none.
     *
     * @throws IpamException INVALID_REQUEST when no chosen pool holds an address of a set
     */
    private Map<IpFamily, List<PoolSpec>> forRangeSets(
            Map<IpFamily, List<PoolSpec>> chosen, AddressRules rules) {
        if (rules.rangeSets().isEmpty()) {
            return chosen;
        }
        Map<IpFamily, List<PoolSpec>> planned = new EnumMap<>(IpFamily.class);
        for (RangeSet set : rules.rangeSets()) {
            List<PoolSpec> candidates = chosen.getOrDefault(set.family(), List.of());
            List<PoolSpec> pools =
                    candidates.stream().filter(p -> set.allowsAnyIn(p.cidr())).toList();
            if (pools.isEmpty()) {
                throw new IpamException(
                        IpamException.Reason.INVALID_REQUEST,
                        "the ranges "
                                + set
                                + " lie in none of the "
                                + set.family()
                                + " pools node "
                                + node
                                + " may use ("
                                + String.join(
                                        ", ",
                                        candidates.stream()
                                                .map(p -> p.name() + " " + p.cidr())
                                                .toList())
                                + ")");
            }
            planned.put(set.family(), pools);
        }
        return planned;
    }

    /**
     * @throws IpamException ADDRESS_NOT_IN_POOL when the requested address lies in a pool the
     *     request may use but the rules do not allow it there (an L2 subnet's network, broadcast or
     *     gateway address, or outside its ranges); an address in no pool is left to
     *     {@link #assignSpecific}, which says so
     */
    private static void requireAllowed(
            String address,
            PoolRegistry.Catalog pools,
            List<String> poolNames,
            AddressRules rules) {
        List<String> candidates =
                poolNames.isEmpty() ? List.copyOf(pools.pools().keySet()) : poolNames;
        candidates.stream()
                .map(n -> pools.spec(n).orElse(null))
                .filter(p -> p != null && p.cidr().contains(address))
                .findFirst()
                .ifPresent(
                        pool -> {
                            if (!rules.allows(pool, address)) {
                                throw new IpamException(
                                        IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                        address
                                                + " is not an address the"
                                                + " subnet gives to pods: "
                                                + (rules.rangeSets().isEmpty()
                                                        ? "the network or broadcast address of "
                                                                + pool.cidr()
                                                        : "outside the ranges "
                                                                + rules.rangeSet(pool.family())
                                                                        .map(RangeSet::toString)
                                                                        .orElse(
                                                                                "(none of its family)")
                                                                + ", or their network, broadcast or gateway address"));
                            }
                        });
    }

    /** Waits for every family; all or nothing. */
    private CompletionStage<AttachmentRecord> assignAll(
            AssignRequest request, List<CompletableFuture<HeldAddress>> perFamily) {
        return CompletableFuture.allOf(perFamily.toArray(CompletableFuture[]::new))
                .handle(
                        (v, error) -> {
                            List<HeldAddress> held =
                                    perFamily.stream()
                                            .filter(f -> !f.isCompletedExceptionally())
                                            .map(CompletableFuture::join)
                                            .toList();
                            return new Object[] {held, error};
                        })
                .thenCompose(
                        pair -> {
                            @SuppressWarnings("unchecked")
                            List<HeldAddress> held = (List<HeldAddress>) pair[0];
                            Throwable error = (Throwable) pair[1];
                            if (error != null) {
                                // Dual-stack is all or nothing (shards/DESIGN.md): give back what
                                // we got.
                                return releaseFromBlocks(
                                                request.handle(), request.ifname(), blocksOf(held))
                                        .handle(
                                                (r, e) -> {
                                                    throw EntityAsks.asIpam(error);
                                                });
                            }
                            AttachmentRecord record =
                                    new AttachmentRecord(
                                            request.handle(),
                                            request.ifname(),
                                            request.network(),
                                            request.containerId(),
                                            request.netnsPath(),
                                            request.podNamespace(),
                                            request.podName(),
                                            held,
                                            clock.millis());
                            return asks.confirmedIfSlow(
                                            asks.askStatus(
                                                    asks.node(node),
                                                    (ActorRef<StatusReply<Done>> r) ->
                                                            new NodeEntity.RecordAttachment(
                                                                    record, r)),
                                            asks.node(node),
                                            done ->
                                                    lookup(record.handle(), record.ifname())
                                                            .thenApply(
                                                                    found ->
                                                                            found.equals(
                                                                                    Optional.of(
                                                                                            record))))
                                    .thenApply(done -> record);
                        });
    }

    private Map<IpFamily, String> requestedByFamily(List<String> requestedIps) {
        Map<IpFamily, String> byFamily = new EnumMap<>(IpFamily.class);
        for (String ip : requestedIps) {
            String canonical;
            try {
                canonical = IpAddresses.canonical(ip);
            } catch (IllegalArgumentException e) {
                throw new IpamException(IpamException.Reason.INVALID_REQUEST, e.getMessage(), e);
            }
            if (byFamily.put(IpAddresses.familyOf(canonical), canonical) != null) {
                throw new IpamException(
                        IpamException.Reason.INVALID_REQUEST,
                        "at most one requested address per family: " + requestedIps);
            }
        }
        return byFamily;
    }

    /**
     * @return the pools to allocate from, grouped by family, order kept: the named ones (or the
     *     defaults, or every enabled pool selecting this node); fails with UNKNOWN_POOL for a name
     *     the catalogue does not hold (read again first: the pool may be new), or when no pool is
     *     left, and with POOL_EXHAUSTED when every named pool of a family is disabled or does not
     *     select this node
     */
    private CompletionStage<Map<IpFamily, List<PoolSpec>>> choosePools(List<String> names) {
        return choosePools(names, Map.of());
    }

    /** As {@link #choosePools(List)}, with the annotations' pools per family ({@link AssignRequest#poolsByFamily}). */
    private CompletionStage<Map<IpFamily, List<PoolSpec>>> choosePools(
            List<String> names, Map<IpFamily, List<String>> byFamily) {
        List<String> chosen = names.isEmpty() ? defaultPools : names;
        Map<String, String> labelsNow = labels;
        List<String> all =
                Stream.concat(chosen.stream(), byFamily.values().stream().flatMap(List::stream))
                        .toList();
        return catalogHolding(all)
                .thenApply(pools -> PoolChoice.choose(pools, node, labelsNow, chosen, byFamily));
    }

    /** @return the catalogue this agent holds, or a fresh one when it does not know every pool named (it may be new) */
    private CompletionStage<PoolRegistry.Catalog> catalogHolding(List<String> poolRefs) {
        return catalog.current()
                .thenCompose(
                        pools ->
                                poolRefs.stream().allMatch(n -> PoolChoice.resolvable(pools, n))
                                        ? CompletableFuture.completedFuture(pools)
                                        : catalog.fresh());
    }

    /**
     * @return the names of the pools a requested address of this family may lie in: the
     *     annotations' for the family when they choose, else the request's (empty: any pool)
     * @throws IpamException UNKNOWN_POOL for an annotation's pool not defined
     */
    private static List<String> candidatePools(
            PoolRegistry.Catalog pools, AssignRequest request, IpFamily family) {
        List<String> annotated = request.poolsByFamily().get(family);
        return annotated == null
                ? request.pools()
                : annotated.stream().map(ref -> PoolChoice.resolve(pools, ref).name()).toList();
    }

    private CompletionStage<HeldAddress> assignFromPools(
            IpFamily family, List<PoolSpec> pools, Allocation allocation, AddressRules rules) {
        CompletionStage<Optional<HeldAddress>> chain =
                CompletableFuture.completedFuture(Optional.empty());
        List<String> reasons = new CopyOnWriteArrayList<>();
        for (PoolSpec pool : pools) {
            chain =
                    chain.thenCompose(
                            found ->
                                    found.isPresent()
                                            ? CompletableFuture.completedFuture(found)
                                            : assignInPool(
                                                    pool, allocation, reasons, rules.within(pool)));
        }
        return chain.thenApply(
                found ->
                        found.orElseThrow(
                                () ->
                                        new IpamException(
                                                IpamException.Reason.POOL_EXHAUSTED,
                                                "no "
                                                        + family
                                                        + " address left for node "
                                                        + node
                                                        + ": "
                                                        + String.join("; ", reasons))));
    }

    /**
     * Fast path without coordination; on a miss, the slow path serialized per pool.
     *
     * @param within the ranges the address must lie in ({@link AddressRules#within}), or null for any
     */
    private CompletionStage<Optional<HeldAddress>> assignInPool(
            PoolSpec pool, Allocation allocation, List<String> reasons, RangeSet within) {
        return affineBlocksOf(pool.name())
                .thenCompose(
                        blocks ->
                                tryBlocks(
                                        pool,
                                        blocks.stream().filter(b -> !fullHint.contains(b)).toList(),
                                        allocation,
                                        false,
                                        within))
                .thenCompose(
                        found ->
                                found.isPresent()
                                        ? CompletableFuture.completedFuture(found)
                                        : serializedPerPool(
                                                pool.name(),
                                                () -> slowPath(pool, allocation, reasons, within)));
    }

    private CompletionStage<Optional<HeldAddress>> slowPath(
            PoolSpec pool, Allocation allocation, List<String> reasons, RangeSet within) {
        // Another ADD may have claimed a block while we waited: try every affine block first.
        return affineBlocksOf(pool.name())
                .thenCompose(blocks -> tryBlocks(pool, blocks, allocation, false, within))
                .thenCompose(
                        found ->
                                found.isPresent()
                                        ? CompletableFuture.completedFuture(found)
                                        : claimAndAssign(pool, allocation, reasons, within));
    }

    private CompletionStage<Optional<HeldAddress>> claimAndAssign(
            PoolSpec pool, Allocation allocation, List<String> reasons, RangeSet within) {
        return asks.confirmedIfSlow(
                        asks.askStatusOnce(
                                asks.pool(pool.name()),
                                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                                        new PoolEntity.ClaimBlock(node, within, r)),
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
        return asks.ask(asks.pool(pool.name()), PoolEntity.GetPool::new)
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
        return borrowed.worthTrying(block, allocation)
                .thenCompose(
                        worth ->
                                worth
                                        ? borrowed.note(pool.name(), block)
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
                                fullHint.add(block);
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
        return asks.ask(asks.pool(pool.name()), PoolEntity.GetPool::new)
                .thenCompose(
                        view -> {
                            if (view.usableBlocksOf(node).contains(block)) {
                                return tellAffinity(pool, block).thenApply(d -> true);
                            }
                            affineBlocksOf(pool.name()).thenAccept(blocks -> blocks.remove(block));
                            return CompletableFuture.completedFuture(false);
                        });
    }

    private CompletionStage<HeldAddress> assignSpecific(
            String address,
            PoolRegistry.Catalog pools,
            List<String> poolNames,
            Allocation allocation) {
        List<String> candidates =
                poolNames.isEmpty() ? List.copyOf(pools.pools().keySet()) : poolNames;
        PoolSpec pool =
                candidates.stream()
                        .map(n -> pools.spec(n).orElse(null))
                        .filter(p -> p != null && p.cidr().contains(address))
                        .findFirst()
                        .orElseThrow(
                                () ->
                                        new IpamException(
                                                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                                address
                                                        + " is in none of the pools "
                                                        + candidates));
        Optional<String> refusal = PoolChoice.refusal(pools, pool, node, labels);
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
                                        : serializedPerPool(
                                                pool.name(),
                                                () ->
                                                        borrowed.note(pool.name(), block)
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

    /** Makes a freshly claimed block ours everywhere: the block entity, the node cache, the local cache. */
    private CompletionStage<Done> adoptBlock(PoolSpec pool, Cidr block) {
        String poolName = pool.name();
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
                        asks.ask(asks.pool(name), PoolEntity.GetPool::new)
                                .thenApply(
                                        view ->
                                                (List<Cidr>)
                                                        new CopyOnWriteArrayList<>(
                                                                view.usableBlocksOf(node)))
                                .toCompletableFuture()
                                .whenComplete(
                                        (blocks, error) -> {
                                            if (error != null) {
                                                affineBlocks.remove(name);
                                            }
                                        }));
    }

    private <T> CompletionStage<T> serializedPerPool(
            String poolName, Supplier<CompletionStage<T>> work) {
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

    // ---- release, lookup, GC ----

    /** @return the attachment as the node knows it, if it does */
    @Override
    public CompletionStage<Optional<AttachmentRecord>> lookup(String handle, String ifname) {
        return asks.ask(
                        asks.node(node),
                        (ActorRef<NodeEntity.AttachmentLookup> r) ->
                                new NodeEntity.GetAttachment(handle, ifname, r))
                .thenApply(found -> Optional.ofNullable(found.attachment()));
    }

    /**
     * Releases everything the attachment holds and forgets it. Idempotent: an unknown attachment
     * is success. When the node does not know it (an ADD crashed before recording, or a DEL failed
     * after the node forgot it), the node's affine blocks and the blocks it borrowed from are swept
     * for it, so the orphan does not wait for GC.
     *
     * <p>Order matters: the node forgets the attachment <em>before</em> the blocks free its
     * addresses. A crash in between then leaves an orphan allocation (found by a retried DEL's
     * sweep, or by GC), never a record whose address is free — which a retried ADD would hand
     * back while another pod holds it.
     *
     * @return the addresses released
     */
    @Override
    public CompletionStage<List<String>> release(String handle, String ifname) {
        return forget(handle, ifname).thenCompose(blocks -> free(handle, ifname, blocks));
    }

    /**
     * The first half of {@link #release}: the node forgets the attachment (persisted).
     *
     * @return the blocks that may hold its addresses, for {@link #free}: the recorded ones, or
     *     every block affine to this node and every block it borrowed from when the node did not
     *     know the attachment
     */
    @Override
    public CompletionStage<List<Cidr>> forget(String handle, String ifname) {
        return lookup(handle, ifname)
                .thenCompose(
                        known ->
                                known.isEmpty()
                                        ? blocksToSweep()
                                        : asks.askStatus(
                                                        asks.node(node),
                                                        (ActorRef<StatusReply<Done>> r) ->
                                                                new NodeEntity.ForgetAttachment(
                                                                        handle, ifname, r))
                                                .thenApply(d -> blocksOf(known.get().addresses())));
    }

    /**
     * The second half of {@link #release}: the blocks free whatever the attachment holds in them.
     * Call it only after {@link #forget} completed, and after the pod's interface is gone.
     *
     * @return the addresses released
     */
    @Override
    public CompletionStage<List<String>> free(String handle, String ifname, List<Cidr> blocks) {
        return releaseFromBlocks(handle, ifname, blocks);
    }

    private CompletionStage<List<Cidr>> blocksToSweep() {
        return allAffineBlocks()
                .thenCombine(
                        borrowed.all(),
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
        return allPoolViews()
                .thenApply(
                        views ->
                                views.stream()
                                        .flatMap(v -> v.claims().entrySet().stream())
                                        .filter(e -> e.getValue().equals(node))
                                        .map(Map.Entry::getKey)
                                        .distinct()
                                        .toList());
    }

    private CompletionStage<List<PoolView>> allPoolViews() {
        return catalog.current()
                .thenCompose(
                        pools -> {
                            List<CompletableFuture<PoolView>> views =
                                    pools.pools().keySet().stream()
                                            .map(
                                                    name ->
                                                            asks.ask(
                                                                            asks.pool(name),
                                                                            PoolEntity.GetPool::new)
                                                                    .toCompletableFuture())
                                            .toList();
                            return CompletableFuture.allOf(views.toArray(CompletableFuture[]::new))
                                    .thenApply(
                                            v ->
                                                    views.stream()
                                                            .map(CompletableFuture::join)
                                                            .toList());
                        });
    }

    private CompletionStage<List<String>> releaseFromBlocks(
            String handle, String ifname, List<Cidr> blocks) {
        List<CompletableFuture<List<String>>> all =
                blocks.stream()
                        .map(
                                block ->
                                        asks.ask(
                                                        asks.block(block),
                                                        (ActorRef<BlockEntity.Released> r) ->
                                                                new BlockEntity.Release(
                                                                        handle, ifname, r))
                                                .thenApply(BlockEntity.Released::addresses)
                                                .thenApply(
                                                        released -> {
                                                            if (!released.isEmpty()) {
                                                                fullHint.remove(block);
                                                            }
                                                            return released;
                                                        })
                                                .toCompletableFuture())
                        .toList();
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenApply(v -> all.stream().flatMap(f -> f.join().stream()).toList());
    }

    private static List<Cidr> blocksOf(List<HeldAddress> held) {
        return held.stream().map(HeldAddress::block).distinct().toList();
    }

    /** @return every attachment the node knows */
    @Override
    public CompletionStage<List<AttachmentRecord>> attachments() {
        return asks.ask(asks.node(node), NodeEntity.GetNode::new)
                .thenApply(NodeEntity.NodeView::attachments);
    }

    /**
     * Releases every allocation of {@code network} on this node whose attachment key
     * ({@link AttachmentRecord#key}) is not in {@code keep}: attachments the node knows, and
     * orphans (allocations made for this node that no attachment record holds) in every claimed
     * block of every pool — borrowed blocks included, since an ADD whose outcome was unknown can
     * leave its allocation in another node's block. Attachments with an ADD in flight are kept.
     * Then the blocks borrowed from that hold no allocation of this node any more are no longer
     * listed as borrowed from ({@link BorrowedBlocks#forgetIdle}; best effort).
     *
     * @return the keys of the attachments released
     */
    @Override
    public CompletionStage<List<String>> collectGarbage(String network, Set<String> keep) {
        String prefix = network + ".";
        return asks.ask(asks.node(node), NodeEntity.GetNode::new)
                .thenCompose(
                        view -> {
                            Set<String> known = new HashSet<>();
                            List<AttachmentRecord> stale = new ArrayList<>();
                            for (AttachmentRecord a : view.attachments()) {
                                known.add(a.key());
                                if (a.network().equals(network)
                                        && !keep.contains(a.key())
                                        && !inFlight.contains(a.key())) {
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
                                                            release(a.handle(), a.ifname())
                                                                    .thenApply(r -> a.key())
                                                                    .toCompletableFuture());
                                                }
                                                for (Map.Entry<Cidr, Allocation> o : orphans) {
                                                    Allocation a = o.getValue();
                                                    releases.add(
                                                            releaseFromBlocks(
                                                                            a.handle(),
                                                                            a.ifname(),
                                                                            List.of(o.getKey()))
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
                                borrowed.forgetIdle(this::serializedPerPool)
                                        .thenApply(d -> released));
    }

    /** @return orphan allocations of this node for handles with the prefix, by the block holding them */
    private CompletionStage<List<Map.Entry<Cidr, Allocation>>> orphansIn(
            String handlePrefix, Set<String> known, Set<String> keep) {
        return allClaimedBlocks()
                .thenCompose(
                        blocks -> {
                            List<CompletableFuture<BlockEntity.BlockView>> views =
                                    blocks.stream()
                                            .map(
                                                    b ->
                                                            asks.ask(
                                                                            asks.block(b),
                                                                            BlockEntity.GetBlock
                                                                                    ::new)
                                                                    .toCompletableFuture())
                                            .toList();
                            return CompletableFuture.allOf(views.toArray(CompletableFuture[]::new))
                                    .thenApply(
                                            v -> {
                                                List<Map.Entry<Cidr, Allocation>> orphans =
                                                        new ArrayList<>();
                                                for (CompletableFuture<BlockEntity.BlockView> f :
                                                        views) {
                                                    BlockEntity.BlockView view = f.join();
                                                    for (Allocation a :
                                                            view.allocations().values()) {
                                                        String key =
                                                                AttachmentRecord.key(
                                                                        a.handle(), a.ifname());
                                                        if (a.node().equals(node)
                                                                && a.handle()
                                                                        .startsWith(handlePrefix)
                                                                && !known.contains(key)
                                                                && !keep.contains(key)
                                                                && !inFlight.contains(key)) {
                                                            orphans.add(Map.entry(view.cidr(), a));
                                                        }
                                                    }
                                                }
                                                return orphans;
                                            });
                        });
    }

    /** @return every claimed block of every pool, whichever node it is affine to */
    private CompletionStage<List<Cidr>> allClaimedBlocks() {
        return allPoolViews()
                .thenApply(
                        views ->
                                views.stream().flatMap(v -> v.claims().keySet().stream()).toList());
    }

    /**
     * @return whether an ADD for these pools (empty: the defaults) could get an address of every
     *     family now: for STATUS. A pool qualifies when it is defined, enabled, and has an affine
     *     block with room, an unclaimed block, or (borrowing allowed) any claimed block.
     */
    @Override
    public CompletionStage<Optional<String>> unavailability(List<String> poolNames) {
        return choosePools(poolNames)
                .handle(
                        (byFamily, error) -> {
                            if (error != null) {
                                IpamException e = EntityAsks.asIpam(error);
                                if (e.reason() == IpamException.Reason.UNAVAILABLE) {
                                    throw e;
                                }
                                return CompletableFuture.completedFuture(
                                        Optional.of(e.getMessage()));
                            }
                            return unavailability(byFamily);
                        })
                .thenCompose(stage -> stage);
    }

    private CompletionStage<Optional<String>> unavailability(
            Map<IpFamily, List<PoolSpec>> byFamily) {
        List<CompletableFuture<Optional<String>>> checks = new ArrayList<>();
        byFamily.forEach(
                (family, pools) -> {
                    CompletionStage<Boolean> any = CompletableFuture.completedFuture(false);
                    for (PoolSpec p : pools) {
                        any =
                                any.thenCompose(
                                        ok ->
                                                ok
                                                        ? CompletableFuture.completedFuture(true)
                                                        : poolCanServe(p));
                    }
                    checks.add(
                            any.thenApply(
                                            ok ->
                                                    ok
                                                            ? Optional.<String>empty()
                                                            : Optional.of(
                                                                    "no "
                                                                            + family
                                                                            + " pool can serve node "
                                                                            + node))
                                    .toCompletableFuture());
                });
        return CompletableFuture.allOf(checks.toArray(CompletableFuture[]::new))
                .thenApply(
                        v ->
                                checks.stream()
                                        .map(CompletableFuture::join)
                                        .flatMap(Optional::stream)
                                        .findFirst());
    }

    private CompletionStage<Boolean> poolCanServe(PoolSpec spec) {
        return asks.ask(asks.pool(spec.name()), PoolEntity.GetPool::new)
                .thenCompose(
                        view -> {
                            if (!view.defined()) {
                                return CompletableFuture.completedFuture(false);
                            }
                            io.cadastre.ipam.Pool pool = io.cadastre.ipam.Pool.of(view.spec());
                            view.claims().forEach(pool::claim);
                            if (!view.disabled()
                                    && pool.firstUnclaimedBlock().isPresent()
                                    && pool.refusalToClaim(node).isEmpty()) {
                                return CompletableFuture.completedFuture(true);
                            }
                            List<Cidr> candidates =
                                    spec.borrowingAllowed()
                                            ? List.copyOf(view.claims().keySet())
                                            : view.usableBlocksOf(node);
                            List<CompletableFuture<BlockEntity.BlockView>> views =
                                    candidates.stream()
                                            .map(
                                                    b ->
                                                            asks.ask(
                                                                            asks.block(b),
                                                                            BlockEntity.GetBlock
                                                                                    ::new)
                                                                    .toCompletableFuture())
                                            .toList();
                            return CompletableFuture.allOf(views.toArray(CompletableFuture[]::new))
                                    .thenApply(
                                            v -> views.stream().anyMatch(f -> f.join().free() > 0));
                        });
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
                                : asks.ask(asks.block(block), BlockEntity.GetBlock::new)
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
                : asks.ask(asks.pool(poolName), PoolEntity.GetPool::new)
                        .thenApply(view -> node.equals(view.claims().get(outcome.block())));
    }
}
