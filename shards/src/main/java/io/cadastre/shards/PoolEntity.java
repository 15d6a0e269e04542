package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.Pool;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.PersistenceId;
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
        initSharding(system, ENTITY_TYPE_KEY, CadastreMetrics.ENTITY_POOL, PoolEntity::create);
    }

    /** @param poolName the pool's name, the entity id */
    public static Behavior<Command> create(String poolName) {
        return create(poolName, MemberFence.NEVER_CLOSED, CadastreMetrics.Recovery.NONE);
    }

    /**
     * @param fence closes this entity to commands while its member may have been replaced
     * @param recovery told how long the entity took from its start to {@code RecoveryCompleted}
     */
    public static Behavior<Command> create(
            String poolName, MemberFence fence, CadastreMetrics.Recovery recovery) {
        return new PoolEntity(poolName, fence, recovery);
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
     */
    public record ClaimBlock(
            String node, RangeSet within, ActorRef<StatusReply<ClaimOutcome>> replyTo)
            implements Command {}

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

    /** @param pool the pool, or {@code null} before it is defined */
    public record State(Pool pool) implements CborSerializable {}

    private final String poolName;

    private PoolEntity(String poolName, MemberFence fence, CadastreMetrics.Recovery recovery) {
        super(PersistenceId.of(ENTITY_TYPE_KEY.name(), poolName), fence, recovery);
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

    @Override
    State copy(State state) {
        return state.pool() == null ? state : new State(state.pool().copy());
    }

    @Override
    CommandHandlerWithReply<Command, Event, State> handlers() {
        return newCommandHandlerWithReplyBuilder()
                .forAnyState()
                .onCommand(DefinePool.class, this::onDefine)
                .onCommand(SetDisabled.class, this::onSetDisabled)
                .onCommand(DeletePool.class, this::onDelete)
                .onCommand(BeginBlockRelease.class, this::onBeginBlockRelease)
                .onCommand(
                        FinishBlockRelease.class,
                        (state, cmd) ->
                                ackOrPersist(
                                        state.pool() == null
                                                || state.pool().ownerOf(cmd.block()).isEmpty(),
                                        cmd.replyTo(),
                                        () -> new BlockReleased(cmd.block())))
                .onCommand(
                        CancelBlockRelease.class,
                        (state, cmd) ->
                                ackOrPersist(
                                        state.pool() == null
                                                || !state.pool().releasing().contains(cmd.block()),
                                        cmd.replyTo(),
                                        () -> new BlockReleaseCancelled(cmd.block())))
                .onCommand(ClaimBlock.class, this::onClaimBlock)
                .onCommand(ClaimSpecificBlock.class, this::onClaimSpecificBlock)
                .onCommand(
                        GetPool.class, (state, cmd) -> Effect().reply(cmd.replyTo(), view(state)))
                .build();
    }

    private ReplyEffect<Event, State> onDefine(State state, DefinePool cmd) {
        PoolSpec spec = cmd.spec();
        if (!spec.name().equals(poolName)) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    IpamException.Reason.INVALID_REQUEST,
                                    "pool name " + spec.name() + " does not match " + poolName));
        }
        if (state.pool() == null) {
            return Effect()
                    .persist(new PoolDefined(spec))
                    .thenReply(cmd.replyTo(), s -> StatusReply.ack());
        }
        PoolSpec current = state.pool().spec();
        if (!current.sameRangeAs(spec)) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
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
                                            + "; its CIDR, block size and excluded ranges cannot change"));
        }
        return ackOrPersist(current.equals(spec), cmd.replyTo(), () -> new PoolRedefined(spec));
    }

    private ReplyEffect<Event, State> onSetDisabled(State state, SetDisabled cmd) {
        if (state.pool() == null) {
            return Effect().reply(cmd.replyTo(), unknownPool());
        }
        return ackOrPersist(
                state.pool().disabled() == cmd.disabled(),
                cmd.replyTo(),
                () -> cmd.disabled() ? new PoolDisabled() : new PoolEnabled());
    }

    private ReplyEffect<Event, State> onDelete(State state, DeletePool cmd) {
        if (state.pool() == null) {
            return Effect().reply(cmd.replyTo(), StatusReply.ack());
        }
        if (!state.pool().claims().isEmpty()) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    IpamException.Reason.CONFLICT,
                                    "pool "
                                            + poolName
                                            + " still has "
                                            + state.pool().claims().size()
                                            + " claimed blocks"));
        }
        return Effect().persist(new PoolDeleted()).thenReply(cmd.replyTo(), s -> StatusReply.ack());
    }

    private ReplyEffect<Event, State> onBeginBlockRelease(State state, BeginBlockRelease cmd) {
        Optional<String> owner =
                state.pool() == null ? Optional.empty() : state.pool().ownerOf(cmd.block());
        if (owner.isEmpty() || state.pool().releasing().contains(cmd.block())) {
            return Effect().reply(cmd.replyTo(), StatusReply.ack());
        }
        if (!owner.get().equals(cmd.node())) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    IpamException.Reason.AFFINE_TO_OTHER_NODE,
                                    "block "
                                            + cmd.block()
                                            + " is affine to "
                                            + owner.get()
                                            + ", not "
                                            + cmd.node()));
        }
        return Effect()
                .persist(new BlockReleaseBegun(cmd.block()))
                .thenReply(cmd.replyTo(), s -> StatusReply.ack());
    }

    private ReplyEffect<Event, State> onClaimBlock(State state, ClaimBlock cmd) {
        Pool pool = state.pool();
        if (pool == null) {
            return Effect().reply(cmd.replyTo(), unknownPool());
        }
        if (pool.disabled()) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            StatusReply.success(
                                    new ClaimOutcome(
                                            ClaimStatus.DISABLED,
                                            null,
                                            "pool " + poolName + " is disabled")));
        }
        Optional<String> refusal = pool.refusalToClaim(cmd.node());
        if (refusal.isPresent()) { // not disabled (above): the node holds maxBlocksPerNode blocks
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            StatusReply.success(
                                    new ClaimOutcome(
                                            ClaimStatus.LIMIT_REACHED, null, refusal.get())));
        }
        Optional<Cidr> free = pool.firstUnclaimedBlock(cmd.within());
        if (free.isEmpty()) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            StatusReply.success(
                                    new ClaimOutcome(
                                            ClaimStatus.EXHAUSTED,
                                            null,
                                            "every block of pool "
                                                    + poolName
                                                    + " ("
                                                    + pool.spec().cidr()
                                                    + ")"
                                                    + (cmd.within() == null
                                                            ? ""
                                                            : " holding an address of "
                                                                    + cmd.within())
                                                    + " is claimed")));
        }
        return Effect()
                .persist(new BlockClaimed(free.get(), cmd.node()))
                .thenReply(
                        cmd.replyTo(),
                        s ->
                                StatusReply.success(
                                        new ClaimOutcome(ClaimStatus.CLAIMED, free.get(), null)));
    }

    private ReplyEffect<Event, State> onClaimSpecificBlock(State state, ClaimSpecificBlock cmd) {
        Pool pool = state.pool();
        if (pool == null) {
            return Effect().reply(cmd.replyTo(), unknownPool());
        }
        if (!pool.spec().cidr().contains(cmd.block())
                || cmd.block().prefixLength() != pool.spec().blockPrefix()) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    IpamException.Reason.INVALID_REQUEST,
                                    cmd.block() + " is not a block of pool " + poolName));
        }
        if (pool.spec().isWhollyExcluded(cmd.block())) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                    cmd.block()
                                            + " lies in an excluded range of pool "
                                            + poolName));
        }
        Optional<String> owner = pool.ownerOf(cmd.block());
        if (owner.isPresent() && pool.releasing().contains(cmd.block())) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    IpamException.Reason.BLOCK_RELEASING,
                                    "block "
                                            + cmd.block()
                                            + " of pool "
                                            + poolName
                                            + " is being released"));
        }
        if (owner.isPresent()) {
            ClaimStatus status =
                    owner.get().equals(cmd.node())
                            ? ClaimStatus.CLAIMED
                            : ClaimStatus.OWNED_BY_OTHER;
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            StatusReply.success(
                                    new ClaimOutcome(status, cmd.block(), owner.get())));
        }
        Optional<String> refusal = pool.refusalToClaim(cmd.node());
        if (refusal.isPresent()) {
            return Effect()
                    .reply(
                            cmd.replyTo(),
                            Refusal.reply(
                                    pool.disabled()
                                            ? IpamException.Reason.POOL_DISABLED
                                            : IpamException.Reason.NODE_BLOCK_LIMIT,
                                    refusal.get()));
        }
        return Effect()
                .persist(new BlockClaimed(cmd.block(), cmd.node()))
                .thenReply(
                        cmd.replyTo(),
                        s ->
                                StatusReply.success(
                                        new ClaimOutcome(ClaimStatus.CLAIMED, cmd.block(), null)));
    }

    private <T> StatusReply<T> unknownPool() {
        return Refusal.reply(IpamException.Reason.UNKNOWN_POOL, "unknown pool " + poolName);
    }

    private static PoolView view(State state) {
        Pool pool = state.pool();
        return pool == null
                ? new PoolView(null, false, Map.of(), Set.of())
                : new PoolView(pool.spec(), pool.disabled(), pool.claims(), pool.releasing());
    }

    @Override
    public EventHandler<State, Event> eventHandler() {
        return newEventHandlerBuilder()
                .forAnyState()
                .onEvent(PoolDefined.class, (state, e) -> new State(Pool.of(e.spec())))
                .onEvent(
                        PoolRedefined.class,
                        (state, e) -> {
                            state.pool().redefine(e.spec());
                            return state;
                        })
                .onEvent(
                        PoolDisabled.class,
                        (state, e) -> {
                            state.pool().setDisabled(true);
                            return state;
                        })
                .onEvent(
                        PoolEnabled.class,
                        (state, e) -> {
                            state.pool().setDisabled(false);
                            return state;
                        })
                .onEvent(PoolDeleted.class, (state, e) -> new State(null))
                .onEvent(
                        BlockClaimed.class,
                        (state, e) -> {
                            state.pool().claim(e.block(), e.node());
                            return state;
                        })
                .onEvent(
                        BlockReleaseBegun.class,
                        (state, e) -> {
                            state.pool().beginRelease(e.block());
                            return state;
                        })
                .onEvent(
                        BlockReleaseCancelled.class,
                        (state, e) -> {
                            state.pool().cancelRelease(e.block());
                            return state;
                        })
                .onEvent(
                        BlockReleased.class,
                        (state, e) -> {
                            state.pool().release(e.block());
                            return state;
                        })
                .build();
    }
}
