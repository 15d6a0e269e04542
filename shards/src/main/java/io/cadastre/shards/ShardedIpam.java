package io.cadastre.shards;

import io.cadastre.ipam.PoolSpec;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * {@link Ipam} over the sharded entities: the ADD and DEL flows of the root DESIGN.md.
 * There is one per agent, for the agent's own node, and it is the only caller that allocates for
 * that node, so it may cache the node's affine blocks.
 *
 * <p>A facade: each flow lives in a class of its own, and they share one {@link IpamContext} (the
 * node, its labels, the pools, the one {@link EntityAsks} client of the entities, and the node's
 * local caches):
 *
 * <ul>
 *   <li>{@link IpamAssignment}: ADD — a known attachment's addresses, else the pools chosen, one
 *       address per family, all or nothing, and the attachment recorded on the node;
 *   <li>{@link IpamPoolAssignment}: one address from one pool — an affine block (fast path), a
 *       new claimed block or a borrowed one (slow path, serialized per pool), or a requested
 *       address;
 *   <li>{@link IpamRelease}: DEL — lookup, the node forgets, the blocks free, the sweep of the
 *       node's affine and borrowed blocks;
 *   <li>{@link IpamGarbageCollection}: the IPAM part of a CNI GC, orphans included;
 *   <li>{@link IpamStatus}: the node's registration and labels, and STATUS.
 * </ul>
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
    private final IpamContext context;
    private final IpamAssignment assignment;
    private final IpamRelease release;
    private final IpamGarbageCollection garbage;
    private final IpamStatus status;

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
        this.context =
                new IpamContext(
                        new EntityAsks(system, timeouts),
                        new EntityHomes(system),
                        node,
                        labels,
                        catalog,
                        defaultPools,
                        clock);
        this.release = new IpamRelease(context);
        this.assignment =
                new IpamAssignment(
                        context, new IpamPoolAssignment(context, MeshHints.get(system)), release);
        this.garbage = new IpamGarbageCollection(context, release);
        this.status = new IpamStatus(context, assignment);
        context.homes.node(node);
    }

    /** @return this node's name */
    @Override
    public String node() {
        return context.node;
    }

    /** @return this node's labels */
    @Override
    public Map<String, String> labels() {
        return context.labels();
    }

    /** @return the pool's definition as this agent last read the catalogue, if it knows the pool */
    @Override
    public Optional<PoolSpec> poolSpec(String name) {
        return context.catalog.last().flatMap(c -> c.spec(name));
    }

    /** Records this node's labels on its entity and clears an operator's removal; idempotent. */
    @Override
    public CompletionStage<Done> registerNode() {
        return status.registerNode();
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
        return status.updateLabels(newLabels);
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
        return assignment.assignOrFind(request);
    }

    /** @return the attachment as the node knows it, if it does */
    @Override
    public CompletionStage<Optional<AttachmentRecord>> lookup(String handle, String ifname) {
        return release.lookup(handle, ifname);
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
        return release.release(handle, ifname);
    }

    /**
     * The first half of {@link #release}: the node forgets the attachment (persisted; on the
     * embedded journal, synced by {@link #free}).
     *
     * @return the blocks that may hold its addresses, for {@link #free}, and whether the node knew
     *     it ({@link Ipam.Forgotten})
     */
    @Override
    public CompletionStage<Forgotten> forget(String handle, String ifname) {
        return release.forget(handle, ifname);
    }

    /**
     * The second half of {@link #release}: the blocks free whatever the attachment holds in them.
     * Call it only after {@link #forget} completed, and after the pod's interface is gone.
     *
     * @return the addresses released
     */
    @Override
    public CompletionStage<List<String>> free(String handle, String ifname, Forgotten forgotten) {
        return release.free(handle, ifname, forgotten);
    }

    /** @return every attachment the node knows */
    @Override
    public CompletionStage<List<AttachmentRecord>> attachments() {
        return garbage.attachments();
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
        return garbage.collectGarbage(network, keep);
    }

    /**
     * @return whether an ADD for these pools (empty: the defaults) could get an address of every
     *     family now: for STATUS. A pool qualifies when it is defined, enabled, and has an affine
     *     block with room, an unclaimed block, or (borrowing allowed) any claimed block.
     */
    @Override
    public CompletionStage<Optional<String>> unavailability(List<String> poolNames) {
        return status.unavailability(poolNames);
    }
}
