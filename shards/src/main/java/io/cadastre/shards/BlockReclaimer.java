package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.BlockReleases.Claim;
import io.cadastre.shards.BlockReleases.Outcome;
import io.cadastre.shards.PoolEntity.PoolView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reconciliation of block claims, once per cluster (issue: "a claimed block whose node has left
 * the cluster for longer than a grace period is released when empty"). A cluster singleton
 * ({@link #startSingleton}) runs a pass every {@code interval}; each pass reads every pool of the
 * catalogue afresh ({@link PoolView}) and:
 * <ul>
 *   <li>notes, per node that the pools give blocks to, when it was first seen <em>absent</em>: no
 *       member carries its role ({@link NodeRoles}; a member joining, leaving, or unreachable
 *       but not yet downed counts as present). A node seen present again, or that no longer
 *       holds a claim, is forgotten: its clock starts over if it leaves again;
 *   <li>once a node has been absent for {@code grace}, releases each of its blocks that is empty
 *       ({@link BlockReleases#releaseIfEmpty}: the emptiness check and the release are one step of
 *       the block's single writer, so a block holding any allocation — the node's, or a borrower's
 *       — is never released). A block seen holding allocations is not even asked, so that a gone
 *       node's full blocks do not add a begin/cancel pair of events to the pool's journal every
 *       pass; they stay until their addresses are released (node removal with
 *       {@code releaseAddresses}, release by address), and go at the next pass after that;
 *   <li>finishes releases left half-done by a crash (blocks a pool marks as {@code releasing}):
 *       {@link BlockReleases#releaseIfEmpty} again completes the release, or gives it up when the
 *       block holds allocations. Only a block seen releasing at two passes in a row is touched, so
 *       a release in progress elsewhere (a pool's deletion, a node's removal) is left to finish by
 *       itself; running both at once would be harmless, the steps being idempotent.
 * </ul>
 *
 * <p><b>No state survives the singleton.</b> The first-seen times live in the running
 * incarnation only: when the singleton moves (its member leaves or crashes) or restarts, the grace
 * is counted afresh from when the new incarnation first saw each node absent. A gone node's
 * blocks are therefore released at the earliest {@code grace} after it left, and later by up to
 * one grace per move — never earlier. After a whole-cluster restart the grace also gives the
 * agents that are slow to come back time to rejoin.
 *
 * <p>Passes never overlap (a tick during a pass is dropped). A pass that cannot read the pools
 * changes nothing and is logged; a block whose release fails (an entity did not answer) is tried
 * again at the next pass.
 *
 * <p>Metrics: {@link #released(Reason)} counts blocks released by this member's incarnations since
 * the agent started; {@link #candidates()} and {@link #kept()} describe the last pass of the
 * incarnation running here (zero when the singleton runs elsewhere). They are plain counters, to
 * be read by the metrics registry. The time comes from an injected monotonic clock, and
 * membership from an injected supplier, so that tests drive both.
 */
public final class BlockReclaimer {
    private static final Logger LOG = LoggerFactory.getLogger(BlockReclaimer.class);

    /** The singleton's name in the cluster. */
    public static final String SINGLETON_NAME = "block-reclaimer";

    /** Why a block was released. */
    public enum Reason {
        /** Its node had been absent from the cluster for longer than the grace. */
        NODE_GONE("node-gone"),
        /** It had been left marked as being released (a crash in the middle of a release). */
        UNFINISHED_RELEASE("unfinished-release");

        private final String label;

        Reason(String label) {
            this.label = label;
        }

        /** @return the reason as a metric label: {@code node-gone}, {@code unfinished-release} */
        public String label() {
            return label;
        }
    }

    private final EntityAsks asks;

    /** Told of every block released: the agent's metrics. */
    private final Consumer<Reason> onReleased;

    private final PoolCatalog catalog;
    private final BlockReleases releases;
    private final Duration interval;
    private final Duration grace;
    private final Supplier<Set<String>> presentNodes;
    private final LongSupplier nanoClock;

    private final Map<Reason, AtomicLong> released = new EnumMap<>(Reason.class);
    private volatile int candidates;
    private volatile int kept;

    /**
     * The reclaimer of a running agent: membership from this member's view of the cluster, time
     * from {@code System.nanoTime}.
     *
     * @param interval how often a pass runs; positive
     * @param grace how long a node must have been absent before its empty blocks are released; positive
     * @throws IllegalArgumentException if a duration is not positive
     */
    public BlockReclaimer(
            ActorSystem<?> system,
            AskTimeouts timeouts,
            PoolCatalog catalog,
            Duration interval,
            Duration grace) {
        this(
                new EntityAsks(system, timeouts),
                MeshHints.get(system),
                catalog,
                interval,
                grace,
                () -> NodeRoles.members(system).keySet(),
                System::nanoTime,
                reason -> CadastreMetrics.get(system).blockReclaimed(reason.label()));
    }

    /**
     * @param hints told of every block released, so that routes to it go at once
     * @param presentNodes the nodes that have a member in the cluster, read at each pass
     * @param nanoClock monotonic time in nanoseconds
     * @param onReleased told of every block released (the agent's metrics)
     */
    BlockReclaimer(
            EntityAsks asks,
            MeshHints hints,
            PoolCatalog catalog,
            Duration interval,
            Duration grace,
            Supplier<Set<String>> presentNodes,
            LongSupplier nanoClock,
            Consumer<Reason> onReleased) {
        if (interval.isNegative() || interval.isZero() || grace.isNegative() || grace.isZero()) {
            throw new IllegalArgumentException(
                    "block reclaim interval and grace must be positive: "
                            + interval
                            + ", "
                            + grace);
        }
        this.asks = asks;
        this.catalog = catalog;
        this.releases = new BlockReleases(asks, hints);
        this.interval = interval;
        this.grace = grace;
        this.presentNodes = presentNodes;
        this.nanoClock = nanoClock;
        this.onReleased = onReleased;
        for (Reason reason : Reason.values()) {
            released.put(reason, new AtomicLong());
        }
    }

    /**
     * Starts the cluster singleton on this member ({@link PeriodicSingleton#start}: it runs on the
     * oldest member; on every other one this only starts a proxy). Call once per member, after it
     * is Up.
     */
    public static ActorRef<PeriodicSingleton.Command> startSingleton(
            ActorSystem<?> system, BlockReclaimer reclaimer) {
        return PeriodicSingleton.start(system, SINGLETON_NAME, reclaimer.behavior());
    }

    /** @return how many blocks this member's incarnations released for the reason, since the agent started */
    public long released(Reason reason) {
        return released.get(reason).get();
    }

    /**
     * @return at the last pass of the incarnation running here: how many blocks of absent nodes
     *     were waiting for the grace to pass
     */
    public int candidates() {
        return candidates;
    }

    /**
     * @return at the last pass of the incarnation running here: how many blocks of nodes absent
     *     for longer than the grace were kept because they hold allocations
     */
    public int kept() {
        return kept;
    }

    // ---- the singleton ----

    /** @return the singleton's behaviour: a fresh {@link Incarnation}, a pass every interval */
    Behavior<PeriodicSingleton.Command> behavior() {
        return PeriodicSingleton.behavior(
                interval,
                () -> {
                    LOG.info(
                            "block reclaimer started here: a pass every {}, blocks of nodes absent for {} released when empty",
                            interval,
                            grace);
                    return new Incarnation();
                });
    }

    /** @return a new incarnation: no node seen absent yet */
    Incarnation incarnation() {
        return new Incarnation();
    }

    /**
     * What one pass did.
     *
     * @param released the blocks released, by reason
     * @param candidates blocks of absent nodes waiting for the grace
     * @param kept blocks of nodes absent past the grace that hold allocations
     */
    record Pass(Map<Reason, List<Cidr>> released, List<Cidr> candidates, List<Cidr> kept) {}

    /**
     * The state of one incarnation of the singleton: since when each node has been seen absent,
     * and which blocks were releasing at the last pass. Used by one pass at a time.
     */
    final class Incarnation implements PeriodicSingleton.Passes {
        private final Map<String, Long> absentSince = new HashMap<>();
        private Set<Cidr> releasingBefore = Set.of();
        private volatile boolean stopped;

        /** The singleton stopped here: its gauges read zero, also after a pass still under way ends. */
        @Override
        public void stop() {
            stopped = true;
            candidates = 0;
            kept = 0;
        }

        /** Logs a failed pass; its blocks are tried again at the next. */
        @Override
        public void done(Throwable failure) {
            if (failure != null) {
                LOG.warn(
                        "block reclaim pass failed, next in {}: {}",
                        interval,
                        EntityAsks.asIpam(failure).getMessage());
            }
        }

        /** Runs one pass; fails (changing nothing) when the pools cannot be read. */
        @Override
        public CompletionStage<Pass> pass() {
            return catalog.current()
                    .thenCompose(c -> asks.poolViews(List.copyOf(c.pools().keySet())))
                    .thenCompose(this::reconcile);
        }

        private CompletionStage<Pass> reconcile(List<PoolView> views) {
            long now = nanoClock.getAsLong();
            Set<String> present = presentNodes.get();
            Map<Cidr, Claim> claims = new TreeMap<>();
            Set<Cidr> releasing = new HashSet<>();
            for (PoolView view : views) {
                if (view.defined()) {
                    view.claims()
                            .forEach(
                                    (block, node) ->
                                            claims.put(block, new Claim(view.spec().name(), node)));
                    releasing.addAll(view.releasing());
                }
            }
            Set<String> absent = new HashSet<>();
            claims.values()
                    .forEach(
                            c -> {
                                if (!present.contains(c.node())) {
                                    absent.add(c.node());
                                }
                            });
            absentSince
                    .keySet()
                    .removeIf(
                            node -> {
                                if (absent.contains(node)) {
                                    return false;
                                }
                                if (present.contains(node)) {
                                    LOG.info(
                                            "node {} is back in the cluster: its blocks are kept",
                                            node);
                                }
                                return true;
                            });
            for (String node : absent) {
                if (absentSince.putIfAbsent(node, now) == null) {
                    LOG.info(
                            "node {} has no member in the cluster: its empty blocks are released after {} unless it comes back",
                            node,
                            grace);
                }
            }
            Map<Cidr, Claim> unfinished = new TreeMap<>();
            Map<Cidr, Claim> ofGoneNodes = new TreeMap<>();
            List<Cidr> waiting = new ArrayList<>();
            claims.forEach(
                    (block, claim) -> {
                        if (releasing.contains(block)) {
                            if (releasingBefore.contains(block)) {
                                unfinished.put(block, claim);
                            }
                        } else if (absent.contains(claim.node())) {
                            if (now - absentSince.get(claim.node()) >= grace.toNanos()) {
                                ofGoneNodes.put(block, claim);
                            } else {
                                waiting.add(block);
                            }
                        }
                    });
            releasingBefore = releasing;
            return emptyOnes(ofGoneNodes)
                    .thenCompose(
                            empty -> {
                                List<Cidr> keptNow = new ArrayList<>(ofGoneNodes.keySet());
                                keptNow.removeAll(empty.keySet());
                                var goneReleased =
                                        release(empty, Reason.NODE_GONE).toCompletableFuture();
                                var unfinishedReleased =
                                        release(unfinished, Reason.UNFINISHED_RELEASE)
                                                .toCompletableFuture();
                                return goneReleased.thenCombine(
                                        unfinishedReleased,
                                        (gone, finished) -> {
                                            Map<Reason, List<Cidr>> byReason =
                                                    new EnumMap<>(Reason.class);
                                            byReason.put(Reason.NODE_GONE, gone.released());
                                            byReason.put(
                                                    Reason.UNFINISHED_RELEASE, finished.released());
                                            keptNow.addAll(gone.kept());
                                            if (!stopped) {
                                                candidates = waiting.size();
                                                kept = keptNow.size();
                                            }
                                            return new Pass(byReason, waiting, keptNow);
                                        });
                            });
        }
    }

    /** @return the blocks that hold no allocation, read now */
    private CompletionStage<Map<Cidr, Claim>> emptyOnes(Map<Cidr, Claim> blocks) {
        List<Cidr> cidrs = List.copyOf(blocks.keySet());
        return asks.blockViews(cidrs)
                .thenApply(
                        views -> {
                            Map<Cidr, Claim> empty = new TreeMap<>();
                            for (int i = 0; i < cidrs.size(); i++) {
                                BlockView view = views.get(i);
                                if (view.allocations().isEmpty()) {
                                    empty.put(cidrs.get(i), blocks.get(cidrs.get(i)));
                                }
                            }
                            return empty;
                        });
    }

    /** Releases each block if empty, counting and logging what was released; a failed release is logged and tried next pass. */
    private CompletionStage<Outcome> release(Map<Cidr, Claim> blocks, Reason reason) {
        return releases.releaseEachIfEmpty(blocks)
                .thenApply(
                        outcome -> {
                            outcome.failed()
                                    .forEach(
                                            (block, error) ->
                                                    LOG.warn(
                                                            "block {} of node {} (pool {}) not released ({}), tried again"
                                                                    + " next pass: {}",
                                                            block,
                                                            blocks.get(block).node(),
                                                            blocks.get(block).pool(),
                                                            reason.label(),
                                                            error.getMessage()));
                            for (Cidr block : outcome.released()) {
                                released.get(reason).incrementAndGet();
                                onReleased.accept(reason);
                                LOG.info(
                                        "released block {} of node {} (pool {}): {}",
                                        block,
                                        blocks.get(block).node(),
                                        blocks.get(block).pool(),
                                        reason.label());
                            }
                            return outcome;
                        });
    }
}
