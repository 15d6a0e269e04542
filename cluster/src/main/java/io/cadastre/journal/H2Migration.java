package io.cadastre.journal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Moves the journal of an agent from before the RocksDB store (H2 through pekko-persistence-jdbc
 * 1.1.1, {@code <data-dir>/journal.mv.db}) into the {@link RocksJournalStore}, so that an upgraded
 * node keeps its allocations. What recovery reads is copied byte for byte (serializer id,
 * manifest, payload): each persistence id's latest snapshot, its undeleted events after it, and
 * its highest sequence number, in one synced write ({@link RocksJournalStore#importAll}). Then the
 * H2 file is renamed to {@value #MIGRATED}; a crash before that repeats the copy at the next
 * start, which changes nothing already copied (same keys, same bytes).
 */
public final class H2Migration {
    /** The old journal's file in the data directory. */
    public static final String H2_FILE = "journal.mv.db";

    /** What the old journal's file is renamed to once migrated (kept for a rollback; the operator may delete it). */
    public static final String MIGRATED = "journal.mv.db.migrated";

    private H2Migration() {}

    /** What was migrated: persistence ids, events and snapshots copied. */
    public record Result(int persistenceIds, int events, int snapshots) {}

    /**
     * Migrates {@code <dataDir>/journal.mv.db} into {@code store} when it exists; an empty one
     * (the placeholder older agents created before H2 opened it) is deleted.
     *
     * @return what was copied, or null when there was no old journal
     * @throws IOException when the old journal cannot be read or the store not written: the agent
     *     must not start without its allocations
     */
    public static Result migrateIfPresent(Path dataDir, RocksJournalStore store)
            throws IOException {
        Path h2 = dataDir.resolve(H2_FILE);
        if (!Files.exists(h2)) {
            return null;
        }
        if (Files.size(h2) == 0) {
            Files.delete(h2);
            return null;
        }
        Map<String, Long> highest = new HashMap<>();
        Map<String, RocksJournalStore.Snapshot> snapshots = new HashMap<>();
        Map<String, List<RocksJournalStore.Event>> events = new HashMap<>();
        int eventCount = 0;
        String url =
                "jdbc:h2:file:" + dataDir.resolve("journal") + ";IFEXISTS=TRUE;ACCESS_MODE_DATA=r";
        try (Connection c = DriverManager.getConnection(url, "sa", "");
                Statement st = c.createStatement()) {
            try (ResultSet r =
                    st.executeQuery(
                            "SELECT \"persistence_id\", MAX(\"sequence_number\") FROM PUBLIC.\"event_journal\" GROUP BY \"persistence_id\"")) {
                while (r.next()) {
                    highest.put(r.getString(1), r.getLong(2));
                }
            }
            try (ResultSet r =
                    st.executeQuery(
                            "SELECT \"persistence_id\", \"sequence_number\", \"created\", \"snapshot_ser_id\", "
                                    + "\"snapshot_ser_manifest\", \"snapshot_payload\" FROM PUBLIC.\"snapshot\" ORDER BY \"persistence_id\", \"sequence_number\"")) {
                while (r.next()) {
                    // Ordered by sequence number: the last one per id is the latest.
                    snapshots.put(
                            r.getString(1),
                            new RocksJournalStore.Snapshot(
                                    r.getString(1),
                                    r.getLong(2),
                                    r.getLong(3),
                                    r.getInt(4),
                                    r.getString(5),
                                    r.getBytes(6)));
                }
            }
            try (ResultSet r =
                    st.executeQuery(
                            "SELECT \"persistence_id\", \"sequence_number\", \"writer\", \"write_timestamp\", "
                                    + "\"adapter_manifest\", \"event_ser_id\", \"event_ser_manifest\", \"event_payload\" FROM PUBLIC.\"event_journal\" "
                                    + "WHERE NOT \"deleted\" ORDER BY \"persistence_id\", \"sequence_number\"")) {
                while (r.next()) {
                    String pid = r.getString(1);
                    RocksJournalStore.Snapshot snapshot = snapshots.get(pid);
                    if (snapshot != null && r.getLong(2) <= snapshot.seqNr()) {
                        continue; // recovery starts from the snapshot
                    }
                    events.computeIfAbsent(pid, p -> new ArrayList<>())
                            .add(
                                    new RocksJournalStore.Event(
                                            r.getLong(2),
                                            r.getString(3),
                                            r.getString(5),
                                            r.getLong(4),
                                            r.getInt(6),
                                            r.getString(7),
                                            r.getBytes(8)));
                    eventCount++;
                }
            }
        } catch (SQLException e) {
            throw new IOException("cannot read the old H2 journal " + h2 + " to migrate it", e);
        }
        Set<String> ids = new TreeSet<>(highest.keySet());
        ids.addAll(snapshots.keySet());
        List<RocksJournalStore.Imported> copies = new ArrayList<>();
        for (String pid : ids) {
            copies.add(
                    new RocksJournalStore.Imported(
                            pid,
                            highest.getOrDefault(pid, 0L),
                            Optional.ofNullable(snapshots.get(pid)),
                            events.getOrDefault(pid, List.of())));
        }
        try {
            store.importAll(copies).join();
        } catch (RuntimeException e) {
            throw new IOException(
                    "cannot write the migrated journal", e.getCause() != null ? e.getCause() : e);
        }
        Files.move(
                h2,
                dataDir.resolve(MIGRATED),
                StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        Files.deleteIfExists(dataDir.resolve("journal.trace.db"));
        return new Result(ids.size(), eventCount, snapshots.size());
    }
}
