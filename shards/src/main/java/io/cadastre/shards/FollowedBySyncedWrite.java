package io.cadastre.shards;

/**
 * Marker for an event that every flow persisting it follows with another persisted event before
 * anything outside the agent learns of either: a journal whose log is one sequence (the embedded
 * journal: RocksDB's write-ahead log) may write it without a sync of its own, since the later
 * event's sync makes it durable too. Journals that do not know the marker write it as any other
 * event.
 *
 * <p>Only {@link BlockEntity.AddressAssigned} carries it: every fresh assignment in a block is
 * made by the ADD flow ({@link IpamAssignment}), which then persists the node's record of the
 * attachment ({@code NodeEntity.AttachmentRecorded}) before it answers, or gives the address back
 * ({@link BlockEntity.AddressesReleased}, synced) before it answers the failure; a repeated ADD
 * that finds the address already held persists nothing in the block. So an ADD syncs once, not
 * twice, and a power loss before the record's sync loses an unanswered assignment, never an
 * answered one (root DESIGN.md, invariant 2). A DEL's forget on the node is not marked: it would
 * rely on the blocks' release after it always persisting something.
 */
public interface FollowedBySyncedWrite {}
