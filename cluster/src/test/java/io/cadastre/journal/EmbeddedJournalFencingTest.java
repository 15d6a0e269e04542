package io.cadastre.journal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 through Pekko: two incarnations of one entity on the embedded journal, the older one
 * no longer the owner. Its write of a sequence number the live one already took is refused by the
 * journal, the stale incarnation stops without replying, and the journal holds the live one's
 * events only.
 */
class EmbeddedJournalFencingTest {
    @TempDir Path dir;

    private ActorTestKit kit;

    /** Appends texts; replies with what it holds once the append is persisted. */
    private static final class Texts
            extends EventSourcedBehavior<Texts.Append, String, List<String>> {
        record Append(String text, ActorRef<List<String>> replyTo) {}

        Texts(String persistenceId) {
            super(PersistenceId.ofUniqueId(persistenceId));
        }

        static Behavior<Append> of(String persistenceId) {
            return new Texts(persistenceId);
        }

        @Override
        public List<String> emptyState() {
            return List.of();
        }

        @Override
        public CommandHandler<Append, String, List<String>> commandHandler() {
            return newCommandHandlerBuilder()
                    .forAnyState()
                    .onCommand(
                            Append.class,
                            (state, append) ->
                                    Effect()
                                            .persist(append.text())
                                            .thenReply(append.replyTo(), s -> s))
                    .build();
        }

        @Override
        public EventHandler<List<String>, String> eventHandler() {
            return newEventHandlerBuilder()
                    .forAnyState()
                    .onAnyEvent(
                            (state, text) -> {
                                List<String> next = new ArrayList<>(state);
                                next.add(text);
                                return List.copyOf(next);
                            });
        }
    }

    @AfterEach
    void stop() {
        if (kit != null) {
            kit.shutdownTestKit();
        }
    }

    /** Starts an actor system on the agent's own cadastre.embedded-journal section, in this test's directory. */
    private ActorTestKit start(String name) {
        Config agent =
                ConfigFactory.parseString("cadastre.data-dir = \"" + dir + "\"")
                        .withFallback(ConfigFactory.parseResources("application.conf"))
                        .resolve();
        Config config =
                ConfigFactory.parseString(
                                """
                pekko.persistence.journal.plugin = "cadastre.embedded-journal.journal"
                pekko.persistence.snapshot-store.plugin = "cadastre.embedded-journal.snapshot"
                """)
                        .withValue(
                                "cadastre.embedded-journal",
                                agent.getValue("cadastre.embedded-journal"))
                        .withFallback(ConfigFactory.defaultReference());
        return ActorTestKit.create(name, config);
    }

    @Test
    void aStaleIncarnationsWriteIsRefusedAndItStops() {
        kit = start("fencing");
        TestProbe<List<String>> replies = kit.createTestProbe();

        ActorRef<Texts.Append> stale = kit.spawn(Texts.of("block-198.18.0.0-26"));
        stale.tell(new Texts.Append("a1", replies.getRef()));
        assertEquals(List.of("a1"), replies.receiveMessage(Duration.ofSeconds(30)));
        stale.tell(new Texts.Append("a2", replies.getRef()));
        assertEquals(List.of("a1", "a2"), replies.receiveMessage(Duration.ofSeconds(30)));

        // The entity moves on elsewhere: a new incarnation recovers and writes sequence number 3.
        ActorRef<Texts.Append> live = kit.spawn(Texts.of("block-198.18.0.0-26"));
        live.tell(new Texts.Append("b3", replies.getRef()));
        assertEquals(List.of("a1", "a2", "b3"), replies.receiveMessage(Duration.ofSeconds(30)));

        // The old incarnation, unaware, writes its own sequence number 3: refused, and it stops.
        TestProbe<List<String>> staleReplies = kit.createTestProbe();
        stale.tell(new Texts.Append("a3", staleReplies.getRef()));
        staleReplies.expectTerminated(stale, Duration.ofSeconds(30));

        ActorRef<Texts.Append> recovered = kit.spawn(Texts.of("block-198.18.0.0-26"));
        recovered.tell(new Texts.Append("c4", replies.getRef()));
        assertEquals(
                List.of("a1", "a2", "b3", "c4"),
                replies.receiveMessage(Duration.ofSeconds(30)),
                "the stale a3 was never written, and the live sequence goes on");
    }

    /**
     * The journal actor runs on its senders' threads and replies from the writer's
     * ({@link InlineExecutorConfigurator}): many entities persisting at once each get every reply,
     * in order, and a new actor system recovers every event.
     */
    @Test
    void concurrentEntitiesGetEveryReplyInOrderAndRecoverEverything() {
        kit = start("concurrent");
        int entities = 20;
        int appends = 30;
        List<TestProbe<List<String>>> probes = new ArrayList<>();
        List<ActorRef<Texts.Append>> refs = new ArrayList<>();
        for (int e = 0; e < entities; e++) {
            probes.add(kit.createTestProbe());
            refs.add(kit.spawn(Texts.of("block-198.18." + e + ".0-26")));
        }
        for (int a = 0; a < appends; a++) {
            for (int e = 0; e < entities; e++) {
                refs.get(e).tell(new Texts.Append(e + ":" + a, probes.get(e).getRef()));
            }
        }
        for (int e = 0; e < entities; e++) {
            for (int a = 0; a < appends; a++) {
                List<String> state = probes.get(e).receiveMessage(Duration.ofSeconds(30));
                assertEquals(a + 1, state.size(), "replies in the order of the appends");
                assertEquals(e + ":" + a, state.get(a));
            }
        }
        kit.shutdownTestKit();

        kit = start("concurrent-recovered");
        for (int e = 0; e < entities; e++) {
            TestProbe<List<String>> probe = kit.createTestProbe();
            kit.spawn(Texts.of("block-198.18." + e + ".0-26"))
                    .tell(new Texts.Append("last", probe.getRef()));
            List<String> recovered = probe.receiveMessage(Duration.ofSeconds(30));
            assertEquals(appends + 1, recovered.size());
            assertEquals(e + ":0", recovered.get(0));
            assertEquals(e + ":" + (appends - 1), recovered.get(appends - 1));
        }
    }
}
