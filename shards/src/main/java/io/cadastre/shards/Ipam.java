package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/**
 * One node's IP address management: what the node agent, the CNI edge, the admin API and the
 * Kubernetes integration ask of IPAM for their node. {@link ShardedIpam} is the implementation over
 * the sharded entities (the ADD and DEL flows of the root DESIGN.md); the node agent's tests use a
 * fake behind this interface.
 *
 * <p>All methods return stages that fail with {@link IpamException}: its reason maps to one CNI
 * code (the README's table).
 */
public interface Ipam {
    /** @return this node's name */
    String node();

    /** @return this node's labels */
    Map<String, String> labels();

    /** @return the pool's definition as this agent last read the catalogue, if it knows the pool */
    Optional<PoolSpec> poolSpec(String name);

    /** Records this node's labels on its entity and clears an operator's removal; idempotent. */
    CompletionStage<Done> registerNode();

    /**
     * The node's labels changed: the pools' node selectors are matched against these from now on
     * (an ADD already choosing its pools keeps the labels it read), and they are recorded on the
     * node's entity ({@link #registerNode}).
     *
     * @param newLabels label key → value, already checked ({@code NodeSelector.isLabelKey}, {@code isLabelValue})
     * @return when the entity has recorded them; at once when they are the labels already held
     */
    CompletionStage<Done> updateLabels(Map<String, String> newLabels);

    /**
     * Assigns the attachment's addresses, one per family, all or nothing, and records them on the
     * node. A repeated request for a known attachment returns the addresses it already holds.
     */
    CompletionStage<AttachmentRecord> assign(AssignRequest request);

    /**
     * The attachment's record and whether this call assigned it.
     *
     * @param record the attachment as the node holds it now
     * @param fresh true when this call assigned the addresses; false when the node knew the
     *     attachment already (a repeated ADD: its addresses may be in use by a running pod)
     */
    public record Assignment(AttachmentRecord record, boolean fresh) {}

    /** As {@link #assign}, telling a new assignment from one the node held already. */
    CompletionStage<Assignment> assignOrFind(AssignRequest request);

    /** @return the attachment as the node knows it, if it does */
    CompletionStage<Optional<AttachmentRecord>> lookup(String handle, String ifname);

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
    CompletionStage<List<String>> release(String handle, String ifname);

    /**
     * What {@link #forget} did, for {@link #free}.
     *
     * @param blocks the blocks that may hold the attachment's addresses: the recorded ones, or
     *     every block affine to this node and every block it borrowed from when the node did not
     *     know the attachment
     * @param recorded whether the node knew the attachment and forgot it: the forget is then
     *     written without a sync of its own, and {@link #free} has each block persist its release
     *     (an empty one if need be), which syncs it ({@link FollowedBySyncedWrite})
     */
    record Forgotten(List<Cidr> blocks, boolean recorded) {}

    /**
     * The first half of {@link #release}: the node forgets the attachment (persisted; on the
     * embedded journal, synced by {@link #free}).
     */
    CompletionStage<Forgotten> forget(String handle, String ifname);

    /**
     * The second half of {@link #release}: the blocks free whatever the attachment holds in them.
     * Call it only after {@link #forget} completed, and after the pod's interface is gone.
     *
     * @return the addresses released
     */
    CompletionStage<List<String>> free(String handle, String ifname, Forgotten forgotten);

    /** @return every attachment the node knows */
    CompletionStage<List<AttachmentRecord>> attachments();

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
    CompletionStage<List<String>> collectGarbage(String network, Set<String> keep);

    /**
     * @return whether an ADD for these pools (empty: the defaults) could get an address of every
     *     family now: for STATUS. A pool qualifies when it is defined, enabled, and has an affine
     *     block with room, an unclaimed block, or (borrowing allowed) any claimed block.
     */
    CompletionStage<Optional<String>> unavailability(List<String> poolNames);
}
