package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * How {@link Ipam} talks to the sharded entities: references by id, asks with a timeout whose
 * failures become {@link IpamException}s, and the confirmation of slow replies (see {@link Ipam}).
 */
final class EntityAsks {
    private final ClusterSharding sharding;
    private final Duration askTimeout;
    private final long confirmSlowerThanNanos;

    EntityAsks(ClusterSharding sharding, Duration askTimeout, Duration confirmSlowerThan) {
        this.sharding = sharding;
        this.askTimeout = askTimeout;
        this.confirmSlowerThanNanos = confirmSlowerThan.toNanos();
    }

    EntityRef<PoolEntity.Command> pool(String name) {
        return sharding.entityRefFor(PoolEntity.ENTITY_TYPE_KEY, name);
    }

    EntityRef<BlockEntity.Command> block(Cidr block) {
        return sharding.entityRefFor(BlockEntity.ENTITY_TYPE_KEY, block.entityId());
    }

    EntityRef<NodeEntity.Command> node(String name) {
        return sharding.entityRefFor(NodeEntity.ENTITY_TYPE_KEY, name);
    }

    /** @return the reply; fails with UNAVAILABLE when none comes within the ask timeout */
    <C, R> CompletionStage<R> ask(EntityRef<C> ref, Function<ActorRef<R>, C> command) {
        return ref.ask(command::apply, askTimeout).exceptionally(e -> {
            throw unavailable(ref, e);
        });
    }

    /**
     * @return the success value; fails with INVALID_REQUEST for an error reply (the entity refused)
     *     and UNAVAILABLE when no reply comes in time
     */
    <C, R> CompletionStage<R> askStatus(EntityRef<C> ref, Function<ActorRef<StatusReply<R>>, C> command) {
        return ref.askWithStatus(command::apply, askTimeout).exceptionally(e -> {
            Throwable cause = unwrap(e);
            if (cause instanceof StatusReply.ErrorMessage) {
                throw new IpamException(IpamException.Reason.INVALID_REQUEST, cause.getMessage(), cause);
            }
            throw unavailable(ref, cause);
        });
    }

    /**
     * @return the reply, once {@code confirm} (a read of the same fact) agreed when the reply took
     *     longer than the threshold; fails with UNAVAILABLE when the entity's live incarnation does
     *     not hold what the reply said
     */
    <R> CompletionStage<R> confirmedIfSlow(CompletionStage<R> reply, EntityRef<?> ref,
            Function<R, CompletionStage<Boolean>> confirm) {
        long started = System.nanoTime();
        return reply.thenCompose(value -> {
            if (System.nanoTime() - started < confirmSlowerThanNanos) {
                return CompletableFuture.completedFuture(value);
            }
            return confirm.apply(value).thenApply(confirmed -> {
                if (!confirmed) {
                    throw new IpamException(IpamException.Reason.UNAVAILABLE, "a slow reply from " + ref.getEntityId()
                            + " is not confirmed by the entity's live incarnation (a member paused past failover?)");
                }
                return value;
            });
        });
    }

    private static IpamException unavailable(EntityRef<?> ref, Throwable e) {
        Throwable cause = unwrap(e);
        if (cause instanceof IpamException ipam) {
            return ipam;
        }
        return new IpamException(IpamException.Reason.UNAVAILABLE,
                ref.getEntityId() + " did not answer: " + cause.getMessage(), cause);
    }

    /** @return the IpamException behind a stage's failure, or UNAVAILABLE wrapping anything else */
    static IpamException asIpam(Throwable e) {
        Throwable cause = unwrap(e);
        return cause instanceof IpamException ipam ? ipam
                : new IpamException(IpamException.Reason.UNAVAILABLE, String.valueOf(cause.getMessage()), cause);
    }

    private static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }
}
