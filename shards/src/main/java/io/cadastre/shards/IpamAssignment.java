package io.cadastre.shards;

import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import io.cadastre.shards.Ipam.Assignment;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * The ADD flow of one {@link ShardedIpam} (root DESIGN.md, "An ADD, hop by hop", step 6): a known
 * attachment gets the addresses it holds back; otherwise the pools are chosen, one address is
 * assigned per family ({@link IpamPoolAssignment}), all or nothing, and the attachment is recorded
 * on the node ({@code NodeEntity.RecordAttachment}).
 *
 * <p>Which pools: those the request names, in its order; when it names none, the agent's default
 * pools, and when there are none, every enabled pool whose node selector matches this node's
 * labels, by name (Calico's order: the pod's choice, the namespace's, the netconf's, then the
 * pools that select the node — the first three are resolved at the CNI edge). The pod's and
 * namespace's annotations may replace the pools of a family ({@link AssignRequest#poolsByFamily},
 * {@link PoolChoice}). A disabled pool, or
 * one whose selector does not match the node, serves nothing new to it, even when named. Pools
 * come from the cluster's {@link PoolCatalog}. Pools are tried in the order given. With range sets
 * (host-local's {@code ranges}) one family per set is assigned; requested addresses ({@code IP=},
 * {@code ips}, at most one per family) go to {@link IpamPoolAssignment#assignSpecific} instead.
 *
 * <p>Invariants of the root DESIGN.md it upholds: 4 (a repeated ADD answers the addresses the node
 * holds and changes nothing), 5 (a family that fails gives back the addresses of the others before
 * the error is answered), 7 (every requested address is checked against the rules and its pools
 * before any is assigned), 1 (the attachment is marked in flight, so GC leaves it alone until the
 * ADD completes), 2 and 8 (the record is persisted before the reply, and a slow reply is read back
 * from the node's live incarnation: {@link ShardedIpam}, "Slow replies are confirmed").
 *
 * <p>All methods return stages that fail with {@link IpamException}.
 */
final class IpamAssignment extends IpamFlow {
    private final IpamPoolAssignment inPool;
    private final IpamRelease release;

    IpamAssignment(IpamContext context, IpamPoolAssignment inPool, IpamRelease release) {
        super(context);
        this.inPool = inPool;
        this.release = release;
    }

    /** {@link Ipam#assignOrFind}: the attachment marked in flight until the stage completes. */
    CompletionStage<Assignment> assignOrFind(AssignRequest request) {
        String key = AttachmentRecord.key(request.handle(), request.ifname());
        context.inFlight.add(key);
        return release.lookup(request.handle(), request.ifname())
                .thenCompose(
                        known ->
                                known.isPresent()
                                        ? CompletableFuture.completedFuture(
                                                new Assignment(known.get(), false))
                                        : assignNew(request)
                                                .thenApply(record -> new Assignment(record, true)))
                .whenComplete((r, e) -> context.inFlight.remove(key));
    }

    private CompletionStage<AttachmentRecord> assignNew(AssignRequest request) {
        Allocation allocation =
                new Allocation(
                        request.handle(),
                        request.ifname(),
                        request.podNamespace(),
                        request.podName(),
                        node,
                        context.clock.millis());
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
                                Map<String, List<String>> candidates = new HashMap<>();
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
                                                                inPool.assignSpecific(
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
     *     {@link IpamPoolAssignment#assignSpecific}, which says so
     */
    private static void requireAllowed(
            String address,
            PoolRegistry.Catalog pools,
            List<String> poolNames,
            AddressRules rules) {
        PoolChoice.holding(pools, poolNames, address)
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
                                return release.releaseFromBlocks(
                                                request.handle(),
                                                request.ifname(),
                                                IpamRelease.blocksOf(held),
                                                false)
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
                                            context.clock.millis());
                            return asks.confirmedIfSlow(
                                            asks.askStatus(
                                                    asks.node(node),
                                                    (ActorRef<StatusReply<Done>> r) ->
                                                            new NodeEntity.RecordAttachment(
                                                                    record, r)),
                                            asks.node(node),
                                            done ->
                                                    release.lookup(record.handle(), record.ifname())
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
    CompletionStage<Map<IpFamily, List<PoolSpec>>> choosePools(List<String> names) {
        return choosePools(names, Map.of());
    }

    /** As {@link #choosePools(List)}, with the annotations' pools per family ({@link AssignRequest#poolsByFamily}). */
    private CompletionStage<Map<IpFamily, List<PoolSpec>>> choosePools(
            List<String> names, Map<IpFamily, List<String>> byFamily) {
        List<String> chosen = names.isEmpty() ? context.defaultPools : names;
        Map<String, String> labelsNow = context.labels();
        List<String> all =
                Stream.concat(chosen.stream(), byFamily.values().stream().flatMap(List::stream))
                        .toList();
        return catalogHolding(all)
                .thenApply(pools -> PoolChoice.choose(pools, node, labelsNow, chosen, byFamily));
    }

    /** @return the catalogue this agent holds, or a fresh one when it does not know every pool named (it may be new) */
    private CompletionStage<PoolRegistry.Catalog> catalogHolding(List<String> poolRefs) {
        return context.catalog
                .current()
                .thenCompose(
                        pools ->
                                poolRefs.stream().allMatch(n -> PoolChoice.resolvable(pools, n))
                                        ? CompletableFuture.completedFuture(pools)
                                        : context.catalog.fresh());
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
                                            : inPool.assignInPool(
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
}
