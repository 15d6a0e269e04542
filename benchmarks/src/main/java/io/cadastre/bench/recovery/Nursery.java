package io.cadastre.bench.recovery;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The probe's guardian: starts the entities as its plain children (as a shard starts them, without
 * sharding around them) and stops them, answering once a child has terminated so that the next
 * incarnation of the same persistence id never overlaps the previous one.
 */
final class Nursery {
    private Nursery() {}

    sealed interface Command permits Spawn, Stop, Terminated {}

    /** Starts {@code behavior.get()} (called in the guardian, so an entity's start clock starts there) as child {@code name}. */
    record Spawn<T>(Supplier<Behavior<T>> behavior, String name, ActorRef<ActorRef<T>> replyTo)
            implements Command {}

    /** Stops {@code child}; answered once it has terminated (at once when it is gone already). */
    record Stop(ActorRef<?> child, ActorRef<Done> replyTo) implements Command {}

    private record Terminated(ActorRef<?> child) implements Command {}

    static Behavior<Command> create() {
        return Behaviors.setup(
                context -> {
                    // child → who waits for its end; a child absent from the map has terminated
                    Map<ActorRef<?>, List<ActorRef<Done>>> live = new HashMap<>();
                    return Behaviors.receive(Command.class)
                            .onMessage(
                                    Spawn.class,
                                    spawn -> {
                                        live.put(
                                                spawnChild(context, (Spawn<?>) spawn),
                                                new ArrayList<>());
                                        return Behaviors.same();
                                    })
                            .onMessage(
                                    Stop.class,
                                    stop -> {
                                        List<ActorRef<Done>> waiting = live.get(stop.child());
                                        if (waiting == null) {
                                            stop.replyTo().tell(Done.getInstance());
                                        } else {
                                            waiting.add(stop.replyTo());
                                            context.stop(stop.child());
                                        }
                                        return Behaviors.same();
                                    })
                            .onMessage(
                                    Terminated.class,
                                    terminated -> {
                                        List<ActorRef<Done>> waiting =
                                                live.remove(terminated.child());
                                        if (waiting != null) {
                                            waiting.forEach(w -> w.tell(Done.getInstance()));
                                        }
                                        return Behaviors.same();
                                    })
                            .build();
                });
    }

    private static <T> ActorRef<T> spawnChild(ActorContext<Command> context, Spawn<T> spawn) {
        ActorRef<T> child = context.spawn(spawn.behavior().get(), spawn.name());
        // A child that fails (its journal did) ends up here too, instead of failing the guardian.
        context.watchWith(child, new Terminated(child));
        spawn.replyTo().tell(child);
        return child;
    }

    /**
     * @return the started child
     * @throws IllegalStateException when the guardian does not answer within {@code timeout}
     */
    static <T> ActorRef<T> spawn(
            ActorSystem<Command> system,
            Supplier<Behavior<T>> behavior,
            String name,
            Duration timeout) {
        return await(
                AskPattern.ask(
                        system,
                        (ActorRef<ActorRef<T>> replyTo) -> new Spawn<>(behavior, name, replyTo),
                        timeout,
                        system.scheduler()),
                timeout,
                "spawning " + name);
    }

    /** Stops {@code child} and waits until it has terminated. */
    static void stop(ActorSystem<Command> system, ActorRef<?> child, Duration timeout) {
        await(
                AskPattern.ask(
                        system,
                        (ActorRef<Done> replyTo) -> new Stop(child, replyTo),
                        timeout,
                        system.scheduler()),
                timeout,
                "stopping " + child);
    }

    /**
     * @return the stage's value
     * @throws IllegalStateException when it failed or did not complete within {@code timeout} (plus a
     *     second: the asks time out themselves)
     */
    static <T> T await(
            java.util.concurrent.CompletionStage<T> stage, Duration timeout, String what) {
        try {
            return stage.toCompletableFuture()
                    .get(timeout.toMillis() + 1_000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(what + " failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException(what + " did not complete within " + timeout, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted " + what, e);
        }
    }
}
