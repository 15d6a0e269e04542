package io.cadastre.agent;

import io.cadastre.admin.AdminServer;
import io.cadastre.admin.Inventory;
import io.cadastre.cni.CniHandler;
import io.cadastre.dataplane.Dataplane;
import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.HostNetwork;
import io.cadastre.dataplane.HostPolicy;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.http.CniSocketServer;
import io.cadastre.kube.AgentsOnOtherNodes;
import io.cadastre.kube.AnnotatedIpamChoice;
import io.cadastre.kube.ApiPodPresence;
import io.cadastre.kube.ClusterBootstrap;
import io.cadastre.kube.DeletedNodeReleaser;
import io.cadastre.kube.KubeApi;
import io.cadastre.kube.NetworkPolicyEnforcer;
import io.cadastre.kube.NodeLabels;
import io.cadastre.kube.PodIpamChoice;
import io.cadastre.node.NodeAgent;
import io.cadastre.node.PodPresence;
import io.cadastre.node.Reclaimer;
import io.cadastre.routing.ClusterMeshSource;
import io.cadastre.routing.MeshRouter;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.BlockReclaimer;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.IpamException;
import io.cadastre.shards.MemberFence;
import io.cadastre.shards.MeshHints;
import io.cadastre.shards.MeshReads;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolCatalog;
import io.cadastre.shards.PoolEntity;
import io.cadastre.shards.PoolRegistry;
import io.cadastre.shards.Pools;
import io.cadastre.shards.ShardedIpam;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.AddressFromURIString;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.JoinSeedNodes;
import org.apache.pekko.cluster.typed.SelfUp;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * The agent's root actor. Start-up, in order: prepare the journal ({@link Persistence#prepare}:
 * connected, tables there), join the cluster (through the seed nodes, alone when none are
 * configured, or — with {@code cadastre.kubernetes} — through the agents' pods, {@link ClusterBootstrap}) and wait
 * until this member is Up, start the cluster's {@link BlockReclaimer} singleton (or its proxy),
 * define the configured pools, and only then open the CNI socket, so that a plugin that can
 * connect is served; then bind the admin API (its {@code /readyz} says ready while the member is
 * Up and the socket open). Shutdown (SIGTERM runs Pekko's coordinated shutdown): the socket and
 * the admin API close first, in-flight requests finish, then the dataplane threads stop.
 *
 * <p>Defining the pools is retried every second while the entities are unavailable: a member
 * restarted after a crash is Up only once the cluster has removed its old incarnation, and the
 * pool entities may be moving at that moment. A refused definition (a pool that conflicts with
 * the journal's) fails at once. A failed start-up, or one not done within {@link #START_TIMEOUT},
 * logs the cause and terminates the actor system; the process exits 1 ({@link AgentMain}).
 */
public final class Guardian {
    /** How long start-up may take, from the actor system's start to the socket open. */
    static final Duration START_TIMEOUT = Duration.ofMinutes(3);

    private static final Duration DEFINE_RETRY = Duration.ofSeconds(1);

    private Guardian() {}

    /** Start-up finished; carries the running server for the shutdown hook. */
    private record Started(CniSocketServer server) {}

    /** The journal is connected and ready: join the cluster. */
    private record JournalReady() {}

    /** This member is Up. */
    private record MemberUp() {}

    /** The journal is ready: define the pools. */
    private record DefinePools() {}

    /** One attempt to define the pools failed with this. */
    private record DefineFailed(Throwable cause) {}

    /** A message for the mesh router, adapted from a cluster event. */
    private record RouterTell(MeshRouter.Command command) {}

    /** Start-up took longer than {@link #START_TIMEOUT}. */
    private record StartTimedOut() {}

    private record StartFailed(Throwable cause) {}

    /** The admin API could not bind: a start-up failure like any other. */
    private record AdminFailed(Throwable cause) {}

    /** How long after an API change the policy table is written (a burst of events is one write). */
    private static final Duration POLICY_SETTLE = Duration.ofMillis(100);

    /** How often the policy table is compared with the API's state without a change. */
    private static final Duration POLICY_RESYNC = Duration.ofSeconds(30);

    /** Without enforcement: the table an earlier run (with it on) left would still filter. */
    private static void enforceNothing(org.slf4j.Logger log, HostPolicy hostPolicy) {
        try {
            NetworkPolicyEnforcer.enforceNothing(hostPolicy)
                    .ifPresent(c -> log.info("network policy off: removed {}", c));
        } catch (DataplaneException | RuntimeException e) {
            log.warn("network policy off, but its table could not be removed: {}", e.toString());
        }
    }

    /**
     * @param hostRouting the reconciler of this host's routes to other hosts' pods
     * @param hostPolicy the writer of this host's NetworkPolicy table
     * @param underlay the host's underlay as the preflight found it, or null
     * @param podMtu the pods' MTU when the netconf gives none (0: the kernel's default)
     */
    public static Behavior<Object> create(
            AgentSettings settings,
            AdminServer.Settings adminSettings,
            Dataplane dataplane,
            HostRouting hostRouting,
            HostPolicy hostPolicy,
            HostNetwork.Underlay underlay,
            int podMtu) {
        return Behaviors.setup(
                ctx -> {
                    Cluster cluster = Cluster.get(ctx.getSystem());
                    // The journal first, the cluster second: once this member is Up, shards are
                    // allocated to it, and an entity here must not wait for a journal still
                    // connecting.
                    ctx.pipeToSelf(
                            settings.persistence().prepare(ctx.getSystem()),
                            (done, failure) ->
                                    failure == null
                                            ? new JournalReady()
                                            : new StartFailed(failure));
                    PoolRegistry.init(ctx.getSystem());
                    PoolEntity.init(ctx.getSystem());
                    BlockEntity.init(ctx.getSystem());
                    NodeEntity.init(ctx.getSystem());

                    ExecutorService dataplaneThreads =
                            Executors.newFixedThreadPool(
                                    settings.dataplaneThreads(), platformThreads());
                    KubeApi kube =
                            settings.kubernetes().enabled()
                                    ? KubeApi.connect(settings.kubernetes())
                                    : null;
                    // A journal of this member's own is safe only while the cluster has no other
                    // member and no other node runs an agent.
                    boolean embedded = settings.persistence() == Persistence.EMBEDDED;
                    AgentsOnOtherNodes otherAgents =
                            kube != null && embedded
                                    ? AgentsOnOtherNodes.start(
                                            kube,
                                            settings.kubernetes().bootstrap().podLabelSelector(),
                                            settings.kubernetes().otherAgentsInterval(),
                                            ctx.getSystem().scheduler(),
                                            ctx.getExecutionContext())
                                    : null;
                    Supplier<Optional<String>> addRefusal =
                            () -> {
                                Optional<String> members =
                                        embedded ? otherMembers(cluster) : Optional.empty();
                                return members.isPresent() || otherAgents == null
                                        ? members
                                        : otherAgents.refusal();
                            };
                    PoolCatalog catalog =
                            new PoolCatalog(
                                    ctx.getSystem(),
                                    settings.askTimeouts(),
                                    settings.poolCatalogMaxAge());
                    Pools pools = new Pools(ctx.getSystem(), settings.askTimeouts(), catalog);
                    Ipam ipam =
                            new ShardedIpam(
                                    ctx.getSystem(),
                                    settings.nodeName(),
                                    settings.nodeLabels(),
                                    catalog,
                                    settings.defaultPools(),
                                    settings.askTimeouts(),
                                    Clock.systemUTC());
                    NodeLabels nodeLabels = new NodeLabels(ipam);
                    if (kube != null) {
                        kube.start(nodeLabels::onNode);
                        if (settings.kubernetes().bootstrap().enabled()) {
                            // Answered from the start: other agents ask before this one has joined.
                            ctx.spawn(ClusterBootstrap.responder(), ClusterBootstrap.PROBE_NAME);
                        }
                    }
                    NetworkPolicyEnforcer networkPolicy =
                            kube != null && settings.kubernetes().networkPolicy()
                                    ? NetworkPolicyEnforcer.start(
                                            kube, hostPolicy, POLICY_SETTLE, POLICY_RESYNC)
                                    : null;
                    if (networkPolicy == null) {
                        org.slf4j.Logger log = ctx.getLog(); // the actor's thread only
                        dataplaneThreads.execute(() -> enforceNothing(log, hostPolicy));
                    }
                    Reclaimer reclaimer =
                            Reclaimer.onThisHost(
                                    settings.cleanup().attachments().interval(),
                                    settings.cleanup().attachments().grace(),
                                    kube != null && settings.cleanup().podsDeletedFromApi()
                                            ? new ApiPodPresence(kube)
                                            : PodPresence.NONE);
                    BlockReclaimer blockReclaimer =
                            new BlockReclaimer(
                                    ctx.getSystem(),
                                    settings.askTimeouts(),
                                    catalog,
                                    settings.cleanup().blocks().interval(),
                                    settings.cleanup().blocks().grace());
                    CadastreMetrics routingMetrics = CadastreMetrics.get(ctx.getSystem());
                    ActorRef<MeshRouter.Command> router =
                            ctx.spawn(
                                    MeshRouter.create(
                                            settings.nodeName(),
                                            settings.routing(),
                                            underlay,
                                            new ClusterMeshSource(
                                                    new MeshReads(
                                                            ctx.getSystem(),
                                                            settings.askTimeouts(),
                                                            catalog),
                                                    ipam,
                                                    MeshHints.get(ctx.getSystem())),
                                            hostRouting,
                                            dataplane,
                                            dataplaneThreads,
                                            routingMetrics),
                                    "mesh-router");
                    watchSpoofDrops(routingMetrics, settings.nodeName(), dataplane);
                    if (networkPolicy != null) {
                        watchPolicyDrops(routingMetrics, settings.nodeName(), hostPolicy);
                    }
                    ActorRef<NodeAgent.Command> nodeAgent =
                            ctx.spawn(
                                    NodeAgent.create(
                                            ipam,
                                            dataplane,
                                            dataplaneThreads,
                                            reclaimer,
                                            MeshRouter.podNetwork(router, podMtu)),
                                    "node-agent");
                    // The end-to-end budget of one CNI call: a few entity round trips plus the
                    // dataplane.
                    MemberFence fence = MemberFence.get(ctx.getSystem());
                    var backend =
                            new NodeAgentCniBackend(
                                    nodeAgent,
                                    ctx.getSystem().scheduler(),
                                    settings.askTimeouts().total().multipliedBy(3),
                                    ipam::poolSpec,
                                    fence,
                                    addRefusal,
                                    kube == null
                                            ? PodIpamChoice.NONE
                                            : new AnnotatedIpamChoice(kube),
                                    networkPolicy == null
                                            ? NodeAgentCniBackend.PodWired.NONE
                                            : networkPolicy::podWired);
                    CadastreMetrics metrics = CadastreMetrics.get(ctx.getSystem());
                    CniSocketServer server =
                            new CniSocketServer(
                                    ctx.getSystem(),
                                    new CniHandler(backend, metrics::cniAnswered),
                                    CniSocketServer.Settings.defaults(settings.cniSocket()));

                    AtomicBoolean socketOpen = new AtomicBoolean();
                    Inventory inventory =
                            new Inventory(ctx.getSystem(), pools, settings.askTimeouts());
                    DeletedNodeReleaser nodeReleaser =
                            kube == null || settings.cleanup().deletedNodes().isEmpty()
                                    ? null
                                    : new DeletedNodeReleaser(
                                            DeletedNodeReleaser.adminNodes(inventory),
                                            DeletedNodeReleaser.nodeObjects(kube),
                                            settings.cleanup().deletedNodes().get().grace(),
                                            settings.cleanup().deletedNodes().get().interval(),
                                            System::nanoTime);
                    AdminServer admin =
                            new AdminServer(
                                    ctx.getSystem(),
                                    inventory,
                                    ipam,
                                    () -> unreadiness(cluster, socketOpen, addRefusal),
                                    adminSettings,
                                    new MeshRoutes(
                                            router,
                                            ctx.getSystem(),
                                            settings.nodeName(),
                                            settings.askTimeouts().total()));

                    CoordinatedShutdown shutdown = CoordinatedShutdown.get(ctx.getSystem());
                    shutdown.addTask(
                            CoordinatedShutdown.PhaseServiceUnbind(),
                            "close-cni-socket",
                            (Supplier<CompletionStage<Done>>)
                                    () -> {
                                        socketOpen.set(false);
                                        return server.stop();
                                    });
                    shutdown.addTask(
                            CoordinatedShutdown.PhaseServiceUnbind(),
                            "stop-admin-api",
                            (Supplier<CompletionStage<Done>>) admin::stop);
                    shutdown.addTask(
                            CoordinatedShutdown.PhaseBeforeActorSystemTerminate(),
                            "stop-dataplane-threads",
                            (Supplier<CompletionStage<Done>>)
                                    () -> {
                                        dataplaneThreads.shutdown();
                                        if (otherAgents != null) {
                                            otherAgents.close();
                                        }
                                        if (networkPolicy != null) {
                                            // The table stays: pods keep their isolation while
                                            // the agent is away (a restart, an upgrade).
                                            networkPolicy.close();
                                        }
                                        if (kube != null) {
                                            kube.close();
                                        }
                                        return CompletableFuture.completedFuture(
                                                Done.getInstance());
                                    });

                    if (ctx.getSystem()
                            .settings()
                            .config()
                            .getBoolean("cadastre.cluster.down-crashed-members")) {
                        ExecutorService probeThread =
                                Executors.newSingleThreadExecutor(
                                        r -> {
                                            Thread t = new Thread(r, "cadastre-member-probe");
                                            t.setDaemon(true);
                                            return t;
                                        });
                        ctx.spawn(
                                CrashedMemberDowning.create(
                                        CrashedMemberDowning.Settings.DEFAULT, probeThread, fence),
                                "crashed-member-downing");
                    }
                    cluster.subscriptions()
                            .tell(
                                    Subscribe.create(
                                            ctx.messageAdapter(SelfUp.class, up -> new MemberUp()),
                                            SelfUp.class));
                    // A member reachable again may have claimed or released blocks meanwhile: read
                    // everything.
                    cluster.subscriptions()
                            .tell(
                                    Subscribe.create(
                                            ctx.messageAdapter(
                                                    ClusterEvent.ReachableMember.class,
                                                    reachable ->
                                                            new RouterTell(MeshRouter.reachable())),
                                            ClusterEvent.ReachableMember.class));
                    // A member that comes up publishes its peer seconds later: read again then.
                    cluster.subscriptions()
                            .tell(
                                    Subscribe.create(
                                            ctx.messageAdapter(
                                                    ClusterEvent.MemberUp.class,
                                                    up -> new RouterTell(MeshRouter.memberUp())),
                                            ClusterEvent.MemberUp.class));
                    return Behaviors.withTimers(
                            timers -> {
                                timers.startSingleTimer(new StartTimedOut(), START_TIMEOUT);
                                return starting(
                                        ctx,
                                        settings,
                                        pools,
                                        ipam,
                                        blockReclaimer,
                                        nodeReleaser,
                                        server,
                                        admin,
                                        socketOpen,
                                        router,
                                        kube == null
                                                ? CompletableFuture.completedFuture(null)
                                                : nodeLabels.firstTakenIn(
                                                        settings.kubernetes().labelsWait()),
                                        kube);
                            });
                });
    }

    private static Behavior<Object> starting(
            ActorContext<Object> ctx,
            AgentSettings settings,
            Pools pools,
            Ipam ipam,
            BlockReclaimer blockReclaimer,
            DeletedNodeReleaser nodeReleaser,
            CniSocketServer server,
            AdminServer admin,
            AtomicBoolean socketOpen,
            ActorRef<MeshRouter.Command> router,
            CompletionStage<Void> labelsRead,
            KubeApi kube) {
        return Behaviors.receive(Object.class)
                .onMessage(
                        RouterTell.class,
                        tell -> {
                            router.tell(tell.command());
                            return Behaviors.same();
                        })
                .onMessage(
                        JournalReady.class,
                        ready -> {
                            if (settings.persistence() == Persistence.EMBEDDED) {
                                // The journal is open: a file of it, or the migrated H2 journal,
                                // that a looser umask or an older agent left readable is tightened.
                                try {
                                    DataDir.tightenFiles(settings.dataDir())
                                            .forEach(change -> ctx.getLog().warn("{}", change));
                                    DataDir.tightenFiles(
                                                    settings.dataDir().resolve(DataDir.JOURNAL_DIR))
                                            .forEach(change -> ctx.getLog().warn("{}", change));
                                } catch (IOException e) {
                                    return fail(ctx, e);
                                }
                            }
                            if (kube != null && settings.kubernetes().bootstrap().enabled()) {
                                ctx.getLog()
                                        .info(
                                                "journal ready; joining the cluster through the agents' pods in Kubernetes");
                                ctx.spawn(
                                        ClusterBootstrap.create(
                                                kube,
                                                settings.kubernetes().bootstrap(),
                                                System::nanoTime),
                                        "cluster-bootstrap");
                            } else {
                                join(ctx);
                            }
                            return Behaviors.same();
                        })
                .onMessage(
                        MemberUp.class,
                        up -> {
                            ctx.getLog().info("cluster member up; defining the pools");
                            // Runs on the oldest member; here it may only be a proxy.
                            BlockReclaimer.startSingleton(ctx.getSystem(), blockReclaimer);
                            if (nodeReleaser != null) {
                                DeletedNodeReleaser.startSingleton(ctx.getSystem(), nodeReleaser);
                            }
                            ctx.getSelf().tell(new DefinePools());
                            return Behaviors.same();
                        })
                .onMessage(
                        DefinePools.class,
                        define -> {
                            // With Kubernetes, the Node's labels first (bounded): the pools'
                            // selectors match them.
                            ctx.pipeToSelf(
                                    pools.defineConfigured(settings.pools())
                                            .thenCompose(d -> labelsRead)
                                            .thenCompose(d -> ipam.registerNode()),
                                    (done, failure) ->
                                            failure == null
                                                    ? new Started(server)
                                                    : new DefineFailed(failure));
                            return Behaviors.same();
                        })
                .onMessage(
                        DefineFailed.class,
                        failed -> {
                            Throwable cause =
                                    failed.cause() instanceof CompletionException c
                                                    && c.getCause() != null
                                            ? c.getCause()
                                            : failed.cause();
                            if (cause instanceof IpamException e
                                    && e.reason() == IpamException.Reason.UNAVAILABLE) {
                                ctx.getLog()
                                        .info(
                                                "pools not defined yet, trying again in {}: {}",
                                                DEFINE_RETRY,
                                                e.getMessage());
                                ctx.scheduleOnce(DEFINE_RETRY, ctx.getSelf(), new DefinePools());
                                return Behaviors.same();
                            }
                            return fail(ctx, cause);
                        })
                .onMessage(
                        StartTimedOut.class,
                        timedOut ->
                                fail(
                                        ctx,
                                        new IllegalStateException(
                                                "start-up did not finish within " + START_TIMEOUT)))
                .onMessage(
                        Started.class,
                        started -> {
                            try {
                                started.server().start();
                            } catch (Exception e) {
                                return fail(ctx, e);
                            }
                            socketOpen.set(true);
                            router.tell(MeshRouter.Start.INSTANCE);
                            ctx.getLog()
                                    .info(
                                            "cadastre-agent ready: node {} (labels {}), CNI socket {}, pools {}",
                                            settings.nodeName(),
                                            ipam.labels(),
                                            settings.cniSocket(),
                                            pools.catalog()
                                                    .last()
                                                    .map(
                                                            c ->
                                                                    c.pools().values().stream()
                                                                            .map(
                                                                                    p ->
                                                                                            p.name()
                                                                                                    + "="
                                                                                                    + p
                                                                                                            .cidr())
                                                                            .toList())
                                                    .orElse(List.of()));
                            ctx.pipeToSelf(
                                    admin.start(),
                                    (bound, failure) -> {
                                        if (failure == null) {
                                            ctx.getLog()
                                                    .info(
                                                            "admin API on http://{}:{}",
                                                            bound.getHostString(),
                                                            bound.getPort());
                                            return Done.getInstance();
                                        }
                                        return new AdminFailed(failure);
                                    });
                            return Behaviors.receive(Object.class)
                                    .onMessage(
                                            AdminFailed.class, failed -> fail(ctx, failed.cause()))
                                    .onMessage(
                                            RouterTell.class,
                                            tell -> {
                                                router.tell(tell.command());
                                                return Behaviors.same();
                                            })
                                    .onAnyMessage(other -> Behaviors.same())
                                    .build();
                        })
                .onMessage(StartFailed.class, failed -> fail(ctx, failed.cause()))
                .build();
    }

    /**
     * {@code cadastre_pod_spoofed_packets_dropped_total}: read from the kernel at every scrape (a
     * dump of the host ends' qdiscs); a failed reading answers the last value.
     */
    private static void watchSpoofDrops(CadastreMetrics metrics, String node, Dataplane dataplane) {
        AtomicLong last = new AtomicLong();
        metrics.watchSpoofDrops(
                node,
                () -> {
                    try {
                        last.set(dataplane.spoofedPacketsDropped());
                    } catch (DataplaneException e) {
                        // keep the last value: a counter must not go back
                    }
                    return last.get();
                });
    }

    /**
     * {@code cadastre_policy_dropped_packets_total}: read from the kernel at every scrape (a dump
     * of the policy table's rules, as the enforcer's idle pass makes); a failed reading answers
     * the last values.
     */
    private static void watchPolicyDrops(
            CadastreMetrics metrics, String node, HostPolicy hostPolicy) {
        AtomicReference<HostPolicy.Drops> last = new AtomicReference<>(new HostPolicy.Drops(0, 0));
        metrics.watchPolicyDrops(
                node,
                () -> {
                    try {
                        last.set(hostPolicy.dropped());
                    } catch (DataplaneException e) {
                        // keep the last values: a counter must not go back
                    }
                    HostPolicy.Drops d = last.get();
                    return Map.of("ingress", d.ingress(), "egress", d.egress());
                });
    }

    /**
     * The embedded journal is this member's alone: an entity that moves to another member
     * recovers there from another journal, without the allocations made here.
     *
     * @return with other members in the cluster (not down, exiting or removed), why no address may
     *     be handed out; else empty
     */
    private static Optional<String> otherMembers(Cluster cluster) {
        List<String> others = new ArrayList<>();
        for (Member m : cluster.state().getMembers()) {
            MemberStatus status = m.status();
            if (!m.equals(cluster.selfMember())
                    && status != MemberStatus.down()
                    && status != MemberStatus.exiting()
                    && status != MemberStatus.removed()) {
                others.add(m.address().toString());
            }
        }
        if (others.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(
                "the embedded journal serves a cluster of one member, but "
                        + String.join(", ", others)
                        + (others.size() == 1 ? " is a member" : " are members")
                        + " too: an entity that moves between members recovers from another"
                        + " journal, so no address is handed out; a cluster of several members"
                        + " shares Cassandra (cadastre.persistence = cassandra)");
    }

    /**
     * @return why the agent is not ready: the member is not Up, the CNI socket is not open, or no
     *     address may be handed out ({@code addRefusal})
     */
    private static Optional<String> unreadiness(
            Cluster cluster, AtomicBoolean socketOpen, Supplier<Optional<String>> addRefusal) {
        MemberStatus status = cluster.selfMember().status();
        if (status != MemberStatus.up()) {
            return Optional.of("cluster member is " + status);
        }
        if (!socketOpen.get()) {
            return Optional.of("CNI socket is not open");
        }
        return addRefusal.get();
    }

    /** Joins through cadastre.cluster.seed-nodes, or forms a cluster of one when there are none. */
    private static void join(ActorContext<Object> ctx) {
        Cluster cluster = Cluster.get(ctx.getSystem());
        List<Address> seeds =
                ctx
                        .getSystem()
                        .settings()
                        .config()
                        .getStringList("cadastre.cluster.seed-nodes")
                        .stream()
                        .map(AddressFromURIString::parse)
                        .toList();
        ctx.getLog()
                .info(
                        "journal ready; joining the cluster through {}",
                        seeds.isEmpty() ? "this member alone" : seeds);
        if (seeds.isEmpty()) {
            cluster.manager().tell(Join.create(cluster.selfMember().address()));
        } else {
            cluster.manager().tell(new JoinSeedNodes(seeds));
        }
    }

    private static Behavior<Object> fail(ActorContext<Object> ctx, Throwable cause) {
        ctx.getLog().error("cadastre-agent failed to start: {}", cause.toString(), cause);
        CoordinatedShutdown.get(ctx.getSystem()).run(StartFailure.INSTANCE);
        return Behaviors.empty();
    }

    /** The shutdown reason for a failed start-up: exit code 1. */
    static final class StartFailure implements CoordinatedShutdown.Reason {
        static final StartFailure INSTANCE = new StartFailure();
    }

    private static ThreadFactory platformThreads() {
        AtomicInteger n = new AtomicInteger();
        // Namespace work uses setns, which binds to the OS thread: platform threads only.
        return r -> {
            Thread t = new Thread(r, "cadastre-dataplane-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
