package io.cadastre.routing;

import io.cadastre.dataplane.Dataplane;
import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.HostRouting.Installed;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.IpFamily;
import io.cadastre.node.PodNetwork;
import io.cadastre.routing.MeshPlan.Family;
import io.cadastre.routing.MeshState.Claim;
import io.cadastre.routing.MeshState.NodeFacts;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.MeshHints;
import io.cadastre.shards.NodeEntity.NodeView;
import io.cadastre.shards.PeerInfo;
import io.cadastre.shards.PoolEntity.PoolView;
import java.net.InetAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This host's routes to other hosts' pods, kept equal to cluster state: one actor per agent, local.
 *
 * <p><b>What it reads.</b> The pools' claims (the truth for affinity) and, per node, its peer, its
 * removal and its attachments' addresses (borrowed ones among them), all from the entities
 * ({@link MeshSource}). Everything is read at {@link Start}, again every
 * {@link RoutingSettings#resync()} (so nothing drifts: a lost hint, an entity that did not answer)
 * and when a member becomes reachable again; in between, a {@link MeshHints} hint from any agent
 * (a claim, a release, a peer published, an address borrowed) makes it read that one pool or node
 * again at once. At its first read it also reads every claimed block once, to learn nodes that
 * hold only borrowed addresses and whose agent is down. A read that fails keeps what was known:
 * a node that is unreachable or down keeps its routes; only its removal withdraws them.
 *
 * <p><b>What it writes.</b> {@link MeshPlan#compute} turns the state into the desired routes,
 * devices and entries; {@link HostRouting#reconcile} applies them, on the dataplane executor, one
 * at a time, {@link RoutingSettings#debounce()} after a change (several changes, one reconcile),
 * and at every resync even without a change (what someone changed by hand is repaired). Nothing
 * is reconciled before the first complete read of the pools: an agent restarted while the cluster
 * is unavailable leaves the kernel's routes as they were. It publishes this node's peer
 * ({@link PeerInfo}) at start and whenever it changes, and assigns its tunnel addresses
 * ({@link TunnelAttachment}) once a peer may exchange VXLAN with it.
 *
 * <p><b>Local pods.</b> The node agent tells it the addresses of every ADD and DEL
 * ({@link LocalAddresses}): an address outside this node's known blocks is borrowed (or from a
 * block claimed a moment ago), so the other agents are told to read this node again.
 *
 * <p>In mode {@link RoutingMode#NONE} it reads and changes nothing; it answers its views empty.
 */
public final class MeshRouter extends AbstractBehavior<MeshRouter.Command> {
    private static final Logger LOG = LoggerFactory.getLogger(MeshRouter.class);

    /** How soon a first read that failed (the cluster not ready yet) is tried again. */
    private static final Duration RETRY = Duration.ofSeconds(1);

    /** How many changes of one reconcile are logged line by line. */
    private static final int LOGGED_CHANGES = 20;

    /** Messages; local only, never serialized. */
    public interface Command {}

    /** Begin: read everything, publish the peer, reconcile. Sent once the member is Up. */
    public enum Start implements Command {
        INSTANCE
    }

    /** From the node agent: the addresses of an ADD or a DEL on this node. */
    public record LocalAddresses(List<String> addresses) implements Command {}

    /** Read everything again and reconcile now; answers when the reconcile is done (or failed). */
    public record Refresh(ActorRef<Status> replyTo) implements Command {}

    /** Answers this host's {@link Status}. */
    public record GetStatus(ActorRef<Status> replyTo) implements Command {}

    /**
     * Answers how {@code node} reaches the others as computed here from cluster state: this
     * host's own plan, or, for another node, the plan its published peer implies; empty when this
     * agent routes nothing (mode none) or the node published no peer.
     */
    public record Describe(String node, ActorRef<Optional<Description>> replyTo)
            implements Command {}

    /**
     * The consistency check: compares this host's routes with the claims given (read by the
     * check), refreshing once before it reports what remains; empty in mode none.
     *
     * @param removed the nodes an operator removed
     */
    public record Audit(
            Map<Cidr, Claim> claims,
            Set<String> removed,
            ActorRef<Optional<List<RouteAudit.Finding>>> replyTo)
            implements Command {}

    /**
     * This host's routing now.
     *
     * @param mode the routing mode
     * @param ready whether cluster state has been read completely once (before that nothing is reconciled)
     * @param plan the last plan computed
     * @param peer this node's peer as last published (null before)
     * @param lastResult the last reconcile's result, or null
     * @param lastReconcile when it ended, or null
     * @param lastFailure why the last reconcile failed (the state could not be read), or null
     */
    public record Status(
            RoutingMode mode,
            boolean ready,
            MeshPlan plan,
            PeerInfo peer,
            HostRouting.Result lastResult,
            Instant lastReconcile,
            String lastFailure) {}

    /**
     * One node's routing as computed here.
     *
     * @param node the node
     * @param mode its routing mode (this agent's setting, or what the node published)
     * @param computedOn this agent's node
     * @param programmed whether these are this host's routes (reconciled here), not a computation
     *     for another node
     * @param peer what the node published
     * @param plan its routes, peers and problems
     * @param status this host's status when {@code programmed}, else null
     */
    public record Description(
            String node,
            String mode,
            String computedOn,
            boolean programmed,
            PeerInfo peer,
            MeshPlan plan,
            Status status) {}

    private enum Tick implements Command {
        INSTANCE
    }

    private enum ReconcileNow implements Command {
        INSTANCE
    }

    private record HintReceived(MeshHints.Hint hint) implements Command {}

    private record Read(
            long ticket,
            boolean first,
            Map<String, PoolView> pools,
            Set<String> poolNames,
            Map<String, NodeView> nodes,
            Throwable failure)
            implements Command {}

    private record PoolRead(String name, long ticket, PoolView view, Throwable failure)
            implements Command {}

    private record NodeRead(String name, long ticket, NodeView view, Throwable failure)
            implements Command {}

    private record Reconciled(
            MeshPlan plan,
            long readTicket,
            HostRouting.Result result,
            Throwable failure,
            Instant at)
            implements Command {}

    /** Runs {@code then} (on the actor) after a reconcile computed from a complete read with at least {@code minTicket}. */
    private record Waiter(long minTicket, Consumer<Status> then) {}

    private record Published(PeerInfo peer, Throwable failure) implements Command {}

    private record TunnelAssigned(AttachmentRecord record, Throwable failure) implements Command {}

    private record Audited(
            Audit audit, List<Installed> installed, Throwable failure, boolean confirmed)
            implements Command {}

    private record Reachable() implements Command {}

    private record MemberUp() implements Command {}

    /**
     * How long after another member comes up everything is read again: its agent publishes its
     * peer once its pools are defined, seconds after joining, and the hint it sends then may reach
     * no one yet (the members learn each other's hint topics through the receptionist's gossip).
     */
    static final Duration AFTER_MEMBER_UP = Duration.ofSeconds(5);

    /**
     * @param underlay this host's underlay (null when it has none)
     * @param ipv6Pods whether pods get IPv6 addresses (for nothing but logs here)
     * @param metrics where the routing metrics go
     * @param dataplane read at every resync for the pods' source filters' drops (keeps them counted
     *     when a pod's netns went away without a DEL)
     */
    public static Behavior<Command> create(
            String node,
            RoutingSettings settings,
            Underlay underlay,
            MeshSource source,
            HostRouting routing,
            Dataplane dataplane,
            Executor dataplaneExecutor,
            CadastreMetrics metrics) {
        return Behaviors.setup(
                ctx ->
                        Behaviors.withTimers(
                                timers ->
                                        new MeshRouter(
                                                ctx,
                                                timers,
                                                node,
                                                settings,
                                                underlay,
                                                source,
                                                routing,
                                                dataplane,
                                                dataplaneExecutor,
                                                metrics)));
    }

    private final TimerScheduler<Command> timers;
    private final String node;
    private final RoutingSettings settings;
    private final Underlay underlay;
    private final MeshSource source;
    private final HostRouting routing;
    private final Dataplane dataplane;
    private final Executor dataplaneExecutor;
    private final CadastreMetrics metrics;

    private boolean started;

    /** Whether every pool has been read once: reconciles start then. */
    private boolean ready;

    private boolean firstRead = true;
    private boolean reading;
    private boolean readAgain;
    private long tickets;

    /** pool → its claims (block → node) as last read, and the ticket of that read. */
    private final Map<String, Map<Cidr, String>> poolClaims = new HashMap<>();

    /** pool → its CIDR, for outgoing NAT: every defined pool's pods, and its destinations exempt. */
    private final Map<String, Cidr> poolCidrs = new HashMap<>();

    private final Map<String, Long> poolTickets = new HashMap<>();
    private final ReadsInFlight poolReads = new ReadsInFlight();
    private final Map<String, NodeFacts> nodes = new HashMap<>();
    private final Map<String, Long> nodeTickets = new HashMap<>();
    private final ReadsInFlight nodeReads = new ReadsInFlight();
    private InetAddress tunnelV4;
    private InetAddress tunnelV6;
    private boolean assigningTunnel;

    /**
     * Families the last tunnel assignment lacked (the node's default pools have none of that
     * family): asked for again only after the next full read, not at once, which would loop at the
     * IPAM's speed.
     */
    private final Set<Family> tunnelFamiliesLacking = EnumSet.noneOf(Family.class);

    private PeerInfo published;
    private boolean publishing;

    private boolean reconciling;
    private boolean reconcileScheduled;
    private boolean reconcileAgain;
    private MeshPlan plan = MeshPlan.empty();
    private HostRouting.Result lastResult;
    private Instant lastReconcile;
    private String lastFailure;
    private List<String> loggedProblems = List.of();
    private List<String> loggedTrouble = List.of();

    /** Callers waiting for a reconcile computed from a complete read with at least their ticket. */
    private final List<Waiter> waiting = new ArrayList<>();

    /** The ticket of the last complete read applied. */
    private long lastReadTicket;

    private volatile CadastreMetrics.RoutingGauges gauges = CadastreMetrics.RoutingGauges.NONE;

    private MeshRouter(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            String node,
            RoutingSettings settings,
            Underlay underlay,
            MeshSource source,
            HostRouting routing,
            Dataplane dataplane,
            Executor dataplaneExecutor,
            CadastreMetrics metrics) {
        super(ctx);
        this.timers = timers;
        this.node = node;
        this.settings = settings;
        this.underlay = underlay;
        this.source = source;
        this.routing = routing;
        this.dataplane = dataplane;
        this.dataplaneExecutor = dataplaneExecutor;
        this.metrics = metrics;
        if (settings.mode() != RoutingMode.NONE) {
            metrics.watchRouting(node, () -> gauges);
        }
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessageEquals(Start.INSTANCE, this::onStart)
                .onMessageEquals(Tick.INSTANCE, () -> readAll())
                .onMessage(Reachable.class, r -> readAll())
                .onMessage(
                        MemberUp.class,
                        up -> {
                            if (started) {
                                timers.startSingleTimer(
                                        "member-up", Tick.INSTANCE, AFTER_MEMBER_UP);
                            }
                            return this;
                        })
                .onMessage(HintReceived.class, this::onHint)
                .onMessage(LocalAddresses.class, this::onLocal)
                .onMessage(Read.class, this::onRead)
                .onMessage(PoolRead.class, this::onPoolRead)
                .onMessage(NodeRead.class, this::onNodeRead)
                .onMessageEquals(ReconcileNow.INSTANCE, this::onReconcileNow)
                .onMessage(Reconciled.class, this::onReconciled)
                .onMessage(Published.class, this::onPublished)
                .onMessage(TunnelAssigned.class, this::onTunnelAssigned)
                .onMessage(Refresh.class, this::onRefresh)
                .onMessage(
                        GetStatus.class,
                        g -> {
                            g.replyTo().tell(status());
                            return this;
                        })
                .onMessage(Describe.class, this::onDescribe)
                .onMessage(Audit.class, this::onAudit)
                .onMessage(Audited.class, this::onAudited)
                .build();
    }

    private Status status() {
        return new Status(
                settings.mode(), ready, plan, published, lastResult, lastReconcile, lastFailure);
    }

    // ---- reading ----

    private Behavior<Command> onStart() {
        if (started || settings.mode() == RoutingMode.NONE) {
            return this;
        }
        started = true;
        source.subscribe(getContext().messageAdapter(MeshHints.Hint.class, HintReceived::new));
        timers.startTimerWithFixedDelay(Tick.INSTANCE, settings.resync());
        LOG.info(
                "routing: mode {}, underlay {}, VNI {}, UDP port {}; reading cluster state",
                settings.mode(),
                underlay == null
                        ? "none"
                        : underlay.device()
                                + " ("
                                + underlay.ipv4()
                                + ", "
                                + underlay.ipv6()
                                + ", MTU "
                                + underlay.mtu()
                                + ")",
                settings.vni(),
                settings.port());
        return readAll();
    }

    /**
     * @param podMtu the pods' MTU by the mode and underlay ({@link RoutingSettings#podMtu})
     * @return what the node agent tells and asks: the MTU, and the addresses of ADDs and DELs
     */
    public static PodNetwork podNetwork(ActorRef<Command> router, int podMtu) {
        return new PodNetwork() {
            @Override
            public int podMtu() {
                return podMtu;
            }

            @Override
            public void addressesChanged(List<String> addresses) {
                router.tell(new LocalAddresses(List.copyOf(addresses)));
            }
        };
    }

    /** Sent by the agent when another member comes up: everything is read again a few seconds later. */
    public static Command memberUp() {
        return new MemberUp();
    }

    /** Called by the agent when a member becomes reachable again: what it missed is read at once. */
    public static Command reachable() {
        return new Reachable();
    }

    private Behavior<Command> readAll() {
        if (!started) {
            return this;
        }
        if (reading) {
            readAgain = true;
            return this;
        }
        reading = true;
        long ticket = ++tickets;
        boolean first = firstRead;
        Set<String> extra = new TreeSet<>(nodes.keySet());
        extra.addAll(source.members());
        extra.add(node);
        CompletionStage<Read> read;
        try {
            read = readEverything(ticket, first, extra);
        } catch (RuntimeException e) {
            read = CompletableFuture.failedFuture(e);
        }
        getContext()
                .pipeToSelf(
                        read,
                        (r, failure) ->
                                failure == null
                                        ? r
                                        : new Read(
                                                ticket, first, Map.of(), Set.of(), Map.of(),
                                                failure));
        foldSpoofDrops();
        return this;
    }

    /** Pools, then the nodes they and the members name (and at the first read, the blocks' holders). */
    private CompletionStage<Read> readEverything(long ticket, boolean first, Set<String> extra) {
        return source.poolNames()
                .thenCompose(
                        names -> {
                            Map<String, CompletableFuture<PoolView>> pools = new LinkedHashMap<>();
                            names.forEach(n -> pools.put(n, source.pool(n).toCompletableFuture()));
                            return settled(pools)
                                    .thenCompose(
                                            views -> {
                                                Set<String> wanted = new TreeSet<>(extra);
                                                views.values()
                                                        .forEach(
                                                                v ->
                                                                        wanted.addAll(
                                                                                v.claims()
                                                                                        .values()));
                                                CompletionStage<Set<String>> holders =
                                                        first
                                                                ? blockHolders(views.values())
                                                                : CompletableFuture.completedFuture(
                                                                        Set.of());
                                                return holders.thenCompose(
                                                        h -> {
                                                            wanted.addAll(h);
                                                            Map<String, CompletableFuture<NodeView>>
                                                                    reads = new LinkedHashMap<>();
                                                            wanted.forEach(
                                                                    n ->
                                                                            reads.put(
                                                                                    n,
                                                                                    source.node(n)
                                                                                            .toCompletableFuture()));
                                                            return settled(reads)
                                                                    .thenApply(
                                                                            nodeViews ->
                                                                                    new Read(
                                                                                            ticket,
                                                                                            first,
                                                                                            views,
                                                                                            Set
                                                                                                    .copyOf(
                                                                                                            names),
                                                                                            nodeViews,
                                                                                            null));
                                                        });
                                            });
                        });
    }

    /** @return the nodes holding allocations in the claimed blocks (reads that fail are skipped) */
    private CompletionStage<Set<String>> blockHolders(Collection<PoolView> views) {
        Map<String, CompletableFuture<BlockView>> blocks = new LinkedHashMap<>();
        views.forEach(
                v ->
                        v.claims()
                                .keySet()
                                .forEach(
                                        b ->
                                                blocks.put(
                                                        b.toString(),
                                                        source.block(b).toCompletableFuture())));
        return settled(blocks)
                .thenApply(
                        read -> {
                            Set<String> holders = new TreeSet<>();
                            read.values()
                                    .forEach(
                                            b ->
                                                    b.allocations()
                                                            .values()
                                                            .forEach(a -> holders.add(a.node())));
                            return holders;
                        });
    }

    /** @return the values of the futures that succeeded, by key (failures are left out) */
    private static <T> CompletableFuture<Map<String, T>> settled(
            Map<String, CompletableFuture<T>> futures) {
        return CompletableFuture.allOf(
                        futures.values().stream()
                                .map(f -> f.handle((v, e) -> null))
                                .toArray(CompletableFuture[]::new))
                .thenApply(
                        v -> {
                            Map<String, T> out = new TreeMap<>();
                            futures.forEach(
                                    (k, f) -> {
                                        if (!f.isCompletedExceptionally()) {
                                            out.put(k, f.join());
                                        }
                                    });
                            return out;
                        });
    }

    private Behavior<Command> onRead(Read r) {
        reading = false;
        if (r.failure() != null) {
            LOG.info(
                    "routing: cluster state not read ({}); keeping what is known, trying again in {}",
                    unwrap(r.failure()),
                    ready ? settings.resync() : RETRY);
            if (!ready) {
                timers.startSingleTimer("retry-read", Tick.INSTANCE, RETRY);
            }
        } else {
            r.pools().forEach((name, view) -> applyPool(name, r.ticket(), view));
            // A pool gone from the catalogue has no claims left (deleting a pool needs none).
            poolClaims.keySet().removeIf(name -> !r.poolNames().contains(name));
            poolCidrs.keySet().removeIf(name -> !r.poolNames().contains(name));
            r.nodes().forEach((name, view) -> applyNode(name, r.ticket(), view));
            boolean complete = r.pools().keySet().containsAll(r.poolNames());
            if (!complete) {
                LOG.info(
                        "routing: {} of {} pools answered; keeping the others' claims as known",
                        r.pools().size(),
                        r.poolNames().size());
            }
            if (r.first() && complete) {
                firstRead = false;
            }
            if (complete) {
                lastReadTicket = Math.max(lastReadTicket, r.ticket());
            }
            if (!ready && complete) {
                ready = true;
                LOG.info(
                        "routing: cluster state read ({} claimed blocks, {} nodes); reconciling",
                        claims().size(),
                        nodes.size());
            } else if (!ready) {
                timers.startSingleTimer("retry-read", Tick.INSTANCE, RETRY);
            }
            forgetIdleNodes();
            tunnelFamiliesLacking.clear();
            afterChange(true);
        }
        if (readAgain) {
            readAgain = false;
            readAll();
        }
        return this;
    }

    /** @return the blocks whose claim this read ended or gave to another node */
    private Set<Cidr> applyPool(String name, long ticket, PoolView view) {
        if (ticket <= poolTickets.getOrDefault(name, 0L)) {
            return Set.of(); // a newer read of this pool was applied already
        }
        poolTickets.put(name, ticket);
        if (view.defined()) {
            poolCidrs.put(name, view.spec().cidr());
        } else {
            poolCidrs.remove(name);
        }
        Map<Cidr, String> before = poolClaims.put(name, new HashMap<>(view.claims()));
        Set<Cidr> moved = new HashSet<>();
        if (before != null) {
            before.forEach(
                    (block, owner) -> {
                        if (!owner.equals(view.claims().get(block))) {
                            moved.add(block);
                        }
                    });
        }
        return moved;
    }

    private void applyNode(String name, long ticket, NodeView view) {
        if (ticket <= nodeTickets.getOrDefault(name, 0L)) {
            return;
        }
        nodeTickets.put(name, ticket);
        List<HeldAddress> addresses = new ArrayList<>();
        view.attachments().forEach(a -> addresses.addAll(a.addresses()));
        nodes.put(name, new NodeFacts(view.peer(), view.removed(), addresses));
        if (name.equals(node)) {
            ownTunnel(view.attachments());
        }
    }

    /** This node's tunnel addresses, from its reserved attachment (gone if an operator released it). */
    private void ownTunnel(List<AttachmentRecord> attachments) {
        InetAddress v4 = null;
        InetAddress v6 = null;
        for (AttachmentRecord a : attachments) {
            if (TunnelAttachment.is(a, node)) {
                for (HeldAddress h : a.addresses()) {
                    if (h.family() == IpFamily.V4) {
                        v4 = IpAddresses.toInet(h.address());
                    } else {
                        v6 = IpAddresses.toInet(h.address());
                    }
                }
            }
        }
        tunnelV4 = v4;
        tunnelV6 = v6;
    }

    /** Nodes with nothing to route to, no peer use, and no member are dropped from the read set. */
    private void forgetIdleNodes() {
        Set<String> owners = new HashSet<>(claims().values().stream().map(Claim::node).toList());
        Set<String> members = source.members();
        nodes.entrySet()
                .removeIf(
                        e ->
                                !e.getKey().equals(node)
                                        && !owners.contains(e.getKey())
                                        && !members.contains(e.getKey())
                                        && e.getValue().addresses().isEmpty());
    }

    private Behavior<Command> onHint(HintReceived h) {
        if (!started) {
            return this;
        }
        if (h.hint() instanceof MeshHints.PoolChanged p) {
            readPool(p.pool());
        } else if (h.hint() instanceof MeshHints.NodeChanged n) {
            readNode(n.node());
        }
        return this;
    }

    private void readPool(String name) {
        read(poolReads, name, source::pool, PoolRead::new);
    }

    private void readNode(String name) {
        read(nodeReads, name, source::node, NodeRead::new);
    }

    /** What a read's end becomes: a {@link PoolRead} or a {@link NodeRead}. */
    @FunctionalInterface
    private interface ReadEnd<V> {
        Command of(String name, long ticket, V view, Throwable failure);
    }

    /** Reads the pool or node now, with a new ticket, unless a read of it is under way. */
    private <V> void read(
            ReadsInFlight reads,
            String name,
            Function<String, CompletionStage<V>> ask,
            ReadEnd<V> end) {
        if (!reads.start(name)) {
            return;
        }
        long ticket = ++tickets;
        getContext()
                .pipeToSelf(
                        ask.apply(name), (view, failure) -> end.of(name, ticket, view, failure));
    }

    private Behavior<Command> onPoolRead(PoolRead r) {
        poolReads.ended(r.name());
        if (r.failure() == null) {
            Set<Cidr> moved = applyPool(r.name(), r.ticket(), r.view());
            // A block's claim ends, or passes to another node, only once the block holds no
            // address: what a node was last read to hold in it is gone. A DEL in the node's own
            // block hints nobody, so without a fresh read the plan would route that address as
            // borrowed to the node until the next resync.
            nodes.entrySet().stream()
                    .filter(
                            e ->
                                    e.getValue().addresses().stream()
                                            .anyMatch(h -> moved.contains(h.block())))
                    .map(Map.Entry::getKey)
                    .toList()
                    .forEach(this::readNode);
            // A node new to this host, or one without a peer yet (read before it published, and
            // its hint lost): its peer is needed to route to its block.
            r.view().claims().values().stream()
                    .filter(n -> !nodes.containsKey(n) || nodes.get(n).peer() == null)
                    .distinct()
                    .forEach(this::readNode);
            afterChange(false);
        }
        if (poolReads.askedAgain(r.name())) {
            readPool(r.name());
        }
        return this;
    }

    private Behavior<Command> onNodeRead(NodeRead r) {
        nodeReads.ended(r.name());
        if (r.failure() == null) {
            applyNode(r.name(), r.ticket(), r.view());
            afterChange(false);
        }
        if (nodeReads.askedAgain(r.name())) {
            readNode(r.name());
        }
        return this;
    }

    /**
     * An ADD or DEL here: an address outside this node's known blocks lives in another node's
     * block (borrowed) or in a block claimed a moment ago. Either way the others read this node
     * again (its attachments list the address), and this host reads its own record.
     */
    private Behavior<Command> onLocal(LocalAddresses local) {
        if (!started) {
            return this;
        }
        Map<Cidr, Claim> claims = claims();
        boolean outside = false;
        for (String address : local.addresses()) {
            Optional<Map.Entry<Cidr, Claim>> block =
                    claims.entrySet().stream()
                            .filter(e -> e.getKey().contains(address))
                            .findFirst();
            if (block.isEmpty() || !block.get().getValue().node().equals(node)) {
                outside = true;
            }
        }
        if (outside) {
            source.nodeChanged(node);
            readNode(node);
        }
        return this;
    }

    /**
     * One read in flight per pool or node: a read asked for while one is under way is made once
     * more after it, since the answer under way may predate what prompted the new one.
     */
    private static final class ReadsInFlight {
        private final Set<String> reading = new HashSet<>();
        private final Set<String> again = new HashSet<>();

        /** @return whether to read now; false when a read is under way (it is then made again) */
        boolean start(String name) {
            if (reading.add(name)) {
                return true;
            }
            again.add(name);
            return false;
        }

        /** Notes that the read ended: the next one starts at once. */
        void ended(String name) {
            reading.remove(name);
        }

        /** @return whether a read was asked for while the last one was under way (once) */
        boolean askedAgain(String name) {
            return again.remove(name);
        }
    }

    private Map<Cidr, Claim> claims() {
        Map<Cidr, Claim> out = new HashMap<>();
        poolClaims.forEach(
                (pool, claims) ->
                        claims.forEach((block, owner) -> out.put(block, new Claim(pool, owner))));
        return out;
    }

    private MeshState state() {
        return new MeshState(claims(), nodes, poolCidrs);
    }

    private MeshPlan.Self self() {
        return new MeshPlan.Self(node, settings, underlay, tunnelV4, tunnelV6);
    }

    // ---- reconciling ----

    /** The state changed: publish the peer if it changed, assign tunnels if wanted, reconcile soon. */
    private void afterChange(boolean now) {
        if (!ready) {
            return;
        }
        plan = MeshPlan.compute(self(), state());
        gauges =
                new CadastreMetrics.RoutingGauges(
                        plan.routeCounts(),
                        plan.peerCounts(),
                        plan.desired().devices().stream().mapToLong(d -> d.fdb().size()).sum(),
                        plan.desired().devices().stream()
                                .mapToLong(d -> d.neighbours().size())
                                .sum(),
                        lastResult == null ? 0 : lastResult.conflicts().size());
        if (!plan.problems().equals(loggedProblems)) {
            loggedProblems = plan.problems();
            plan.problems().forEach(p -> LOG.warn("routing: {}", p));
        }
        assignTunnelIfWanted();
        publishPeerIfChanged();
        if (now) {
            reconcileScheduled = true;
            getContext().getSelf().tell(ReconcileNow.INSTANCE);
        } else if (!reconcileScheduled) {
            reconcileScheduled = true;
            timers.startSingleTimer("reconcile", ReconcileNow.INSTANCE, settings.debounce());
        }
    }

    private Behavior<Command> onReconcileNow() {
        reconcileScheduled = false;
        if (reconciling) {
            reconcileAgain = true;
            return this;
        }
        reconciling = true;
        MeshPlan planned = MeshPlan.compute(self(), state());
        plan = planned;
        long readTicket = lastReadTicket;
        CompletionStage<HostRouting.Result> result;
        try {
            result =
                    CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    return routing.reconcile(planned.desired());
                                } catch (DataplaneException e) {
                                    throw new CompletionException(e);
                                }
                            },
                            dataplaneExecutor);
        } catch (RuntimeException e) { // the executor refuses work during shutdown
            result = CompletableFuture.failedFuture(e);
        }
        getContext()
                .pipeToSelf(
                        result,
                        (r, failure) ->
                                new Reconciled(planned, readTicket, r, failure, Instant.now()));
        return this;
    }

    private Behavior<Command> onReconciled(Reconciled r) {
        reconciling = false;
        lastReconcile = r.at();
        if (r.failure() != null) {
            lastFailure = unwrap(r.failure());
            metrics.routingReconciled(node, "failed", Duration.ZERO);
            LOG.warn("routing: reconcile failed: {}", lastFailure);
        } else {
            lastFailure = null;
            lastResult = r.result();
            record(r.result());
        }
        Status now = status();
        waiting.removeIf(
                w -> {
                    if (w.minTicket() <= r.readTicket()) {
                        w.then().accept(now);
                        return true;
                    }
                    return false;
                });
        if (reconcileAgain) {
            reconcileAgain = false;
            getContext().getSelf().tell(ReconcileNow.INSTANCE);
            reconcileScheduled = true;
        }
        return this;
    }

    /** Metrics and logs of one reconcile: changes at INFO, errors and conflicts at WARN when they change. */
    private void record(HostRouting.Result r) {
        metrics.routingReconciled(node, r.errors().isEmpty() ? "ok" : "errors", r.elapsed());
        for (HostRouting.Kind k : HostRouting.Kind.values()) {
            String kind = k.name().toLowerCase(Locale.ROOT);
            metrics.routingChanged(node, kind, "added", HostRouting.Result.count(r.added(), k));
            metrics.routingChanged(node, kind, "removed", HostRouting.Result.count(r.removed(), k));
            metrics.routingChanged(
                    node, kind, "replaced", HostRouting.Result.count(r.replaced(), k));
            metrics.routingFailed(node, kind, HostRouting.Result.count(r.errors(), k));
        }
        gauges =
                new CadastreMetrics.RoutingGauges(
                        gauges.routes(),
                        gauges.peers(),
                        gauges.fdb(),
                        gauges.neighbours(),
                        r.conflicts().size());
        if (r.changes() > 0) {
            LOG.info("routing: reconciled, {}", r.summary());
            List<String> lines = new ArrayList<>();
            r.added().forEach(c -> lines.add("added " + c));
            r.removed().forEach(c -> lines.add("removed " + c));
            r.replaced().forEach(c -> lines.add("replaced " + c));
            lines.stream().limit(LOGGED_CHANGES).forEach(l -> LOG.info("routing:   {}", l));
            if (lines.size() > LOGGED_CHANGES) {
                LOG.info("routing:   ... and {} more", lines.size() - LOGGED_CHANGES);
            }
        }
        List<String> trouble = new ArrayList<>();
        r.errors().forEach(c -> trouble.add("error: " + c));
        r.conflicts().forEach(c -> trouble.add("conflict: " + c));
        if (!trouble.equals(loggedTrouble)) {
            loggedTrouble = trouble;
            trouble.forEach(t -> LOG.warn("routing: {}", t));
        }
    }

    private Behavior<Command> onRefresh(Refresh refresh) {
        if (settings.mode() == RoutingMode.NONE || !started) {
            refresh.replyTo().tell(status());
            return this;
        }
        waiting.add(new Waiter(tickets + 1, refresh.replyTo()::tell));
        return readAll();
    }

    // ---- this node's peer and tunnel ----

    private PeerInfo peer() {
        return new PeerInfo(
                node,
                settings.mode().spelling(),
                underlay == null ? null : underlay.device(),
                underlay == null || underlay.ipv4() == null ? null : underlay.ipv4().toString(),
                underlay == null || underlay.ipv6() == null ? null : underlay.ipv6().toString(),
                Vtep.mac(node),
                tunnelV4 == null ? null : IpAddresses.canonical(tunnelV4.getHostAddress()),
                tunnelV6 == null ? null : IpAddresses.canonical(tunnelV6.getHostAddress()),
                underlay == null ? 0 : underlay.mtu());
    }

    private void publishPeerIfChanged() {
        PeerInfo wanted = peer();
        if (publishing || wanted.equals(published)) {
            return;
        }
        publishing = true;
        getContext()
                .pipeToSelf(
                        source.publishPeer(wanted),
                        (done, failure) -> new Published(wanted, failure));
    }

    private Behavior<Command> onPublished(Published p) {
        publishing = false;
        if (p.failure() != null) {
            LOG.info(
                    "routing: this node's peer not published yet ({}); trying again at the next read",
                    unwrap(p.failure()));
            return this;
        }
        published = p.peer();
        LOG.info("routing: published this node's peer: {}", p.peer());
        source.nodeChanged(node);
        readNode(node);
        return this;
    }

    private void assignTunnelIfWanted() {
        boolean missing = !tunnelFamiliesMissing().isEmpty();
        if (!missing || assigningTunnel) {
            return;
        }
        assigningTunnel = true;
        getContext().pipeToSelf(source.assignTunnel(), TunnelAssigned::new);
    }

    private Behavior<Command> onTunnelAssigned(TunnelAssigned t) {
        assigningTunnel = false;
        if (t.failure() != null) {
            LOG.warn(
                    "routing: no tunnel address for this node yet ({}); VXLAN peers cannot route to it",
                    unwrap(t.failure()));
            return this;
        }
        ownTunnel(List.of(t.record()));
        LOG.info(
                "routing: this node's tunnel addresses: {}",
                t.record().addresses().stream().map(HeldAddress::address).toList());
        Set<Family> lacking = tunnelFamiliesMissing();
        if (!lacking.isEmpty()) {
            LOG.warn(
                    "routing: no {} tunnel address for this node: its default pools gave none; asking again at the next resync",
                    lacking);
            tunnelFamiliesLacking.addAll(lacking);
        }
        afterChange(false);
        return this;
    }

    /** @return the families whose VXLAN device the plan wants and this node has no tunnel address of, but for those lacking since the last full read */
    private Set<Family> tunnelFamiliesMissing() {
        Set<Family> missing = EnumSet.noneOf(Family.class);
        if (plan.tunnelsWanted().contains(Family.IPV4) && tunnelV4 == null) {
            missing.add(Family.IPV4);
        }
        if (plan.tunnelsWanted().contains(Family.IPV6) && tunnelV6 == null) {
            missing.add(Family.IPV6);
        }
        missing.removeAll(tunnelFamiliesLacking);
        return missing;
    }

    // ---- views ----

    private Behavior<Command> onDescribe(Describe d) {
        if (settings.mode() == RoutingMode.NONE || !ready) {
            d.replyTo().tell(Optional.empty());
            return this;
        }
        if (d.node().equals(node)) {
            d.replyTo()
                    .tell(
                            Optional.of(
                                    new Description(
                                            node,
                                            settings.mode().spelling(),
                                            node,
                                            true,
                                            published,
                                            plan,
                                            status())));
            return this;
        }
        NodeFacts facts = nodes.get(d.node());
        if (facts == null || facts.peer() == null) {
            d.replyTo().tell(Optional.empty());
            return this;
        }
        d.replyTo()
                .tell(
                        Optional.of(
                                new Description(
                                        d.node(),
                                        facts.peer().mode(),
                                        node,
                                        false,
                                        facts.peer(),
                                        MeshPlan.compute(selfOf(facts.peer()), state()),
                                        null)));
        return this;
    }

    /** What another node is, as its peer says: its mode and underlay, this cluster's VNI and port. */
    private MeshPlan.Self selfOf(PeerInfo peer) {
        RoutingMode mode;
        try {
            mode = RoutingMode.parse(peer.mode());
        } catch (IllegalArgumentException e) {
            mode = settings.mode();
        }
        var v4 = MeshPlan.address(peer, Family.IPV4);
        var v6 = MeshPlan.address(peer, Family.IPV6);
        Underlay theirs =
                peer.device() == null ? null : new Underlay(peer.device(), peer.mtu(), v4, v6);
        return new MeshPlan.Self(
                peer.node(),
                new RoutingSettings(
                        mode,
                        peer.device() == null ? "" : peer.device(),
                        settings.vni(),
                        settings.port(),
                        settings.resync(),
                        settings.debounce(),
                        settings.natOutgoing()),
                theirs,
                MeshPlan.tunnel(peer, Family.IPV4),
                MeshPlan.tunnel(peer, Family.IPV6));
    }

    private Behavior<Command> onAudit(Audit audit) {
        if (settings.mode() == RoutingMode.NONE) {
            audit.replyTo().tell(Optional.empty());
            return this;
        }
        inspect(audit, false);
        return this;
    }

    private void inspect(Audit audit, boolean confirmed) {
        CompletionStage<List<Installed>> installed;
        try {
            installed =
                    CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    return routing.installed();
                                } catch (DataplaneException e) {
                                    throw new CompletionException(e);
                                }
                            },
                            dataplaneExecutor);
        } catch (RuntimeException e) {
            installed = CompletableFuture.failedFuture(e);
        }
        getContext()
                .pipeToSelf(
                        installed, (list, failure) -> new Audited(audit, list, failure, confirmed));
    }

    /**
     * The first look finds something: read everything again and reconcile (a claim a moment old,
     * a route someone deleted), then look once more and report what remains.
     */
    private Behavior<Command> onAudited(Audited a) {
        if (a.failure() != null) {
            a.audit()
                    .replyTo()
                    .tell(
                            Optional.of(
                                    List.of(
                                            new RouteAudit.Finding(
                                                    null,
                                                    null,
                                                    node,
                                                    RouteAudit.Problem.UNROUTABLE,
                                                    "the host's routes could not be read: "
                                                            + unwrap(a.failure()),
                                                    null,
                                                    null))));
            return this;
        }
        Map<String, PeerInfo> peers = new HashMap<>();
        nodes.forEach(
                (n, f) -> {
                    if (f.peer() != null) {
                        peers.put(n, f.peer());
                    }
                });
        Map<String, NodeFacts> facts = new HashMap<>(nodes);
        a.audit()
                .removed()
                .forEach(
                        r ->
                                facts.computeIfPresent(
                                        r, (k, f) -> new NodeFacts(f.peer(), true, f.addresses())));
        MeshPlan expected = MeshPlan.compute(self(), new MeshState(a.audit().claims(), facts));
        List<RouteAudit.Finding> findings =
                RouteAudit.findings(
                        node,
                        expected,
                        a.audit().claims(),
                        a.audit().removed(),
                        peers,
                        a.installed());
        if (findings.isEmpty() || a.confirmed()) {
            a.audit().replyTo().tell(Optional.of(findings));
            return this;
        }
        waiting.add(new Waiter(tickets + 1, s -> inspect(a.audit(), true)));
        readAll();
        return this;
    }

    private void foldSpoofDrops() {
        try {
            dataplaneExecutor.execute(
                    () -> {
                        try {
                            dataplane.spoofedPacketsDropped();
                        } catch (DataplaneException e) {
                            LOG.debug(
                                    "routing: the pods' source filter drops not read: {}",
                                    e.getMessage());
                        }
                    });
        } catch (RuntimeException e) {
            // shutting down
        }
    }

    private static String unwrap(Throwable t) {
        Throwable c = t;
        while ((c instanceof CompletionException || c instanceof ExecutionException)
                && c.getCause() != null) {
            c = c.getCause();
        }
        return c.getMessage() == null ? c.toString() : c.getMessage();
    }
}
