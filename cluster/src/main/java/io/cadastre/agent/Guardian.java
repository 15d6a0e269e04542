package io.cadastre.agent;

import io.cadastre.cni.CniHandler;
import io.cadastre.dataplane.Dataplane;
import io.cadastre.http.CniSocketServer;
import io.cadastre.node.NodeAgent;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.NodeEntity;
import io.cadastre.shards.PoolEntity;
import java.time.Clock;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * The agent's root actor. Start-up, in order: join the cluster (alone when no seed nodes are
 * configured), prepare the journal ({@link Persistence#prepare}), register the sharded entities,
 * define the configured pools, spawn the {@link NodeAgent}, and only then open the CNI socket, so
 * that a plugin that can connect is served. Shutdown (SIGTERM runs Pekko's coordinated shutdown):
 * the socket closes first, in-flight requests finish, then the dataplane threads stop.
 *
 * <p>A failed start-up logs the cause and terminates the actor system (the process exits non-zero).
 */
public final class Guardian {
    private Guardian() {}

    /** Start-up finished; carries the running server for the shutdown hook. */
    private record Started(CniSocketServer server) {}

    private record StartFailed(Throwable cause) {}

    public static Behavior<Object> create(AgentSettings settings, Dataplane dataplane) {
        return Behaviors.setup(ctx -> {
            Cluster cluster = Cluster.get(ctx.getSystem());
            if (ctx.getSystem().settings().config().getStringList("pekko.cluster.seed-nodes").isEmpty()) {
                cluster.manager().tell(Join.create(cluster.selfMember().address()));
            }
            PoolEntity.init(ctx.getSystem());
            BlockEntity.init(ctx.getSystem());
            NodeEntity.init(ctx.getSystem());

            ExecutorService dataplaneThreads = Executors.newFixedThreadPool(settings.dataplaneThreads(), platformThreads());
            Ipam ipam = new Ipam(ctx.getSystem(), settings.nodeName(), settings.pools(), settings.defaultPools(),
                    settings.askTimeout(), settings.confirmRepliesSlowerThan(), Clock.systemUTC());
            ActorRef<NodeAgent.Command> nodeAgent = ctx.spawn(NodeAgent.create(ipam, dataplane, dataplaneThreads), "node-agent");
            // The end-to-end budget of one CNI call: a few entity round trips plus the dataplane.
            var backend = new NodeAgentCniBackend(nodeAgent, ctx.getSystem().scheduler(),
                    settings.askTimeout().multipliedBy(3), settings.pools());
            CniSocketServer server = new CniSocketServer(ctx.getSystem(), new CniHandler(backend),
                    CniSocketServer.Settings.defaults(settings.cniSocket()));

            CoordinatedShutdown shutdown = CoordinatedShutdown.get(ctx.getSystem());
            shutdown.addTask(CoordinatedShutdown.PhaseServiceUnbind(), "close-cni-socket",
                    (java.util.function.Supplier<CompletionStage<Done>>) server::stop);
            shutdown.addTask(CoordinatedShutdown.PhaseBeforeActorSystemTerminate(), "stop-dataplane-threads", (java.util.function.Supplier<CompletionStage<Done>>) () -> {
                dataplaneThreads.shutdown();
                return java.util.concurrent.CompletableFuture.completedFuture(Done.getInstance());
            });

            CompletionStage<Done> ready = settings.persistence().prepare(ctx.getSystem())
                    .thenCompose(done -> ipam.definePools());
            ctx.pipeToSelf(ready, (done, failure) -> failure == null ? new Started(server) : new StartFailed(failure));
            return starting(ctx, settings);
        });
    }

    private static Behavior<Object> starting(ActorContext<Object> ctx, AgentSettings settings) {
        return Behaviors.receive(Object.class)
                .onMessage(Started.class, started -> {
                    try {
                        started.server().start();
                    } catch (Exception e) {
                        return fail(ctx, e);
                    }
                    ctx.getLog().info("cadastre-agent ready: node {}, CNI socket {}, pools {}", settings.nodeName(),
                            settings.cniSocket(), settings.pools().stream().map(p -> p.name() + "=" + p.cidr()).toList());
                    return Behaviors.empty();
                })
                .onMessage(StartFailed.class, failed -> fail(ctx, failed.cause()))
                .build();
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
