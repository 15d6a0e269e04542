package io.cadastre.shards;

import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * Tells every agent, fast, that the routing facts of a pool or a node changed, so that it reads
 * them again from the entity that holds them: a block claimed ({@link Ipam}), a block released
 * ({@link BlockReleases}), a node's peer published, an address borrowed or given back. A hint
 * carries no fact, only where to look: the entities stay the single source of truth, a reader
 * can never apply a stale fact out of order, and a lost hint costs only time, since every agent
 * also reads everything again periodically.
 *
 * <p>Sent over one cluster-wide Pekko {@link Topic} ({@code cadastre-mesh-hints}): to the
 * subscribers of every member, directly (no gossip delay once the members know each other's topic
 * instances). One per actor system ({@link #get}); thread-safe.
 */
public final class MeshHints implements Extension {
    /** A hint: something about a pool's claims or a node's routing facts changed. */
    public sealed interface Hint extends CborSerializable permits PoolChanged, NodeChanged {}

    /** The pool's claims changed (a block claimed or released): read the pool again. */
    public record PoolChanged(String pool) implements Hint {}

    /** The node's peer or its borrowed addresses changed, or it was removed: read the node again. */
    public record NodeChanged(String node) implements Hint {}

    private static final ExtensionId<MeshHints> ID =
            new ExtensionId<>() {
                @Override
                public MeshHints createExtension(ActorSystem<?> system) {
                    return new MeshHints(
                            system.systemActorOf(
                                    Topic.create(Hint.class, "cadastre-mesh-hints"),
                                    "cadastre-mesh-hints",
                                    Props.empty()));
                }
            };

    private final ActorRef<Topic.Command<Hint>> topic;

    private MeshHints(ActorRef<Topic.Command<Hint>> topic) {
        this.topic = topic;
    }

    /** @return the actor system's hints, created on first use */
    public static MeshHints get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    /** Tells every subscriber that the pool's claims changed. */
    public void poolChanged(String pool) {
        topic.tell(Topic.publish(new PoolChanged(pool)));
    }

    /** Tells every subscriber that the node's routing facts changed. */
    public void nodeChanged(String node) {
        topic.tell(Topic.publish(new NodeChanged(node)));
    }

    /** Subscribes {@code subscriber} to every hint, this member's included, until it stops. */
    public void subscribe(ActorRef<Hint> subscriber) {
        topic.tell(Topic.subscribe(subscriber));
    }
}
