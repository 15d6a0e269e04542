package io.cadastre.kube;

import io.cadastre.admin.AdminException;
import io.cadastre.admin.AdminViews;
import io.cadastre.admin.Inventory;
import io.cadastre.admin.NodeRemoval;
import io.cadastre.shards.PeriodicSingleton;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Node deleted from Kubernetes gets what {@code cadastrectl node remove --release-addresses}
 * does ({@link NodeRemoval} with {@code releaseAddresses}: its attachments and orphans released,
 * its empty blocks given back, the node marked removed), once per cluster, as Calico's
 * kube-controllers (node controller) release the addresses of deleted Nodes.
 *
 * <p>Once per cluster: a cluster singleton ({@link #startSingleton}) on the oldest member runs a
 * pass every {@code interval}. The singleton opens its own informer of every Node when it starts
 * and closes it when it stops, so only one member watches all Nodes. Each pass:
 * <ol>
 *   <li>does nothing unless that informer has listed and is watching: an absence from a cache that
 *       has not synced, or has lost the API, is not a deletion;
 *   <li>lists the nodes Cadastre knows that no member carries and no one removed
 *       ({@link CadastreNodes#absentNodes});
 *   <li>notes when each of them was first seen without a Node in the cache, and forgets one whose
 *       Node is back or that is no longer listed (its clock starts over);
 *   <li>for each absent for {@code grace}: a GET must confirm the Node does not exist (a failed GET
 *       waits for the next pass), then the node is removed with its addresses. The removal is
 *       idempotent and marks the node removed, so a node is not listed again: a pass that
 *       crashed half-way, or a singleton that moved, completes it at most once more, releasing
 *       nothing twice. A removal refused because the node's agent is a member (CONFLICT) is tried
 *       again at the next pass.
 * </ol>
 * The first-seen times live in the running incarnation only: after a move the grace starts over
 * (later, never earlier). Every Cadastre node is taken for a Kubernetes Node of the same name: a
 * host that runs an agent outside Kubernetes, with this setting on, is released once its agent
 * has been gone for the grace (as {@code cadastrectl node remove --release-addresses} would).
 *
 * <p>Every member holds one of these; its counters say what the incarnations that ran there did.
 */
public final class DeletedNodeReleaser {
    private static final Logger LOG = LoggerFactory.getLogger(DeletedNodeReleaser.class);
    static final String SINGLETON_NAME = "cadastre-deleted-node-releaser";

    /** What the releaser needs of Cadastre's own state. */
    public interface CadastreNodes {
        /** @return the nodes Cadastre knows (members, block owners, allocation holders) that no member carries and no one removed */
        CompletionStage<Set<String>> absentNodes();

        /**
         * @return the addresses released by removing the node with its addresses; fails with
         *     {@link AdminException} CONFLICT while its agent is a member, with {@link
         *     io.cadastre.shards.IpamException} UNAVAILABLE when an entity does not answer
         */
        CompletionStage<List<String>> removeWithAddresses(String node);
    }

    /** What the releaser needs of Kubernetes' Nodes; opened by each incarnation, closed when it stops. */
    public interface NodeObjects extends AutoCloseable {
        /** @return whether the cache has listed and is watching */
        boolean synced();

        /** @return whether the cache holds a Node of this name */
        boolean cached(String name);

        /** @return whether a Node of this name exists, by a GET; fails when the API does not answer */
        CompletionStage<Boolean> exists(String name);

        @Override
        void close();
    }

    private final CadastreNodes cadastre;
    private final Supplier<NodeObjects> nodes;
    private final Duration grace;
    private final Duration interval;
    private final LongSupplier nanoClock;
    private final AtomicLong released = new AtomicLong();
    private final AtomicLong passes = new AtomicLong();
    private volatile int candidates;

    /**
     * @param nodes opens a view of the Nodes for one incarnation ({@link #nodeObjects})
     * @param grace how long a Node must have been absent; positive
     * @param interval how often a pass runs; positive
     * @param nanoClock monotonic time in nanoseconds ({@code System::nanoTime} in production)
     */
    public DeletedNodeReleaser(
            CadastreNodes cadastre,
            Supplier<NodeObjects> nodes,
            Duration grace,
            Duration interval,
            LongSupplier nanoClock) {
        this.cadastre = cadastre;
        this.nodes = nodes;
        this.grace = grace;
        this.interval = interval;
        this.nanoClock = nanoClock;
    }

    /** @return the Nodes of the API: an informer of every Node and GETs */
    public static Supplier<NodeObjects> nodeObjects(KubeApi api) {
        return () -> {
            SharedIndexInformer<Node> informer = api.informAllNodes();
            return new NodeObjects() {
                @Override
                public boolean synced() {
                    return informer.hasSynced() && informer.isWatching();
                }

                @Override
                public boolean cached(String name) {
                    return informer.getStore().getByKey(name) != null;
                }

                @Override
                public CompletionStage<Boolean> exists(String name) {
                    return api.node(name).thenApply(Optional::isPresent);
                }

                @Override
                public void close() {
                    informer.stop();
                }
            };
        };
    }

    /** @return Cadastre's nodes as the admin API reads and removes them */
    public static CadastreNodes adminNodes(Inventory inventory) {
        NodeRemoval removal = new NodeRemoval(inventory);
        return new CadastreNodes() {
            @Override
            public CompletionStage<Set<String>> absentNodes() {
                return inventory
                        .nodes()
                        .thenApply(
                                all ->
                                        all.nodes().stream()
                                                .filter(
                                                        n ->
                                                                n.member().equals("absent")
                                                                        && !n.removed())
                                                .map(AdminViews.NodeSummary::name)
                                                .collect(Collectors.toCollection(TreeSet::new)));
            }

            @Override
            public CompletionStage<List<String>> removeWithAddresses(String node) {
                return removal.remove(node, true)
                        .thenApply(AdminViews.NodeRemoved::releasedAddresses);
            }
        };
    }

    /**
     * Starts the singleton, or its proxy on a member that does not run it ({@link
     * PeriodicSingleton#start}).
     */
    public static ActorRef<PeriodicSingleton.Command> startSingleton(
            ActorSystem<?> system, DeletedNodeReleaser releaser) {
        return PeriodicSingleton.start(system, SINGLETON_NAME, releaser.behavior());
    }

    /** @return how many nodes the incarnations on this member removed with their addresses */
    public long released() {
        return released.get();
    }

    /** @return how many passes the incarnations on this member have finished (synced or not) */
    public long passes() {
        return passes.get();
    }

    /** @return at the last pass here: how many nodes without a Node wait for the grace */
    public int candidates() {
        return candidates;
    }

    // ---- the singleton ----

    /** @return the singleton's behaviour: a fresh view of the Nodes, a pass every interval */
    Behavior<PeriodicSingleton.Command> behavior() {
        return PeriodicSingleton.behavior(
                interval,
                () -> {
                    NodeObjects view = nodes.get();
                    Map<String, Long> absentSince = new HashMap<>();
                    LOG.info(
                            "deleted-node releaser started here: nodes whose Node has been deleted for {} are removed with their"
                                    + " addresses",
                            grace);
                    return new PeriodicSingleton.Passes() {
                        @Override
                        public CompletionStage<Void> pass() {
                            try {
                                return DeletedNodeReleaser.this.pass(view, absentSince);
                            } catch (RuntimeException e) {
                                return CompletableFuture.failedFuture(e);
                            }
                        }

                        @Override
                        public void done(Throwable failure) {
                            passes.incrementAndGet();
                            if (failure != null) {
                                LOG.warn(
                                        "deleted-node pass failed, next in {}: {}",
                                        interval,
                                        cause(failure).toString());
                            }
                        }

                        @Override
                        public void stop() {
                            view.close();
                        }
                    };
                });
    }

    /** One pass; the map is the incarnation's, touched only from the pass's callbacks, one pass at a time. */
    private CompletionStage<Void> pass(NodeObjects view, Map<String, Long> absentSince) {
        if (!view.synced()) {
            return CompletableFuture.completedFuture(null);
        }
        return cadastre.absentNodes()
                .thenCompose(
                        names -> {
                            long now = nanoClock.getAsLong();
                            synchronized (absentSince) {
                                absentSince.keySet().retainAll(names);
                                for (String name : names) {
                                    if (view.cached(name)) {
                                        absentSince.remove(name);
                                    } else if (absentSince.putIfAbsent(name, now) == null) {
                                        LOG.info(
                                                "node {} has no Node object in Kubernetes: it is removed with its addresses after {} unless"
                                                        + " its Node or agent comes back",
                                                name,
                                                grace);
                                    }
                                }
                                candidates = absentSince.size();
                            }
                            List<String> due;
                            synchronized (absentSince) {
                                due =
                                        absentSince.entrySet().stream()
                                                .filter(e -> now - e.getValue() >= grace.toNanos())
                                                .map(Map.Entry::getKey)
                                                .sorted()
                                                .toList();
                            }
                            CompletionStage<Void> chain = CompletableFuture.completedFuture(null);
                            for (String name : due) {
                                chain = chain.thenCompose(v -> release(view, name, absentSince));
                            }
                            return chain;
                        });
    }

    private CompletionStage<Void> release(
            NodeObjects view, String name, Map<String, Long> absentSince) {
        return view.exists(name)
                .thenCompose(
                        exists -> {
                            if (exists) {
                                LOG.info(
                                        "node {}: its Node exists (a GET says so): not removed",
                                        name);
                                synchronized (absentSince) {
                                    absentSince.remove(name);
                                }
                                return CompletableFuture.completedFuture(null);
                            }
                            return cadastre.removeWithAddresses(name)
                                    .thenAccept(
                                            addresses -> {
                                                released.incrementAndGet();
                                                synchronized (absentSince) {
                                                    absentSince.remove(name);
                                                }
                                                LOG.info(
                                                        "node {}: its Node was deleted from Kubernetes; removed, released {}",
                                                        name,
                                                        addresses);
                                            });
                        })
                .handle(
                        (v, failure) -> {
                            if (failure != null) {
                                Throwable cause = cause(failure);
                                if (cause instanceof AdminException e
                                        && e.kind() == AdminException.Kind.CONFLICT) {
                                    LOG.info("node {}: not removed yet: {}", name, e.getMessage());
                                } else {
                                    LOG.warn(
                                            "node {}: removal failed, trying again at the next pass: {}",
                                            name,
                                            cause.toString());
                                }
                            }
                            return null;
                        });
    }

    private static Throwable cause(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
