package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.Pool;
import io.cadastre.ipam.PoolSpec;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.SnapshotAdapter;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * One pool, sharded by its name: the single writer of the pool's definition and of block
 * affinity — which block belongs to which node. A claim is persisted before the reply, so two
 * nodes can never both be told a block is theirs.
 */
public final class PoolEntity
        extends EventSourcedBehaviorWithEnforcedReplies<PoolEntity.Command, PoolEntity.Event, PoolEntity.State> {

    public static final EntityTypeKey<Command> ENTITY_TYPE_KEY = EntityTypeKey.create(Command.class, "Pool");

    /** Registers the entity with cluster sharding. */
    public static void init(ActorSystem<?> system) {
        MemberFence fence = MemberFence.get(system);
        ClusterSharding.get(system).init(Entity.of(ENTITY_TYPE_KEY, ctx -> create(ctx.getEntityId(), fence)));
    }

    /** @param poolName the pool's name, the entity id */
    public static Behavior<Command> create(String poolName) {
        return create(poolName, MemberFence.NEVER_CLOSED);
    }

    /** @param fence closes this entity to commands while its member may have been replaced */
    public static Behavior<Command> create(String poolName, MemberFence fence) {
        return new PoolEntity(poolName, fence);
    }

    // ---- commands ----

    public sealed interface Command extends CborSerializable
            permits DefinePool, ClaimBlock, ClaimSpecificBlock, GetPool {}

    /**
     * Creates the pool, or updates its flags. Refused (error reply) when the pool exists with
     * another CIDR or block size, or the name does not match the entity.
     */
    public record DefinePool(PoolSpec spec, ActorRef<StatusReply<Done>> replyTo) implements Command {}

    /** Claims the lowest unclaimed block for {@code node}. */
    public record ClaimBlock(String node, ActorRef<StatusReply<ClaimOutcome>> replyTo) implements Command {}

    /** Claims one given block (for a specific address) for {@code node}; idempotent. */
    public record ClaimSpecificBlock(Cidr block, String node, ActorRef<StatusReply<ClaimOutcome>> replyTo)
            implements Command {}

    public record GetPool(ActorRef<PoolView> replyTo) implements Command {}

    // ---- replies ----

    public enum ClaimStatus { CLAIMED, EXHAUSTED, REFUSED, OWNED_BY_OTHER }

    /**
     * @param status what happened
     * @param block the block claimed (CLAIMED) or asked for (OWNED_BY_OTHER), else {@code null}
     * @param detail the owner (OWNED_BY_OTHER) or the reason (REFUSED, EXHAUSTED)
     */
    public record ClaimOutcome(ClaimStatus status, Cidr block, String detail) implements CborSerializable {}

    /**
     * @param spec the definition, or {@code null} when the pool is not defined
     * @param disabled whether new blocks are refused
     * @param claims block → affine node
     */
    public record PoolView(PoolSpec spec, boolean disabled, Map<Cidr, String> claims) implements CborSerializable {
        public boolean defined() {
            return spec != null;
        }
    }

    // ---- events ----

    public sealed interface Event extends CborSerializable permits PoolDefined, PoolRedefined, BlockClaimed {}

    public record PoolDefined(PoolSpec spec) implements Event {}

    public record PoolRedefined(PoolSpec spec) implements Event {}

    public record BlockClaimed(Cidr block, String node) implements Event {}

    // ---- state ----

    /** @param pool the pool, or {@code null} before it is defined */
    public record State(Pool pool) implements CborSerializable {}

    private final String poolName;

    private final MemberFence fence;

    private PoolEntity(String poolName, MemberFence fence) {
        super(PersistenceId.of(ENTITY_TYPE_KEY.name(), poolName));
        this.fence = fence;
        this.poolName = poolName;
    }

    @Override
    public State emptyState() {
        return new State(null);
    }

    @Override
    public RetentionCriteria retentionCriteria() {
        return RetentionCriteria.snapshotEvery(100, 2);
    }

    @Override
    public SnapshotAdapter<State> snapshotAdapter() {
        return new CopyingSnapshotAdapter<>(state -> state.pool() == null ? state : new State(state.pool().copy()));
    }

    @Override
    public CommandHandlerWithReply<Command, Event, State> commandHandler() {
        return fence.fenced(persistenceId().id(), handlers(), () -> Effect().noReply());
    }

    private CommandHandlerWithReply<Command, Event, State> handlers() {
        return newCommandHandlerWithReplyBuilder()
                .forAnyState()
                .onCommand(DefinePool.class, this::onDefine)
                .onCommand(ClaimBlock.class, this::onClaimBlock)
                .onCommand(ClaimSpecificBlock.class, this::onClaimSpecificBlock)
                .onCommand(GetPool.class, (state, cmd) -> Effect().reply(cmd.replyTo(), view(state)))
                .build();
    }

    private ReplyEffect<Event, State> onDefine(State state, DefinePool cmd) {
        PoolSpec spec = cmd.spec();
        if (!spec.name().equals(poolName)) {
            return Effect().reply(cmd.replyTo(), StatusReply.error("pool name " + spec.name() + " does not match " + poolName));
        }
        if (state.pool() == null) {
            return Effect().persist(new PoolDefined(spec)).thenReply(cmd.replyTo(), s -> StatusReply.ack());
        }
        PoolSpec current = state.pool().spec();
        if (!current.cidr().equals(spec.cidr()) || current.blockPrefix() != spec.blockPrefix()) {
            return Effect().reply(cmd.replyTo(), StatusReply.error("pool " + poolName + " exists as " + current.cidr()
                    + " with /" + current.blockPrefix() + " blocks; its CIDR and block size cannot change"));
        }
        if (current.equals(spec)) {
            return Effect().reply(cmd.replyTo(), StatusReply.ack());
        }
        return Effect().persist(new PoolRedefined(spec)).thenReply(cmd.replyTo(), s -> StatusReply.ack());
    }

    private ReplyEffect<Event, State> onClaimBlock(State state, ClaimBlock cmd) {
        Pool pool = state.pool();
        if (pool == null) {
            return Effect().reply(cmd.replyTo(), StatusReply.error("unknown pool " + poolName));
        }
        Optional<String> refusal = pool.refusalToClaim(cmd.node());
        if (refusal.isPresent()) {
            return Effect().reply(cmd.replyTo(), StatusReply.success(
                    new ClaimOutcome(ClaimStatus.REFUSED, null, refusal.get())));
        }
        Optional<Cidr> free = pool.firstUnclaimedBlock();
        if (free.isEmpty()) {
            return Effect().reply(cmd.replyTo(), StatusReply.success(new ClaimOutcome(ClaimStatus.EXHAUSTED, null,
                    "every block of pool " + poolName + " (" + pool.spec().cidr() + ") is claimed")));
        }
        return Effect().persist(new BlockClaimed(free.get(), cmd.node())).thenReply(cmd.replyTo(),
                s -> StatusReply.success(new ClaimOutcome(ClaimStatus.CLAIMED, free.get(), null)));
    }

    private ReplyEffect<Event, State> onClaimSpecificBlock(State state, ClaimSpecificBlock cmd) {
        Pool pool = state.pool();
        if (pool == null) {
            return Effect().reply(cmd.replyTo(), StatusReply.error("unknown pool " + poolName));
        }
        if (!pool.spec().cidr().contains(cmd.block()) || cmd.block().prefixLength() != pool.spec().blockPrefix()) {
            return Effect().reply(cmd.replyTo(), StatusReply.error(cmd.block() + " is not a block of pool " + poolName));
        }
        Optional<String> owner = pool.ownerOf(cmd.block());
        if (owner.isPresent()) {
            ClaimStatus status = owner.get().equals(cmd.node()) ? ClaimStatus.CLAIMED : ClaimStatus.OWNED_BY_OTHER;
            return Effect().reply(cmd.replyTo(), StatusReply.success(new ClaimOutcome(status, cmd.block(), owner.get())));
        }
        Optional<String> refusal = pool.refusalToClaim(cmd.node());
        if (refusal.isPresent()) {
            return Effect().reply(cmd.replyTo(), StatusReply.success(
                    new ClaimOutcome(ClaimStatus.REFUSED, cmd.block(), refusal.get())));
        }
        return Effect().persist(new BlockClaimed(cmd.block(), cmd.node())).thenReply(cmd.replyTo(),
                s -> StatusReply.success(new ClaimOutcome(ClaimStatus.CLAIMED, cmd.block(), null)));
    }

    private static PoolView view(State state) {
        Pool pool = state.pool();
        return pool == null ? new PoolView(null, false, Map.of()) : new PoolView(pool.spec(), pool.disabled(), pool.claims());
    }

    @Override
    public EventHandler<State, Event> eventHandler() {
        return newEventHandlerBuilder()
                .forAnyState()
                .onEvent(PoolDefined.class, (state, e) -> new State(Pool.of(e.spec())))
                .onEvent(PoolRedefined.class, (state, e) -> {
                    state.pool().redefine(e.spec());
                    return state;
                })
                .onEvent(BlockClaimed.class, (state, e) -> {
                    state.pool().claim(e.block(), e.node());
                    return state;
                })
                .build();
    }
}
