package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.Pool;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One pool, sharded by its name: the single writer of the pool's definition and of block
 * affinity — which block belongs to which node. A claim is persisted before the reply, so two
 * nodes can never both be told a block is theirs.
 */
public final class PoolEntity
        extends CadastreEntity<PoolEntity.Command, PoolEntity.Event, PoolEntity.State> {

    public static final EntityTypeKey<Command> ENTITY_TYPE_KEY =
            EntityTypeKey.create(Command.class, "Pool");
    private static final Logger LOG = LoggerFactory.getLogger(PoolEntity.class);

    /** Registers the entity with cluster sharding. */
    public static void init(ActorSystem<?> system) {
        initSharding(system, ENTITY_TYPE_KEY, CadastreMetrics.ENTITY_POOL, PoolEntity::new);
    }

    /**
     * @param poolName the pool's name, the entity id
     * @return the pool outside sharding ({@link CadastreEntity#unfenced})
     */
    public static Behavior<Command> create(String poolName) {
        return unfenced(PoolEntity::new, poolName);
    }

    // ---- commands ----

    public sealed interface Command extends CborSerializable
            permits DefinePool,
                    SetDisabled,
                    DeletePool,
                    ClaimBlock,
                    ClaimSpecificBlock,
                    BeginBlockRelease,
                    FinishBlockRelease,
                    CancelBlockRelease,
                    GetPool {}

    /**
     * Creates the pool, or updates its flags. Refused ({@link Refusal}) with CONFLICT when the
     * pool exists with another CIDR, block size or excluded ranges, INVALID_REQUEST when the name
     * does not match the entity.
     */
    public record DefinePool(PoolSpec spec, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Disables the pool (no block is claimed any more; existing claims and allocations stay) or
     * enables it again. Idempotent; refused with UNKNOWN_POOL when the pool is not defined.
     */
    public record SetDisabled(boolean disabled, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Deletes the pool, so that its name and range can be defined anew. Refused with CONFLICT
     * while any block is claimed: release them first ({@link BlockReleases}). Deleting a pool
     * that is not defined is success.
     */
    public record DeletePool(ActorRef<StatusReply<Done>> replyTo) implements Command {}

    /**
     * Claims the lowest unclaimed block for {@code node}.
     *
     * @param within the ranges of an L2 subnet the block must hold an allowed address of (the
     *     lowest such block is claimed; EXHAUSTED when none is left); {@code null} for any block;
     *     refused with UNKNOWN_POOL when the pool is not defined
     * @param known the blocks of this pool the requester already uses for the node, or {@code
     *     null}. A block claimed for the node outside them (not being released, holding an address
     *     {@code within} allows) is the claim of an earlier attempt whose reply was lost, its
     *     member having crashed after the write: it is answered CLAIMED instead of a new claim
     *     ({@link Pool#claimOutside}). So a claim with {@code known} may be sent again after a
     *     timeout, as a retried ask does; without it, every one claims anew.
     */
    public record ClaimBlock(
            String node,
            RangeSet within,
            Set<Cidr> known,
            ActorRef<StatusReply<ClaimOutcome>> replyTo)
            implements Command {
        /** A claim that must not be sent again: each one claims a new block (admin, tests). */
        public ClaimBlock(
                String node, RangeSet within, ActorRef<StatusReply<ClaimOutcome>> replyTo) {
            this(node, within, null, replyTo);
        }
    }

    /**
     * Claims one given block (for a specific address) for {@code node}; idempotent. Answers
     * CLAIMED or OWNED_BY_OTHER; refused ({@link Refusal}) with UNKNOWN_POOL, INVALID_REQUEST (not
     * a block of the pool), ADDRESS_NOT_IN_POOL (wholly excluded), BLOCK_RELEASING, POOL_DISABLED
     * or NODE_BLOCK_LIMIT.
     */
    public record ClaimSpecificBlock(
            Cidr block, String node, ActorRef<StatusReply<ClaimOutcome>> replyTo)
            implements Command {}

    /**
     * The first step of releasing a block ({@link BlockReleases}): marks it as being released, so
     * that its node stops using it (the view lists it in {@code releasing}) while the block is
     * asked to give up its affinity. Success when the block is not claimed (already released);
     * refused with AFFINE_TO_OTHER_NODE when another node holds the claim.
     */
    public record BeginBlockRelease(Cidr block, String node, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /** The last step: drops the claim; success when it is already gone. */
    public record FinishBlockRelease(Cidr block, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /** Gives up a release (the block holds allocations): its node may use the block again. */
    public record CancelBlockRelease(Cidr block, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    public record GetPool(ActorRef<PoolView> replyTo) implements Command {}

    // ---- replies ----

    /**
     * The answers to a claim that the caller goes on from (another pool, borrowing); a claim the
     * pool refuses outright is an error reply with a {@link Refusal} instead. DISABLED: the pool is
     * disabled, and nothing new may come from it (no borrowing either). LIMIT_REACHED: the node
     * holds the pool's {@code maxBlocksPerNode} blocks (it may still borrow).
     */
    public enum ClaimStatus {
        CLAIMED,
        EXHAUSTED,
        LIMIT_REACHED,
        DISABLED,
        OWNED_BY_OTHER
    }

    /**
     * @param status what happened
     * @param block the block claimed (CLAIMED) or asked for (OWNED_BY_OTHER), else {@code null}
     * @param detail the owner (OWNED_BY_OTHER) or why not (EXHAUSTED, LIMIT_REACHED, DISABLED)
     */
    public record ClaimOutcome(ClaimStatus status, Cidr block, String detail)
            implements CborSerializable {}

    /**
     * @param spec the definition, or {@code null} when the pool is not defined
     * @param disabled whether new blocks are refused
     * @param claims block → affine node
     * @param releasing claimed blocks being released: their node must not use them
     */
    public record PoolView(
            PoolSpec spec, boolean disabled, Map<Cidr, String> claims, Set<Cidr> releasing)
            implements CborSerializable {
        public boolean defined() {
            return spec != null;
        }

        /** @return the blocks affine to the node that it may use (claimed, not being released), in address order */
        public List<Cidr> usableBlocksOf(String node) {
            return claims.entrySet().stream()
                    .filter(e -> e.getValue().equals(node) && !releasing.contains(e.getKey()))
                    .map(Map.Entry::getKey)
                    .toList();
        }
    }

    // ---- events ----

    public sealed interface Event extends CborSerializable
            permits PoolDefined,
                    PoolRedefined,
                    PoolDisabled,
                    PoolEnabled,
                    PoolDeleted,
                    BlockClaimed,
                    BlockReleaseBegun,
                    BlockReleaseCancelled,
                    BlockReleased {}

    public record PoolDefined(PoolSpec spec) implements Event {}

    public record PoolRedefined(PoolSpec spec) implements Event {}

    public record PoolDisabled() implements Event {}

    public record PoolEnabled() implements Event {}

    public record PoolDeleted() implements Event {}

    public record BlockClaimed(Cidr block, String node) implements Event {}

    public record BlockReleaseBegun(Cidr block) implements Event {}

    public record BlockReleaseCancelled(Cidr block) implements Event {}

    public record BlockReleased(Cidr block) implements Event {}

    // ---- state ----

    /** @param pool the pool, or {@code null} before it is defined; mutated only by the event handler */
    public record State(Pool pool) implements CborSerializable, MutableState<State> {
        @Override
        public State copy() {
            return pool == null ? this : new State(pool.copy());
        }
    }

    private final String poolName;

    private PoolEntity(String poolName, MemberFence fence, CadastreMetrics.Recovery recovery) {
        super(ENTITY_TYPE_KEY, poolName, fence, recovery);
        this.poolName = poolName;
    }

    @Override
    public State emptyState() {
        return new State(null);
    }

    /** Logs where and when a pool came back. */
    @Override
    void recovered(State state) {
        LOG.info(
                "recovered pool {}: {}",
                poolName,
                state.pool() == null
                        ? "not defined"
                        : state.pool().claims().size() + " blocks claimed");
    }

    /**
     * Two sets of handlers: a pool that is not defined (never, or deleted) answers from its
     * absence, without a look at any {@link Pool}; a defined one from its pool.
     */
    @Override
    CommandHandlerWithReply<Command, Event, State> handlers() {
        var handlers = newCommandHandlerWithReplyBuilder();
        handlers.forState(PoolEntity::undefined)
                .onCommand(
                        DefinePool.class,
                        (state, cmd) ->
                                named(
                                        cmd,
                                        () ->
                                                persistThenAck(
                                                        new PoolDefined(cmd.spec()),
                                                        cmd.replyTo())))
                .onCommand(SetDisabled.class, (state, cmd) -> unknownPool(cmd.replyTo()))
                .onCommand(ClaimBlock.class, (state, cmd) -> unknownPool(cmd.replyTo()))
                .onCommand(ClaimSpecificBlock.class, (state, cmd) -> unknownPool(cmd.replyTo()))
                // Nothing to delete, and no block claimed to release: done.
                .onCommand(DeletePool.class, (state, cmd) -> ack(cmd.replyTo()))
                .onCommand(BeginBlockRelease.class, (state, cmd) -> ack(cmd.replyTo()))
                .onCommand(FinishBlockRelease.class, (state, cmd) -> ack(cmd.replyTo()))
                .onCommand(CancelBlockRelease.class, (state, cmd) -> ack(cmd.replyTo()))
                .onCommand(
                        GetPool.class,
                        (state, cmd) ->
                                Effect()
                                        .reply(
                                                cmd.replyTo(),
                                                new PoolView(null, false, Map.of(), Set.of())));
        handlers.forState(state -> !undefined(state))
                .onCommand(
                        DefinePool.class,
                        (state, cmd) -> named(cmd, () -> onRedefine(state.pool(), cmd)))
                .onCommand(
                        SetDisabled.class,
                        (state, cmd) ->
                                ackOrPersist(
                                        state.pool().disabled() == cmd.disabled(),
                                        cmd.replyTo(),
                                        () ->
                                                cmd.disabled()
                                                        ? new PoolDisabled()
                                                        : new PoolEnabled()))
                .onCommand(DeletePool.class, (state, cmd) -> onDelete(state.pool(), cmd))
                .onCommand(
                        BeginBlockRelease.class,
                        (state, cmd) -> onBeginBlockRelease(state.pool(), cmd))
                .onCommand(
                        FinishBlockRelease.class,
                        (state, cmd) ->
                                ackOrPersist(
                                        state.pool().ownerOf(cmd.block()).isEmpty(),
                                        cmd.replyTo(),
                                        () -> new BlockReleased(cmd.block())))
                .onCommand(
                        CancelBlockRelease.class,
                        (state, cmd) ->
                                ackOrPersist(
                                        !state.pool().releasing().contains(cmd.block()),
                                        cmd.replyTo(),
                                        () -> new BlockReleaseCancelled(cmd.block())))
                .onCommand(ClaimBlock.class, (state, cmd) -> onClaimBlock(state.pool(), cmd))
                .onCommand(
                        ClaimSpecificBlock.class,
                        (state, cmd) -> onClaimSpecificBlock(state.pool(), cmd))
                .onCommand(
                        GetPool.class,
                        (state, cmd) -> {
                            Pool pool = state.pool();
                            return Effect()
                                    .reply(
                                            cmd.replyTo(),
                                            new PoolView(
                                                    pool.spec(),
                                                    pool.disabled(),
                                                    pool.claims(),
                                                    pool.releasing()));
                        });
        return handlers.build();
    }

    /** @return whether the pool is not defined: never, or deleted since */
    private static boolean undefined(State state) {
        return state.pool() == null;
    }

    /** Refuses a definition under another name than this entity's (INVALID_REQUEST); else {@code then}. */
    private ReplyEffect<Event, State> named(
            DefinePool cmd, Supplier<ReplyEffect<Event, State>> then) {
        if (!cmd.spec().name().equals(poolName)) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.INVALID_REQUEST,
                    "pool name " + cmd.spec().name() + " does not match " + poolName);
        }
        return then.get();
    }

    private ReplyEffect<Event, State> onRedefine(Pool pool, DefinePool cmd) {
        PoolSpec spec = cmd.spec();
        PoolSpec current = pool.spec();
        if (!current.sameRangeAs(spec)) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.CONFLICT,
                    "pool "
                            + poolName
                            + " exists as "
                            + current.cidr()
                            + " with /"
                            + current.blockPrefix()
                            + " blocks"
                            + (current.excluded().isEmpty()
                                    ? ""
                                    : " excluding " + current.excluded())
                            + "; its CIDR, block size and excluded ranges cannot change");
        }
        return ackOrPersist(current.equals(spec), cmd.replyTo(), () -> new PoolRedefined(spec));
    }

    private ReplyEffect<Event, State> onDelete(Pool pool, DeletePool cmd) {
        if (!pool.claims().isEmpty()) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.CONFLICT,
                    "pool " + poolName + " still has " + pool.claims().size() + " claimed blocks");
        }
        return persistThenAck(new PoolDeleted(), cmd.replyTo());
    }

    private ReplyEffect<Event, State> onBeginBlockRelease(Pool pool, BeginBlockRelease cmd) {
        Optional<String> owner = pool.ownerOf(cmd.block());
        if (owner.isEmpty() || pool.releasing().contains(cmd.block())) {
            return ack(cmd.replyTo());
        }
        if (!owner.get().equals(cmd.node())) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.AFFINE_TO_OTHER_NODE,
                    "block "
                            + cmd.block()
                            + " is affine to "
                            + owner.get()
                            + ", not "
                            + cmd.node());
        }
        return persistThenAck(new BlockReleaseBegun(cmd.block()), cmd.replyTo());
    }

    private ReplyEffect<Event, State> onClaimBlock(Pool pool, ClaimBlock cmd) {
        // Before the checks below: a claim sent again must get the answer its first attempt got,
        // though that claim may since have filled the node's quota.
        Optional<Cidr> earlier =
                cmd.known() == null
                        ? Optional.empty()
                        : pool.claimOutside(cmd.node(), cmd.known(), cmd.within());
        if (earlier.isPresent()) {
            return answer(cmd.replyTo(), ClaimStatus.CLAIMED, earlier.get(), null);
        }
        if (pool.disabled()) {
            return answer(
                    cmd.replyTo(), ClaimStatus.DISABLED, null, "pool " + poolName + " is disabled");
        }
        Optional<String> refusal = pool.refusalToClaim(cmd.node());
        if (refusal.isPresent()) { // not disabled (above): the node holds maxBlocksPerNode blocks
            return answer(cmd.replyTo(), ClaimStatus.LIMIT_REACHED, null, refusal.get());
        }
        Optional<Cidr> free = pool.firstUnclaimedBlock(cmd.within());
        if (free.isEmpty()) {
            return answer(
                    cmd.replyTo(),
                    ClaimStatus.EXHAUSTED,
                    null,
                    "every block of pool "
                            + poolName
                            + " ("
                            + pool.spec().cidr()
                            + ")"
                            + (cmd.within() == null ? "" : " holding an address of " + cmd.within())
                            + " is claimed");
        }
        return claim(free.get(), cmd.node(), cmd.replyTo());
    }

    private ReplyEffect<Event, State> onClaimSpecificBlock(Pool pool, ClaimSpecificBlock cmd) {
        if (!pool.spec().cidr().contains(cmd.block())
                || cmd.block().prefixLength() != pool.spec().blockPrefix()) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.INVALID_REQUEST,
                    cmd.block() + " is not a block of pool " + poolName);
        }
        if (pool.spec().isWhollyExcluded(cmd.block())) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                    cmd.block() + " lies in an excluded range of pool " + poolName);
        }
        Optional<String> owner = pool.ownerOf(cmd.block());
        if (owner.isPresent() && pool.releasing().contains(cmd.block())) {
            return refuse(
                    cmd.replyTo(),
                    IpamException.Reason.BLOCK_RELEASING,
                    "block " + cmd.block() + " of pool " + poolName + " is being released");
        }
        if (owner.isPresent()) {
            ClaimStatus status =
                    owner.get().equals(cmd.node())
                            ? ClaimStatus.CLAIMED
                            : ClaimStatus.OWNED_BY_OTHER;
            return answer(cmd.replyTo(), status, cmd.block(), owner.get());
        }
        Optional<String> refusal = pool.refusalToClaim(cmd.node());
        if (refusal.isPresent()) {
            return refuse(
                    cmd.replyTo(),
                    pool.disabled()
                            ? IpamException.Reason.POOL_DISABLED
                            : IpamException.Reason.NODE_BLOCK_LIMIT,
                    refusal.get());
        }
        return claim(cmd.block(), cmd.node(), cmd.replyTo());
    }

    /** Answers a claim without changing anything (the claim is not refused: {@link ClaimOutcome}). */
    private ReplyEffect<Event, State> answer(
            ActorRef<StatusReply<ClaimOutcome>> replyTo,
            ClaimStatus status,
            Cidr block,
            String detail) {
        return Effect()
                .reply(replyTo, StatusReply.success(new ClaimOutcome(status, block, detail)));
    }

    /** Persists the claim of the block for the node, then answers CLAIMED. */
    private ReplyEffect<Event, State> claim(
            Cidr block, String node, ActorRef<StatusReply<ClaimOutcome>> replyTo) {
        return Effect()
                .persist(new BlockClaimed(block, node))
                .thenReply(
                        replyTo,
                        s ->
                                StatusReply.success(
                                        new ClaimOutcome(ClaimStatus.CLAIMED, block, null)));
    }

    private <T> ReplyEffect<Event, State> unknownPool(ActorRef<StatusReply<T>> replyTo) {
        return refuse(replyTo, IpamException.Reason.UNKNOWN_POOL, "unknown pool " + poolName);
    }

    @Override
    public EventHandler<State, Event> eventHandler() {
        return newEventHandlerBuilder()
                .forAnyState()
                .onEvent(PoolDefined.class, (state, e) -> new State(Pool.of(e.spec())))
                .onEvent(
                        PoolRedefined.class, inPlace((state, e) -> state.pool().redefine(e.spec())))
                .onEvent(PoolDisabled.class, inPlace((state, e) -> state.pool().setDisabled(true)))
                .onEvent(PoolEnabled.class, inPlace((state, e) -> state.pool().setDisabled(false)))
                .onEvent(PoolDeleted.class, (state, e) -> new State(null))
                .onEvent(
                        BlockClaimed.class,
                        inPlace((state, e) -> state.pool().claim(e.block(), e.node())))
                .onEvent(
                        BlockReleaseBegun.class,
                        inPlace((state, e) -> state.pool().beginRelease(e.block())))
                .onEvent(
                        BlockReleaseCancelled.class,
                        inPlace((state, e) -> state.pool().cancelRelease(e.block())))
                .onEvent(
                        BlockReleased.class, inPlace((state, e) -> state.pool().release(e.block())))
                .build();
    }
}
