package io.cadastre.shards;

/**
 * Marker for an event that every flow persisting it follows with another persisted event before
 * anything outside the agent learns of either: a journal whose log is one sequence (the embedded
 * journal: RocksDB's write-ahead log) may write it without a sync of its own, since the later
 * event's sync makes it durable too. Journals that do not know the marker write it as any other
 * event.
 *
 * <ul>
 *   <li>{@link BlockEntity.AddressAssigned}: every fresh assignment in a block is made by the ADD
 *       flow ({@link IpamAssignment}), which then persists the node's record of the attachment
 *       ({@code NodeEntity.AttachmentRecorded}) before it answers, or gives the address back
 *       ({@link BlockEntity.AddressesReleased}, synced) before it answers the failure; a repeated
 *       ADD that finds the address already held persists nothing in the block.
 *   <li>{@link NodeEntity.AttachmentForgotten} when {@link #followedBySyncedWrite} says so: the DEL
 *       flow ({@link IpamRelease}) forgot a recorded attachment, and each block its record names
 *       then persists its release ({@code BlockEntity.Release} with {@code afterForget}), an
 *       empty one when the block holds nothing for it any more. When the flow stops in between
 *       (the pod's interface could not be removed), its DEL fails, and a power loss brings back a
 *       record whose addresses are still held: the state before the DEL.
 * </ul>
 *
 * <p>So an ADD and a DEL each sync once, not twice, and a power loss before the second write's
 * sync loses only what no one was told of (root DESIGN.md, invariant 2).
 */
public interface FollowedBySyncedWrite {
    /** @return whether this event is followed as above; true unless the event says otherwise */
    default boolean followedBySyncedWrite() {
        return true;
    }
}
