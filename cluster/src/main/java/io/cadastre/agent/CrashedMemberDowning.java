package io.cadastre.agent;

import io.cadastre.shards.MemberFence;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.apache.pekko.cluster.typed.Subscribe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Downs a member as soon as its process is certainly gone, instead of after the split-brain
 * resolver's {@code stable-after}: while a member is unreachable, its cluster port is probed with a
 * TCP connect every {@code interval} ({@code recheck} after a refusal), and {@code refusals}
 * refusals in a row (a reset: nothing listens there) mean the process has died — a stopped
 * (SIGSTOP) or starved process keeps its listening socket and the kernel still completes the
 * handshake, and a cut-off host answers nothing (the probe times out). Then this member downs
 * it, provided it sees a majority of the cluster itself (the minority side of a partition downs no
 * one). A crashed agent's entities thus move after failure detection plus a gossip and a leader
 * round and the removal margin, and a host whose agent was restarted on the same port is left to
 * Pekko's new-incarnation handling (the connect succeeds).
 *
 * <p>Downing a process that is not gone is prevented by the refusal itself; were it to happen,
 * the member would exit and be restarted like any downed member, and its stale entities could
 * write nothing (the journal's fence, {@link FencedCassandraJournal}).
 */
public final class CrashedMemberDowning {
    /** What the actor reacts to. */
    public sealed interface Command {}

    private record Unreachable(Member member) implements Command {}

    private record NoLongerSuspect(Member member) implements Command {}

    private record Probe(UniqueAddress member) implements Command {}

    private record Probed(UniqueAddress member, Outcome outcome) implements Command {}

    /** What a connect to a member's cluster port found. */
    enum Outcome {
        ACCEPTED,
        REFUSED,
        NO_ANSWER
    }

    /**
     * Probe settings.
     *
     * @param interval between two probes of one member while its port answers or stays silent
     * @param recheck between a refusal and the probe that may confirm it: short, since a refusal
     *     is already near-certain (a listening socket is refused only once it is closed) and every
     *     millisecond of it is failover
     * @param refusals refusals in a row that mean the process is gone
     * @param connectTimeout how long one connect may take
     */
    public record Settings(
            Duration interval, Duration recheck, int refusals, Duration connectTimeout) {
        /**
         * Five probes a second, a refusal checked again after 50 ms, two refusals, 200 ms per
         * connect.
         */
        public static final Settings DEFAULT =
                new Settings(
                        Duration.ofMillis(200), Duration.ofMillis(50), 2, Duration.ofMillis(200));

        /** @return how long to wait after a probe that found {@code outcome} before the next one */
        Duration nextProbeAfter(Outcome outcome) {
            return outcome == Outcome.REFUSED ? recheck : interval;
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(CrashedMemberDowning.class);

    private CrashedMemberDowning() {}

    /**
     * @param probes where the blocking connects run (not an actor dispatcher)
     * @param fence this member's view of its reach: only a member that sees a majority downs others
     */
    public static Behavior<Command> create(Settings settings, Executor probes, MemberFence fence) {
        return Behaviors.setup(
                ctx ->
                        Behaviors.withTimers(
                                timers -> {
                                    Cluster cluster = Cluster.get(ctx.getSystem());
                                    cluster.subscriptions()
                                            .tell(
                                                    Subscribe.create(
                                                            ctx.messageAdapter(
                                                                    ClusterEvent.UnreachableMember
                                                                            .class,
                                                                    e ->
                                                                            new Unreachable(
                                                                                    e.member())),
                                                            ClusterEvent.UnreachableMember.class));
                                    cluster.subscriptions()
                                            .tell(
                                                    Subscribe.create(
                                                            ctx.messageAdapter(
                                                                    ClusterEvent.ReachableMember
                                                                            .class,
                                                                    e ->
                                                                            new NoLongerSuspect(
                                                                                    e.member())),
                                                            ClusterEvent.ReachableMember.class));
                                    cluster.subscriptions()
                                            .tell(
                                                    Subscribe.create(
                                                            ctx.messageAdapter(
                                                                    ClusterEvent.MemberRemoved
                                                                            .class,
                                                                    e ->
                                                                            new NoLongerSuspect(
                                                                                    e.member())),
                                                            ClusterEvent.MemberRemoved.class));
                                    cluster.subscriptions()
                                            .tell(
                                                    Subscribe.create(
                                                            ctx.messageAdapter(
                                                                    ClusterEvent.MemberDowned.class,
                                                                    e ->
                                                                            new NoLongerSuspect(
                                                                                    e.member())),
                                                            ClusterEvent.MemberDowned.class));
                                    return running(
                                            ctx,
                                            timers,
                                            cluster,
                                            settings,
                                            probes,
                                            fence,
                                            new HashMap<>());
                                }));
    }

    /** A member under probe: its address and the refusals seen in a row. */
    private record Suspect(Member member, int refusals) {}

    private static Behavior<Command> running(
            ActorContext<Command> ctx,
            TimerScheduler<Command> timers,
            Cluster cluster,
            Settings settings,
            Executor probes,
            MemberFence fence,
            Map<UniqueAddress, Suspect> suspects) {
        return Behaviors.receive(Command.class)
                .onMessage(
                        Unreachable.class,
                        u -> {
                            if (!u.member()
                                            .uniqueAddress()
                                            .equals(cluster.selfMember().uniqueAddress())
                                    && suspects.putIfAbsent(
                                                    u.member().uniqueAddress(),
                                                    new Suspect(u.member(), 0))
                                            == null) {
                                ctx.getSelf().tell(new Probe(u.member().uniqueAddress()));
                            }
                            return Behaviors.same();
                        })
                .onMessage(
                        NoLongerSuspect.class,
                        n -> {
                            suspects.remove(n.member().uniqueAddress());
                            timers.cancel(n.member().uniqueAddress());
                            return Behaviors.same();
                        })
                .onMessage(
                        Probe.class,
                        p -> {
                            Suspect s = suspects.get(p.member());
                            if (s != null) {
                                Address address = s.member().address();
                                ctx.pipeToSelf(
                                        CompletableFuture.supplyAsync(
                                                () -> connect(address, settings.connectTimeout()),
                                                probes),
                                        (outcome, error) ->
                                                new Probed(
                                                        p.member(),
                                                        error == null
                                                                ? outcome
                                                                : Outcome.NO_ANSWER));
                            }
                            return Behaviors.same();
                        })
                .onMessage(
                        Probed.class,
                        p -> {
                            Suspect s = suspects.get(p.member());
                            if (s == null) {
                                return Behaviors.same();
                            }
                            int refusals = p.outcome() == Outcome.REFUSED ? s.refusals() + 1 : 0;
                            if (refusals >= settings.refusals() && fence.open()) {
                                LOG.warn(
                                        "downing {}: its cluster port refused {} connections in a row, so its process is gone",
                                        s.member().address(),
                                        refusals);
                                cluster.manager().tell(new Down(s.member().address()));
                                suspects.remove(p.member());
                                return Behaviors.same();
                            }
                            suspects.put(p.member(), new Suspect(s.member(), refusals));
                            timers.startSingleTimer(
                                    p.member(),
                                    new Probe(p.member()),
                                    settings.nextProbeAfter(p.outcome()));
                            return Behaviors.same();
                        })
                .build();
    }

    /** @return what a TCP connect to the member's cluster port found; blocks up to {@code timeout} */
    static Outcome connect(Address address, Duration timeout) {
        if (address.getHost().isEmpty() || address.getPort().isEmpty()) {
            return Outcome.NO_ANSWER;
        }
        try (Socket socket = new Socket()) {
            socket.connect(
                    new InetSocketAddress(address.getHost().get(), address.getPort().get()),
                    (int) timeout.toMillis());
            return Outcome.ACCEPTED;
        } catch (ConnectException e) {
            return e.getMessage() != null && e.getMessage().contains("refused")
                    ? Outcome.REFUSED
                    : Outcome.NO_ANSWER;
        } catch (IOException | RuntimeException e) {
            return Outcome.NO_ANSWER;
        }
    }
}
