package io.cadastre.admin;

import io.cadastre.admin.AdminViews.NodeRemoved;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.BlockReleases;
import io.cadastre.shards.BlockReleases.Claim;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.IpamException;
import io.cadastre.shards.NodeEntity.NodeView;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@code DELETE /v1/nodes/{name}[?releaseAddresses=true]}: removes a node that has left the
 * cluster. In order, each step idempotent, so that a removal that failed half-way (503) is
 * completed by running it again:
 * <ol>
 *   <li>refuse (CONFLICT) while the node's agent is a cluster member ({@link Members}: up, joining
 *       or leaving), and NOT_FOUND for a node that is not known ({@link Inventory#nodeKnown});
 *   <li>mark the node removed ({@code NodeEntity.MarkRemoved}; the agent starting again under that
 *       name clears it with {@code Register});
 *   <li>with {@code releaseAddresses}: release every attachment the node records and every
 *       allocation held for the node in its affine blocks and the blocks it lists as borrowed
 *       from (orphans) — node first, then blocks, as DEL and {@link Inventory#releaseAttachment} do;
 *   <li>release every block the pools give the node that holds no allocation
 *       ({@link BlockReleases#releaseIfEmpty}, over every pool of the catalogue); a block that
 *       holds allocations — the node's, or another node's borrowed ones — stays the node's.
 * </ol>
 * The answer names the blocks released and those that remain, the addresses released, and how
 * many allocations are still held for the node (in its affine, borrowed and recorded blocks): they
 * are releasable by address and reported by the consistency check
 * ({@link ConsistencyCheck}, {@code allocationsOfRemovedNodes}).
 *
 * <p>Stages fail with {@link AdminException}: CONFLICT, NOT_FOUND; and with {@link IpamException}
 * UNAVAILABLE when an entity did not answer (what was done stays done).
 *
 * <p>Also used by the Kubernetes integration (module kube, {@code DeletedNodeReleaser}): a Node
 * deleted from Kubernetes gets the removal with {@code releaseAddresses}, as Calico's
 * kube-controllers release the addresses of deleted Nodes.
 */
public final class NodeRemoval {
    private final Inventory inventory;
    private final EntityReads reads;
    private final BlockReleases releases;

    /** @param inventory the cluster's pools, blocks and nodes, as the admin API reads them */
    public NodeRemoval(Inventory inventory) {
        this.inventory = inventory;
        this.reads = inventory.reads();
        this.releases = inventory.poolOperations().releases();
    }

    /**
     * @param name the node
     * @param releaseAddresses whether to release what is held for the node before its blocks
     * @return what was released and what remains
     */
    public CompletionStage<NodeRemoved> remove(String name, boolean releaseAddresses) {
        return Inventory.guard(
                () -> {
                    Members.Standing standing = inventory.members().get(name);
                    if (standing != null) {
                        throw AdminException.conflict(
                                "node "
                                        + name
                                        + " is a cluster member ("
                                        + (standing == Members.Standing.UP
                                                ? "up"
                                                : "joining or leaving")
                                        + "); stop its agent first");
                    }
                    return inventory
                            .nodeKnown(name)
                            .thenCompose(
                                    known -> {
                                        if (!known) {
                                            throw AdminException.notFound("unknown node " + name);
                                        }
                                        return reads.markRemoved(name);
                                    })
                            .thenCompose(
                                    removed ->
                                            releaseAddresses
                                                    ? releaseAddresses(name)
                                                    : CompletableFuture.completedFuture(
                                                            List.<String>of()))
                            .thenCompose(
                                    addresses ->
                                            releaseEmptyBlocks(name)
                                                    .thenCompose(
                                                            blocks ->
                                                                    holdings(name)
                                                                            .thenApply(
                                                                                    left ->
                                                                                            new NodeRemoved(
                                                                                                    name,
                                                                                                    AdminViews
                                                                                                            .cidrs(
                                                                                                                    blocks
                                                                                                                            .released()),
                                                                                                    AdminViews
                                                                                                            .cidrs(
                                                                                                                    blocks
                                                                                                                            .kept()),
                                                                                                    addresses,
                                                                                                    left.allocationsOfNode()
                                                                                                            .size()))));
                });
    }

    /**
     * What may be held for a node: its record, and the blocks that may hold its allocations —
     * affine (per the pools), listed as borrowed from, and named by its attachments.
     */
    private record Holdings(String node, NodeView view, Map<Cidr, BlockView> blocks) {
        /** @return every allocation held for the node, with its block, in block order */
        List<Map.Entry<Cidr, Allocation>> allocationsOfNode() {
            List<Map.Entry<Cidr, Allocation>> held = new ArrayList<>();
            blocks.forEach(
                    (block, view) ->
                            view.allocations().values().stream()
                                    .filter(a -> a.node().equals(node))
                                    .forEach(a -> held.add(Map.entry(block, a))));
            return held;
        }
    }

    private CompletionStage<Holdings> holdings(String name) {
        return reads.node(name)
                .thenCombine(
                        inventory.blocksToSweep(name),
                        (view, sweep) -> {
                            Set<Cidr> blocks = new TreeSet<>(sweep);
                            view.attachments()
                                    .forEach(
                                            a -> a.addresses().forEach(h -> blocks.add(h.block())));
                            return Map.entry(view, blocks);
                        })
                .thenCompose(
                        found ->
                                reads.blocks(found.getValue())
                                        .thenApply(
                                                blocks ->
                                                        new Holdings(
                                                                name, found.getKey(), blocks)));
    }

    /** One attachment to release and the blocks seen holding its addresses. */
    private record Held(String handle, String ifname, Set<Cidr> blocks) {}

    /**
     * Releases the attachments the node records and the orphans held for it: each the way
     * {@link Inventory#releaseAttachment} does (the node forgets it, then the blocks free it), in
     * the blocks its record names and those seen holding it.
     *
     * @return the addresses released
     */
    private CompletionStage<List<String>> releaseAddresses(String name) {
        return holdings(name)
                .thenCompose(
                        holdings -> {
                            Map<String, Held> each = new LinkedHashMap<>();
                            for (AttachmentRecord a : holdings.view().attachments()) {
                                each.computeIfAbsent(
                                                a.key(),
                                                k ->
                                                        new Held(
                                                                a.handle(),
                                                                a.ifname(),
                                                                new TreeSet<>()))
                                        .blocks()
                                        .addAll(
                                                a.addresses().stream()
                                                        .map(HeldAddress::block)
                                                        .toList());
                            }
                            holdings.allocationsOfNode()
                                    .forEach(
                                            e ->
                                                    each.computeIfAbsent(
                                                                    AttachmentRecord.key(
                                                                            e.getValue().handle(),
                                                                            e.getValue().ifname()),
                                                                    k ->
                                                                            new Held(
                                                                                    e.getValue()
                                                                                            .handle(),
                                                                                    e.getValue()
                                                                                            .ifname(),
                                                                                    new TreeSet<>()))
                                                            .blocks()
                                                            .add(e.getKey()));
                            List<CompletableFuture<AdminViews.Released>> released =
                                    each.values().stream()
                                            .map(
                                                    h ->
                                                            inventory
                                                                    .release(
                                                                            name,
                                                                            h.handle(),
                                                                            h.ifname(),
                                                                            () ->
                                                                                    CompletableFuture
                                                                                            .completedFuture(
                                                                                                    List
                                                                                                            .copyOf(
                                                                                                                    h
                                                                                                                            .blocks())),
                                                                            List.copyOf(h.blocks()))
                                                                    .toCompletableFuture())
                                            .toList();
                            return CompletableFuture.allOf(
                                            released.toArray(CompletableFuture[]::new))
                                    .thenApply(
                                            v ->
                                                    released.stream()
                                                            .flatMap(
                                                                    f ->
                                                                            f
                                                                                    .join()
                                                                                    .released()
                                                                                    .stream())
                                                            .distinct()
                                                            .toList());
                        });
    }

    /**
     * Releases every block the pools give the node that is empty. A block whose pool has given it
     * to another node meanwhile (the view was stale; AFFINE_TO_OTHER_NODE) is in neither list: it is not
     * the node's any more. Any other failure fails the stage.
     */
    private CompletionStage<BlockReleases.Outcome> releaseEmptyBlocks(String name) {
        return inventory
                .poolViews()
                .thenCompose(
                        views -> {
                            Map<Cidr, Claim> ofNode = new LinkedHashMap<>();
                            Inventory.claims(views)
                                    .forEach(
                                            (block, claim) -> {
                                                if (claim.node().equals(name)) {
                                                    ofNode.put(block, claim);
                                                }
                                            });
                            return releases.releaseEachIfEmpty(ofNode);
                        })
                .thenApply(
                        outcome -> {
                            outcome.failed().values().stream()
                                    .filter(
                                            e ->
                                                    e.reason()
                                                            != IpamException.Reason
                                                                    .AFFINE_TO_OTHER_NODE)
                                    .findFirst()
                                    .ifPresent(
                                            e -> {
                                                throw e;
                                            });
                            return outcome;
                        });
    }
}
