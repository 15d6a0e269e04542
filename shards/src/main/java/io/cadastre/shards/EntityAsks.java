package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * How {@link Ipam} talks to the sharded entities: references by id, asks that are sent again
 * after each attempt's timeout until the total has passed ({@link AskTimeouts}), failures turned
 * into {@link IpamException}s (an entity's {@link Refusal} keeps its reason), and the confirmation of slow replies (see {@link ShardedIpam}).
 */
final class EntityAsks {
    private final ClusterSharding sharding;
    private final AskTimeouts timeouts;
    private final long confirmSlowerThanNanos;

    EntityAsks(ClusterSharding sharding, AskTimeouts timeouts) {
        this.sharding = sharding;
        this.timeouts = timeouts;
        this.confirmSlowerThanNanos = timeouts.confirmSlowerThan().toNanos();
    }

    EntityRef<PoolEntity.Command> pool(String name) {
        return sharding.entityRefFor(PoolEntity.ENTITY_TYPE_KEY, name);
    }

    EntityRef<PoolRegistry.Command> registry() {
        return sharding.entityRefFor(PoolRegistry.ENTITY_TYPE_KEY, PoolRegistry.ID);
    }

    EntityRef<BlockEntity.Command> block(Cidr block) {
        return sharding.entityRefFor(BlockEntity.ENTITY_TYPE_KEY, block.entityId());
    }

    EntityRef<NodeEntity.Command> node(String name) {
        return sharding.entityRefFor(NodeEntity.ENTITY_TYPE_KEY, name);
    }

    /**
     * Asks an idempotent command, again after each attempt's timeout.
     *
     * @return the reply; fails with UNAVAILABLE when none comes within the total timeout
     */
    <C, R> CompletionStage<R> ask(EntityRef<C> ref, Function<ActorRef<R>, C> command) {
        return retrying(
                        timeout -> Replies.onReplyingThread(ref.ask(command::apply, timeout)),
                        System.nanoTime() + timeouts.total().toNanos())
                .exceptionally(
                        e -> {
                            throw unavailable(ref, e);
                        });
    }

    /**
     * Asks an idempotent command that answers with a status, again after each attempt's timeout.
     *
     * @return the success value; fails with the {@link Refusal}'s reason when the entity refused,
     *     and UNAVAILABLE when no reply comes within the total timeout (or the error reply is not a
     *     refusal)
     */
    <C, R> CompletionStage<R> askStatus(
            EntityRef<C> ref, Function<ActorRef<StatusReply<R>>, C> command) {
        return statusFailures(
                ref,
                retrying(
                        timeout ->
                                Replies.onReplyingThread(
                                        ref.askWithStatus(command::apply, timeout)),
                        System.nanoTime() + timeouts.total().toNanos()));
    }

    /**
     * Asks a command that must not be repeated (each one changes state anew), once, waiting the
     * total timeout.
     *
     * @return as {@link #askStatus}
     */
    <C, R> CompletionStage<R> askStatusOnce(
            EntityRef<C> ref, Function<ActorRef<StatusReply<R>>, C> command) {
        return statusFailures(
                ref, Replies.onReplyingThread(ref.askWithStatus(command::apply, timeouts.total())));
    }

    private static <R> CompletionStage<R> statusFailures(
            EntityRef<?> ref, CompletionStage<R> reply) {
        return reply.exceptionally(
                e -> {
                    Throwable cause = unwrap(e);
                    if (cause instanceof Refusal refusal) {
                        throw new IpamException(refusal.reason(), refusal.getMessage(), refusal);
                    }
                    throw unavailable(ref, cause);
                });
    }

    /** Runs one attempt with the per-attempt timeout (less if the deadline is nearer); again on a timeout. */
    private <R> CompletionStage<R> retrying(
            Function<Duration, CompletionStage<R>> attempt, long deadlineNanos) {
        long remaining = deadlineNanos - System.nanoTime();
        Duration timeout =
                Duration.ofNanos(Math.max(1, Math.min(remaining, timeouts.perAttempt().toNanos())));
        return attempt.apply(timeout)
                .handle(
                        (reply, error) -> {
                            if (error == null) {
                                return CompletableFuture.completedFuture(reply);
                            }
                            if (unwrap(error) instanceof TimeoutException
                                    && deadlineNanos - System.nanoTime() > 0) {
                                return retrying(attempt, deadlineNanos);
                            }
                            return CompletableFuture.<R>failedFuture(error);
                        })
                .thenCompose(Function.identity());
    }

    /**
     * @return the reply, once {@code confirm} (a read of the same fact) agreed when the reply took
     *     longer than the threshold; fails with UNAVAILABLE when the entity's live incarnation does
     *     not hold what the reply said
     */
    <R> CompletionStage<R> confirmedIfSlow(
            CompletionStage<R> reply,
            EntityRef<?> ref,
            Function<R, CompletionStage<Boolean>> confirm) {
        long started = System.nanoTime();
        return reply.thenCompose(
                value -> {
                    if (System.nanoTime() - started < confirmSlowerThanNanos) {
                        return CompletableFuture.completedFuture(value);
                    }
                    return confirm.apply(value)
                            .thenApply(
                                    confirmed -> {
                                        if (!confirmed) {
                                            throw new IpamException(
                                                    IpamException.Reason.UNAVAILABLE,
                                                    "a slow reply from "
                                                            + ref.getEntityId()
                                                            + " is not confirmed by the entity's live incarnation (a member paused past failover?)");
                                        }
                                        return value;
                                    });
                });
    }

    /**
     * Reads every block at once ({@code BlockEntity.GetBlock}, as {@link #ask}).
     *
     * @return each block's view, in the order given; fails with UNAVAILABLE when one does not answer
     */
    CompletionStage<List<BlockEntity.BlockView>> blockViews(List<Cidr> blocks) {
        List<CompletableFuture<BlockEntity.BlockView>> views =
                blocks.stream()
                        .map(b -> ask(block(b), BlockEntity.GetBlock::new).toCompletableFuture())
                        .toList();
        return CompletableFuture.allOf(views.toArray(CompletableFuture[]::new))
                .thenApply(v -> views.stream().map(CompletableFuture::join).toList());
    }

    private static IpamException unavailable(EntityRef<?> ref, Throwable e) {
        Throwable cause = unwrap(e);
        if (cause instanceof IpamException ipam) {
            return ipam;
        }
        return new IpamException(
                IpamException.Reason.UNAVAILABLE,
                ref.getEntityId() + " did not answer: " + cause.getMessage(),
                cause);
    }

    /** @return the IpamException behind a stage's failure, or UNAVAILABLE wrapping anything else */
    static IpamException asIpam(Throwable e) {
        Throwable cause = unwrap(e);
        return cause instanceof IpamException ipam
                ? ipam
                : new IpamException(
                        IpamException.Reason.UNAVAILABLE,
                        String.valueOf(cause.getMessage()),
                        cause);
    }

    private static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }
}
