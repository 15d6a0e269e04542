package io.cadastre.shards;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.NoSerializationVerificationNeeded;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.ClusterSingleton;
import org.apache.pekko.cluster.typed.SingletonActor;

/**
 * A cluster singleton that runs a pass every interval: the loop the block reclaimer ({@link
 * BlockReclaimer}) and the Kubernetes deleted-node releaser share. Passes never overlap: a tick
 * that comes while a pass is under way is dropped. Each incarnation of the singleton (its start on
 * the oldest member, a move after that member left or crashed, a restart after a throw) begins
 * with fresh {@link Passes}, so nothing an incarnation learned survives it.
 */
public final class PeriodicSingleton {
    private PeriodicSingleton() {}

    /** The singleton's messages: its own timer and the end of a pass; never sent across members. */
    public sealed interface Command extends NoSerializationVerificationNeeded
            permits Tick, PassDone {}

    private enum Tick implements Command {
        INSTANCE
    }

    private record PassDone(Throwable failure) implements Command {}

    /** What one incarnation does; called on the singleton's actor, one call at a time. */
    public interface Passes {
        /**
         * @return one pass; not called again before it completes. A throw here fails the actor,
         *     which restarts with a fresh incarnation after a back-off ({@link #start})
         */
        CompletionStage<?> pass();

        /** @param failure why the pass failed, or {@code null} when it succeeded */
        void done(Throwable failure);

        /** The incarnation stopped here: the singleton moved, or the member is leaving. */
        void stop();
    }

    /**
     * @param interval the time between the end of one tick and the next; positive
     * @param incarnation a fresh incarnation's passes, made when the actor starts
     * @return the singleton's behaviour (unsupervised: {@link #start} adds the restarts)
     */
    public static Behavior<Command> behavior(
            Duration interval, Supplier<? extends Passes> incarnation) {
        return Behaviors.setup(
                ctx ->
                        Behaviors.withTimers(
                                timers -> {
                                    Passes passes = incarnation.get();
                                    timers.startTimerWithFixedDelay(Tick.INSTANCE, interval);
                                    boolean[] running = {false};
                                    return Behaviors.receive(Command.class)
                                            .onMessage(
                                                    Tick.class,
                                                    tick -> {
                                                        if (!running[0]) {
                                                            running[0] = true;
                                                            ctx.pipeToSelf(
                                                                    passes.pass(),
                                                                    (v, failure) ->
                                                                            new PassDone(failure));
                                                        }
                                                        return Behaviors.same();
                                                    })
                                            .onMessage(
                                                    PassDone.class,
                                                    done -> {
                                                        running[0] = false;
                                                        passes.done(done.failure());
                                                        return Behaviors.same();
                                                    })
                                            .onSignal(
                                                    PostStop.class,
                                                    stop -> {
                                                        passes.stop();
                                                        return Behaviors.same();
                                                    })
                                            .build();
                                }));
    }

    /**
     * Starts the cluster singleton on this member (it runs on the oldest member; on every other
     * one this only starts a proxy). A bug that throws restarts it (a fresh incarnation, as after a
     * move) after a back-off of 1 s, doubling up to 1 min. Call once per member, after it is Up.
     *
     * @param name the singleton's name in the cluster
     */
    public static ActorRef<Command> start(
            ActorSystem<?> system, String name, Behavior<Command> behavior) {
        Behavior<Command> supervised =
                Behaviors.supervise(behavior)
                        .onFailure(
                                SupervisorStrategy.restartWithBackoff(
                                        Duration.ofSeconds(1), Duration.ofMinutes(1), 0.2));
        return ClusterSingleton.get(system).init(SingletonActor.of(supervised, name));
    }
}
