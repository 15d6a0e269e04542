package io.cadastre.agent;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Each entity's journal head in Cassandra: the highest sequence number an incarnation has claimed,
 * one row per persistence id in {@code <journal keyspace>.journal_heads}. A write of events
 * {@code from..to} first moves the head from {@code from - 1} to {@code to} with a lightweight
 * transaction (Paxos: compare-and-set, linearizable); only then are the events written. An
 * incarnation that is no longer the entity's owner still believes the head is where it left it;
 * the live incarnation has moved it, so the stale one's claim fails and its events never reach the
 * journal: no sequence number is written twice, whatever the timestamps (Pekko's replay filter
 * no longer has anything to repair). Pekko's journal messages table cannot say this itself: its
 * key includes the write's timestamp, so a second row with the same sequence number is a new row.
 *
 * <p>A claim granted but whose events never landed (the writer died in between) leaves the head
 * ahead of the events: recovery reads the head ({@link #head}) as the highest sequence number, so
 * the next incarnation continues after it and that number stays a gap (the journal is replayed
 * with {@code query.gap-free-sequence-numbers = off}). Those events were never acknowledged (the
 * write had not completed). One window remains: the writer's event write delayed in the network
 * (its member cut off just after the claim) past the next incarnation's recovery, and completed
 * after it; the late events are then replayed in their place on the next recovery. An entity
 * whose events predate this table has no head row; its first claim creates it.
 *
 * <p>Cost: one Paxos round per write batch (four round trips to the replicas instead of one) and
 * one serial read per recovery.
 */
public final class CassandraJournalHeads {
    /** The table's name, in the journal's keyspace. */
    public static final String TABLE = "journal_heads";

    /** The outcome of a claim: granted, or refused with the head another incarnation has written. */
    public sealed interface Claim {
        /** The head moved to the batch's last sequence number: write the events. */
        record Granted() implements Claim {}

        /** @param head the head as stored, which the claiming incarnation did not know */
        record Refused(long head) implements Claim {}
    }

    private record Statements(
            CqlSession session,
            PreparedStatement create,
            PreparedStatement advance,
            PreparedStatement read) {}

    private final CompletionStage<CqlSession> session;
    private final String keyspace;
    private final boolean autocreate;
    private final String profile;
    private final String keyspaceStatement;
    private final AtomicReference<CompletableFuture<Statements>> statements =
            new AtomicReference<>();

    /**
     * @param session the journal's session (connected lazily)
     * @param keyspace the journal's keyspace
     * @param autocreate whether to create the keyspace and table (as the journal's
     *     {@code tables-autocreate}); otherwise {@link SchemaCommand} has
     * @param keyspaceStatement the journal's own CREATE KEYSPACE IF NOT EXISTS, run first when autocreating
     * @param profile the driver execution profile of the journal's writes
     */
    public CassandraJournalHeads(
            CompletionStage<CqlSession> session,
            String keyspace,
            boolean autocreate,
            String keyspaceStatement,
            String profile) {
        this.session = session;
        this.keyspace = keyspace;
        this.autocreate = autocreate;
        this.profile = profile;
        this.keyspaceStatement = keyspaceStatement;
    }

    /** @return the CQL that creates the table in {@code keyspace} (idempotent) */
    public static String createTableStatement(String keyspace) {
        return "CREATE TABLE IF NOT EXISTS "
                + keyspace
                + "."
                + TABLE
                + " (persistence_id text PRIMARY KEY, sequence_nr bigint)";
    }

    /**
     * Moves the head of {@code persistenceId} from {@code from - 1} to {@code to}.
     *
     * @param from the first sequence number of the batch (1 or more)
     * @param to the last sequence number of the batch
     * @return {@link Claim.Granted}, or {@link Claim.Refused} with the stored head; fails with the
     *     driver's exception when Cassandra cannot decide (timeout, unavailable): the write must then
     *     fail too
     */
    public CompletionStage<Claim> claim(String persistenceId, long from, long to) {
        return ready().thenCompose(
                        s -> {
                            if (from <= 1) {
                                return create(s, persistenceId, to);
                            }
                            return s.session()
                                    .executeAsync(
                                            s.advance()
                                                    .bind(to, persistenceId, from - 1)
                                                    .setExecutionProfileName(profile))
                                    .thenCompose(
                                            result -> {
                                                Row row = result.one();
                                                if (row.getBoolean("[applied]")) {
                                                    return CompletableFuture.completedFuture(
                                                            (Claim) new Claim.Granted());
                                                }
                                                Long head = storedHead(row);
                                                // No row at all: the entity's events predate the
                                                // table.
                                                return head == null
                                                        ? create(s, persistenceId, to)
                                                        : CompletableFuture.completedFuture(
                                                                (Claim) new Claim.Refused(head));
                                            });
                        });
    }

    /** @return the stored head of {@code persistenceId}, read with serial consistency, or 0 when none is */
    public CompletionStage<Long> head(String persistenceId) {
        return ready().thenCompose(
                        s ->
                                s.session()
                                        .executeAsync(
                                                s.read()
                                                        .bind(persistenceId)
                                                        .setExecutionProfileName(profile)
                                                        .setConsistencyLevel(
                                                                DefaultConsistencyLevel.SERIAL)))
                .thenApply(
                        result -> {
                            Row row = result.one();
                            return row == null || row.isNull("sequence_nr")
                                    ? 0L
                                    : row.getLong("sequence_nr");
                        });
    }

    private CompletionStage<Claim> create(Statements s, String persistenceId, long to) {
        return s.session()
                .executeAsync(s.create().bind(persistenceId, to).setExecutionProfileName(profile))
                .thenApply(
                        result -> {
                            Row row = result.one();
                            if (row.getBoolean("[applied]")) {
                                return new Claim.Granted();
                            }
                            Long head = storedHead(row);
                            return new Claim.Refused(head == null ? 0 : head);
                        });
    }

    private static Long storedHead(Row row) {
        return row.getColumnDefinitions().contains("sequence_nr") && !row.isNull("sequence_nr")
                ? row.getLong("sequence_nr")
                : null;
    }

    /** The prepared statements, after creating the table when autocreating; a failure is retried on the next call. */
    private CompletionStage<Statements> ready() {
        CompletableFuture<Statements> current = statements.get();
        if (current != null && !current.isCompletedExceptionally()) {
            return current;
        }
        CompletableFuture<Statements> next = new CompletableFuture<>();
        if (!statements.compareAndSet(current, next)) {
            return statements.get();
        }
        session.thenCompose(this::prepare)
                .whenComplete(
                        (s, e) -> {
                            if (e != null) {
                                next.completeExceptionally(e);
                            } else {
                                next.complete(s);
                            }
                        });
        return next;
    }

    private CompletionStage<Statements> prepare(CqlSession s) {
        CompletionStage<AsyncResultSet> created = CompletableFuture.completedFuture(null);
        if (autocreate) {
            for (String ddl : List.of(keyspaceStatement, createTableStatement(keyspace))) {
                created = created.thenCompose(ignored -> s.executeAsync(ddl));
            }
        }
        String table = keyspace + "." + TABLE;
        return created.thenCompose(
                        ignored ->
                                s.prepareAsync(
                                        "INSERT INTO "
                                                + table
                                                + " (persistence_id, sequence_nr) VALUES (?, ?) IF NOT EXISTS"))
                .thenCompose(
                        create ->
                                s.prepareAsync(
                                                "UPDATE "
                                                        + table
                                                        + " SET sequence_nr = ? WHERE persistence_id = ? IF sequence_nr = ?")
                                        .thenCompose(
                                                advance ->
                                                        s.prepareAsync(
                                                                        "SELECT sequence_nr FROM "
                                                                                + table
                                                                                + " WHERE persistence_id = ?")
                                                                .thenApply(
                                                                        read ->
                                                                                new Statements(
                                                                                        s, create,
                                                                                        advance,
                                                                                        read))));
    }
}
