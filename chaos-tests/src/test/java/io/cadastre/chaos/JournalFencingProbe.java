package io.cadastre.chaos;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.cadastre.agent.AgentMain;
import io.cadastre.agent.CassandraJournalHeads;
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
 * one entity would, through Pekko's journal protocol, against the Cassandra it is given (the
 * agent's configuration and {@code CADASTRE_CASSANDRA_*} environment): incarnation A writes 1 and
 * 2, the live incarnation B takes over and writes 3, then A, stale, writes its own 3. Then a claim
 * whose events never landed (the writer died between claim and write) is recovered past, and the
 * journal with that gap in its sequence numbers is recovered again. Prints
 * one line per step and {@code FENCING OK} or {@code FENCING FAILED: why}; runs as its own JVM in a
 * host namespace ({@link ClusterTest}), where the db address is reachable.
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
    private final String persistenceId = "fencing-probe-" + UUID.randomUUID();

    private JournalFencingProbe(ActorSystem system) {
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
        ActorSystem system = ActorSystem.create("fencing-probe", config);
        int exit = 1;
        try {
            JournalFencingProbe probe = new JournalFencingProbe(system);
            String keyspace = config.getString("pekko.persistence.cassandra.journal.keyspace");
            CqlSession session =
                    CassandraSessionRegistry.get(system)
                            .sessionFor("pekko.persistence.cassandra")
                            .underlying()
                            .toCompletableFuture()
                            .get(60, TimeUnit.SECONDS);
            List<String> failures = new ArrayList<>();
            expect(failures, "A writes 1", probe.write("A", 1), "ok");
            expect(failures, "A writes 2", probe.write("A", 2), "ok");
            expect(failures, "B, live, writes 3", probe.write("B", 3), "ok");
            String stale = probe.write("A", 3);
            expect(
                    failures,
                    "A, stale, writes 3",
                    stale.startsWith(
                                    "failed: write of "
                                            + probe.persistenceId
                                            + " from sequence number 3 refused: the journal's head is at 3")
                            ? "refused"
                            : stale,
                    "refused");
            expect(failures, "rows", probe.rows(session, keyspace).toString(), "[1:A, 2:A, 3:B]");
            // C claims 4 and dies before writing it: recovery continues after 4, without an event
            // 4.
            var heads =
                    new CassandraJournalHeads(
                            java.util.concurrent.CompletableFuture.completedFuture(session),
                            keyspace,
                            false,
                            "",
                            "pekko-persistence-cassandra-profile");
            expect(
                    failures,
                    "C claims 4",
                    heads.claim(probe.persistenceId, 4, 4)
                            .toCompletableFuture()
                            .get(WAIT_SECONDS, TimeUnit.SECONDS)
                            .toString(),
                    "Granted[]");
            expect(failures, "recovery", probe.recover(), "highest 4 events [1:A-1, 2:A-2, 3:B-3]");
            expect(failures, "D, recovered, writes 5", probe.write("D", 5), "ok");
            expect(
                    failures,
                    "B, stale, writes 4",
                    probe.write("B", 4).startsWith("failed:") ? "refused" : "written",
                    "refused");
            expect(
                    failures,
                    "rows at the end",
                    probe.rows(session, keyspace).toString(),
                    "[1:A, 2:A, 3:B, 5:D]");
            expect(
                    failures,
                    "recovery over the gap",
                    probe.recover(),
                    "highest 5 events [1:A-1, 2:A-2, 3:B-3, 5:D-5]");
            System.out.println(failures.isEmpty() ? "FENCING OK" : "FENCING FAILED: " + failures);
            exit = failures.isEmpty() ? 0 : 1;
        } catch (Exception e) {
            System.out.println("FENCING FAILED: " + e);
            e.printStackTrace(System.out);
        } finally {
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        System.exit(exit);
    }

    private static void expect(List<String> failures, String step, String actual, String expected) {
        System.out.println(step + ": " + actual);
        if (!expected.equals(actual)) {
            failures.add(step + ": expected " + expected + ", got " + actual);
        }
    }
}
