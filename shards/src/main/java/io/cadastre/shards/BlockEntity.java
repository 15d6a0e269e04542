package io.cadastre.shards;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Block;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.RangeSet;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.IntPredicate;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One CIDR block, sharded by its CIDR ({@code 198.18.0.64-26}): the single writer of which address
 * of the block is allocated to which attachment. Every allocation is persisted before the reply
 * (root DESIGN.md, invariant 2), so an answered assignment survives any crash.
 *
 * <p>The block learns its affinity from {@link ClaimAffinity}, sent after the pool has persisted
 * the claim; it allocates to other nodes only when the caller says the pool allows borrowing.
 */
public final class BlockEntity
        extends CadastreEntity<BlockEntity.Command, BlockEntity.Event, BlockEntity.State> {

    public static final EntityTypeKey<Command> ENTITY_TYPE_KEY =
            EntityTypeKey.create(Command.class, "Block");

    /**
     * Registers the entity with cluster sharding, placed on its node's member ({@link
     * EntityHomes}).
     */
    public static void init(ActorSystem<?> system) {
        initSharding(
                system, ENTITY_TYPE_KEY, CadastreMetrics.ENTITY_BLOCK, BlockEntity::create, true);
    }

    /**
     * @param entityId the block's CIDR in entity-id form, {@link Cidr#entityId()}
     * @return the block outside sharding ({@link CadastreEntity#unfenced})
     */
    public static Behavior<Command> create(String entityId) {
        return unfenced(BlockEntity::create, entityId);
    }

    /**
     * @param entityId the block's CIDR in entity-id form
     * @return the entity's events, event handler and empty state outside an actor, for tools that
     *     write or fold its events (the benchmarks' journal seeder); it must not run as an actor
     */
    public static BlockEntity eventModel(String entityId) {
        return new BlockEntity(
                null, entityId, MemberFence.NEVER_CLOSED, CadastreMetrics.Recovery.NONE);
    }

    /**
     * @param fence closes this entity to commands while its member may have been replaced
     * @param recovery told how long the entity took from its start to {@code RecoveryCompleted}
     */
    public static Behavior<Command> create(
            String entityId, MemberFence fence, CadastreMetrics.Recovery recovery) {
        return Behaviors.setup(ctx -> new BlockEntity(ctx.getSelf(), entityId, fence, recovery));
    }

    // ---- commands ----

    public sealed interface Command extends CborSerializable
            permits ClaimAffinity,
                    ReleaseAffinity,
                    AutoAssign,
                    AssignSpecific,
                    Release,
                    GetBlock,
                    WritePending {}

    /**
     * Makes the block affine to {@code node}. Idempotent for the same node; refused ({@link
     * Refusal}) with AFFINE_TO_OTHER_NODE while the block holds allocations and is affine to
     * another node.
     *
     * @param excluded the pool's excluded ranges inside this block ({@link
     *     io.cadastre.ipam.PoolSpec#excludedWithin}): never allocated; {@code null} keeps the
     *     block's current reservation
     */
    public record ClaimAffinity(
            String node, List<Cidr> excluded, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Gives up the block's affinity to {@code node}, so that its pool can release the claim: the
     * second step of {@link BlockReleases}. Refused ({@link Refusal}) with CONFLICT while the
     * block holds any allocation (checked here, by the block's single writer, so no ADD can slip
     * in between), with AFFINE_TO_OTHER_NODE when it is affine to another node; success when the block has no affinity. Afterwards the block allocates to nobody
     * until it is claimed again.
     */
    public record ReleaseAffinity(String node, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Allocates the next address (the one free the longest, among those {@code within} allows) to
     * the attachment in {@code allocation}; if the attachment already holds one here, that one
     * again (whatever {@code within} says: a repeated ADD keeps its address).
     *
     * @param borrow true when the pool allows borrowing and the caller is not the affine node
     * @param within the ranges of an L2 subnet the address must lie in ({@link
     *     io.cadastre.ipam.AddressRules#within}); {@code null} for any address of the block
     */
    public record AutoAssign(
            Allocation allocation, boolean borrow, RangeSet within, ActorRef<AssignOutcome> replyTo)
            implements Command {}

    /** Allocates one specific address (canonical literal) to the attachment. */
    public record AssignSpecific(
            String address, Allocation allocation, boolean borrow, ActorRef<AssignOutcome> replyTo)
            implements Command {}

    /**
     * Releases whatever the attachment holds here; nothing held is success.
     *
     * @param afterForget the node forgot the attachment just before without a sync of its own
     *     ({@code NodeEntity.ForgetAttachment} with {@code releaseFollows}): the block persists an
     *     empty release when it holds nothing for the attachment, so that the forget is synced
     *     before the DEL answers ({@link FollowedBySyncedWrite})
     */
    public record Release(
            String handle, String ifname, boolean afterForget, ActorRef<Released> replyTo)
            implements Command {}

    public record GetBlock(ActorRef<BlockView> replyTo) implements Command {}

    /**
     * Sent by the block to itself after the first assignment or release it decided since its last
     * write: writes every one decided meanwhile in one atomic write, then answers them.
     */
    record WritePending() implements Command {}

    // ---- replies ----

    /** @param addresses the addresses released (canonical); empty when the attachment held none here */
    public record Released(List<String> addresses) implements CborSerializable {}

    /**
     * FULL: no address of the block is free; NONE_IN_RANGE: free addresses, but none the
     * request's ranges allow (the block is not full for others).
     */
    public enum AssignStatus {
        ASSIGNED,
        FULL,
        NOT_AFFINE,
        TAKEN,
        NONE_IN_RANGE
    }

    /**
     * @param status what happened
     * @param address the assigned address (canonical) when ASSIGNED, else {@code null}
     * @param detail why not, for FULL, NOT_AFFINE, TAKEN and NONE_IN_RANGE
     */
    public record AssignOutcome(AssignStatus status, String address, String detail)
            implements CborSerializable {}

    /**
     * A copy of the block's state.
     *
     * @param cidr the block
     * @param affinity the affine node, or {@code null}
     * @param allocations address (canonical) → allocation
     * @param free how many addresses are free
     * @param reserved how many addresses lie in the pool's excluded ranges (never allocated)
     */
    public record BlockView(
            Cidr cidr, String affinity, Map<String, Allocation> allocations, int free, int reserved)
            implements CborSerializable {
        /** @return the number of addresses in the block */
        public int size() {
            return allocations.size() + free + reserved;
        }
    }

    // ---- events ----

    public sealed interface Event extends CborSerializable
            permits AffinityClaimed, AffinityReleased, AddressAssigned, AddressesReleased {}

    /** @param excluded the reservation to apply; {@code null} (and in events from before excluded ranges): keep */
    public record AffinityClaimed(String node, List<Cidr> excluded) implements Event {}

    public record AffinityReleased(String node) implements Event {}

    /**
     * Written by the embedded journal without a sync of its own: the ADD flow's node record follows
     * it, synced ({@link FollowedBySyncedWrite}).
     */
    public record AddressAssigned(String address, Allocation allocation)
            implements Event, FollowedBySyncedWrite {}

    public record AddressesReleased(List<String> addresses) implements Event {}

    // ---- state ----

    /** The block; mutated only by the event handler, copied for snapshots. */
    public record State(Block block) implements CborSerializable, MutableState<State> {
        @Override
        public State copy() {
            return new State(block.copy());
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(BlockEntity.class);

    private final Cidr cidr;
    private final ActorRef<Command> self;

    /** The assignments and releases decided since the last write, by attachment key. */
    private final PendingWrites<Event> pending = new PendingWrites<>();

    /** The ordinals the pending events assign: not free for the next decision. */
    private final Set<Integer> pendingOrdinals = new HashSet<>();

    private BlockEntity(
            ActorRef<Command> self,
            String entityId,
            MemberFence fence,
            CadastreMetrics.Recovery recovery) {
        super(ENTITY_TYPE_KEY, entityId, fence, recovery);
        this.cidr = Cidr.fromEntityId(entityId);
        this.self = self;
    }

    @Override
    public State emptyState() {
        return new State(Block.empty(cidr));
    }

    /**
     * Logs where and when a block came back (operators follow an entity's moves; the chaos harness
     * times failover from these lines).
     */
    @Override
    void recovered(State state) {
        LOG.info(
                "recovered block {}: {} allocations, affine to {}",
                cidr,
                state.block().allocations().size(),
                state.block().affinity());
    }

    @Override
    CommandHandlerWithReply<Command, Event, State> handlers() {
        return newCommandHandlerWithReplyBuilder()
                .forAnyState()
                .onCommand(ClaimAffinity.class, this::onClaimAffinity)
                .onCommand(ReleaseAffinity.class, this::onReleaseAffinity)
                .onCommand(AutoAssign.class, this::onAutoAssign)
                .onCommand(AssignSpecific.class, this::onAssignSpecific)
                .onCommand(Release.class, this::onRelease)
                .onCommand(
                        GetBlock.class,
                        (state, cmd) -> Effect().reply(cmd.replyTo(), view(state.block())))
                .onCommand(WritePending.class, (state, cmd) -> writePending())
                .build();
    }

    /**
     * Decides an event now and writes it with the others decided before the block's next {@link
     * WritePending}: the calls that meet in a block while a write is in flight share its next one
     * (one write and, on Cassandra, one epoch read for all of them).
     */
    private ReplyEffect<Event, State> pend(
            Event event, String attachment, OptionalInt ordinal, Runnable reply) {
        if (pending.add(event, attachment, reply)) {
            self.tell(new WritePending());
        }
        ordinal.ifPresent(pendingOrdinals::add);
        return Effect().noReply();
    }

    private ReplyEffect<Event, State> writePending() {
        pendingOrdinals.clear();
        return writePending(pending);
    }

    private static String attachmentKey(Allocation allocation) {
        return AttachmentRecord.key(allocation.handle(), allocation.ifname());
    }

    private ReplyEffect<Event, State> onClaimAffinity(State state, ClaimAffinity cmd) {
        if (!pending.isEmpty()) {
            return Effect().stash();
        }
        Block block = state.block();
        if (cmd.node().equals(block.affinity())
                && (cmd.excluded() == null
                        || block.ordinalsIn(cmd.excluded()).equals(block.reserved()))) {
            return ack(cmd.replyTo());
        }
        if (block.affinity() != null && !block.isEmpty() && !cmd.node().equals(block.affinity())) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.AFFINE_TO_OTHER_NODE,
                    affinity(block) + " and holds allocations");
        }
        return persistThenAck(new AffinityClaimed(cmd.node(), cmd.excluded()), cmd.replyTo());
    }

    private ReplyEffect<Event, State> onReleaseAffinity(State state, ReleaseAffinity cmd) {
        if (!pending.isEmpty()) {
            return Effect().stash();
        }
        Block block = state.block();
        if (block.affinity() == null) {
            return ack(cmd.replyTo());
        }
        if (!block.affinity().equals(cmd.node())) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.AFFINE_TO_OTHER_NODE,
                    affinity(block) + ", not " + cmd.node());
        }
        if (!block.isEmpty()) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.CONFLICT,
                    "block " + cidr + " holds " + block.allocatedCount() + " allocations");
        }
        return persistThenAck(new AffinityReleased(cmd.node()), cmd.replyTo());
    }

    private ReplyEffect<Event, State> onAutoAssign(State state, AutoAssign cmd) {
        Block block = state.block();
        Allocation allocation = cmd.allocation();
        if (pending.touches(attachmentKey(allocation))) {
            return Effect().stash();
        }
        OptionalInt held = block.ordinalHeldBy(allocation.handle(), allocation.ifname());
        if (held.isPresent()) {
            return Effect().reply(cmd.replyTo(), assigned(block.addressAt(held.getAsInt())));
        }
        if (refusesAffinity(block, allocation, cmd.borrow())) {
            return Effect().reply(cmd.replyTo(), notAffine(block, allocation));
        }
        IntPredicate allowed =
                cmd.within() == null ? ordinal -> true : cmd.within().allowedOrdinals(cidr);
        OptionalInt next =
                block.nextFreeOrdinal(
                        ordinal -> !pendingOrdinals.contains(ordinal) && allowed.test(ordinal));
        if (next.isEmpty()) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            block.freeCount() == pendingOrdinals.size()
                                    ? unassigned(AssignStatus.FULL, "block " + cidr + " is full")
                                    : unassigned(
                                            AssignStatus.NONE_IN_RANGE,
                                            "no free address of block "
                                                    + cidr
                                                    + " lies in "
                                                    + cmd.within()));
        }
        String address = block.addressAt(next.getAsInt());
        return pend(
                new AddressAssigned(address, allocation),
                attachmentKey(allocation),
                next,
                () -> cmd.replyTo().tell(assigned(address)));
    }

    private ReplyEffect<Event, State> onAssignSpecific(State state, AssignSpecific cmd) {
        Block block = state.block();
        Allocation allocation = cmd.allocation();
        if (!cidr.contains(cmd.address())) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            unassigned(
                                    AssignStatus.NOT_AFFINE,
                                    cmd.address() + " is not in block " + cidr));
        }
        int ordinal = block.ordinalOf(cmd.address());
        if (pendingOrdinals.contains(ordinal) || pending.touches(attachmentKey(allocation))) {
            return Effect().stash();
        }
        if (block.isReserved(ordinal)) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            unassigned(
                                    AssignStatus.TAKEN,
                                    cmd.address() + " lies in an excluded range of its pool"));
        }
        var holder = block.allocationAt(ordinal);
        if (holder.isPresent()) {
            if (holder.get().isFor(allocation.handle(), allocation.ifname())) {
                return Effect().reply(cmd.replyTo(), assigned(cmd.address()));
            }
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            unassigned(
                                    AssignStatus.TAKEN,
                                    cmd.address()
                                            + " is already held by "
                                            + holder.get().handle()
                                            + " ("
                                            + holder.get().ifname()
                                            + ")"));
        }
        if (refusesAffinity(block, allocation, cmd.borrow())) {
            return Effect().reply(cmd.replyTo(), notAffine(block, allocation));
        }
        return pend(
                new AddressAssigned(cmd.address(), allocation),
                attachmentKey(allocation),
                OptionalInt.of(ordinal),
                () -> cmd.replyTo().tell(assigned(cmd.address())));
    }

    private ReplyEffect<Event, State> onRelease(State state, Release cmd) {
        String attachment = AttachmentRecord.key(cmd.handle(), cmd.ifname());
        if (pending.touches(attachment)) {
            return Effect().stash();
        }
        Block block = state.block();
        List<String> addresses = new ArrayList<>();
        block.allocations()
                .forEach(
                        (ordinal, allocation) -> {
                            if (allocation.isFor(cmd.handle(), cmd.ifname())) {
                                addresses.add(block.addressAt(ordinal));
                            }
                        });
        // After an unsynced forget an empty release is still written: its sync covers the forget.
        if (addresses.isEmpty() && !cmd.afterForget()) {
            return Effect().reply(cmd.replyTo(), new Released(List.of()));
        }
        return pend(
                new AddressesReleased(addresses),
                attachment,
                OptionalInt.empty(),
                () -> cmd.replyTo().tell(new Released(addresses)));
    }

    /**
     * A block allocates to its affine node, and to others only when they borrow; a block with no
     * affinity (never claimed, or released) allocates to nobody, borrowers included: its pool is
     * releasing or has released it.
     */
    private static boolean refusesAffinity(Block block, Allocation allocation, boolean borrow) {
        return block.affinity() == null || (!borrow && !allocation.node().equals(block.affinity()));
    }

    private AssignOutcome notAffine(Block block, Allocation allocation) {
        return unassigned(
                AssignStatus.NOT_AFFINE,
                block.affinity() == null
                        ? "block " + cidr + " is not claimed by any node"
                        : affinity(block) + ", not " + allocation.node());
    }

    /** @return "block C is affine to N", for a block that has an affinity */
    private String affinity(Block block) {
        return "block " + cidr + " is affine to " + block.affinity();
    }

    private static AssignOutcome assigned(String address) {
        return new AssignOutcome(AssignStatus.ASSIGNED, address, null);
    }

    /** @param detail why the block assigns nothing */
    private static AssignOutcome unassigned(AssignStatus status, String detail) {
        return new AssignOutcome(status, null, detail);
    }

    private static BlockView view(Block block) {
        Map<String, Allocation> byAddress = new LinkedHashMap<>();
        block.allocations()
                .forEach(
                        (ordinal, allocation) ->
                                byAddress.put(block.addressAt(ordinal), allocation));
        return new BlockView(
                block.cidr(),
                block.affinity(),
                byAddress,
                block.freeCount(),
                block.reserved().size());
    }

    @Override
    public EventHandler<State, Event> eventHandler() {
        return newEventHandlerBuilder()
                .forAnyState()
                .onEvent(
                        AffinityClaimed.class,
                        inPlace(
                                (state, e) -> {
                                    state.block().claimAffinity(e.node());
                                    if (e.excluded() != null) {
                                        state.block().reserve(e.excluded());
                                    }
                                }))
                .onEvent(
                        AffinityReleased.class,
                        inPlace((state, e) -> state.block().claimAffinity(null)))
                .onEvent(
                        AddressAssigned.class,
                        inPlace(
                                (state, e) -> {
                                    Block block = state.block();
                                    block.allocate(block.ordinalOf(e.address()), e.allocation());
                                }))
                .onEvent(
                        AddressesReleased.class,
                        inPlace(
                                (state, e) -> {
                                    Block block = state.block();
                                    e.addresses().forEach(a -> block.release(block.ordinalOf(a)));
                                }))
                .build();
    }
}
