package io.cadastre.shards;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * The entity incarnations running on this member, by type and id, so that {@link EntityAsks} can
 * send to a local entity directly instead of through its shard region.
 *
 * <p>Why: through sharding, every ask to an entity goes to the shard region and then the shard,
 * two actors on Pekko's internal dispatcher, before the entity; on a node agent with the embedded
 * journal every entity is local, and those two hops, with the thread wake-ups they cost, were
 * about a tenth of the agent's CPU per IPAM call (the benchmark suite's {@code agent-cost}
 * profile). A node's own entity is local on any member that hosts it.
 *
 * <p>Why it is safe: an incarnation is listed from its start until it stops ({@link PostStop}),
 * so a direct send reaches the same live incarnation sharding would deliver to, or, in the moment
 * an incarnation stops (passivation, hand-off, its member leaving), dead letters: the ask then
 * times out and is sent again, as for a member that crashed ({@link AskTimeouts}): every ask
 * through {@link EntityAsks} is retried, so every command it sends is one that may be repeated.
 * An incarnation that starts while the old one is still listed replaces it; the old
 * one's stop then leaves the new one listed. Thread-safe.
 */
public final class LocalEntities implements Extension {
    private final ConcurrentMap<Key, ActorRef<?>> running = new ConcurrentHashMap<>();

    private record Key(String type, String entityId) {}

    private static final ExtensionId<LocalEntities> ID =
            new ExtensionId<>() {
                @Override
                public LocalEntities createExtension(ActorSystem<?> system) {
                    return new LocalEntities();
                }
            };

    /** @return the actor system's registry */
    public static LocalEntities get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    /** A registry of its own: for entity asks in unit tests. */
    static LocalEntities empty() {
        return new LocalEntities();
    }

    /**
     * @return the incarnation of the entity running on this member, when one is
     */
    @SuppressWarnings("unchecked")
    <C> Optional<ActorRef<C>> find(EntityTypeKey<C> type, String entityId) {
        return Optional.ofNullable((ActorRef<C>) running.get(new Key(type.name(), entityId)));
    }

    /**
     * @return the entity's behaviour, listed here from its start until it stops
     */
    <C> Behavior<C> listed(EntityTypeKey<C> type, String entityId, Behavior<C> entity) {
        Key key = new Key(type.name(), entityId);
        return Behaviors.setup(
                context -> {
                    ActorRef<C> self = context.getSelf();
                    running.put(key, self);
                    return Behaviors.intercept(() -> new Unlisting<>(key, self), entity);
                });
    }

    /** Unlists the incarnation when it stops; passes everything on unchanged. */
    private final class Unlisting<C> extends BehaviorInterceptor<C, C> {
        private final Key key;
        private final ActorRef<C> self;

        @SuppressWarnings("unchecked")
        Unlisting(Key key, ActorRef<C> self) {
            super((Class<C>) (Class<?>) Object.class);
            this.key = key;
            this.self = self;
        }

        @Override
        public Behavior<C> aroundReceive(
                TypedActorContext<C> context, C message, ReceiveTarget<C> target) {
            return target.apply(context, message);
        }

        @Override
        public Behavior<C> aroundSignal(
                TypedActorContext<C> context, Signal signal, SignalTarget<C> target) {
            if (signal instanceof PostStop) {
                running.remove(key, self);
            }
            return target.apply(context, signal);
        }
    }
}
