package io.cadastre.admin;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AskTimeouts;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolEntity;
import io.cadastre.shards.Refusal;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * The admin API's asks to the sharded entities, with their public commands. Every command asked
 * here is a read or an idempotent release, so an ask that gets no reply within the per-attempt
 * timeout is sent again (a member that just crashed loses the message until its entities move),
 * until the total timeout has passed; then the stage fails with {@link AdminException.Kind#UNAVAILABLE}.
 */
final class EntityReads {
    private final ClusterSharding sharding;
    private final AskTimeouts timeouts;

    EntityReads(ActorSystem<?> system, AskTimeouts timeouts) {
        this.sharding = ClusterSharding.get(system);
        this.timeouts = timeouts;
    }

    CompletionStage<PoolEntity.PoolView> pool(String name) {
        return ask(
                sharding.entityRefFor(PoolEntity.ENTITY_TYPE_KEY, name), PoolEntity.GetPool::new);
    }

    CompletionStage<BlockEntity.BlockView> block(Cidr block) {
        return ask(blockRef(block), BlockEntity.GetBlock::new);
    }

    CompletionStage<NodeEntity.NodeView> node(String name) {
        return ask(nodeRef(name), NodeEntity.GetNode::new);
    }

    /** @return the attachment as its node knows it, if it does */
    CompletionStage<Optional<AttachmentRecord>> attachment(
            String node, String handle, String ifname) {
        return ask(
                        nodeRef(node),
                        (ActorRef<NodeEntity.AttachmentLookup> r) ->
                                new NodeEntity.GetAttachment(handle, ifname, r))
                .thenApply(found -> Optional.ofNullable(found.attachment()));
    }

    /** The node forgets the attachment (persisted); an unknown one is success. */
    CompletionStage<Done> forget(String node, String handle, String ifname) {
        EntityRef<NodeEntity.Command> ref = nodeRef(node);
        return retrying(
                timeout ->
                        ref.askWithStatus(
                                (ActorRef<StatusReply<Done>> r) ->
                                        new NodeEntity.ForgetAttachment(handle, ifname, r),
                                timeout),
                ref);
    }

    /** Marks the node removed by an operator (persisted); a node removed already is success. */
    CompletionStage<Done> markRemoved(String node) {
        EntityRef<NodeEntity.Command> ref = nodeRef(node);
        return retrying(
                timeout ->
                        ref.askWithStatus(
                                (ActorRef<StatusReply<Done>> r) -> new NodeEntity.MarkRemoved(r),
                                timeout),
                ref);
    }

    /** @return the addresses the block freed for the attachment; empty when it held none there */
    CompletionStage<List<String>> release(Cidr block, String handle, String ifname) {
        return ask(
                        blockRef(block),
                        (ActorRef<BlockEntity.Released> r) ->
                                new BlockEntity.Release(handle, ifname, r))
                .thenApply(BlockEntity.Released::addresses);
    }

    /** @return the views of the blocks, read in parallel, by block */
    CompletionStage<Map<Cidr, BlockEntity.BlockView>> blocks(Collection<Cidr> blocks) {
        return all(blocks, this::block);
    }

    /** @return the views of the nodes, read in parallel, by name */
    CompletionStage<Map<String, NodeEntity.NodeView>> nodes(Collection<String> names) {
        return all(names, this::node);
    }

    /** @return the pools' views, read in parallel, by name */
    CompletionStage<Map<String, PoolEntity.PoolView>> pools(Collection<String> names) {
        return all(names, this::pool);
    }

    private static <K, V> CompletionStage<Map<K, V>> all(
            Collection<K> keys, Function<K, CompletionStage<V>> read) {
        Map<K, CompletableFuture<V>> each =
                keys.stream()
                        .distinct()
                        .collect(
                                Collectors.toMap(
                                        k -> k,
                                        k -> read.apply(k).toCompletableFuture(),
                                        (a, b) -> a,
                                        java.util.LinkedHashMap::new));
        return CompletableFuture.allOf(each.values().toArray(CompletableFuture[]::new))
                .thenApply(
                        v ->
                                each.entrySet().stream()
                                        .collect(
                                                Collectors.toMap(
                                                        Map.Entry::getKey,
                                                        e -> e.getValue().join(),
                                                        (a, b) -> a,
                                                        java.util.LinkedHashMap::new)));
    }

    private EntityRef<BlockEntity.Command> blockRef(Cidr block) {
        return sharding.entityRefFor(BlockEntity.ENTITY_TYPE_KEY, block.entityId());
    }

    private EntityRef<NodeEntity.Command> nodeRef(String name) {
        return sharding.entityRefFor(NodeEntity.ENTITY_TYPE_KEY, name);
    }

    private <C, R> CompletionStage<R> ask(EntityRef<C> ref, Function<ActorRef<R>, C> command) {
        return retrying(timeout -> ref.ask(command::apply, timeout), ref);
    }

    private <R> CompletionStage<R> retrying(
            Function<Duration, CompletionStage<R>> attempt, EntityRef<?> ref) {
        return retrying(attempt, ref, System.nanoTime() + timeouts.total().toNanos());
    }

    /** One attempt with the per-attempt timeout (less when the deadline is nearer); again after a timeout. */
    private <R> CompletionStage<R> retrying(
            Function<Duration, CompletionStage<R>> attempt, EntityRef<?> ref, long deadlineNanos) {
        long remaining = deadlineNanos - System.nanoTime();
        Duration timeout =
                Duration.ofNanos(Math.max(1, Math.min(remaining, timeouts.perAttempt().toNanos())));
        return attempt.apply(timeout)
                .handle(
                        (reply, error) -> {
                            if (error == null) {
                                return CompletableFuture.completedFuture(reply);
                            }
                            Throwable cause = unwrap(error);
                            if (cause instanceof TimeoutException
                                    && deadlineNanos - System.nanoTime() > 0) {
                                return retrying(attempt, ref, deadlineNanos);
                            }
                            if (cause instanceof Refusal) {
                                // The entity refused: for the commands asked here that is a bug,
                                // not the caller's input.
                                return CompletableFuture.<R>failedFuture(
                                        new IllegalStateException(
                                                ref.getEntityId()
                                                        + " refused: "
                                                        + cause.getMessage(),
                                                cause));
                            }
                            return CompletableFuture.<R>failedFuture(
                                    new AdminException(
                                            AdminException.Kind.UNAVAILABLE,
                                            ref.getTypeKey().name()
                                                    + " "
                                                    + ref.getEntityId()
                                                    + " did not answer within "
                                                    + timeouts.total().toMillis()
                                                    + " ms",
                                            cause));
                        })
                .thenCompose(Function.identity());
    }

    static Throwable unwrap(Throwable e) {
        Throwable cause = e;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
