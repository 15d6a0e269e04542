package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * The one typed client of the sharded entities, for {@link Ipam}'s flows, the routing layer's
 * reads ({@link MeshReads}) and the admin API's: references by id, asks that are sent again after
 * each attempt's timeout until the total has passed ({@link AskTimeouts}), failures turned into
 * {@link IpamException}s (an entity's {@link Refusal} keeps its reason; no answer is UNAVAILABLE),
 * and the confirmation of slow replies (see {@link ShardedIpam}). A retried ask to an entity
 * running on this member goes to it directly, not through its shard region ({@link
 * LocalEntities}). Thread-safe.
 *
 * <p>Continuations of the stages it returns run on the thread that completed the reply ({@link
 * Replies}): they must be short and must not block.
 */
public final class EntityAsks {
    private final ClusterSharding sharding;
    private final LocalEntities local;
    private final Scheduler scheduler;
    private final AskTimeouts timeouts;
    private final long confirmSlowerThanNanos;

    /** @param timeouts how long to wait for each entity, in all and per attempt */
    public EntityAsks(ActorSystem<?> system, AskTimeouts timeouts) {
        this(ClusterSharding.get(system), LocalEntities.get(system), system.scheduler(), timeouts);
    }

    EntityAsks(
            ClusterSharding sharding,
            LocalEntities local,
            Scheduler scheduler,
            AskTimeouts timeouts) {
        this.sharding = sharding;
        this.local = local;
        this.scheduler = scheduler;
        this.timeouts = timeouts;
        this.confirmSlowerThanNanos = timeouts.confirmSlowerThan().toNanos();
    }

    /** @param name the pool's name */
    public EntityRef<PoolEntity.Command> pool(String name) {
        return sharding.entityRefFor(PoolEntity.ENTITY_TYPE_KEY, name);
    }

    /** @return the one pool registry ({@link PoolRegistry#ID}) */
    public EntityRef<PoolRegistry.Command> registry() {
        return sharding.entityRefFor(PoolRegistry.ENTITY_TYPE_KEY, PoolRegistry.ID);
    }

    public EntityRef<BlockEntity.Command> block(Cidr block) {
        return sharding.entityRefFor(BlockEntity.ENTITY_TYPE_KEY, block.entityId());
    }

    /** @param name the node's name */
    public EntityRef<NodeEntity.Command> node(String name) {
        return sharding.entityRefFor(NodeEntity.ENTITY_TYPE_KEY, name);
    }

    /** @return the pool's definition, claims and releases ({@code GetPool}, as {@link #ask}) */
    public CompletionStage<PoolEntity.PoolView> poolView(String name) {
        return ask(pool(name), PoolEntity.GetPool::new);
    }

    /** @return the block's affinity and allocations ({@code GetBlock}, as {@link #ask}) */
    public CompletionStage<BlockEntity.BlockView> blockView(Cidr block) {
        return ask(block(block), BlockEntity.GetBlock::new);
    }

    /** @return the node's attachments, blocks, labels and peer ({@code GetNode}, as {@link #ask}) */
    public CompletionStage<NodeEntity.NodeView> nodeView(String name) {
        return ask(node(name), NodeEntity.GetNode::new);
    }

    /**
     * Asks an idempotent command, again after each attempt's timeout.
     *
     * @return the reply; fails with UNAVAILABLE when none comes within the total timeout
     */
    public <C, R> CompletionStage<R> ask(EntityRef<C> ref, Function<ActorRef<R>, C> command) {
        return retrying(
                        timeout ->
                                toEntity(
                                        ref,
                                        here ->
                                                AskPattern.ask(
                                                        here, command::apply, timeout, scheduler),
                                        () -> ref.ask(command::apply, timeout)),
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
    public <C, R> CompletionStage<R> askStatus(
            EntityRef<C> ref, Function<ActorRef<StatusReply<R>>, C> command) {
        return statusFailures(
                ref,
                retrying(
                        timeout ->
                                toEntity(
                                        ref,
                                        here ->
                                                AskPattern.askWithStatus(
                                                        here, command::apply, timeout, scheduler),
                                        () -> ref.askWithStatus(command::apply, timeout)),
                        System.nanoTime() + timeouts.total().toNanos()));
    }

    /**
     * One attempt of a retried ask: to the entity's incarnation on this member when there is one
     * ({@link LocalEntities}), else through sharding.
     */
    private <C, T> CompletionStage<T> toEntity(
            EntityRef<C> ref,
            Function<ActorRef<C>, CompletionStage<T>> direct,
            Supplier<CompletionStage<T>> throughSharding) {
        return Replies.onReplyingThread(
                local.find(ref.getTypeKey(), ref.getEntityId())
                        .map(direct)
                        .orElseGet(throughSharding));
    }

    private <R> CompletionStage<R> statusFailures(EntityRef<?> ref, CompletionStage<R> reply) {
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
     * Reads every pool at once ({@link #poolView}).
     *
     * @return each pool's view, in the order given; fails as the first read that fails
     */
    public CompletionStage<List<PoolEntity.PoolView>> poolViews(List<String> names) {
        return all(names, this::poolView);
    }

    /**
     * Reads every block at once ({@link #blockView}).
     *
     * @return each block's view, in the order given; fails as the first read that fails
     */
    public CompletionStage<List<BlockEntity.BlockView>> blockViews(List<Cidr> blocks) {
        return all(blocks, this::blockView);
    }

    /**
     * Reads every node at once ({@link #nodeView}).
     *
     * @return each node's view, in the order given; fails as the first read that fails
     */
    public CompletionStage<List<NodeEntity.NodeView>> nodeViews(List<String> names) {
        return all(names, this::nodeView);
    }

    private static <K, V> CompletionStage<List<V>> all(
            List<K> keys, Function<K, CompletionStage<V>> read) {
        List<CompletableFuture<V>> each =
                keys.stream().map(k -> read.apply(k).toCompletableFuture()).toList();
        return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new))
                .thenApply(v -> each.stream().map(CompletableFuture::join).toList());
    }

    /**
     * @return UNAVAILABLE naming the entity ({@code Pool p1 did not answer within 5000 ms}), or
     *     the IpamException the stage failed with
     */
    private IpamException unavailable(EntityRef<?> ref, Throwable e) {
        Throwable cause = unwrap(e);
        if (cause instanceof IpamException ipam) {
            return ipam;
        }
        String entity = ref.getTypeKey().name() + " " + ref.getEntityId();
        return new IpamException(
                IpamException.Reason.UNAVAILABLE,
                cause instanceof TimeoutException
                        ? entity + " did not answer within " + timeouts.total().toMillis() + " ms"
                        : entity + " did not answer: " + cause.getMessage(),
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
