package io.cadastre.admin;

import io.cadastre.admin.AdminViews.AddressHolder;
import io.cadastre.admin.AdminViews.Attachment;
import io.cadastre.admin.AdminViews.BlockCount;
import io.cadastre.admin.AdminViews.NodeDetail;
import io.cadastre.admin.AdminViews.NodeSummary;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AskTimeouts;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.BlockReleases.Claim;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.NodeEntity.NodeView;
import io.cadastre.shards.PeerInfo;
import io.cadastre.shards.PoolEntity.PoolView;
import io.cadastre.shards.PoolRegistry.Catalog;
import io.cadastre.shards.Pools;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * What the admin API reads and repairs, over the sharded entities: pools with their utilisation,
 * claimed blocks, nodes, who holds an address, and releases. Stateless: every call reads the
 * entities afresh, in parallel where it reads many, so an answer is a snapshot of the moment.
 *
 * <p>The pools are the cluster's ({@link Pools}: its catalogue, read afresh); the blocks are those the pools say are claimed (the pools are the source of truth for
 * affinity); the nodes are the cluster's members ({@link Members}), the nodes blocks are affine
 * to, and the nodes that hold allocations; a node none of whose entities records anything and
 * that is not a member is unknown (404).
 *
 * <p>All methods return stages that fail with {@link AdminException}: BAD_REQUEST for malformed
 * input (nothing changed), NOT_FOUND for an unknown pool, node or an address in no pool; and with
 * {@link io.cadastre.shards.IpamException} UNAVAILABLE when an entity did not answer within the
 * ask timeouts (answered 503, as AdminException UNAVAILABLE is).
 */
public final class Inventory {
    private final ActorSystem<?> system;
    private final EntityReads reads;
    private final Pools pools;

    /**
     * @param pools the cluster's pools
     * @param timeouts how long to wait for each entity, in all and per attempt (asks are repeated)
     */
    public Inventory(ActorSystem<?> system, Pools pools, AskTimeouts timeouts) {
        this.system = system;
        this.reads = new EntityReads(system, timeouts);
        this.pools = pools;
    }

    EntityReads reads() {
        return reads;
    }

    Pools poolOperations() {
        return pools;
    }

    /** @return the cluster's pool catalogue, read now */
    CompletionStage<Catalog> catalog() {
        return pools.catalog().fresh();
    }

    Map<String, Members.Standing> members() {
        return Members.of(system);
    }

    // ---- pools and blocks ----

    /** @return every pool's view, by name */
    CompletionStage<Map<String, PoolView>> poolViews() {
        return catalog().thenCompose(c -> poolViews(c.pools().keySet()));
    }

    /** @return the defined pools' views, in the order given */
    CompletionStage<Map<String, PoolView>> poolViews(Collection<String> names) {
        return reads.pools(names)
                .thenApply(
                        views -> {
                            Map<String, PoolView> defined = new LinkedHashMap<>();
                            views.forEach(
                                    (name, view) -> {
                                        if (view.defined()) {
                                            defined.put(name, view);
                                        }
                                    });
                            return defined;
                        });
    }

    /** @return every claimed block of the pools, in address order */
    static Map<Cidr, Claim> claims(Map<String, PoolView> views) {
        Map<Cidr, Claim> claims = new TreeMap<>();
        views.forEach(
                (name, view) ->
                        view.claims()
                                .forEach(
                                        (block, node) -> claims.put(block, new Claim(name, node))));
        return claims;
    }

    /** @return the blocks claimed for the node, in the claims' order */
    static List<Cidr> affineTo(Map<Cidr, Claim> claims, String node) {
        return claims.entrySet().stream()
                .filter(e -> e.getValue().node().equals(node))
                .map(Map.Entry::getKey)
                .toList();
    }

    /** @return the nodes that hold an allocation in any of the blocks, sorted */
    static Set<String> allocationHolders(Collection<BlockView> blocks) {
        Set<String> holders = new TreeSet<>();
        blocks.forEach(b -> b.allocations().values().forEach(a -> holders.add(a.node())));
        return holders;
    }

    /**
     * The pools' claimed blocks, read.
     *
     * @param pools the pools' views, by name
     * @param claims every claimed block of the pools, in address order
     * @param blocks each claimed block's view
     */
    record ClaimedBlocks(
            Map<String, PoolView> pools, Map<Cidr, Claim> claims, Map<Cidr, BlockView> blocks) {}

    /** @return the pools' claimed blocks, each read now (in parallel) */
    CompletionStage<ClaimedBlocks> claimedBlocks(Map<String, PoolView> views) {
        Map<Cidr, Claim> claims = claims(views);
        return reads.blocks(claims.keySet())
                .thenApply(blocks -> new ClaimedBlocks(views, claims, blocks));
    }

    /** @return every pool with its utilisation: claimed blocks and the addresses they hold */
    public CompletionStage<AdminViews.Pools> pools() {
        return poolViews().thenCompose(this::poolsOf);
    }

    /** @return one pool with its utilisation; NOT_FOUND when it is not defined */
    public CompletionStage<AdminViews.Pool> pool(String name) {
        return reads.pool(name)
                .thenCompose(
                        view -> {
                            if (!view.defined()) {
                                throw AdminException.notFound("unknown pool " + name);
                            }
                            return poolsOf(Map.of(name, view)).thenApply(p -> p.pools().get(0));
                        });
    }

    private CompletionStage<AdminViews.Pools> poolsOf(Map<String, PoolView> views) {
        return claimedBlocks(views)
                .thenApply(
                        claimed ->
                                new AdminViews.Pools(
                                        views.values().stream()
                                                .map(view -> pool(view, claimed.blocks()))
                                                .toList()));
    }

    private static AdminViews.Pool pool(PoolView view, Map<Cidr, BlockView> blocks) {
        PoolSpec spec = view.spec();
        long allocated =
                view.claims().keySet().stream()
                        .mapToLong(b -> blocks.get(b).allocations().size())
                        .sum();
        return new AdminViews.Pool(
                spec.name(),
                spec.cidr().toString(),
                spec.blockPrefix(),
                spec.strictAffinity(),
                spec.allowBorrowing(),
                spec.maxBlocksPerNode(),
                view.disabled(),
                spec.cidr().size(),
                new BlockCount(view.claims().size(), spec.cidr().subnetCount(spec.blockPrefix())),
                allocated,
                spec.nodeSelector(),
                AdminViews.cidrs(spec.excluded()));
    }

    /**
     * Reads the cluster-wide usage that the {@code cadastre_ipam_*} gauges report (http/DESIGN.md,
     * "Metrics"): per defined pool its size in addresses; per pool and node (every node with a block
     * claimed for it or an address allocated to it in the pool) the addresses allocated to the node
     * in any of the pool's claimed blocks, those of them in blocks claimed for another node
     * (borrowed), and the blocks claimed for it. Pools, then their blocks, read as {@link #pools()}
     * reads them.
     */
    public CompletionStage<CadastreMetrics.IpamUsage> usage() {
        return poolViews().thenCompose(this::claimedBlocks).thenApply(Inventory::usage);
    }

    private static CadastreMetrics.IpamUsage usage(ClaimedBlocks claimed) {
        Map<String, Double> sizes = new LinkedHashMap<>();
        claimed.pools()
                .forEach((name, view) -> sizes.put(name, view.spec().cidr().size().doubleValue()));
        // (pool, node) -> {in use, borrowed, blocks}
        Map<Claim, long[]> counts =
                new TreeMap<>(Comparator.comparing(Claim::pool).thenComparing(Claim::node));
        claimed.claims()
                .forEach(
                        (block, claim) -> {
                            counts.computeIfAbsent(claim, c -> new long[3])[2]++;
                            for (Allocation a :
                                    claimed.blocks().get(block).allocations().values()) {
                                long[] holder =
                                        counts.computeIfAbsent(
                                                new Claim(claim.pool(), a.node()),
                                                c -> new long[3]);
                                holder[0]++;
                                if (!a.node().equals(claim.node())) {
                                    holder[1]++;
                                }
                            }
                        });
        return new CadastreMetrics.IpamUsage(
                sizes,
                counts.entrySet().stream()
                        .map(
                                e ->
                                        new CadastreMetrics.NodeUsage(
                                                e.getKey().pool(),
                                                e.getKey().node(),
                                                e.getValue()[0],
                                                e.getValue()[1],
                                                e.getValue()[2]))
                        .toList());
    }

    /**
     * @param pool only this pool's blocks; NOT_FOUND when it is not a configured pool
     * @param node only the blocks affine to this node or holding its addresses; NOT_FOUND when
     *     the node is unknown
     * @return the claimed blocks, in address order
     */
    public CompletionStage<AdminViews.Blocks> blocks(Optional<String> pool, Optional<String> node) {
        return guard(
                () -> {
                    CompletionStage<Boolean> known =
                            node.isPresent()
                                    ? nodeKnown(node.get())
                                    : CompletableFuture.completedFuture(true);
                    return known.thenCompose(
                                    isKnown -> {
                                        if (!isKnown) {
                                            throw AdminException.notFound(
                                                    "unknown node " + node.get());
                                        }
                                        return catalog();
                                    })
                            .thenCompose(
                                    catalog -> {
                                        pool.ifPresent(name -> requirePool(catalog, name));
                                        return poolViews(
                                                pool.map(List::of)
                                                        .orElse(
                                                                List.copyOf(
                                                                        catalog.pools().keySet())));
                                    })
                            .thenCompose(this::claimedBlocks)
                            .thenApply(
                                    claimed ->
                                            new AdminViews.Blocks(
                                                    claimed.claims().entrySet().stream()
                                                            .map(
                                                                    e ->
                                                                            block(
                                                                                    e.getKey(),
                                                                                    e.getValue(),
                                                                                    claimed.blocks()
                                                                                            .get(
                                                                                                    e
                                                                                                            .getKey())))
                                                            .filter(
                                                                    b ->
                                                                            node.isEmpty()
                                                                                    || node.get()
                                                                                            .equals(
                                                                                                    b
                                                                                                            .affinity())
                                                                                    || b.borrowedBy()
                                                                                            .contains(
                                                                                                    node
                                                                                                            .get()))
                                                            .toList()));
                });
    }

    private static AdminViews.Block block(Cidr cidr, Claim claim, BlockView view) {
        List<String> borrowedBy =
                view.allocations().values().stream()
                        .map(Allocation::node)
                        .filter(n -> !n.equals(claim.node()))
                        .distinct()
                        .sorted()
                        .toList();
        int allocated = view.allocations().size();
        return new AdminViews.Block(
                cidr.toString(),
                claim.pool(),
                claim.node(),
                view.size(),
                allocated,
                view.free(),
                borrowedBy);
    }

    private static void requirePool(Catalog catalog, String name) {
        if (catalog.spec(name).isEmpty()) {
            throw AdminException.notFound(
                    "unknown pool "
                            + name
                            + " (known: "
                            + String.join(", ", catalog.pools().keySet())
                            + ")");
        }
    }

    // ---- nodes ----

    /** @return every known node: the members, the nodes blocks are affine to, the nodes holding allocations */
    public CompletionStage<AdminViews.Nodes> nodes() {
        Map<String, Members.Standing> members = members();
        return poolViews()
                .thenCompose(this::claimedBlocks)
                .thenCompose(
                        claimed -> {
                            Set<String> names = new TreeSet<>(members.keySet());
                            claimed.claims().values().forEach(c -> names.add(c.node()));
                            names.addAll(allocationHolders(claimed.blocks().values()));
                            return reads.nodes(names)
                                    .thenApply(
                                            nodes ->
                                                    new AdminViews.Nodes(
                                                            names.stream()
                                                                    .map(
                                                                            name ->
                                                                                    summary(
                                                                                            name,
                                                                                            members,
                                                                                            claimed,
                                                                                            nodes
                                                                                                    .get(
                                                                                                            name)))
                                                                    .toList()));
                        });
    }

    /** @return the node's summary: the blocks claimed for it, and the others that hold its addresses */
    private static NodeSummary summary(
            String name,
            Map<String, Members.Standing> members,
            ClaimedBlocks claimed,
            NodeView view) {
        List<Cidr> borrowed =
                claimed.claims().entrySet().stream()
                        .filter(
                                e ->
                                        !e.getValue().node().equals(name)
                                                && holdsFor(claimed.blocks().get(e.getKey()), name))
                        .map(Map.Entry::getKey)
                        .toList();
        return summary(name, members, affineTo(claimed.claims(), name), borrowed, view);
    }

    /** @return the node with its attachments; NOT_FOUND when the node is unknown */
    public CompletionStage<NodeDetail> node(String name) {
        Map<String, Members.Standing> members = members();
        return reads.node(name)
                .thenCombine(
                        poolViews(),
                        (view, views) -> {
                            List<Cidr> affine = affineTo(claims(views), name);
                            if (!members.containsKey(name)
                                    && affine.isEmpty()
                                    && view.attachments().isEmpty()
                                    && view.borrowedBlocks().isEmpty()
                                    && view.affineBlocks().isEmpty()) {
                                throw AdminException.notFound("unknown node " + name);
                            }
                            // The node lists a block before it borrows from it, and its records
                            // name the blocks its addresses came from: between them they cover
                            // every block it may borrow from.
                            Set<Cidr> candidates = new TreeSet<>(view.borrowedBlocks().keySet());
                            view.attachments()
                                    .forEach(
                                            a ->
                                                    a.addresses()
                                                            .forEach(
                                                                    h ->
                                                                            candidates.add(
                                                                                    h.block())));
                            candidates.removeAll(affine);
                            return Map.entry(view, Map.entry(affine, candidates));
                        })
                .thenCompose(
                        found ->
                                reads.blocks(found.getValue().getValue())
                                        .thenApply(
                                                blocks -> {
                                                    NodeView view = found.getKey();
                                                    List<Cidr> borrowed =
                                                            blocks.entrySet().stream()
                                                                    .filter(
                                                                            e ->
                                                                                    holdsFor(
                                                                                            e
                                                                                                    .getValue(),
                                                                                            name))
                                                                    .map(Map.Entry::getKey)
                                                                    .toList();
                                                    NodeSummary s =
                                                            summary(
                                                                    name,
                                                                    members,
                                                                    found.getValue().getKey(),
                                                                    borrowed,
                                                                    view);
                                                    List<Attachment> attachments =
                                                            view.attachments().stream()
                                                                    .sorted(
                                                                            Comparator.comparing(
                                                                                    (AttachmentRecord
                                                                                                    a) ->
                                                                                            a
                                                                                                    .key()))
                                                                    .map(Attachment::of)
                                                                    .toList();
                                                    return new NodeDetail(
                                                            s.name(),
                                                            s.member(),
                                                            s.affineBlocks(),
                                                            s.borrowedBlocks(),
                                                            s.attachments(),
                                                            s.labels(),
                                                            s.removed(),
                                                            attachments,
                                                            peer(view.peer()),
                                                            null);
                                                }));
    }

    private static AdminViews.Peer peer(PeerInfo p) {
        return p == null
                ? null
                : new AdminViews.Peer(
                        p.mode(),
                        p.device(),
                        p.ipv4(),
                        p.ipv6(),
                        p.vtepMac(),
                        p.tunnelIpv4(),
                        p.tunnelIpv6(),
                        p.mtu());
    }

    /** @return whether the node is a member, owns a block, or its entity records anything */
    CompletionStage<Boolean> nodeKnown(String name) {
        if (members().containsKey(name)) {
            return CompletableFuture.completedFuture(true);
        }
        return reads.node(name)
                .thenCombine(
                        poolViews(),
                        (view, views) ->
                                !view.attachments().isEmpty()
                                        || !view.affineBlocks().isEmpty()
                                        || !view.borrowedBlocks().isEmpty()
                                        || views.values().stream()
                                                .anyMatch(v -> v.claims().containsValue(name)));
    }

    private static boolean holdsFor(BlockView view, String node) {
        return view != null
                && view.allocations().values().stream().anyMatch(a -> a.node().equals(node));
    }

    private static NodeSummary summary(
            String name,
            Map<String, Members.Standing> members,
            Collection<Cidr> affine,
            Collection<Cidr> borrowed,
            NodeView view) {
        Members.Standing standing = members.get(name);
        return new NodeSummary(
                name,
                standing == null ? "absent" : Members.spelling(standing),
                AdminViews.cidrs(affine),
                AdminViews.cidrs(borrowed),
                view.attachments().size(),
                view.labels(),
                view.removed());
    }

    // ---- addresses ----

    /** Where an address lies: its pool and block, and whether the pool has claimed the block. */
    private record Location(String address, PoolSpec pool, Cidr block) {}

    /** @return where the address lies; fails with BAD_REQUEST for a malformed address, NOT_FOUND for one in no pool */
    private CompletionStage<Location> locate(String literal) {
        String address;
        try {
            address = IpAddresses.canonical(literal);
        } catch (IllegalArgumentException e) {
            throw AdminException.badRequest(e.getMessage());
        }
        return catalog()
                .thenApply(
                        catalog -> {
                            PoolSpec pool =
                                    catalog.containing(address)
                                            .orElseThrow(
                                                    () ->
                                                            AdminException.notFound(
                                                                    address
                                                                            + " is in none of the pools "
                                                                            + String.join(
                                                                                    ", ",
                                                                                    catalog.pools()
                                                                                            .keySet())));
                            return new Location(
                                    address,
                                    pool,
                                    pool.cidr().subnetContaining(address, pool.blockPrefix()));
                        });
    }

    /**
     * @param literal an address, IPv4 or IPv6, in any valid spelling
     * @return its pool, block and holder (null when free or when the block is not claimed)
     */
    public CompletionStage<AddressHolder> address(String literal) {
        return holding(literal)
                .thenApply(
                        h ->
                                new AddressHolder(
                                        h.where().address(),
                                        h.where().pool().name(),
                                        h.where().block().toString(),
                                        h.allocation()
                                                .map(AdminViews.Allocation::of)
                                                .orElse(null)));
    }

    /** Where an address lies, and who holds it ({@link #allocationAt}). */
    private record Holding(Location where, Optional<Allocation> allocation) {}

    /**
     * @return where the address lies and who holds it; fails with BAD_REQUEST for a malformed
     *     address, NOT_FOUND for one in no pool
     */
    private CompletionStage<Holding> holding(String literal) {
        return guard(
                () ->
                        locate(literal)
                                .thenCompose(
                                        where ->
                                                allocationAt(where)
                                                        .thenApply(a -> new Holding(where, a))));
    }

    /** @return who holds the address; the block is asked only when its pool has claimed it */
    private CompletionStage<Optional<Allocation>> allocationAt(Location where) {
        return reads.pool(where.pool().name())
                .thenCompose(
                        view ->
                                !view.claims().containsKey(where.block())
                                        ? CompletableFuture.completedFuture(
                                                Optional.<Allocation>empty())
                                        : reads.block(where.block())
                                                .thenApply(
                                                        b ->
                                                                Optional.ofNullable(
                                                                        b.allocations()
                                                                                .get(
                                                                                        where
                                                                                                .address()))));
    }

    // ---- release ----

    /**
     * Releases the attachment that holds the address: its node forgets the attachment, then its
     * blocks free every address it holds (the other family's too: once the node has forgotten the
     * attachment, an address left held would be an orphan). An orphan (the node does not record the
     * attachment) is freed in its block. A free address releases nothing.
     *
     * @return the addresses freed, empty when the address was free
     */
    public CompletionStage<AdminViews.Released> releaseAddress(String literal) {
        return holding(literal)
                .thenCompose(
                        h -> {
                            if (h.allocation().isEmpty()) {
                                return CompletableFuture.completedFuture(
                                        new AdminViews.Released(List.of()));
                            }
                            Allocation a = h.allocation().get();
                            List<Cidr> block = List.of(h.where().block());
                            return release(
                                    a.node(),
                                    a.handle(),
                                    a.ifname(),
                                    () -> CompletableFuture.completedFuture(block),
                                    block);
                        });
    }

    /**
     * Releases an attachment as DEL does: the node forgets it (persisted), then the blocks free
     * its addresses. When the node does not record it, the blocks affine to the node and those it
     * borrowed from are swept for it. Idempotent: an unknown attachment releases nothing.
     *
     * @return the addresses freed
     */
    public CompletionStage<AdminViews.Released> releaseAttachment(
            String node, String handle, String ifname) {
        return guard(() -> release(node, handle, ifname, () -> blocksToSweep(node), List.of()));
    }

    /**
     * Node first, then blocks (shards/DESIGN.md): a crash between the two leaves an orphan
     * allocation, which the check reports and a retry frees, never a record whose address is free.
     *
     * @param unknown the blocks to free in when the node does not record the attachment
     * @param also blocks to free in besides the recorded ones
     */
    CompletionStage<AdminViews.Released> release(
            String node,
            String handle,
            String ifname,
            Supplier<CompletionStage<List<Cidr>>> unknown,
            List<Cidr> also) {
        return reads.attachment(node, handle, ifname)
                .thenCompose(
                        known ->
                                known.isEmpty()
                                        ? unknown.get()
                                        : reads.forget(node, handle, ifname)
                                                .thenApply(
                                                        done ->
                                                                Stream.concat(
                                                                                known
                                                                                        .get()
                                                                                        .addresses()
                                                                                        .stream()
                                                                                        .map(
                                                                                                HeldAddress
                                                                                                        ::block),
                                                                                also.stream())
                                                                        .distinct()
                                                                        .toList()))
                .thenCompose(
                        blocks -> {
                            List<CompletableFuture<List<String>>> each =
                                    blocks.stream()
                                            .map(
                                                    b ->
                                                            reads.release(b, handle, ifname)
                                                                    .toCompletableFuture())
                                            .toList();
                            return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
                                    .thenApply(
                                            v ->
                                                    new AdminViews.Released(
                                                            each.stream()
                                                                    .flatMap(f -> f.join().stream())
                                                                    .toList()));
                        });
    }

    /** @return the blocks the pools give the node (releasing ones included) and those it lists as borrowed from */
    CompletionStage<List<Cidr>> blocksToSweep(String node) {
        return reads.node(node)
                .thenCombine(
                        poolViews(),
                        (view, views) -> {
                            Set<Cidr> blocks = new LinkedHashSet<>(affineTo(claims(views), node));
                            blocks.addAll(view.borrowedBlocks().keySet());
                            return List.copyOf(blocks);
                        });
    }

    /** Runs {@code work}, turning what it throws before its stage exists into a failed stage. */
    static <T> CompletionStage<T> guard(Supplier<CompletionStage<T>> work) {
        try {
            return work.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
