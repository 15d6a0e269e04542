package io.cadastre.node;

import io.cadastre.dataplane.Bandwidth;
import io.cadastre.dataplane.Dataplane;
import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.PodAddress;
import io.cadastre.dataplane.PodAttachment;
import io.cadastre.dataplane.WiredPod;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.IpFamily;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.IpamException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Queue;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.pattern.StatusReply;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent: one per agent process, local (not sharded), the only actor that touches this
 * host's network. For an ADD it gets the addresses from IPAM, then wires the pod through the
 * {@link Dataplane}; if wiring fails it releases the addresses again (no partial state: root
 * DESIGN.md, invariant 5). DEL takes the pod off the network, releases, and replies; the veth
 * pair goes with the pod's netns, or is deleted by the agent a little later.
 *
 * <p>Operations on the same attachment run one after another in arrival order (an ADD and the DEL
 * that a runtime sends after a timed-out ADD must not overlap); different attachments run
 * concurrently. Dataplane calls block, so they run on {@code dataplaneExecutor}, never on the
 * actor's dispatcher.
 *
 * <p>Reconciliation ({@link Reclaimer}): every {@link Reclaimer#interval()} the node agent lists
 * the node's attachments and releases, through the DEL path, those whose netns has been gone for
 * the grace period, unwiring it completely before the release. Each release runs in the attachment's own slot of the per-attachment queue,
 * so it never overlaps an ADD, DEL or CHECK of that attachment; attachments with an operation in
 * flight are skipped in that round. One round runs at a time.
 *
 * <p>Metrics ({@link CadastreMetrics}): the reclaimer's candidates are exposed as
 * {@code cadastre_ipam_allocations_gc_candidates{node}}; attachments released by the reclaim and
 * by CNI GC are counted in {@code cadastre_ipam_allocations_gc_reclamations_total{node, reason}}
 * (reasons {@code netns-gone}, {@code pod-gone}, {@code cni-gc}).
 */
public final class NodeAgent extends AbstractBehavior<NodeAgent.Command> {
    private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

    /**
     * How long an unplugged veth pair may wait for its netns to be removed before the agent
     * deletes it itself: containerd and CRI-O remove the netns right after DEL returns.
     */
    static final Duration TEARDOWN_DELAY = Duration.ofSeconds(2);

    /**
     * Messages; local only, never serialized. Each operation replies with a {@link StatusReply}:
     * the value, or the failure (an {@link IpamException} or a {@code DataplaneException}) as the
     * error; ask with {@code AskPattern.askWithStatus}.
     */
    public sealed interface Command
            permits Attach,
                    Detach,
                    Check,
                    CollectGarbage,
                    Status,
                    Reconcile,
                    Finished,
                    Tick,
                    Probed,
                    SweepFinished,
                    GarbageListed {}

    /** ADD (CNI spec 1.1 §ADD): idempotent; a retry for a known attachment gets the same addresses. */
    public record Attach(AttachmentId id, PodRequest request, ActorRef<StatusReply<Wired>> replyTo)
            implements Command {}

    /** DEL (CNI spec 1.1 §DEL): idempotent; releases the addresses it had (the list). */
    public record Detach(
            AttachmentId id, boolean ipamOnly, ActorRef<StatusReply<List<String>>> replyTo)
            implements Command {}

    /** CHECK (CNI spec 1.1 §CHECK): what IPAM holds for the attachment, and the dataplane's differences. */
    public record Check(
            AttachmentId id,
            String netnsPath,
            boolean ipamOnly,
            int mtu,
            Bandwidth bandwidth,
            ActorRef<StatusReply<CheckResult>> replyTo)
            implements Command {}

    /**
     * GC (CNI spec 1.1 §GC): releases every allocation of {@code network} on this node that is not
     * in {@code keep} (attachment keys, {@link AttachmentId#key()}), and unwires what it released.
     */
    public record CollectGarbage(
            String network,
            Set<String> keep,
            boolean ipamOnly,
            ActorRef<StatusReply<List<String>>> replyTo)
            implements Command {}

    /** STATUS (CNI spec 1.1 §STATUS): empty when ADD can be served, else why not. */
    public record Status(List<String> pools, ActorRef<StatusReply<Optional<String>>> replyTo)
            implements Command {}

    /**
     * One reconciliation round now, as the timer starts every {@link Reclaimer#interval()}; if a
     * round is running, the next one (started when it ends) answers. Replies with the keys
     * ({@link AttachmentId#key()}) of the attachments released in the round; fails only when the
     * node's attachments could not be listed. A release that fails is logged and tried again in
     * the next round.
     */
    public record Reconcile(ActorRef<StatusReply<List<String>>> replyTo) implements Command {}

    private record Finished(String key) implements Command {}

    /** The reconciliation timer. */
    private enum Tick implements Command {
        INSTANCE
    }

    private record Probed(
            List<Reclaimer.Observation> observations,
            Throwable failure,
            List<ActorRef<StatusReply<List<String>>>> replyTo)
            implements Command {}

    /** The node's attachments, read for a CNI GC. */
    private record GarbageListed(
            CollectGarbage gc, List<AttachmentRecord> attachments, Throwable failure)
            implements Command {}

    private record SweepFinished(
            List<String> reclaimed, List<ActorRef<StatusReply<List<String>>>> replyTo)
            implements Command {}

    /**
     * @param attachment the IPAM record, or {@code null} when IPAM does not know the attachment
     * @param differences the dataplane's differences from what ADD configures (empty for IPAM-only)
     */
    public record CheckResult(AttachmentRecord attachment, List<String> differences) {}

    /**
     * Creates the node agent; its first reconciliation round runs one interval after start.
     *
     * @param reclaimer releases attachments whose netns is gone; also read by the metrics
     */
    public static Behavior<Command> create(
            Ipam ipam, Dataplane dataplane, Executor dataplaneExecutor, Reclaimer reclaimer) {
        return create(ipam, dataplane, dataplaneExecutor, reclaimer, PodNetwork.NONE);
    }

    /**
     * As {@link #create(Ipam, Dataplane, Executor, Reclaimer)}, with the pod network between hosts.
     *
     * @param podNetwork gives the pods' MTU when the netconf gives none, and is told the
     *     addresses of every ADD and DEL (so that borrowed ones are routed on every host)
     */
    public static Behavior<Command> create(
            Ipam ipam,
            Dataplane dataplane,
            Executor dataplaneExecutor,
            Reclaimer reclaimer,
            PodNetwork podNetwork) {
        return Behaviors.setup(
                ctx ->
                        Behaviors.withTimers(
                                timers -> {
                                    timers.startTimerWithFixedDelay(
                                            Tick.INSTANCE, reclaimer.interval());
                                    return new NodeAgent(
                                            ctx,
                                            ipam,
                                            dataplane,
                                            dataplaneExecutor,
                                            reclaimer,
                                            podNetwork);
                                }));
    }

    private final Ipam ipam;
    private final Dataplane dataplane;
    private final Executor dataplaneExecutor;

    /**
     * Deletes the veth pairs DEL unplugged that outlived {@link #TEARDOWN_DELAY}, one after
     * another, off the dataplane threads: each delete blocks for the kernel's RCU grace periods,
     * and ADDs must not queue behind them.
     */
    private final ExecutorService teardownThread =
            Executors.newSingleThreadExecutor(
                    r -> {
                        // A platform thread in the host's netns, as the dataplane threads.
                        Thread t = new Thread(r, "cadastre-teardown");
                        t.setDaemon(true);
                        return t;
                    });

    private final Reclaimer reclaimer;
    private final CadastreMetrics metrics;
    private final PodNetwork podNetwork;

    /** attachment key → operations waiting for the one in flight to finish. */
    private final Map<String, Queue<Operation<?>>> queues = new HashMap<>();

    /** Whether a reconciliation round is running. */
    private boolean sweeping;

    /** Callers waiting for the next reconciliation round. */
    private final List<ActorRef<StatusReply<List<String>>>> nextSweepReplies = new ArrayList<>();

    private NodeAgent(
            ActorContext<Command> ctx,
            Ipam ipam,
            Dataplane dataplane,
            Executor dataplaneExecutor,
            Reclaimer reclaimer,
            PodNetwork podNetwork) {
        super(ctx);
        this.podNetwork = podNetwork;
        this.ipam = ipam;
        this.dataplane = dataplane;
        this.dataplaneExecutor = dataplaneExecutor;
        this.reclaimer = reclaimer;
        this.metrics = CadastreMetrics.get(ctx.getSystem());
        metrics.watchGcCandidates(ipam.node(), reclaimer::candidates);
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(
                        Attach.class,
                        cmd -> {
                            reclaimer.forget(cmd.id().key());
                            return enqueue(
                                    cmd.id().key(),
                                    () -> attach(cmd.id(), cmd.request()),
                                    replier(cmd.replyTo()));
                        })
                .onMessage(
                        Detach.class,
                        cmd -> {
                            reclaimer.forget(cmd.id().key());
                            return enqueue(
                                    cmd.id().key(),
                                    () -> releaseForDel(cmd.id(), cmd.ipamOnly()),
                                    replier(cmd.replyTo()));
                        })
                .onMessage(
                        Check.class,
                        cmd -> enqueue(cmd.id().key(), () -> check(cmd), replier(cmd.replyTo())))
                .onMessage(CollectGarbage.class, this::onCollectGarbage)
                .onMessage(GarbageListed.class, this::onGarbageListed)
                .onMessage(
                        Status.class,
                        cmd -> {
                            reply(ipam.unavailability(cmd.pools()), cmd.replyTo());
                            return this;
                        })
                .onMessage(Finished.class, this::onFinished)
                .onMessage(
                        Reconcile.class,
                        cmd -> {
                            nextSweepReplies.add(cmd.replyTo());
                            return sweepUnlessRunning();
                        })
                .onMessage(Tick.class, tick -> sweepUnlessRunning())
                .onMessage(Probed.class, this::onProbed)
                .onMessage(SweepFinished.class, this::onSweepFinished)
                .onSignal(
                        PostStop.class,
                        stopped -> {
                            teardownThread.shutdown();
                            return this;
                        })
                .build();
    }

    /**
     * One operation in an attachment's slot, and what hears its outcome: told only after the slot
     * is free again, so that whoever hears it and sends the attachment's next command finds the
     * slot free (a reconcile round right after an ADD's reply must see the ADD done).
     */
    private record Operation<T>(
            Supplier<CompletionStage<T>> work, BiConsumer<? super T, ? super Throwable> outcome) {}

    private <T> Behavior<Command> enqueue(
            String key,
            Supplier<CompletionStage<T>> work,
            BiConsumer<? super T, ? super Throwable> outcome) {
        Operation<T> operation = new Operation<>(work, outcome);
        Queue<Operation<?>> queue = queues.get(key);
        if (queue != null) {
            queue.add(operation);
        } else {
            queues.put(key, new ArrayDeque<>());
            run(key, operation);
        }
        return this;
    }

    private <T> void run(String key, Operation<T> operation) {
        ActorRef<Command> self = getContext().getSelf();
        CompletionStage<T> stage;
        try {
            stage = operation.work().get();
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        stage.whenComplete(
                (v, e) -> {
                    self.tell(new Finished(key));
                    operation.outcome().accept(v, e);
                });
    }

    private Behavior<Command> onFinished(Finished finished) {
        Queue<Operation<?>> queue = queues.get(finished.key());
        if (queue == null) {
            return this;
        }
        Operation<?> next = queue.poll();
        if (next == null) {
            queues.remove(finished.key());
        } else {
            run(finished.key(), next);
        }
        return this;
    }

    private static <T> CompletionStage<T> reply(
            CompletionStage<T> stage, ActorRef<StatusReply<T>> replyTo) {
        return stage.whenComplete(replier(replyTo));
    }

    private static <T> BiConsumer<T, Throwable> replier(ActorRef<StatusReply<T>> replyTo) {
        return (value, failure) -> replyTo.tell(statusOf(value, failure));
    }

    /** @return the reply for an operation's value, or its failure (unwrapped from a CompletionException) */
    private static <T> StatusReply<T> statusOf(T value, Throwable failure) {
        return failure == null ? StatusReply.success(value) : StatusReply.error(cause(failure));
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause()
                : failure;
    }

    // ---- reconciliation ----

    private Behavior<Command> sweepUnlessRunning() {
        if (sweeping) {
            return this;
        }
        sweeping = true;
        List<ActorRef<StatusReply<List<String>>>> replyTo = List.copyOf(nextSweepReplies);
        nextSweepReplies.clear();
        CompletionStage<List<Reclaimer.Observation>> probed;
        try {
            // The file checks block: a dataplane thread makes them, not the actor's dispatcher.
            probed =
                    ipam.attachments()
                            .thenApplyAsync(
                                    attachments -> {
                                        deleteOrphanedShapingDevices();
                                        return reclaimer.probe(attachments);
                                    },
                                    dataplaneExecutor);
        } catch (RuntimeException e) { // the executor refuses work during shutdown
            probed = CompletableFuture.failedFuture(e);
        }
        getContext()
                .pipeToSelf(
                        probed,
                        (observations, failure) -> new Probed(observations, failure, replyTo));
        return this;
    }

    /** A failure is logged: it stops no reclaim, and the next round tries again. */
    private void deleteOrphanedShapingDevices() {
        try {
            List<String> deleted = dataplane.deleteOrphanedShapingDevices();
            if (!deleted.isEmpty()) {
                LOG.info("deleted IFB devices of pods gone: {}", deleted);
            }
        } catch (DataplaneException | RuntimeException e) {
            LOG.warn("IFB devices of pods gone could not be deleted: {}", e.toString());
        }
    }

    private Behavior<Command> onProbed(Probed probed) {
        if (probed.failure() != null) {
            StatusReply<List<String>> failed = statusOf(null, probed.failure());
            LOG.warn(
                    "reconciliation could not list the node's attachments: {}",
                    failed.getError().toString());
            probed.replyTo().forEach(r -> r.tell(failed));
            return sweepDone();
        }
        List<Reclaimer.Due> due = reclaimer.observe(probed.observations(), queues.keySet());
        List<CompletableFuture<Optional<String>>> releases = new ArrayList<>();
        for (Reclaimer.Due d : due) {
            CompletableFuture<Optional<String>> released = new CompletableFuture<>();
            releases.add(released);
            enqueue(
                    d.attachment().key(),
                    () -> reclaim(d),
                    (key, failure) -> {
                        if (failure != null) {
                            LOG.warn(
                                    "reclaiming attachment {} failed, trying again next round: {}",
                                    d.attachment().key(),
                                    cause(failure).toString());
                        }
                        released.complete(failure == null ? key : Optional.empty());
                    });
        }
        getContext()
                .pipeToSelf(
                        CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)),
                        (v, failure) ->
                                new SweepFinished(
                                        releases.stream()
                                                .map(CompletableFuture::join)
                                                .flatMap(Optional::stream)
                                                .toList(),
                                        probed.replyTo()));
        return this;
    }

    private Behavior<Command> onSweepFinished(SweepFinished finished) {
        finished.reclaimed().forEach(reclaimer::forget);
        finished.replyTo().forEach(r -> r.tell(StatusReply.success(finished.reclaimed())));
        return sweepDone();
    }

    private Behavior<Command> sweepDone() {
        sweeping = false;
        return nextSweepReplies.isEmpty() ? this : sweepUnlessRunning();
    }

    /**
     * Releases one attachment whose netns has been gone for the grace, as DEL does; runs in the
     * attachment's slot of the queue. Checks again first, since the listing is a round old: the
     * node must still hold the same record and the netns must still be gone.
     *
     * @return the attachment's key when it was released, empty when there was nothing to do
     */
    private CompletionStage<Optional<String>> reclaim(Reclaimer.Due due) {
        AttachmentRecord listed = due.attachment();
        AttachmentId id = new AttachmentId(listed.network(), listed.containerId(), listed.ifname());
        if (!id.handle().equals(listed.handle())) {
            // Not made by this agent's ADD (the handle is always <network>.<containerId>): leave it
            // to GC.
            LOG.warn(
                    "attachment {} has a handle that does not match its network and container: not reclaimed",
                    listed.key());
            return CompletableFuture.completedFuture(Optional.empty());
        }
        return ipam.lookup(listed.handle(), listed.ifname())
                .thenCompose(
                        current -> {
                            if (!current.equals(
                                    // released meanwhile (a DEL, GC), or recorded anew
                                    Optional.of(listed))) {
                                return CompletableFuture.completedFuture(Optional.<String>empty());
                            }
                            return onDataplane(() -> reclaimer.goneCause(listed))
                                    .thenCompose(
                                            cause ->
                                                    cause == null
                                                            ? CompletableFuture.completedFuture(
                                                                    Optional.<String>empty())
                                                            : detach(id)
                                                                    .thenApply(
                                                                            released -> {
                                                                                Reclaimer.Due now =
                                                                                        new Reclaimer
                                                                                                .Due(
                                                                                                due
                                                                                                        .attachment(),
                                                                                                due
                                                                                                        .goneFor(),
                                                                                                cause);
                                                                                reclaimer
                                                                                        .countReclaim(
                                                                                                now,
                                                                                                released);
                                                                                metrics.gcReclaimed(
                                                                                        ipam.node(),
                                                                                        cause
                                                                                                        == Reclaimer
                                                                                                                .Cause
                                                                                                                .POD_GONE
                                                                                                ? CadastreMetrics
                                                                                                        .GC_POD_GONE
                                                                                                : CadastreMetrics
                                                                                                        .GC_NETNS_GONE,
                                                                                        1);
                                                                                return Optional.of(
                                                                                        listed
                                                                                                .key());
                                                                            }));
                        });
    }

    // ---- the flows ----

    /**
     * ADD. A full ADD first checks that CNI_NETNS is a pod's network namespace (it exists, is one,
     * is not the host's), before any address is assigned, so that a refused request changes
     * nothing. The netns path is recorded with the attachment only when the agent can see it now:
     * a path it cannot see (an IPAM-only ADD from a runtime whose namespaces live elsewhere) would
     * look gone at once and lose a live pod its addresses.
     *
     * <p>Once the netns passes, a full ADD makes the veth pair ({@link Dataplane#prepare}, both
     * ends down, nothing routed to it) on the dataplane thread while IPAM assigns the addresses,
     * the two slow steps of an ADD overlapping; the wiring then configures that pair. An ADD
     * that fails before the wiring (IPAM refused, a repeat refused) deletes the pair before it
     * answers, so a refused ADD leaves nothing behind.
     *
     * <p>A repeated ADD (the node knows the attachment) may come while the pod runs on the
     * addresses the first ADD gave it: it never releases them and never rewires a pod that is
     * wired as asked (the dataplane returns the wiring unchanged). It is refused, changing
     * nothing, when it asks for addresses the attachment does not hold or names another netns
     * than the attachment's.
     */
    private CompletionStage<Wired> attach(AttachmentId id, PodRequest request) {
        if (request.ipamOnly()) {
            String netns = request.ipam().netnsPath();
            CompletionStage<AssignRequest> checked =
                    netns == null
                            ? CompletableFuture.completedFuture(request.ipam())
                            : onDataplane(
                                    () ->
                                            reclaimer.isGone(netns)
                                                    ? request.ipam().withNetnsPath(null)
                                                    : request.ipam());
            return checked.thenCompose(ipam::assignOrFind)
                    .thenApply(
                            assignment -> {
                                recordAssignment(id, request, assignment);
                                return new Wired(assignment.record(), null);
                            });
        }
        CompletableFuture<AssignRequest> checked = new CompletableFuture<>();
        int mtu = mtu(request.mtu());
        CompletableFuture<OptionalInt> prepared =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                dataplane.checkPodNetns(request.netnsPath());
                            } catch (DataplaneException | RuntimeException e) {
                                checked.completeExceptionally(e);
                                return OptionalInt.empty();
                            }
                            // IPAM starts now, while the pair is made.
                            checked.complete(request.ipam());
                            try {
                                return dataplane.prepare(
                                        request.netnsPath(), id.hostIfname(), id.ifname(), mtu);
                            } catch (DataplaneException | RuntimeException e) {
                                // attach meets the same problem and reports it
                                return OptionalInt.empty();
                            }
                        },
                        dataplaneExecutor);
        return checked.thenCompose(ipam::assignOrFind)
                .handle(
                        (assignment, failure) ->
                                prepared.thenCompose(
                                        pair ->
                                                failure == null
                                                        ? wire(id, request, assignment, pair)
                                                        : this.<Wired>discardThenFail(
                                                                id, pair, failure)))
                .thenCompose(wiring -> wiring);
    }

    /** The second half of a full ADD, once IPAM has answered: the refusals of a repeat, then the wiring. */
    private CompletionStage<Wired> wire(
            AttachmentId id, PodRequest request, Ipam.Assignment assignment, OptionalInt prepared) {
        AttachmentRecord record = assignment.record();
        try {
            recordAssignment(id, request, assignment);
        } catch (RuntimeException e) {
            return discardThenFail(id, prepared, e);
        }
        PodAttachment pod =
                podAttachment(
                        id, request.netnsPath(), mtu(request.mtu()), record, request.bandwidth());
        if (!assignment.fresh()) {
            return onDataplane(() -> rewireIfDifferent(id, pod, prepared))
                    .thenApply(wired -> new Wired(record, wired));
        }
        return onDataplane(
                        () -> {
                            if (prepared.isEmpty()) {
                                // The host end's name is a hash of the attachment, and IPAM did not
                                // know the attachment: a link of that name is left from an earlier
                                // attempt that failed.
                                dataplane.detach(id.hostIfname());
                            }
                            return dataplane.attach(pod, prepared);
                        })
                .thenApply(wired -> new Wired(record, wired))
                // No partial state: give the addresses back, then report the wiring failure.
                .exceptionallyCompose(
                        failure ->
                                ipam.release(id.handle(), id.ifname())
                                        .handle(
                                                (released, releaseFailure) -> {
                                                    throw failure instanceof CompletionException ce
                                                            ? ce
                                                            : new CompletionException(failure);
                                                }));
    }

    /**
     * A repeat is checked ({@link #refuseChangedRepeat}); a fresh assignment's addresses are told
     * to the pod network.
     */
    private void recordAssignment(AttachmentId id, PodRequest request, Ipam.Assignment assignment) {
        if (!assignment.fresh()) {
            refuseChangedRepeat(id, request, assignment.record());
        } else {
            podNetwork.addressesChanged(
                    assignment.record().addresses().stream().map(h -> h.address()).toList());
        }
    }

    /**
     * An ADD that failed before its wiring: the pair {@link Dataplane#prepare} made for it (if
     * any) is deleted before the failure is reported, so that the ADD leaves nothing behind.
     */
    private <T> CompletionStage<T> discardThenFail(
            AttachmentId id, OptionalInt prepared, Throwable failure) {
        CompletionStage<Void> discarded =
                prepared.isEmpty()
                        ? CompletableFuture.completedFuture(null)
                        : onDataplane(
                                () -> {
                                    dataplane.deleteUnplugged(id.hostIfname(), prepared.getAsInt());
                                    return null;
                                });
        return discarded.handle(
                (v, e) -> {
                    if (e != null) {
                        LOG.warn(
                                "ADD of {} failed, and its prepared pair {} could not be deleted: {}",
                                id.key(),
                                id.hostIfname(),
                                e.toString());
                    }
                    throw failure instanceof CompletionException ce
                            ? ce
                            : new CompletionException(failure);
                });
    }

    /**
     * A repeated ADD may not change what the first one set up: other addresses (a different
     * {@code IP=}), or another netns than the one recorded (the container ID names one sandbox).
     *
     * @throws IpamException {@code INVALID_REQUEST} for other addresses, or for a record of another
     *     attachment whose network and container ID give the same handle ({@link
     *     AttachmentId#owns}; CNI code 7)
     * @throws CompletionException wrapping a {@link DataplaneException} of kind {@code INVALID_NETNS}
     *     for another netns
     */
    private static void refuseChangedRepeat(
            AttachmentId id, PodRequest request, AttachmentRecord record) {
        if (!id.owns(record)) {
            throw new IpamException(
                    IpamException.Reason.INVALID_REQUEST,
                    "network "
                            + id.network()
                            + " and container "
                            + id.containerId()
                            + " give the IPAM handle "
                            + id.handle()
                            + ", which network "
                            + record.network()
                            + " and container "
                            + record.containerId()
                            + " hold already: rename one of the networks");
        }
        Set<String> held = new TreeSet<>();
        record.addresses().forEach(h -> held.add(h.address()));
        List<String> other =
                request.ipam().requestedIps().stream().filter(ip -> !held.contains(ip)).toList();
        if (!other.isEmpty()) {
            throw new IpamException(
                    IpamException.Reason.INVALID_REQUEST,
                    "attachment "
                            + id.key()
                            + " holds "
                            + held
                            + " already: a repeated ADD cannot ask for "
                            + other
                            + " (DEL the attachment first)");
        }
        String recorded = record.netnsPath();
        if (!request.ipamOnly() && recorded != null && !recorded.equals(request.netnsPath())) {
            throw new CompletionException(
                    new DataplaneException(
                            "attachment "
                                    + id.key()
                                    + " is wired into another network namespace; a repeated ADD cannot move it (DEL it first)",
                            DataplaneException.Kind.INVALID_NETNS,
                            null));
        }
    }

    /**
     * A repeated full ADD: the wiring as it is when it matches; rewired when the host end exists
     * but differs (left half-done by an attempt that failed, or the MTU changed), or is missing.
     */
    private WiredPod rewireIfDifferent(AttachmentId id, PodAttachment pod, OptionalInt prepared)
            throws DataplaneException {
        try {
            return dataplane.attach(pod, prepared);
        } catch (DataplaneException e) {
            if (e.kind() != DataplaneException.Kind.WIRED_DIFFERENTLY) {
                throw e;
            }
            dataplane.detach(id.hostIfname());
            return dataplane.attach(pod);
        }
    }

    /**
     * DEL (CNI spec 1.1 §DEL): the pod off the network (its host end down, so no host route to it
     * is left: {@link Dataplane#unplug}) and the node forgetting the attachment run at once; the
     * blocks free the addresses after both, and the reply goes out. The veth pair is left for
     * {@link #TEARDOWN_DELAY}: the runtime removes the pod's netns right after DEL, and the kernel
     * then deletes the pair with the netns's other devices, sparing this host a delete of its own
     * (each waits for RCU grace periods). Whatever is left then is deleted on the teardown thread,
     * by ifindex, so that a pair wired anew under the same name meanwhile (an ADD of the
     * attachment deletes a leftover of its host name first) is not touched. A delete that fails is
     * logged: the addresses are free, and the down link goes with its netns.
     */
    private CompletionStage<List<String>> releaseForDel(AttachmentId id, boolean ipamOnly) {
        if (id.handleMayBeShared()) {
            // Calls on one key run one at a time (enqueue), so the record cannot change between
            // the look-up and the release.
            return ipam.lookup(id.handle(), id.ifname())
                    .thenCompose(
                            found -> {
                                if (found.isPresent() && !id.owns(found.get())) {
                                    LOG.warn(
                                            "DEL of {} (network {}, container {}): its key holds another attachment's record (network {}, container {}); nothing released",
                                            id.key(),
                                            id.network(),
                                            id.containerId(),
                                            found.get().network(),
                                            found.get().containerId());
                                    return CompletableFuture.completedFuture(List.<String>of());
                                }
                                return releaseForDelOwned(id, ipamOnly);
                            });
        }
        return releaseForDelOwned(id, ipamOnly);
    }

    private CompletionStage<List<String>> releaseForDelOwned(AttachmentId id, boolean ipamOnly) {
        CompletionStage<OptionalInt> unplugged =
                ipamOnly
                        ? CompletableFuture.completedFuture(OptionalInt.empty())
                        : onDataplane(() -> dataplane.unplug(id.hostIfname()));
        unplugged.thenAccept(
                index ->
                        index.ifPresent(
                                hostIndex ->
                                        CompletableFuture.runAsync(
                                                () -> {
                                                    try {
                                                        dataplane.deleteUnplugged(
                                                                id.hostIfname(), hostIndex);
                                                    } catch (DataplaneException
                                                            | RuntimeException e) {
                                                        LOG.warn(
                                                                "DEL of {}: the unplugged host end {} could not be deleted: {}",
                                                                id.key(),
                                                                id.hostIfname(),
                                                                e.toString());
                                                    }
                                                },
                                                CompletableFuture.delayedExecutor(
                                                        TEARDOWN_DELAY.toMillis(),
                                                        TimeUnit.MILLISECONDS,
                                                        teardownThread))));
        return release(id, unplugged);
    }

    /** Unwires (deleting the pair) and releases, as DEL does but waiting for the delete: reclaim's path. */
    private CompletionStage<List<String>> detach(AttachmentId id) {
        return release(
                id,
                onDataplane(
                        () -> {
                            dataplane.detach(id.hostIfname());
                            return null;
                        }));
    }

    /**
     * The node forgets the attachment while {@code unwired} completes; the blocks free the
     * addresses only after both, so an address is never free while a host route to it still
     * exists (root DESIGN.md, invariant 6). If unwiring fails, the addresses stay held as orphans
     * and the call fails; the runtime's retried DEL (or the next reclaim round) sweeps them.
     */
    private CompletionStage<List<String>> release(AttachmentId id, CompletionStage<?> unwired) {
        return ipam.forget(id.handle(), id.ifname())
                .thenCombine(unwired, (blocks, done) -> blocks)
                .thenCompose(blocks -> ipam.free(id.handle(), id.ifname(), blocks))
                .thenApply(
                        released -> {
                            if (!released.isEmpty()) {
                                podNetwork.addressesChanged(released);
                            }
                            return released;
                        });
    }

    /** @return the netconf's MTU when it gives one, else the pod network's */
    private int mtu(int requested) {
        return requested > 0 ? requested : podNetwork.podMtu();
    }

    private CompletionStage<CheckResult> check(Check cmd) {
        return ipam.lookup(cmd.id().handle(), cmd.id().ifname())
                .thenApply(found -> found.filter(cmd.id()::owns))
                .thenCompose(
                        found -> {
                            if (found.isEmpty() || cmd.ipamOnly()) {
                                return CompletableFuture.completedFuture(
                                        new CheckResult(found.orElse(null), List.of()));
                            }
                            PodAttachment pod =
                                    podAttachment(
                                            cmd.id(),
                                            cmd.netnsPath(),
                                            mtu(cmd.mtu()),
                                            found.get(),
                                            cmd.bandwidth());
                            return onDataplane(() -> dataplane.check(pod))
                                    .thenApply(diffs -> new CheckResult(found.get(), diffs));
                        });
    }

    /**
     * GC (CNI spec 1.1 §GC), a full one: the node's attachments are read first, and those the GC
     * will release are taken off the network ({@link Dataplane#unplug}) before IPAM releases them,
     * so that no freed address is still routed here; then their pairs are deleted. Attachments
     * with an operation in their slot are left to IPAM's own rule (an ADD in flight is kept). An
     * attachment IPAM releases that was not listed (recorded meanwhile) is unwired after.
     */
    private Behavior<Command> onCollectGarbage(CollectGarbage cmd) {
        if (cmd.ipamOnly()) {
            reply(collectInIpam(cmd), cmd.replyTo());
            return this;
        }
        getContext()
                .pipeToSelf(
                        ipam.attachments(),
                        (attachments, failure) -> new GarbageListed(cmd, attachments, failure));
        return this;
    }

    /** IPAM's part of a GC, its releases counted ({@code cni-gc}). @return the released keys */
    private CompletionStage<List<String>> collectInIpam(CollectGarbage cmd) {
        return ipam.collectGarbage(cmd.network(), cmd.keep())
                .thenApply(
                        released -> {
                            metrics.gcReclaimed(
                                    ipam.node(), CadastreMetrics.GC_CNI, released.size());
                            return released;
                        });
    }

    private Behavior<Command> onGarbageListed(GarbageListed listed) {
        CollectGarbage cmd = listed.gc();
        if (listed.failure() != null) {
            cmd.replyTo().tell(statusOf(null, listed.failure()));
            return this;
        }
        List<AttachmentId> dropped = new ArrayList<>();
        for (AttachmentRecord r : listed.attachments()) {
            AttachmentId id = new AttachmentId(r.network(), r.containerId(), r.ifname());
            if (r.network().equals(cmd.network())
                    && !cmd.keep().contains(r.key())
                    && id.handle().equals(r.handle())
                    && !queues.containsKey(r.key())) {
                dropped.add(id);
            }
        }
        CompletionStage<Void> unplugged =
                dropped.isEmpty()
                        ? CompletableFuture.completedFuture(null)
                        : onDataplane(
                                () -> {
                                    for (AttachmentId id : dropped) {
                                        try {
                                            dataplane.unplug(id.hostIfname());
                                        } catch (DataplaneException e) {
                                            LOG.warn(
                                                    "GC of {}: its host end {} could not be set down: {}",
                                                    id.key(),
                                                    id.hostIfname(),
                                                    e.toString());
                                        }
                                    }
                                    return null;
                                });
        reply(
                unplugged
                        .thenCompose(v -> collectInIpam(cmd))
                        .thenCompose(
                                releasedKeys -> {
                                    if (releasedKeys.isEmpty()) {
                                        return CompletableFuture.completedFuture(releasedKeys);
                                    }
                                    return onDataplane(
                                            () -> {
                                                for (String key : releasedKeys) {
                                                    AttachmentId id = fromKey(cmd.network(), key);
                                                    if (id != null) {
                                                        dataplane.detach(id.hostIfname());
                                                    }
                                                }
                                                return releasedKeys;
                                            });
                                }),
                cmd.replyTo());
        return this;
    }

    /** @return the attachment behind a key {@code <network>.<containerId>/<ifname>}, or null if malformed */
    private static AttachmentId fromKey(String network, String key) {
        int slash = key.lastIndexOf('/');
        String prefix = network + ".";
        if (slash < 0 || !key.startsWith(prefix)) {
            return null;
        }
        return new AttachmentId(
                network, key.substring(prefix.length(), slash), key.substring(slash + 1));
    }

    private static PodAttachment podAttachment(
            AttachmentId id,
            String netnsPath,
            int mtu,
            AttachmentRecord record,
            Bandwidth bandwidth) {
        List<PodAddress> addresses =
                record.addresses().stream()
                        .map(
                                a ->
                                        new PodAddress(
                                                IpAddresses.toInet(a.address()),
                                                a.family() == IpFamily.V4 ? 32 : 128))
                        .toList();
        return new PodAttachment(
                netnsPath, id.ifname(), id.hostIfname(), mtu, addresses, bandwidth);
    }

    @FunctionalInterface
    private interface DataplaneCall<T> {
        T call() throws DataplaneException;
    }

    private <T> CompletionStage<T> onDataplane(DataplaneCall<T> call) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return call.call();
                    } catch (DataplaneException e) {
                        throw new CompletionException(e);
                    }
                },
                dataplaneExecutor);
    }
}
