package io.cadastre.bench.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.cadastre.agent.Persistence;
import io.cadastre.shards.CborSerializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;

/**
 * The raw journal's throughput, the yardstick of the IPAM throughput: trivial persistent entities,
 * each persisting one small event and replying, again and again, on the agent's own Cassandra
 * journal plugin and settings (without Cadastre's fence, which needs a cluster member; it is a
 * field read per write). Run as its own JVM inside a host namespace, with the agents' JVM flags,
 * by {@link IpamThroughputScenario}; prints {@code RESULT <events> <seconds> <per-second counts...>}.
 *
 * <p>Arguments: contact point ({@code host:port}), a persistence-id prefix, the number of
 * entities writing at once, warm-up seconds, measured seconds.
 */
public final class JournalProbe {
    /** The trivial event and the entity's only command. */
    public record Noted(long n) implements CborSerializable {}

    record Note(ActorRef<Done> replyTo) {}

    static final class Counter extends EventSourcedBehaviorWithEnforcedReplies<Note, Noted, Long> {
        Counter(String id) {
            super(PersistenceId.of("BenchJournal", id));
        }

        @Override
        public Long emptyState() {
            return 0L;
        }

        @Override
        public CommandHandlerWithReply<Note, Noted, Long> commandHandler() {
            return newCommandHandlerWithReplyBuilder()
                    .forAnyState()
                    .onCommand(
                            Note.class,
                            (state, note) ->
                                    Effect()
                                            .persist(new Noted(state + 1))
                                            .thenReply(note.replyTo(), s -> Done.getInstance()))
                    .build();
        }

        @Override
        public EventHandler<Long, Noted> eventHandler() {
            return newEventHandlerBuilder()
                    .forAnyState()
                    .onEvent(Noted.class, (state, e) -> e.n())
                    .build();
        }
    }

    private JournalProbe() {}

    public static void main(String[] args) throws Exception {
        String contactPoint = args[0];
        String prefix = args[1];
        int entities = Integer.parseInt(args[2]);
        int warmUp = Integer.parseInt(args[3]);
        int seconds = Integer.parseInt(args[4]);
        Config base =
                ConfigFactory.parseString(
                                """
                cadastre.persistence = cassandra
                cadastre.cassandra.contact-points = ["%s"]
                pekko.actor.provider = local
                pekko.persistence.cassandra.journal.class = "org.apache.pekko.persistence.cassandra.journal.CassandraJournal"
                pekko.persistence.cassandra.snapshot.class = "org.apache.pekko.persistence.cassandra.snapshot.CassandraSnapshotStore"
                pekko.loglevel = WARNING
                """
                                        .formatted(contactPoint))
                        .withFallback(ConfigFactory.load());
        Config config = Persistence.CASSANDRA.selection(base).withFallback(base);
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "journal-probe", config);
        try {
            Persistence.CASSANDRA.prepare(system).toCompletableFuture().get();
            List<ActorRef<Note>> counters = new ArrayList<>();
            for (int i = 0; i < entities; i++) {
                counters.add(
                        system.systemActorOf(
                                new Counter(prefix + "-" + i),
                                "counter-" + i,
                                org.apache.pekko.actor.typed.Props.empty()));
            }
            AtomicLongArray perSecond = new AtomicLongArray(warmUp + seconds + 2);
            AtomicBoolean stop = new AtomicBoolean();
            long t0 = System.nanoTime();
            List<CompletableFuture<Void>> loops = new ArrayList<>();
            for (ActorRef<Note> counter : counters) {
                loops.add(loop(system, counter, perSecond, t0, stop));
            }
            Thread.sleep(Duration.ofSeconds(warmUp + seconds).toMillis());
            stop.set(true);
            CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).get();
            long events = 0;
            StringBuilder series = new StringBuilder();
            for (int s = warmUp; s < warmUp + seconds; s++) {
                events += perSecond.get(s);
                series.append(' ').append(perSecond.get(s));
            }
            System.out.println("RESULT " + events + " " + seconds + series);
        } finally {
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().get();
        }
    }

    /** One entity's persist-and-reply after another, counted per second since t0, until stop. */
    private static CompletableFuture<Void> loop(
            ActorSystem<?> system,
            ActorRef<Note> counter,
            AtomicLongArray perSecond,
            long t0,
            AtomicBoolean stop) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Runnable[] next = new Runnable[1];
        next[0] =
                () -> {
                    if (stop.get()) {
                        done.complete(null);
                        return;
                    }
                    CompletionStage<Done> reply =
                            AskPattern.ask(
                                    counter, Note::new, Duration.ofSeconds(10), system.scheduler());
                    reply.whenComplete(
                            (d, failure) -> {
                                if (failure != null) {
                                    done.completeExceptionally(failure);
                                    return;
                                }
                                int second = (int) ((System.nanoTime() - t0) / 1_000_000_000L);
                                if (second < perSecond.length()) {
                                    perSecond.incrementAndGet(second);
                                }
                                next[0].run();
                            });
                };
        next[0].run();
        return done;
    }
}
