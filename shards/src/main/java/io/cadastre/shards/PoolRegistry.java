package io.cadastre.shards;

import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.SpecialRanges;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;

/**
 * The cluster's catalogue of pools: one entity (id {@link #ID}), the single writer that decides
 * whether a pool may exist — its name is free and its range overlaps no other pool's — so two
 * concurrent creations of overlapping pools cannot both succeed. It also mirrors whether each pool
 * is disabled, for choosing pools; the {@link PoolEntity} of each pool stays the source of truth
 * for its claims and for refusing claims while disabled.
 *
 * <p>A pool is registered here before its {@code PoolEntity} is defined, and unregistered after
 * the entity is deleted ({@link Pools}): every step is idempotent, so a crash between two leaves a
 * state that repeating the operation completes.
 */
public final class PoolRegistry
        extends CadastreEntity<PoolRegistry.Command, PoolRegistry.Event, PoolRegistry.State> {

    public static final EntityTypeKey<Command> ENTITY_TYPE_KEY =
            EntityTypeKey.create(Command.class, "PoolRegistry");

    /** The one entity id. */
    public static final String ID = "pools";

    /** Registers the entity with cluster sharding. */
    public static void init(ActorSystem<?> system) {
        initSharding(system, ENTITY_TYPE_KEY, CadastreMetrics.ENTITY_POOL_REGISTRY, FACTORY);
    }

    /** @return the registry outside sharding ({@link CadastreEntity#unfenced}) */
    public static Behavior<Command> create() {
        return unfenced(FACTORY, ID);
    }

    /** The one entity's id is always {@link #ID}. */
    private static final Factory<Command> FACTORY =
            (id, fence, recovery) -> new PoolRegistry(fence, recovery);

    // ---- commands ----

    public sealed interface Command extends CborSerializable
            permits Register, SetDisabled, Unregister, GetCatalog {}

    /**
     * Registers a pool. A pool of that name with the same definition is {@code UNCHANGED}; with
     * the same range (CIDR, block size, excluded ranges) but other settings it is {@code UPDATED}
     * when {@code mayUpdate} (the agent's configured pools), else a {@code CONFLICT}; with another
     * range, a range overlapping another pool's or a special-purpose range ({@link
     * io.cadastre.ipam.SpecialRanges}), a {@code CONFLICT}.
     */
    public record Register(
            PoolSpec spec, boolean mayUpdate, ActorRef<StatusReply<Registration>> replyTo)
            implements Command {}

    /** Mirrors a pool's disabled flag; refused ({@link Refusal}) with UNKNOWN_POOL for an unknown pool. */
    public record SetDisabled(String name, boolean disabled, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /** Removes a pool; an unknown one is success. */
    public record Unregister(String name, ActorRef<StatusReply<Done>> replyTo) implements Command {}

    public record GetCatalog(ActorRef<Catalog> replyTo) implements Command {}

    // ---- replies ----

    public enum Outcome {
        CREATED,
        UNCHANGED,
        UPDATED,
        CONFLICT
    }

    /** @param detail why, for a CONFLICT (names the pool in the way); else {@code null} */
    public record Registration(Outcome outcome, String detail) implements CborSerializable {}

    /**
     * Every registered pool.
     *
     * @param pools name → definition, sorted by name
     * @param disabled the names of disabled pools
     */
    public record Catalog(Map<String, PoolSpec> pools, Set<String> disabled)
            implements CborSerializable {
        public Catalog {
            pools = new TreeMap<>(pools);
            disabled = new TreeSet<>(disabled);
        }

        public Optional<PoolSpec> spec(String name) {
            return Optional.ofNullable(pools.get(name));
        }

        public boolean isDisabled(String name) {
            return disabled.contains(name);
        }

        /** @return the pool whose range holds the canonical address, if any (pools do not overlap) */
        public Optional<PoolSpec> containing(String address) {
            return pools.values().stream().filter(p -> p.cidr().contains(address)).findFirst();
        }
    }

    // ---- events ----

    public sealed interface Event extends CborSerializable
            permits PoolRegistered, PoolRespecified, PoolAvailabilityChanged, PoolUnregistered {}

    public record PoolRegistered(PoolSpec spec) implements Event {}

    public record PoolRespecified(PoolSpec spec) implements Event {}

    public record PoolAvailabilityChanged(String name, boolean disabled) implements Event {}

    public record PoolUnregistered(String name) implements Event {}

    // ---- state ----

    /** Mutated only by the event handler. */
    public record State(TreeMap<String, PoolSpec> pools, TreeSet<String> disabled)
            implements CborSerializable, MutableState<State> {
        @Override
        public State copy() {
            return new State(new TreeMap<>(pools), new TreeSet<>(disabled));
        }
    }

    private PoolRegistry(MemberFence fence, CadastreMetrics.Recovery recovery) {
        super(ENTITY_TYPE_KEY, ID, fence, recovery);
    }

    @Override
    public State emptyState() {
        return new State(new TreeMap<>(), new TreeSet<>());
    }

    @Override
    CommandHandlerWithReply<Command, Event, State> handlers() {
        return newCommandHandlerWithReplyBuilder()
                .forAnyState()
                .onCommand(Register.class, this::onRegister)
                .onCommand(
                        SetDisabled.class,
                        (state, cmd) -> {
                            if (!state.pools().containsKey(cmd.name())) {
                                return refuse(
                                        cmd.replyTo(),
                                        IpamException.Reason.UNKNOWN_POOL,
                                        "unknown pool " + cmd.name());
                            }
                            return ackOrPersist(
                                    state.disabled().contains(cmd.name()) == cmd.disabled(),
                                    cmd.replyTo(),
                                    () -> new PoolAvailabilityChanged(cmd.name(), cmd.disabled()));
                        })
                .onCommand(
                        Unregister.class,
                        (state, cmd) ->
                                ackOrPersist(
                                        !state.pools().containsKey(cmd.name()),
                                        cmd.replyTo(),
                                        () -> new PoolUnregistered(cmd.name())))
                .onCommand(
                        GetCatalog.class,
                        (state, cmd) ->
                                Effect()
                                        .reply(
                                                cmd.replyTo(),
                                                new Catalog(state.pools(), state.disabled())))
                .build();
    }

    private ReplyEffect<Event, State> onRegister(State state, Register cmd) {
        PoolSpec spec = cmd.spec();
        PoolSpec known = state.pools().get(spec.name());
        if (known != null) {
            if (known.equals(spec)) {
                return Effect()
                        .reply(
                                cmd.replyTo(),
                                StatusReply.success(new Registration(Outcome.UNCHANGED, null)));
            }
            if (!known.sameRangeAs(spec)) {
                return conflict(
                        cmd,
                        "pool "
                                + spec.name()
                                + " exists as "
                                + describe(known)
                                + "; its CIDR, block size and excluded ranges cannot change");
            }
            if (!cmd.mayUpdate()) {
                return conflict(
                        cmd,
                        "pool " + spec.name() + " exists with other settings: " + describe(known));
            }
            return Effect()
                    .persist(new PoolRespecified(spec))
                    .thenReply(
                            cmd.replyTo(),
                            s -> StatusReply.success(new Registration(Outcome.UPDATED, null)));
        }
        Optional<String> special = SpecialRanges.refusal(spec.cidr());
        if (special
                .isPresent()) { // the edges refuse these first; the single writer is the last line
            return conflict(cmd, "pool " + spec.name() + ": " + special.get());
        }
        Optional<PoolSpec> overlapping =
                state.pools().values().stream()
                        .filter(p -> p.cidr().overlaps(spec.cidr()))
                        .findFirst();
        if (overlapping.isPresent()) {
            return conflict(
                    cmd,
                    "pool "
                            + spec.name()
                            + " ("
                            + spec.cidr()
                            + ") overlaps pool "
                            + overlapping.get().name()
                            + " ("
                            + overlapping.get().cidr()
                            + ")");
        }
        return Effect()
                .persist(new PoolRegistered(spec))
                .thenReply(
                        cmd.replyTo(),
                        s -> StatusReply.success(new Registration(Outcome.CREATED, null)));
    }

    private ReplyEffect<Event, State> conflict(Register cmd, String detail) {
        return Effect()
                .reply(
                        cmd.replyTo(),
                        StatusReply.success(new Registration(Outcome.CONFLICT, detail)));
    }

    private static String describe(PoolSpec spec) {
        return spec.cidr()
                + " with /"
                + spec.blockPrefix()
                + " blocks"
                + (spec.excluded().isEmpty() ? "" : ", excluding " + spec.excluded())
                + ", strictAffinity "
                + spec.strictAffinity()
                + ", allowBorrowing "
                + spec.allowBorrowing()
                + ", maxBlocksPerNode "
                + spec.maxBlocksPerNode()
                + (spec.nodeSelector().isEmpty()
                        ? ""
                        : ", nodeSelector '" + spec.nodeSelector() + "'");
    }

    @Override
    public EventHandler<State, Event> eventHandler() {
        return newEventHandlerBuilder()
                .forAnyState()
                .onEvent(
                        PoolRegistered.class,
                        inPlace((state, e) -> state.pools().put(e.spec().name(), e.spec())))
                .onEvent(
                        PoolRespecified.class,
                        inPlace((state, e) -> state.pools().put(e.spec().name(), e.spec())))
                .onEvent(
                        PoolAvailabilityChanged.class,
                        inPlace(
                                (state, e) -> {
                                    if (e.disabled()) {
                                        state.disabled().add(e.name());
                                    } else {
                                        state.disabled().remove(e.name());
                                    }
                                }))
                .onEvent(
                        PoolUnregistered.class,
                        inPlace(
                                (state, e) -> {
                                    state.pools().remove(e.name());
                                    state.disabled().remove(e.name());
                                }))
                .build();
    }
}
