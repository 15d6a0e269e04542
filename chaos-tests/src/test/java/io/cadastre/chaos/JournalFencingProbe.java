package io.cadastre.chaos;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.cadastre.agent.AgentMain;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.persistence.AtomicWrite;
import org.apache.pekko.persistence.JournalProtocol;
import org.apache.pekko.persistence.Persistence;
import org.apache.pekko.persistence.PersistentRepr;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSessionRegistry;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Drives Cadastre's Cassandra journal ({@code FencedCassandraJournal}) the way two incarnations of
 * one entity on two members would, through Pekko's journal protocol (two actor systems, two
 * journals), against the Cassandra it is given (the agent's configuration and
 * {@code CADASTRE_CASSANDRA_*} environment): incarnation A recovers and writes 1 and 2, the live
 * incarnation B recovers and writes 3, then A, stale, writes its own 3 and 4: refused, though their
 * rows land; recoveries replay B's events and never A's stale ones, and once A recovers again B is
 * the stale one. Then, for a second entity, a stale row that lands after the newer incarnation's
 * recovery, with no write of that incarnation after it (a partitioned member's last write, sent
 * by its kernel after the heal): no later recovery replays it, as none of the newer incarnation's
 * state holds it; and for a third, the live row of the highest sequence number after a stale one
 * of that number is replayed. Prints one line per step and {@code FENCING OK} or {@code FENCING FAILED: why};
 * runs as its own JVM in a host namespace ({@link ClusterTest}), where the db address is
 * reachable.
 */
public final class JournalFencingProbe {
    private static final long WAIT_SECONDS = 30;

    /** Forwards every reply of the journal to a queue. */
    static final class Replies extends AbstractActor {
        private final BlockingQueue<Object> queue;

        Replies(BlockingQueue<Object> queue) {
            this.queue = queue;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder().matchAny(queue::add).build();
        }
    }

    private final ActorRef journal;
    private final ActorRef replies;
    private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final String persistenceId;

    private JournalFencingProbe(ActorSystem system, String persistenceId) {
        this.persistenceId = persistenceId;
        this.journal =
                Persistence.get(system)
                        .journalFor("pekko.persistence.cassandra.journal", ConfigFactory.empty());
        this.replies = system.actorOf(Props.create(Replies.class, () -> new Replies(queue)));
    }

    /** @return the reply to one event written by {@code writer}: the WriteMessageSuccess, or the failure's message */
    private String write(String writer, long sequenceNr) throws InterruptedException {
        PersistentRepr event =
                PersistentRepr.apply(
                        writer + "-" + sequenceNr,
                        sequenceNr,
                        persistenceId,
                        "",
                        false,
                        ActorRef.noSender(),
                        writer);
        var batch =
                CollectionConverters.asScala(
                                List.<org.apache.pekko.persistence.PersistentEnvelope>of(
                                        AtomicWrite.apply(event)))
                        .toList();
        journal.tell(new JournalProtocol.WriteMessages(batch, replies, 1), ActorRef.noSender());
        Object overall = next();
        Object each = next();
        if (overall instanceof JournalProtocol.WriteMessagesFailed failed) {
            return "failed: " + failed.cause().getMessage();
        }
        return each instanceof JournalProtocol.WriteMessageSuccess
                ? "ok"
                : "unexpected " + overall + " / " + each;
    }

    /** @return the highest sequence number recovery finds and the events it replays, as text */
    private String recover() throws InterruptedException {
        journal.tell(
                new JournalProtocol.ReplayMessages(
                        1, Long.MAX_VALUE, Long.MAX_VALUE, persistenceId, replies),
                ActorRef.noSender());
        List<String> events = new ArrayList<>();
        while (true) {
            Object reply = next();
            if (reply instanceof JournalProtocol.ReplayedMessage replayed) {
                events.add(
                        replayed.persistent().sequenceNr() + ":" + replayed.persistent().payload());
            } else if (reply instanceof JournalProtocol.RecoverySuccess done) {
                return "highest " + done.highestSequenceNr() + " events " + events;
            } else {
                return "unexpected " + reply;
            }
        }
    }

    private Object next() throws InterruptedException {
        Object reply = queue.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        if (reply == null) {
            throw new IllegalStateException("the journal did not answer in " + WAIT_SECONDS + " s");
        }
        return reply;
    }

    /** @return every row of the entity in the journal's messages table: sequence number and writer */
    private List<String> rows(CqlSession session, String keyspace) {
        List<String> rows = new ArrayList<>();
        for (Row row :
                session.execute(
                        SimpleStatement.newInstance(
                                "SELECT sequence_nr, writer_uuid FROM "
                                        + keyspace
                                        + ".messages WHERE persistence_id = ? AND partition_nr = 0",
                                persistenceId))) {
            rows.add(row.getLong("sequence_nr") + ":" + row.getString("writer_uuid"));
        }
        return rows;
    }

    public static void main(String[] args) throws Exception {
        Config config =
                AgentMain.loadConfig(
                        null,
                        ConfigFactory.parseString(
                                """
                cadastre.persistence = cassandra
                pekko.loglevel = WARNING
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.coordinated-shutdown.exit-jvm = off
                """));
        // Two actor systems: two members, each with its own journal, as a stale and a live
        // incarnation of one entity would be.
        ActorSystem first = ActorSystem.create("fencing-probe-a", config);
        ActorSystem second = ActorSystem.create("fencing-probe-b", config);
        int exit = 1;
        try {
            String persistenceId = "fencing-probe-" + UUID.randomUUID();
            JournalFencingProbe a = new JournalFencingProbe(first, persistenceId);
            JournalFencingProbe b = new JournalFencingProbe(second, persistenceId);
            String keyspace = config.getString("pekko.persistence.cassandra.journal.keyspace");
            CqlSession session =
                    CassandraSessionRegistry.get(first)
                            .sessionFor("pekko.persistence.cassandra")
                            .underlying()
                            .toCompletableFuture()
                            .get(60, TimeUnit.SECONDS);
            List<String> failures = new ArrayList<>();
            expect(failures, "A recovers", a.recover(), "highest 0 events []");
            expect(failures, "A writes 1", a.write("A", 1), "ok");
            expect(failures, "A writes 2", a.write("A", 2), "ok");
            expect(failures, "B recovers", b.recover(), "highest 2 events [1:A-1, 2:A-2]");
            expect(failures, "B, live, writes 3", b.write("B", 3), "ok");
            expect(failures, "A, stale, writes 3", a.write("A", 3), refused(persistenceId, 3, 2));
            expect(failures, "A, stale, writes 4", a.write("A", 4), refused(persistenceId, 4, 2));
            expect(
                    failures,
                    "rows: the stale ones landed",
                    a.rows(session, keyspace).toString(),
                    "[1:A, 2:A, 3:B, 3:A, 4:A]");
            expect(
                    failures,
                    "B recovers again: the stale rows are not replayed",
                    b.recover(),
                    "highest 4 events [1:A-1, 2:A-2, 3:B-3]");
            expect(failures, "B writes 5", b.write("B", 5), "ok");
            expect(
                    failures,
                    "A recovers: B's events, not its own stale ones",
                    a.recover(),
                    "highest 5 events [1:A-1, 2:A-2, 3:B-3, 5:B-5]");
            expect(
                    failures,
                    "B, stale since A recovered, writes 6",
                    b.write("B", 6),
                    refused(persistenceId, 6, 4));
            lateRowAfterARecovery(first, second, failures);
            liveRowAfterAnOlderStaleOneAtTheEnd(first, second, failures);
            System.out.println(failures.isEmpty() ? "FENCING OK" : "FENCING FAILED: " + failures);
            exit = failures.isEmpty() ? 0 : 1;
        } catch (Exception e) {
            System.out.println("FENCING FAILED: " + e);
            e.printStackTrace(System.out);
        } finally {
            first.terminate();
            second.terminate();
            first.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
            second.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        System.exit(exit);
    }

    /**
     * The chaos run of seed 4399636892607039522: a stale incarnation's refused write landed after
     * the newer incarnation had recovered and that one wrote nothing; the next recovery replayed
     * it (an attachment recorded by an ADD that had failed, without its allocation).
     */
    private static void lateRowAfterARecovery(
            ActorSystem first, ActorSystem second, List<String> failures)
            throws InterruptedException {
        Incarnations two = aWroteOneAndBRecovered("late", first, second, failures);
        JournalFencingProbe a = two.a();
        JournalFencingProbe b = two.b();
        expect(
                failures,
                "late: A, stale, writes 2 after B recovered (its row lands)",
                a.write("A", 2),
                refused(a.persistenceId, 2, 2));
        expect(
                failures,
                "late: A recovers: not its stale row, which B never had",
                a.recover(),
                "highest 2 events [1:A-1]");
        expect(failures, "late: A writes 3", a.write("A", 3), "ok");
        expect(
                failures,
                "late: B recovers: still not the stale row",
                b.recover(),
                "highest 3 events [1:A-1, 3:A-3]");
    }

    /**
     * The chaos run of seed 42: a stale incarnation's refused row and then the live incarnation's
     * acknowledged one share the journal's highest sequence number, the stale one first (its
     * timestamp is older). The plugin's read ends at the first row of the highest number; a
     * recovery must still replay the live row (a node's forget of an attachment whose addresses
     * the blocks had released was lost).
     */
    private static void liveRowAfterAnOlderStaleOneAtTheEnd(
            ActorSystem first, ActorSystem second, List<String> failures)
            throws InterruptedException {
        Incarnations two = aWroteOneAndBRecovered("last", first, second, failures);
        JournalFencingProbe a = two.a();
        JournalFencingProbe b = two.b();
        expect(
                failures,
                "last: A, stale, writes 2 (its row lands first)",
                a.write("A", 2),
                refused(a.persistenceId, 2, 2));
        expect(failures, "last: B, live, writes 2", b.write("B", 2), "ok");
        expect(
                failures,
                "last: A recovers: B's row of the highest number",
                a.recover(),
                "highest 2 events [1:A-1, 2:B-2]");
    }

    /** Two incarnations of one entity, on the two actor systems. */
    private record Incarnations(JournalFencingProbe a, JournalFencingProbe b) {}

    /**
     * @return A and B of a new entity once A (epoch 1) has written 1 and B has recovered (epoch 2):
     *     B is the live incarnation, A the stale one
     */
    private static Incarnations aWroteOneAndBRecovered(
            String label, ActorSystem first, ActorSystem second, List<String> failures)
            throws InterruptedException {
        String persistenceId = "fencing-probe-" + label + "-" + UUID.randomUUID();
        JournalFencingProbe a = new JournalFencingProbe(first, persistenceId);
        JournalFencingProbe b = new JournalFencingProbe(second, persistenceId);
        expect(failures, label + ": A recovers", a.recover(), "highest 0 events []");
        expect(failures, label + ": A writes 1", a.write("A", 1), "ok");
        expect(failures, label + ": B recovers", b.recover(), "highest 1 events [1:A-1]");
        return new Incarnations(a, b);
    }

    /** @return the journal's refusal of a write from {@code from} once {@code epoch} is stored */
    private static String refused(String persistenceId, long from, long epoch) {
        return "failed: write of "
                + persistenceId
                + " from sequence number "
                + from
                + " refused: the entity's epoch is "
                + epoch
                + ", claimed by a newer incarnation";
    }

    private static void expect(List<String> failures, String step, String actual, String expected) {
        System.out.println(step + ": " + actual);
        if (!expected.equals(actual)) {
            failures.add(step + ": expected " + expected + ", got " + actual);
        }
    }
}
