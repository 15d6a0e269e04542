package io.cadastre.journal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An H2 journal as pekko-persistence-jdbc 1.1.1 lays it out (its own schema file) is migrated. */
class H2MigrationTest {
    @TempDir Path dataDir;

    private void oldJournal() throws Exception {
        String schema;
        try (InputStream in =
                getClass().getClassLoader().getResourceAsStream("schema/h2/h2-create-schema.sql")) {
            schema = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        try (Connection c =
                        DriverManager.getConnection(
                                "jdbc:h2:file:" + dataDir.resolve("journal"), "sa", "");
                Statement st = c.createStatement()) {
            for (String statement : schema.split(";")) {
                if (!statement.isBlank()) {
                    st.execute(statement);
                }
            }
            PreparedStatement ev =
                    c.prepareStatement(
                            "INSERT INTO PUBLIC.\"event_journal\" (\"deleted\", \"persistence_id\", "
                                    + "\"sequence_number\", \"writer\", \"write_timestamp\", \"adapter_manifest\", \"event_payload\", \"event_ser_id\", "
                                    + "\"event_ser_manifest\") VALUES (?, ?, ?, 'w1', ?, '', ?, 33, 'A')");
            // block-a: events 1..5, snapshot at 3; node-x: events 1..2 deleted (the highest kept as
            // a deleted row), no snapshot.
            for (int i = 1; i <= 5; i++) {
                ev.setBoolean(1, false);
                ev.setString(2, "block-a");
                ev.setLong(3, i);
                ev.setLong(4, 100 + i);
                ev.setBytes(5, ("event " + i).getBytes());
                ev.executeUpdate();
            }
            ev.setBoolean(1, true);
            ev.setString(2, "node-x");
            ev.setLong(3, 2);
            ev.setLong(4, 7);
            ev.setBytes(5, new byte[] {1});
            ev.executeUpdate();
            st.execute(
                    "INSERT INTO PUBLIC.\"snapshot\" (\"persistence_id\", \"sequence_number\", \"created\", \"snapshot_ser_id\", "
                            + "\"snapshot_ser_manifest\", \"snapshot_payload\") VALUES ('block-a', 3, 55, 34, 'S', X'0102')");
        }
    }

    @Test
    void anOldH2JournalIsMigratedOnceAndRenamed() throws Exception {
        oldJournal();
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        dataDir.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            H2Migration.Result result = H2Migration.migrateIfPresent(dataDir, store);
            assertEquals(
                    new H2Migration.Result(2, 2, 1), result, "block-a's events after its snapshot");
            assertFalse(Files.exists(dataDir.resolve(H2Migration.H2_FILE)));
            assertTrue(Files.exists(dataDir.resolve(H2Migration.MIGRATED)));
            assertNull(H2Migration.migrateIfPresent(dataDir, store), "nothing left to migrate");

            // A crash after the copy was synced but before the rename: the next start copies again.
            Files.copy(dataDir.resolve(H2Migration.MIGRATED), dataDir.resolve(H2Migration.H2_FILE));
            assertEquals(
                    new H2Migration.Result(2, 2, 1),
                    H2Migration.migrateIfPresent(dataDir, store),
                    "again, the same");
        }
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        dataDir.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            List<RocksJournalStore.Event> events = new ArrayList<>();
            store.replay("block-a", 4, Long.MAX_VALUE, Long.MAX_VALUE, events::add);
            assertEquals(
                    List.of(4L, 5L), events.stream().map(RocksJournalStore.Event::seqNr).toList());
            assertArrayEquals("event 5".getBytes(), events.get(1).payload());
            assertEquals(105, events.get(1).timestamp());
            assertEquals("A", events.get(1).serializerManifest());
            RocksJournalStore.Snapshot s =
                    store.latestSnapshot("block-a", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow();
            assertEquals(3, s.seqNr());
            assertArrayEquals(new byte[] {1, 2}, s.payload());
            assertEquals(5, store.highestSeqNr("block-a"));
            assertEquals(
                    2, store.highestSeqNr("node-x"), "its next event is 3, though none is kept");
            assertEquals(
                    List.of(),
                    events.stream().filter(e -> e.seqNr() <= 3).toList(),
                    "none covered by the snapshot");
            store.appendEvents(
                            "node-x",
                            List.of(
                                    new RocksJournalStore.Event(
                                            3, "w2", "", 9, 33, "A", new byte[] {3})))
                    .join();
        }
    }

    @Test
    void theEmptyPlaceholderOfOlderAgentsIsRemoved() throws Exception {
        Files.createFile(dataDir.resolve(H2Migration.H2_FILE));
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        dataDir.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            assertNull(H2Migration.migrateIfPresent(dataDir, store));
            assertTrue(store.isEmpty());
        }
        assertFalse(Files.exists(dataDir.resolve(H2Migration.H2_FILE)));
    }
}
