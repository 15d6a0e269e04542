package io.cadastre.admin;

import io.cadastre.admin.AdminViews.AllocationWithoutAttachment;
import io.cadastre.admin.AdminViews.AttachmentWithoutAllocation;
import io.cadastre.admin.AdminViews.BlockOfUnknownNode;
import io.cadastre.admin.AdminViews.Report;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.BlockReleases.Claim;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.NodeEntity.NodeView;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import java.util.function.Predicate;

/**
 * The consistency check: compares what the blocks hold with what the nodes record.
 *
 * <ul>
 *   <li>An <b>allocation without attachment</b>: a block holds an address for an attachment whose
 *       node does not record that address (a crash between the block's allocation and the node's
 *       record, or a DEL that stopped after the node forgot). Harmless but leaked; GC frees it.
 *   <li>An <b>attachment without allocation</b>: a node records an address that its block does not
 *       hold for the attachment. Dangerous: the address may be handed to another pod while this
 *       one uses it. The ADD/DEL order rules out this state; the check exists to prove it.
 *   <li>A <b>block affine to an unknown node</b>: the node is not a cluster member and records no
 *       attachment, or an operator removed it ({@link NodeRemoval}); its blocks can be reclaimed
 *       once empty.
 *   <li>An <b>allocation of a removed node</b>: a block holds an address for a node an operator
 *       removed (and whose agent has not started since), recorded by the node or not. Not an
 *       inconsistency of a live node — the removal kept it (no {@code releaseAddresses}) or it
 *       could not be released — but leaked until released by address; reported here rather than
 *       as an allocation without attachment.
 * </ul>
 *
 * <p>Every claimed block of the configured pools and every known node (members and the blocks'
 * affine nodes) is read in parallel; then, also in parallel, the nodes named by allocations and
 * the blocks named by attachments that the first round did not read. A few thousand small reads:
 * seconds at most for 10,000 allocations.
 *
 * <p>The reads are not one atomic snapshot: an ADD or DEL in flight between two reads could look
 * like either finding. So each finding is read again before it is reported, in the order that the
 * ADD/DEL rules make conclusive: an orphan's node, then its block (an ADD records on the node
 * after the block allocated; a DEL frees in the block after the node forgot); a missing
 * allocation's block, then its node; a removed node's allocation: its node (still removed), then
 * its block. What survives the second look is reported; an ADD still in flight may still show as
 * an allocation without attachment, as the API contract warns.
 */
public final class ConsistencyCheck {
    private final Inventory inventory;
    private final HostRoutes hostRoutes;

    public ConsistencyCheck(Inventory inventory) {
        this(inventory, HostRoutes.NONE);
    }

    /** @param hostRoutes this host's routing layer: its routes are checked against the claims */
    public ConsistencyCheck(Inventory inventory, HostRoutes hostRoutes) {
        this.inventory = inventory;
        this.hostRoutes = hostRoutes;
    }

    /** What one pass read: block views and node views. */
    private record Snapshot(
            Map<Cidr, Claim> claims,
            Map<Cidr, BlockView> blocks,
            Map<String, NodeView> nodes,
            Map<Cidr, BlockView> referencedBlocks) {

        /** @return node → attachment key → record */
        Map<String, Map<String, AttachmentRecord>> records() {
            Map<String, Map<String, AttachmentRecord>> byNode = new HashMap<>();
            nodes.forEach(
                    (name, view) -> {
                        Map<String, AttachmentRecord> byKey = new HashMap<>();
                        view.attachments().forEach(a -> byKey.put(a.key(), a));
                        byNode.put(name, byKey);
                    });
            return byNode;
        }

        BlockView anyBlock(Cidr block) {
            BlockView view = blocks.get(block);
            return view != null ? view : referencedBlocks.get(block);
        }
    }

    /**
     * Runs the check.
     *
     * @return the report; fails with {@link io.cadastre.shards.IpamException} UNAVAILABLE when an
     *     entity does not answer
     */
    public CompletionStage<Report> run() {
        long started = System.nanoTime();
        Map<String, Members.Standing> members = inventory.members();
        EntityReads reads = inventory.reads();
        return inventory
                .poolViews()
                .thenCompose(
                        views -> {
                            Map<Cidr, Claim> claims = Inventory.claims(views);
                            Set<String> names = new TreeSet<>(members.keySet());
                            claims.values().forEach(c -> names.add(c.node()));
                            return reads.blocks(claims.keySet())
                                    .thenCombine(
                                            reads.nodes(names),
                                            (blocks, nodes) -> Map.entry(blocks, nodes))
                                    .thenCompose(
                                            first ->
                                                    secondRound(
                                                            reads,
                                                            claims,
                                                            first.getKey(),
                                                            first.getValue()));
                        })
                .thenCompose(
                        snapshot -> {
                            Set<String> removed = new TreeSet<>();
                            snapshot.nodes()
                                    .forEach(
                                            (name, view) -> {
                                                if (view.removed() && !members.containsKey(name)) {
                                                    removed.add(name);
                                                }
                                            });
                            var orphans =
                                    confirmOrphans(reads, orphans(snapshot, removed))
                                            .toCompletableFuture();
                            var missing =
                                    confirmMissing(reads, missing(snapshot)).toCompletableFuture();
                            var ofRemoved =
                                    confirmRemoved(reads, heldForRemoved(snapshot, removed))
                                            .toCompletableFuture();
                            var routes =
                                    hostRoutes
                                            .audit(snapshot.claims(), removed)
                                            .toCompletableFuture();
                            return CompletableFuture.allOf(orphans, missing, ofRemoved, routes)
                                    .thenApply(
                                            v -> {
                                                List<BlockOfUnknownNode> unknown =
                                                        new ArrayList<>();
                                                snapshot.claims()
                                                        .forEach(
                                                                (block, claim) -> {
                                                                    NodeView node =
                                                                            snapshot.nodes()
                                                                                    .get(
                                                                                            claim
                                                                                                    .node());
                                                                    if (!members.containsKey(
                                                                                    claim.node())
                                                                            && (node == null
                                                                                    || node.attachments()
                                                                                            .isEmpty()
                                                                                    || removed
                                                                                            .contains(
                                                                                                    claim
                                                                                                            .node()))) {
                                                                        unknown.add(
                                                                                new BlockOfUnknownNode(
                                                                                        block
                                                                                                .toString(),
                                                                                        claim
                                                                                                .pool(),
                                                                                        claim
                                                                                                .node()));
                                                                    }
                                                                });
                                                long allocations =
                                                        snapshot.blocks().values().stream()
                                                                .mapToLong(
                                                                        b -> b.allocations().size())
                                                                .sum();
                                                long attachments =
                                                        snapshot.nodes().values().stream()
                                                                .mapToLong(
                                                                        n -> n.attachments().size())
                                                                .sum();
                                                long took =
                                                        TimeUnit.NANOSECONDS.toMillis(
                                                                System.nanoTime() - started);
                                                List<AdminViews.RouteFinding> routeFindings =
                                                        routes.join().orElse(List.of());
                                                boolean clean =
                                                        orphans.join().isEmpty()
                                                                && missing.join().isEmpty()
                                                                && unknown.isEmpty()
                                                                && ofRemoved.join().isEmpty()
                                                                && routeFindings.isEmpty();
                                                return new Report(
                                                        clean,
                                                        allocations,
                                                        attachments,
                                                        took,
                                                        orphans.join(),
                                                        missing.join(),
                                                        unknown,
                                                        ofRemoved.join(),
                                                        routes.join().isPresent()
                                                                ? hostRoutes.node()
                                                                : null,
                                                        routeFindings);
                                            });
                        });
    }

    /** Reads the nodes named by allocations and the blocks named by attachments that the first round missed. */
    private static CompletionStage<Snapshot> secondRound(
            EntityReads reads,
            Map<Cidr, Claim> claims,
            Map<Cidr, BlockView> blocks,
            Map<String, NodeView> nodes) {
        Set<String> moreNodes = Inventory.allocationHolders(blocks.values());
        moreNodes.removeAll(nodes.keySet());
        Set<Cidr> moreBlocks = new TreeSet<>();
        nodes.values()
                .forEach(
                        n ->
                                n.attachments()
                                        .forEach(
                                                a ->
                                                        a.addresses()
                                                                .forEach(
                                                                        h -> {
                                                                            if (!blocks.containsKey(
                                                                                    h.block())) {
                                                                                moreBlocks.add(
                                                                                        h.block());
                                                                            }
                                                                        })));
        return reads.nodes(moreNodes)
                .thenCombine(
                        reads.blocks(moreBlocks),
                        (extraNodes, extraBlocks) -> {
                            Map<String, NodeView> allNodes = new TreeMap<>(nodes);
                            allNodes.putAll(extraNodes);
                            return new Snapshot(claims, blocks, allNodes, extraBlocks);
                        });
    }

    /** An address a block holds for an attachment its node does not record, or for a removed node. */
    private record Orphan(Cidr block, String address, Allocation allocation) {
        AllocationWithoutAttachment view() {
            return new AllocationWithoutAttachment(
                    address, block.toString(), AdminViews.Allocation.of(allocation));
        }
    }

    /** Addresses a node records for an attachment that their blocks do not hold for it. */
    private record Missing(String node, AttachmentRecord attachment, List<HeldAddress> addresses) {
        AttachmentWithoutAllocation view() {
            return new AttachmentWithoutAllocation(
                    node,
                    AdminViews.Attachment.of(attachment),
                    addresses.stream().map(HeldAddress::address).toList());
        }
    }

    /** @return the allocations of nodes that are not removed and do not record them */
    private static List<Orphan> orphans(Snapshot snapshot, Set<String> removed) {
        Map<String, Map<String, AttachmentRecord>> records = snapshot.records();
        return allocations(
                snapshot,
                o -> {
                    Allocation a = o.allocation();
                    AttachmentRecord record =
                            records.getOrDefault(a.node(), Map.of())
                                    .get(AttachmentRecord.key(a.handle(), a.ifname()));
                    return !removed.contains(a.node()) && !records(record, o.address());
                });
    }

    /** @return the allocations held for removed nodes */
    private static List<Orphan> heldForRemoved(Snapshot snapshot, Set<String> removed) {
        return allocations(snapshot, o -> removed.contains(o.allocation().node()));
    }

    /** @return the allocations of the snapshot's blocks that {@code keep} keeps, block by block */
    private static List<Orphan> allocations(Snapshot snapshot, Predicate<Orphan> keep) {
        List<Orphan> kept = new ArrayList<>();
        snapshot.blocks()
                .forEach(
                        (block, view) ->
                                view.allocations()
                                        .forEach(
                                                (address, a) -> {
                                                    Orphan o = new Orphan(block, address, a);
                                                    if (keep.test(o)) {
                                                        kept.add(o);
                                                    }
                                                }));
        return kept;
    }

    private static List<Missing> missing(Snapshot snapshot) {
        List<Missing> missing = new ArrayList<>();
        snapshot.nodes()
                .forEach(
                        (name, view) ->
                                view.attachments().stream()
                                        .sorted(
                                                Comparator.comparing(
                                                        (AttachmentRecord a) -> a.key()))
                                        .forEach(
                                                a -> {
                                                    List<HeldAddress> absent =
                                                            a.addresses().stream()
                                                                    .filter(
                                                                            h ->
                                                                                    !holds(
                                                                                            snapshot
                                                                                                    .anyBlock(
                                                                                                            h
                                                                                                                    .block()),
                                                                                            h
                                                                                                    .address(),
                                                                                            a))
                                                                    .toList();
                                                    if (!absent.isEmpty()) {
                                                        missing.add(new Missing(name, a, absent));
                                                    }
                                                }));
        return missing;
    }

    /** @return whether the node's record of the attachment lists the address */
    private static boolean records(AttachmentRecord record, String address) {
        return record != null
                && record.addresses().stream().anyMatch(h -> h.address().equals(address));
    }

    /** @return whether the block holds the address for the attachment */
    private static boolean holds(BlockView block, String address, AttachmentRecord attachment) {
        Allocation held = block == null ? null : block.allocations().get(address);
        return held != null && held.isFor(attachment.handle(), attachment.ifname());
    }

    private static AttachmentRecord recordOf(NodeView node, String handle, String ifname) {
        String key = AttachmentRecord.key(handle, ifname);
        return node.attachments().stream()
                .filter(r -> r.key().equals(key))
                .findFirst()
                .orElse(null);
    }

    /** Keeps the orphans whose node (read again first) still does not record them and whose block still holds them. */
    private static CompletionStage<List<AllocationWithoutAttachment>> confirmOrphans(
            EntityReads reads, List<Orphan> orphans) {
        return confirmHeld(
                reads,
                orphans,
                (node, o) ->
                        !records(
                                recordOf(node, o.allocation().handle(), o.allocation().ifname()),
                                o.address()));
    }

    /** Keeps the allocations whose node (read again first) is still removed and whose block still holds them. */
    private static CompletionStage<List<AllocationWithoutAttachment>> confirmRemoved(
            EntityReads reads, List<Orphan> held) {
        return confirmHeld(reads, held, (node, o) -> node.removed());
    }

    /**
     * Reads the allocations' nodes, then their blocks, again, and keeps those whose node still
     * says so ({@code nodeSays}) and whose block still holds them.
     */
    private static CompletionStage<List<AllocationWithoutAttachment>> confirmHeld(
            EntityReads reads, List<Orphan> found, BiPredicate<NodeView, Orphan> nodeSays) {
        if (found.isEmpty()) {
            return CompletableFuture.completedFuture(List.of());
        }
        Set<String> nodes = new TreeSet<>();
        Set<Cidr> blocks = new TreeSet<>();
        found.forEach(
                o -> {
                    nodes.add(o.allocation().node());
                    blocks.add(o.block());
                });
        return reads.nodes(nodes)
                .thenCompose(
                        nodeViews ->
                                reads.blocks(blocks)
                                        .thenApply(
                                                blockViews ->
                                                        found.stream()
                                                                .filter(
                                                                        o -> {
                                                                            Allocation a =
                                                                                    o.allocation();
                                                                            Allocation held =
                                                                                    blockViews
                                                                                            .get(
                                                                                                    o
                                                                                                            .block())
                                                                                            .allocations()
                                                                                            .get(
                                                                                                    o
                                                                                                            .address());
                                                                            return nodeSays.test(
                                                                                            nodeViews
                                                                                                    .get(
                                                                                                            a
                                                                                                                    .node()),
                                                                                            o)
                                                                                    && held != null
                                                                                    && held.isFor(
                                                                                            a
                                                                                                    .handle(),
                                                                                            a
                                                                                                    .ifname());
                                                                        })
                                                                .map(Orphan::view)
                                                                .toList()));
    }

    /** Keeps the missing addresses whose block (read again first) still lacks them and whose node still records them. */
    private static CompletionStage<List<AttachmentWithoutAllocation>> confirmMissing(
            EntityReads reads, List<Missing> missing) {
        if (missing.isEmpty()) {
            return CompletableFuture.completedFuture(List.of());
        }
        Set<Cidr> blocks = new TreeSet<>();
        Set<String> nodes = new TreeSet<>();
        missing.forEach(
                m -> {
                    nodes.add(m.node());
                    m.addresses().forEach(h -> blocks.add(h.block()));
                });
        return reads.blocks(blocks)
                .thenCompose(
                        blockViews ->
                                reads.nodes(nodes)
                                        .thenApply(
                                                nodeViews -> {
                                                    List<AttachmentWithoutAllocation> confirmed =
                                                            new ArrayList<>();
                                                    for (Missing m : missing) {
                                                        AttachmentRecord now =
                                                                recordOf(
                                                                        nodeViews.get(m.node()),
                                                                        m.attachment().handle(),
                                                                        m.attachment().ifname());
                                                        List<HeldAddress> still =
                                                                m.addresses().stream()
                                                                        .filter(
                                                                                h ->
                                                                                        records(
                                                                                                        now,
                                                                                                        h
                                                                                                                .address())
                                                                                                && !holds(
                                                                                                        blockViews
                                                                                                                .get(
                                                                                                                        h
                                                                                                                                .block()),
                                                                                                        h
                                                                                                                .address(),
                                                                                                        now))
                                                                        .toList();
                                                        if (!still.isEmpty()) {
                                                            confirmed.add(
                                                                    new Missing(
                                                                                    m.node(), now,
                                                                                    still)
                                                                            .view());
                                                        }
                                                    }
                                                    return confirmed;
                                                }));
    }
}
