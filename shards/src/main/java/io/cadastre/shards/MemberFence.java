package io.cadastre.shards;

import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.cluster.ClusterEvent.CurrentClusterState;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says when this member must not serve — neither its agent's CNI requests nor any command to the
 * entities it hosts — because those entities may be stale incarnations that the rest of the
 * cluster has already replaced:
 *
 * <ul>
 *   <li><b>No majority in sight.</b> This member sees half or fewer of the cluster's members as
 *       reachable: it is on the minority side of a partition (keep-majority will down it) or the
 *       cluster is losing members. From the moment the failure detector marks the others
 *       unreachable, well before the majority downs this member and restarts its entities after
 *       the removal margin, the host's own pods get "try again later" rather than allocations
 *       from entities about to be replaced.
 *   <li><b>A scheduling gap.</b> The JVM did not run for longer than {@code gapThreshold} (a stop
 *       signal, a long GC pause, a starved host): the others may have downed this member in the
 *       meantime, and the gossip that says so has not arrived yet. Requests are refused while the
 *       gap lasts (a request handled just after resuming sees the ticker's last tick as old) and
 *       for {@code holdAfterGap} after it, which covers a few gossip rounds; a downed member
 *       shuts down in that time.
 * </ul>
 *
 * <p>Why the entities check it too: a member resumed after a pause longer than failover still
 * holds the messages other members sent it before they downed it (in its sockets' buffers), and
 * its stale entities would persist them with sequence numbers the live incarnations have used
 * already. Those late events carry later timestamps than the live ones, so Pekko's replay filter
 * (repair-by-discard-old) would take the stale incarnation for the newer writer and discard the
 * live incarnation's later events on the next recovery. A fenced entity drops the command without
 * a reply; the caller's ask is sent again ({@link AskTimeouts}) and reaches the live incarnation,
 * or this one once the hold has passed and the member is still a member.
 *
 * <p>One fence per actor system ({@link #get}); a ticker thread stamps the time every
 * {@link #TICK}. Settings: {@code cadastre.fence.pause-threshold} and
 * {@code cadastre.fence.hold-after-pause}.
 */
public final class MemberFence implements Extension, AutoCloseable {
    /** How often the ticker stamps the time. */
    static final Duration TICK = Duration.ofMillis(100);

    /**
     * How much of the cluster this member reaches.
     *
     * @param considered members that count for a majority (not down, exiting or removed)
     * @param reachable those of them this member's failure detector finds reachable, itself included
     */
    record Reach(int considered, int reachable) {
        /** @return the reach in this member's view of the cluster */
        static Reach of(CurrentClusterState state) {
            int considered = 0;
            int unreachable = 0;
            for (Member m : state.getMembers()) {
                if (m.status() == MemberStatus.down()
                        || m.status() == MemberStatus.removed()
                        || m.status() == MemberStatus.exiting()) {
                    continue;
                }
                considered++;
                if (state.getUnreachable().contains(m)) {
                    unreachable++;
                }
            }
            return new Reach(considered, considered - unreachable);
        }

        boolean majority() {
            return considered == 0 || reachable * 2 > considered;
        }
    }

    private final Supplier<Reach> reach;
    private final LongSupplier nanoClock;
    private final long gapNanos;
    private final long holdNanos;
    private volatile long lastTick;
    private volatile long refuseUntil;
    private volatile long lastGapNanos;
    private volatile boolean closed;
    private final Thread ticker;

    private static final Logger LOG = LoggerFactory.getLogger(MemberFence.class);

    /** A fence that never closes: for entities run outside a cluster (unit tests). */
    public static final MemberFence NEVER_CLOSED =
            new MemberFence(
                    () -> new Reach(0, 0),
                    Duration.ofDays(3650),
                    Duration.ZERO,
                    System::nanoTime,
                    false);

    private static final ExtensionId<MemberFence> ID =
            new ExtensionId<>() {
                @Override
                public MemberFence createExtension(ActorSystem<?> system) {
                    var config = system.settings().config().getConfig("cadastre.fence");
                    Cluster cluster = Cluster.get(system);
                    MemberFence fence =
                            start(
                                    cluster::state,
                                    config.getDuration("pause-threshold"),
                                    config.getDuration("hold-after-pause"));
                    system.getWhenTerminated().thenRun(fence::close);
                    return fence;
                }
            };

    /** @return the actor system's fence, started on first use */
    public static MemberFence get(ActorSystem<?> system) {
        return ID.apply(system);
    }

    /**
     * @param reach how much of the cluster this member reaches now
     * @param gapThreshold a pause longer than this counts as a scheduling gap
     * @param holdAfterGap how long requests stay refused after a gap ended
     * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime})
     * @param startTicker whether to start the ticker thread (tests call {@link #tick()})
     */
    MemberFence(
            Supplier<Reach> reach,
            Duration gapThreshold,
            Duration holdAfterGap,
            LongSupplier nanoClock,
            boolean startTicker) {
        this.reach = reach;
        this.nanoClock = nanoClock;
        this.gapNanos = gapThreshold.toNanos();
        this.holdNanos = holdAfterGap.toNanos();
        this.lastTick = nanoClock.getAsLong();
        this.ticker = new Thread(this::tickUntilClosed, "cadastre-member-fence");
        this.ticker.setDaemon(true);
        if (startTicker) {
            ticker.start();
        }
    }

    /** A guard over the member's cluster view with the system clock and its own ticker thread. */
    public static MemberFence start(
            Supplier<CurrentClusterState> clusterState,
            Duration gapThreshold,
            Duration holdAfterGap) {
        return new MemberFence(
                () -> Reach.of(clusterState.get()),
                gapThreshold,
                holdAfterGap,
                System::nanoTime,
                true);
    }

    /** Stamps the time; a stamp later than the gap threshold after the previous one records a gap. */
    void tick() {
        long now = nanoClock.getAsLong();
        noteGap(now);
        lastTick = now;
    }

    private void noteGap(long now) {
        long since = now - lastTick;
        if (since > gapNanos) {
            lastGapNanos = since;
            refuseUntil = Math.max(refuseUntil, now + holdNanos);
        }
    }

    /** @return whether this member may serve now (see {@link #refusal()}) */
    public boolean open() {
        return refusal().isEmpty();
    }

    /** @return why this member must not serve now, or empty when it may */
    public Optional<String> refusal() {
        long now = nanoClock.getAsLong();
        noteGap(now);
        if (now - refuseUntil < 0) {
            return Optional.of(
                    String.format(
                            Locale.ROOT,
                            "this member did not run for %.1f s (paused?); serving again once the cluster has confirmed it",
                            lastGapNanos / 1e9));
        }
        Reach seen = reach.get();
        if (!seen.majority()) {
            return Optional.of(
                    "this member reaches "
                            + seen.reachable()
                            + " of "
                            + seen.considered()
                            + " cluster members, not a majority: its entities may be replaced on the other side");
        }
        return Optional.empty();
    }

    /**
     * Wraps an entity's command handler: while the fence is closed every command is dropped
     * without a reply (the caller's ask is sent again) and without a persisted event.
     *
     * @param persistenceId the entity's, for the log
     * @param drop the entity's {@code Effect().noReply()}
     */
    public <C, E, S> CommandHandlerWithReply<C, E, S> fenced(
            String persistenceId,
            CommandHandlerWithReply<C, E, S> handler,
            Supplier<ReplyEffect<E, S>> drop) {
        return (state, command) -> {
            Optional<String> refusal = refusal();
            if (refusal.isPresent()) {
                LOG.warn(
                        "{} drops {}: {}",
                        persistenceId,
                        command.getClass().getSimpleName(),
                        refusal.get());
                return drop.get();
            }
            return handler.apply(state, command);
        };
    }

    private void tickUntilClosed() {
        while (!closed) {
            tick();
            LockSupport.parkNanos(TICK.toNanos());
        }
    }

    @Override
    public void close() {
        closed = true;
    }
}
