package io.cadastre.admin;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AskTimeouts;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.EntityAsks;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolEntity;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.StatusReply;

/**
 * The admin API's reads and releases on the sharded entities, over their typed client ({@link
 * EntityAsks}). Every command asked here is a read or an idempotent release, so an ask that gets
 * no reply within the per-attempt timeout is sent again (a member that just crashed loses the
 * message until its entities move), until the total timeout has passed; then the stage fails with
 * {@link io.cadastre.shards.IpamException} UNAVAILABLE, which the routes answer with 503.
 */
final class EntityReads {
    private final EntityAsks asks;

    EntityReads(ActorSystem<?> system, AskTimeouts timeouts) {
        this.asks = new EntityAsks(system, timeouts);
    }

    CompletionStage<PoolEntity.PoolView> pool(String name) {
        return asks.poolView(name);
    }

    CompletionStage<BlockEntity.BlockView> block(Cidr block) {
        return asks.blockView(block);
    }

    CompletionStage<NodeEntity.NodeView> node(String name) {
        return asks.nodeView(name);
    }

    /** @return the attachment as its node knows it, if it does */
    CompletionStage<Optional<AttachmentRecord>> attachment(
            String node, String handle, String ifname) {
        return asks.ask(
                        asks.node(node),
                        (ActorRef<NodeEntity.AttachmentLookup> r) ->
                                new NodeEntity.GetAttachment(handle, ifname, r))
                .thenApply(found -> Optional.ofNullable(found.attachment()));
    }

    /** The node forgets the attachment (persisted); an unknown one is success. */
    CompletionStage<Done> forget(String node, String handle, String ifname) {
        return asks.askStatus(
                        asks.node(node),
                        (ActorRef<StatusReply<NodeEntity.AttachmentLookup>> r) ->
                                new NodeEntity.ForgetAttachment(handle, ifname, false, r))
                .thenApply(forgotten -> Done.getInstance());
    }

    /** Marks the node removed by an operator (persisted); a node removed already is success. */
    CompletionStage<Done> markRemoved(String node) {
        return asks.askStatus(asks.node(node), NodeEntity.MarkRemoved::new);
    }

    /** @return the addresses the block freed for the attachment; empty when it held none there */
    CompletionStage<List<String>> release(Cidr block, String handle, String ifname) {
        return asks.ask(
                        asks.block(block),
                        (ActorRef<BlockEntity.Released> r) ->
                                new BlockEntity.Release(handle, ifname, false, r))
                .thenApply(BlockEntity.Released::addresses);
    }

    /** @return the views of the blocks, read in parallel, by block */
    CompletionStage<Map<Cidr, BlockEntity.BlockView>> blocks(Collection<Cidr> blocks) {
        return byKey(blocks, asks::blockViews);
    }

    /** @return the views of the nodes, read in parallel, by name */
    CompletionStage<Map<String, NodeEntity.NodeView>> nodes(Collection<String> names) {
        return byKey(names, asks::nodeViews);
    }

    /** @return the pools' views, read in parallel, by name */
    CompletionStage<Map<String, PoolEntity.PoolView>> pools(Collection<String> names) {
        return byKey(names, asks::poolViews);
    }

    /** @return each key (once, in the order given) with what {@code read} answered for it */
    private static <K, V> CompletionStage<Map<K, V>> byKey(
            Collection<K> keys, Function<List<K>, CompletionStage<List<V>>> read) {
        List<K> distinct = keys.stream().distinct().toList();
        return read.apply(distinct)
                .thenApply(
                        values -> {
                            Map<K, V> byKey = new LinkedHashMap<>();
                            for (int i = 0; i < distinct.size(); i++) {
                                byKey.put(distinct.get(i), values.get(i));
                            }
                            return byKey;
                        });
    }

    /** @return the failure behind the completion exceptions a stage wraps it in */
    static Throwable unwrap(Throwable e) {
        Throwable cause = e;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
