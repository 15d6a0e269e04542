package io.cadastre.agent;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Each entity's journal epoch in Cassandra: a number that every recovery of the entity raises by
 * one, one row per persistence id in {@code <journal keyspace>.journal_epochs}. The raise is a
 * lightweight transaction (Paxos: compare-and-set, linearizable), so each epoch belongs to exactly
 * one incarnation, and it happens before the incarnation reads its events.
 *
 * <p>{@link FencedCassandraJournal} stamps every event with its incarnation's epoch and, once the
 * events are written, reads the row back at the journal's write consistency (QUORUM): only an
 * incarnation whose epoch is still the stored one has its write acknowledged. A stale incarnation
 * (its member paused or cut off past failover) finds a higher epoch and its write fails, so the
 * entity never replies; its rows stay in the journal, and every replay skips them, since an event
 * of a lower epoch than one replayed before it, or than another event of its sequence number, is
 * not replayed ({@link FencedCassandraJournal#asyncReplayMessages}). A stale row may also land
 * after the newer incarnation's recovery and no write of its own follows it (a partitioned member's
 * request, sent by its kernel after the heal): each recovery therefore records its cut, the highest
 * sequence number it adopted, in the same row ({@link #recordCut}, {@link JournalCuts}), and no
 * replay delivers a row of an older epoch past it.
 *
 * <p>Why no acknowledged event is lost: an incarnation that claims a higher epoch does so after the
 * acknowledged write's read-back (or that read-back would have seen it), so after the write landed,
 * and the new incarnation reads the events only after its claim: it replays that event and writes
 * after it, and its cut lies at or past it.
 *
 * <p>Cost: three lightweight transactions and one single-row read per recovery (two transactions
 * for an entity's first), and per write batch one single-row read; the write path has no Paxos
 * round.
 */
public final class CassandraJournalEpochs {
    /** The table's name, in the journal's keyspace. */
    public static final String TABLE = "journal_epochs";

    /** Claims that lose a race with another incarnation's are tried again at most this often. */
    private static final int CLAIM_ATTEMPTS = 10;

    private record Statements(
            CqlSession session,
            PreparedStatement create,
            PreparedStatement raise,
            PreparedStatement read,
            PreparedStatement readCuts,
            PreparedStatement recordCut) {}

    /**
     * An epoch claimed for a recovering incarnation.
     *
     * @param epoch the incarnation's epoch
     * @param cuts the cuts of the earlier incarnations, read after the claim
     */
    public record Claim(long epoch, JournalCuts cuts) {}

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
     * @param keyspaceStatement the journal's own CREATE KEYSPACE IF NOT EXISTS, run first when
     *     autocreating
     * @param profile the driver execution profile of the journal's writes (its consistency is the
     *     read-back's)
     */
    public CassandraJournalEpochs(
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
                + " (persistence_id text PRIMARY KEY, epoch bigint, cuts map<bigint, bigint>)";
    }

    /**
     * @return the CQL that adds the cuts to a table created by a release without them (idempotent;
     *     Cassandra 4.1 or later)
     */
    public static String addCutsStatement(String keyspace) {
        return "ALTER TABLE "
                + keyspace
                + "."
                + TABLE
                + " ADD IF NOT EXISTS cuts map<bigint, bigint>";
    }

    /**
     * Raises the epoch of {@code persistenceId} by one, for the incarnation about to recover, then
     * reads the cuts of the earlier ones. A cut is recorded only while its epoch is the stored one,
     * so every cut that will ever exist for an earlier epoch is read here.
     *
     * @return the new epoch (1 for an entity's first incarnation) and the cuts; fails with the
     *     driver's exception when Cassandra cannot decide (timeout, unavailable), or with an
     *     {@link IllegalStateException} after {@value #CLAIM_ATTEMPTS} lost races: the recovery must
     *     then fail
     */
    public CompletionStage<Claim> claim(String persistenceId) {
        return ready().thenCompose(
                        s ->
                                s.session()
                                        .executeAsync(
                                                s.create()
                                                        .bind(persistenceId, 1L)
                                                        .setExecutionProfileName(profile))
                                        .thenCompose(
                                                result -> {
                                                    Row row = result.one();
                                                    return row.getBoolean("[applied]")
                                                            ? CompletableFuture.completedFuture(
                                                                    new Claim(1L, JournalCuts.NONE))
                                                            : raise(
                                                                            s,
                                                                            persistenceId,
                                                                            stored(row),
                                                                            CLAIM_ATTEMPTS)
                                                                    .thenCompose(
                                                                            epoch ->
                                                                                    cutsAfterClaim(
                                                                                            s,
                                                                                            persistenceId,
                                                                                            epoch));
                                                }));
    }

    private CompletionStage<Claim> cutsAfterClaim(Statements s, String persistenceId, long epoch) {
        return s.session()
                .executeAsync(s.readCuts().bind(persistenceId).setExecutionProfileName(profile))
                .thenApply(
                        result -> {
                            Row row = result.one();
                            Map<Long, Long> cuts =
                                    row == null
                                            ? Map.of()
                                            : row.getMap("cuts", Long.class, Long.class);
                            return new Claim(epoch, JournalCuts.of(cuts));
                        });
    }

    /**
     * Records the cut of {@code epoch}'s incarnation, with the earlier ones it read, if
     * {@code epoch} is still the stored epoch (a lightweight transaction).
     *
     * @param cuts the cuts to store, {@code epoch}'s included
     * @return empty once recorded, or the stored epoch when a newer incarnation has claimed the
     *     entity (nothing is recorded then); fails with the driver's exception when Cassandra
     *     cannot decide
     */
    public CompletionStage<OptionalLong> recordCut(
            String persistenceId, long epoch, JournalCuts cuts) {
        return ready().thenCompose(
                        s ->
                                s.session()
                                        .executeAsync(
                                                s.recordCut()
                                                        .bind(cuts.asMap(), persistenceId, epoch)
                                                        .setExecutionProfileName(profile)))
                .thenApply(
                        result -> {
                            Row row = result.one();
                            return row.getBoolean("[applied]")
                                    ? OptionalLong.empty()
                                    : OptionalLong.of(stored(row));
                        });
    }

    private CompletionStage<Long> raise(
            Statements s, String persistenceId, long from, int attemptsLeft) {
        if (attemptsLeft == 0) {
            return CompletableFuture.failedFuture(
                    new IllegalStateException(
                            "the journal epoch of "
                                    + persistenceId
                                    + " kept moving: "
                                    + CLAIM_ATTEMPTS
                                    + " claims lost to other incarnations"));
        }
        return s.session()
                .executeAsync(
                        s.raise()
                                .bind(from + 1, persistenceId, from)
                                .setExecutionProfileName(profile))
                .thenCompose(
                        result -> {
                            Row row = result.one();
                            return row.getBoolean("[applied]")
                                    ? CompletableFuture.completedFuture(from + 1)
                                    : raise(s, persistenceId, stored(row), attemptsLeft - 1);
                        });
    }

    /**
     * @return the stored epoch of {@code persistenceId}, read at the write profile's consistency,
     *     or 0 when it has none
     */
    public CompletionStage<Long> current(String persistenceId) {
        return ready().thenCompose(
                        s ->
                                s.session()
                                        .executeAsync(
                                                s.read()
                                                        .bind(persistenceId)
                                                        .setExecutionProfileName(profile)))
                .thenApply(result -> stored(result.one()));
    }

    private static long stored(Row row) {
        return row == null || !row.getColumnDefinitions().contains("epoch") || row.isNull("epoch")
                ? 0L
                : row.getLong("epoch");
    }

    /**
     * The prepared statements, after creating the table when autocreating; a failure is retried on
     * the next call.
     */
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
            for (String ddl :
                    List.of(
                            keyspaceStatement,
                            createTableStatement(keyspace),
                            addCutsStatement(keyspace))) {
                created = created.thenCompose(ignored -> s.executeAsync(ddl));
            }
        }
        String table = keyspace + "." + TABLE;
        return created.thenCompose(
                ignored -> {
                    CompletableFuture<PreparedStatement> create =
                            prepare(
                                    s,
                                    "INSERT INTO "
                                            + table
                                            + " (persistence_id, epoch) VALUES (?, ?) IF NOT EXISTS");
                    CompletableFuture<PreparedStatement> raise =
                            prepare(
                                    s,
                                    "UPDATE "
                                            + table
                                            + " SET epoch = ? WHERE persistence_id = ? IF epoch = ?");
                    CompletableFuture<PreparedStatement> read =
                            prepare(s, "SELECT epoch FROM " + table + " WHERE persistence_id = ?");
                    CompletableFuture<PreparedStatement> readCuts =
                            prepare(s, "SELECT cuts FROM " + table + " WHERE persistence_id = ?");
                    CompletableFuture<PreparedStatement> recordCut =
                            prepare(
                                    s,
                                    "UPDATE "
                                            + table
                                            + " SET cuts = ? WHERE persistence_id = ? IF epoch = ?");
                    return CompletableFuture.allOf(create, raise, read, readCuts, recordCut)
                            .thenApply(
                                    all ->
                                            new Statements(
                                                    s,
                                                    create.join(),
                                                    raise.join(),
                                                    read.join(),
                                                    readCuts.join(),
                                                    recordCut.join()));
                });
    }

    private static CompletableFuture<PreparedStatement> prepare(CqlSession s, String cql) {
        return s.prepareAsync(cql).toCompletableFuture();
    }
}
