package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.PoolEntity.PoolView;
import io.cadastre.shards.PoolRegistry.Outcome;
import io.cadastre.shards.PoolRegistry.Registration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.StatusReply;

/**
 * Pools as cluster state: create, disable, enable and delete at run time, and the definition of
 * the agent's configured pools at start. Each operation is a sequence of idempotent steps over
 * the {@link PoolRegistry} (the catalogue: names and non-overlapping ranges) and the pool's
 * {@link PoolEntity} (its claims), ordered so that a crash in between leaves a state that running
 * the operation again completes:
 * <ul>
 *   <li>create: register, then define the entity;
 *   <li>disable/enable: the entity first (it refuses claims at once), then the registry's mirror
 *       (agents stop choosing the pool within their catalogue's maximum age);
 *   <li>delete: disable, release every empty claimed block ({@link BlockReleases}), and only when
 *       no block is left delete the entity, then unregister.
 * </ul>
 * All stages fail with {@link IpamException}: UNKNOWN_POOL, CONFLICT (the name or range is taken,
 * or the pool still holds allocations), INVALID_REQUEST, UNAVAILABLE.
 */
public final class Pools {
    private final EntityAsks asks;
    private final PoolCatalog catalog;
    private final BlockReleases releases;

    /**
     * @param catalog this agent's catalogue, read afresh after every change made here
     */
    public Pools(ActorSystem<?> system, AskTimeouts timeouts, PoolCatalog catalog) {
        this.asks = new EntityAsks(system, timeouts);
        this.catalog = catalog;
        // The mesh hints: routes to a block released here go at once.
        this.releases = new BlockReleases(asks, MeshHints.get(system));
    }

    /** @return this agent's catalogue */
    public PoolCatalog catalog() {
        return catalog;
    }

    /** @return the block releases these operations use, for others that release blocks */
    public BlockReleases releases() {
        return releases;
    }

    /**
     * Defines the agent's configured pools: each is registered (its settings updated when its
     * range is unchanged) and its entity defined. A disabled pool stays disabled.
     *
     * @return done; fails with CONFLICT when a configured pool conflicts with the cluster's
     */
    public CompletionStage<Done> defineConfigured(List<PoolSpec> pools) {
        List<CompletableFuture<Boolean>> all =
                pools.stream().map(spec -> register(spec, true).toCompletableFuture()).toList();
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new))
                .thenCompose(v -> catalog.fresh())
                .thenApply(c -> Done.getInstance());
    }

    /**
     * Creates a pool.
     *
     * @return true when created, false when a pool with exactly this definition exists; fails
     *     with CONFLICT when the name exists with another definition or the range overlaps another
     *     pool's
     */
    public CompletionStage<Boolean> create(PoolSpec spec) {
        return register(spec, false)
                .thenCompose(created -> catalog.fresh().thenApply(c -> created));
    }

    private CompletionStage<Boolean> register(PoolSpec spec, boolean mayUpdate) {
        return asks.askStatus(
                        asks.registry(),
                        (ActorRef<StatusReply<Registration>> r) ->
                                new PoolRegistry.Register(spec, mayUpdate, r))
                .thenCompose(
                        registration -> {
                            if (registration.outcome() == Outcome.CONFLICT) {
                                throw new IpamException(
                                        IpamException.Reason.CONFLICT, registration.detail());
                            }
                            return asks.askStatus(
                                            asks.pool(spec.name()),
                                            (ActorRef<StatusReply<Done>> r) ->
                                                    new PoolEntity.DefinePool(spec, r))
                                    .thenApply(d -> registration.outcome() == Outcome.CREATED);
                        });
    }

    /** @return the pool's entity view; fails with UNKNOWN_POOL when it is not registered */
    public CompletionStage<PoolView> view(String name) {
        return requireRegistered(name).thenCompose(spec -> asks.poolView(name));
    }

    /** Disables or enables a pool; idempotent. Fails with UNKNOWN_POOL. */
    public CompletionStage<Done> setDisabled(String name, boolean disabled) {
        return requireRegistered(name)
                .thenCompose(
                        spec ->
                                asks.askStatus(
                                        asks.pool(name),
                                        (ActorRef<StatusReply<Done>> r) ->
                                                new PoolEntity.SetDisabled(disabled, r)))
                .thenCompose(
                        d ->
                                asks.askStatus(
                                        asks.registry(),
                                        (ActorRef<StatusReply<Done>> r) ->
                                                new PoolRegistry.SetDisabled(name, disabled, r)))
                .thenCompose(d -> catalog.fresh())
                .thenApply(c -> Done.getInstance());
    }

    /**
     * Deletes a pool that holds no allocation: disables it, releases its claimed blocks, deletes
     * it. When allocations remain, the pool is left disabled, its empty blocks released, and the
     * stage fails with CONFLICT naming how many allocations remain and where.
     *
     * @return the blocks released
     */
    public CompletionStage<List<Cidr>> delete(String name) {
        return setDisabled(name, true)
                .thenCompose(d -> asks.poolView(name))
                .thenCompose(view -> releaseAll(name, view))
                .thenCompose(
                        outcome -> {
                            outcome.failed().values().stream()
                                    .findFirst()
                                    .ifPresent(
                                            failure -> {
                                                throw failure;
                                            });
                            if (!outcome.kept().isEmpty()) {
                                return remainingAllocations(outcome.kept())
                                        .thenApply(
                                                count -> {
                                                    throw new IpamException(
                                                            IpamException.Reason.CONFLICT,
                                                            "pool "
                                                                    + name
                                                                    + " still holds "
                                                                    + count
                                                                    + " allocations in "
                                                                    + outcome.kept().size()
                                                                    + " blocks ("
                                                                    + summary(outcome.kept())
                                                                    + "); it is now disabled"
                                                                    + (outcome.released().isEmpty()
                                                                            ? ""
                                                                            : " and its "
                                                                                    + outcome.released()
                                                                                            .size()
                                                                                    + " empty blocks were released")
                                                                    + "; release the allocations, then delete it again");
                                                });
                            }
                            return asks.askStatus(
                                            asks.pool(name),
                                            (ActorRef<StatusReply<Done>> r) ->
                                                    new PoolEntity.DeletePool(r))
                                    .thenCompose(
                                            d ->
                                                    asks.askStatus(
                                                            asks.registry(),
                                                            (ActorRef<StatusReply<Done>> r) ->
                                                                    new PoolRegistry.Unregister(
                                                                            name, r)))
                                    .thenCompose(d -> catalog.fresh())
                                    .thenApply(c -> outcome.released());
                        });
    }

    private CompletionStage<BlockReleases.Outcome> releaseAll(String pool, PoolView view) {
        Map<Cidr, BlockReleases.Claim> claims = new LinkedHashMap<>();
        view.claims()
                .forEach((block, node) -> claims.put(block, new BlockReleases.Claim(pool, node)));
        return releases.releaseEachIfEmpty(claims);
    }

    private CompletionStage<Integer> remainingAllocations(List<Cidr> blocks) {
        return asks.blockViews(blocks)
                .thenApply(views -> views.stream().mapToInt(v -> v.allocations().size()).sum());
    }

    private static String summary(List<Cidr> blocks) {
        List<String> shown = blocks.stream().limit(5).map(Cidr::toString).toList();
        return String.join(", ", shown) + (blocks.size() > shown.size() ? ", …" : "");
    }

    private CompletionStage<PoolSpec> requireRegistered(String name) {
        return catalog.fresh()
                .thenApply(
                        c ->
                                c.spec(name)
                                        .orElseThrow(
                                                () ->
                                                        new IpamException(
                                                                IpamException.Reason.UNKNOWN_POOL,
                                                                "unknown pool "
                                                                        + name
                                                                        + " (known: "
                                                                        + String.join(
                                                                                ", ",
                                                                                c.pools().keySet())
                                                                        + ")")));
    }
}
