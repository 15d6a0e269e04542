package io.cadastre.journal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RocksJournalStoreTest {
    /** The smallest sizes the store takes: flushes and compactions happen within a short test. */
    private static final RocksJournalStore.Settings SMALL =
            new RocksJournalStore.Settings(64 << 10, 128 << 10, 256 << 10);

    @TempDir Path tmp;

    private static RocksJournalStore.Event event(long seq, byte[] payload) {
        return new RocksJournalStore.Event(seq, "writer-1", "", 1000 + seq, 33, "m", payload);
    }

    private static List<Long> seqs(RocksJournalStore store, String pid) throws IOException {
        List<Long> seqs = new ArrayList<>();
        store.replay(pid, 1, Long.MAX_VALUE, Long.MAX_VALUE, e -> seqs.add(e.seqNr()));
        return seqs;
    }

    private static List<Long> range(long from, long to) {
        return LongStream.rangeClosed(from, to).boxed().toList();
    }

    private static Throwable failureOf(CompletableFuture<Void> write) {
        CompletionException e = assertThrows(CompletionException.class, write::join);
        return e.getCause();
    }

    @Test
    void whatWasAcknowledgedIsThereAfterReopening() throws Exception {
        Path dir = tmp.resolve("journal");
        byte[] payload = "assigned 198.18.0.7".getBytes(StandardCharsets.UTF_8);
        try (RocksJournalStore store =
                RocksJournalStore.open(dir, RocksJournalStore.Settings.DEFAULT)) {
            store.appendEvents("block-a", List.of(event(1, payload), event(2, payload))).join();
            store.appendEvents(
                            "block-a",
                            List.of(
                                    new RocksJournalStore.Event(
                                            3,
                                            "writer-2",
                                            "adapted",
                                            77,
                                            34,
                                            "manifest é",
                                            payload)))
                    .join();
            store.deleteEventsTo("block-a", 1).join();
            store.saveSnapshot(
                            new RocksJournalStore.Snapshot(
                                    "block-a", 2, 77, 33, "s", new byte[] {9}))
                    .join();
        }
        assertEquals(
                "rwx------",
                PosixFilePermissions.toString(
                        Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS)));
        try (RocksJournalStore store =
                RocksJournalStore.open(dir, RocksJournalStore.Settings.DEFAULT)) {
            assertEquals(List.of(2L, 3L), seqs(store, "block-a"));
            assertEquals(3, store.highestSeqNr("block-a"));
            RocksJournalStore.Snapshot s =
                    store.latestSnapshot("block-a", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow();
            assertEquals(2, s.seqNr());
            assertEquals(77, s.timestamp());
            assertArrayEquals(new byte[] {9}, s.payload());
            List<RocksJournalStore.Event> events = new ArrayList<>();
            store.replay("block-a", 3, 3, 10, events::add);
            RocksJournalStore.Event third = events.get(0);
            assertEquals(
                    List.of(3L, "writer-2", "adapted", 77L, 34, "manifest é"),
                    List.of(
                            third.seqNr(),
                            third.writerUuid(),
                            third.adapterManifest(),
                            third.timestamp(),
                            third.serializerId(),
                            third.serializerManifest()));
            assertArrayEquals(payload, third.payload());
            assertOwnerOnly(dir, "");
        }
    }

    /**
     * Writes events one by one in a child JVM, printing each once acknowledged; killed with
     * SIGKILL mid-way. Arguments: the journal's directory, the native library's, and what to
     * write: {@code synced} (events of {@code block-k}, each synced), {@code pairs} (an event of
     * {@code block-k} without a sync of its own, then one of {@code node-k}, synced: an ADD's two
     * writes; acknowledged after the second) or {@code unsynced} (events of {@code block-k}, none
     * synced).
     */
    public static void main(String[] args) throws Exception {
        org.rocksdb.NativeLibraryLoader.getInstance().loadLibrary(args[1]);
        RocksJournalStore store = RocksJournalStore.open(Path.of(args[0]), SMALL);
        byte[] payload = new byte[200];
        for (long seq = 1; ; seq++) {
            switch (args[2]) {
                case "synced" -> store.appendEvents("block-k", List.of(event(seq, payload))).join();
                case "pairs" -> {
                    store.appendEvents("block-k", List.of(event(seq, payload)), false).join();
                    store.appendEvents("node-k", List.of(event(seq, payload))).join();
                }
                case "unsynced" ->
                        store.appendEvents("block-k", List.of(event(seq, payload)), false).join();
                default -> throw new IllegalArgumentException(args[2]);
            }
            System.out.println("acknowledged " + seq);
        }
    }

    /**
     * Runs {@link #main} on {@code dir} until it acknowledged 2,000 writes, then kills it with
     * SIGKILL. 2,000 writes of 200 bytes fill the 128 KiB of logs several times over: the kill
     * lands in a log written over a recycled one.
     *
     * @return the highest sequence number acknowledged
     */
    private long writeUntilKilled(Path dir, String mode) throws Exception {
        // The native library outside the journal's directory (which may be a test file system),
        // in the test's directory: a killed JVM leaves its copy behind.
        Path nativeDir = Files.createDirectories(tmp.resolve("native"));
        Process child =
                new ProcessBuilder(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-cp",
                                System.getProperty("java.class.path"),
                                RocksJournalStoreTest.class.getName(),
                                dir.toString(),
                                nativeDir.toString(),
                                mode)
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
        long acknowledged = 0;
        try (BufferedReader out =
                new BufferedReader(
                        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            String line;
            while (acknowledged < 2_000 && (line = out.readLine()) != null) {
                acknowledged = acknowledgedIn(line, acknowledged);
                assertTrue(
                        System.nanoTime() < deadline, "2,000 writes not acknowledged within 60 s");
            }
            // SIGKILL: no close, no flush of anything. (Through the handle: Process.destroyForcibly
            // would close the pipe that still holds acknowledgements.)
            child.toHandle().destroyForcibly();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            // Lines still buffered were acknowledged before the kill too.
            while ((line = out.readLine()) != null) {
                acknowledged = acknowledgedIn(line, acknowledged);
            }
        } finally {
            child.destroyForcibly();
        }
        assertTrue(acknowledged >= 2_000, "the child acknowledged only " + acknowledged);
        return acknowledged;
    }

    @Test
    void everyWriteAcknowledgedBeforeASigkillIsThereAfter() throws Exception {
        Path dir = tmp.resolve("journal");
        long acknowledged = writeUntilKilled(dir, "synced");
        try (RocksJournalStore store = RocksJournalStore.open(dir, SMALL)) {
            long highest = store.highestSeqNr("block-k");
            assertTrue(
                    highest >= acknowledged,
                    "acknowledged " + acknowledged + ", recovered up to " + highest);
            assertEquals(range(1, highest), seqs(store, "block-k"));
        }
    }

    /**
     * A power loss (a file system that loses what no sync covered: {@link PowerLossFs}) after a
     * SIGKILL: every acknowledged pair of writes is there after, the first of each written without
     * a sync of its own and made durable by the second's.
     */
    @Test
    void everyPairAcknowledgedBeforeAPowerLossIsThereAfter() throws Exception {
        Path mount = Files.createDirectory(tmp.resolve("disk"));
        try (PowerLossFs disk = PowerLossFs.mountOn(mount)) {
            Path dir = mount.resolve("journal");
            long acknowledged = writeUntilKilled(dir, "pairs");
            disk.powerLoss();
            try (RocksJournalStore store = RocksJournalStore.open(dir, SMALL)) {
                for (String pid : List.of("block-k", "node-k")) {
                    long highest = store.highestSeqNr(pid);
                    assertTrue(
                            highest >= acknowledged,
                            pid
                                    + ": acknowledged "
                                    + acknowledged
                                    + ", recovered up to "
                                    + highest);
                    assertEquals(range(1, highest), seqs(store, pid));
                }
            }
        }
    }

    /**
     * The harness bites: writes that no sync followed are lost in the power loss, and the store
     * recovers what was synced, in order, without a gap.
     */
    @Test
    void unsyncedWritesAreLostInAPowerLossAndTheStoreRecoversTheRest() throws Exception {
        Path mount = Files.createDirectory(tmp.resolve("disk"));
        try (PowerLossFs disk = PowerLossFs.mountOn(mount)) {
            Path dir = mount.resolve("journal");
            long acknowledged = writeUntilKilled(dir, "unsynced");
            assertTrue(disk.powerLoss() > 0, "the power loss lost nothing");
            try (RocksJournalStore store = RocksJournalStore.open(dir, SMALL)) {
                long highest = store.highestSeqNr("block-k");
                assertTrue(
                        highest < acknowledged,
                        "acknowledged "
                                + acknowledged
                                + " writes without a sync, and all "
                                + highest
                                + " survived the power loss");
                assertEquals(range(1, highest), seqs(store, "block-k"));
                store.appendEvents("block-k", List.of(event(highest + 1, new byte[1]))).join();
            }
        }
    }

    /**
     * @return the sequence number a child's "acknowledged N" line reports, or {@code previous} for
     *     any other line (logback's status lines, when the class path holds several
     *     configurations)
     */
    private static long acknowledgedIn(String line, long previous) {
        return line.startsWith("acknowledged ")
                ? Long.parseLong(line.substring("acknowledged ".length()))
                : previous;
    }

    @Test
    void replayIsInSequenceOrderPerPersistenceIdWithinItsBounds() throws Exception {
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        tmp.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            // Ids that are prefixes of each other, and sequence numbers across byte boundaries.
            List<Long> written = new ArrayList<>(range(1, 300));
            written.addAll(List.of(65_535L, 65_536L, 1L << 33));
            for (String pid : List.of("block-1", "block-10", "block-1|x")) {
                for (int i = 0; i < written.size(); i += 7) {
                    List<RocksJournalStore.Event> batch =
                            written.subList(i, Math.min(i + 7, written.size())).stream()
                                    .map(seq -> event(seq, pid.getBytes(StandardCharsets.UTF_8)))
                                    .toList();
                    store.appendEvents(pid, batch).join();
                }
            }
            for (String pid : List.of("block-1", "block-10", "block-1|x")) {
                List<RocksJournalStore.Event> events = new ArrayList<>();
                store.replay(pid, 1, Long.MAX_VALUE, Long.MAX_VALUE, events::add);
                assertEquals(
                        written, events.stream().map(RocksJournalStore.Event::seqNr).toList(), pid);
                assertTrue(
                        events.stream()
                                .allMatch(
                                        e ->
                                                new String(e.payload(), StandardCharsets.UTF_8)
                                                        .equals(pid)),
                        pid);
                assertEquals(1L << 33, store.highestSeqNr(pid));
            }
            List<Long> some = new ArrayList<>();
            store.replay("block-1", 250, 65_536, 1_000, e -> some.add(e.seqNr()));
            List<Long> expected = new ArrayList<>(range(250, 300));
            expected.addAll(List.of(65_535L, 65_536L));
            assertEquals(expected, some, "from and to inclusive");
            some.clear();
            store.replay("block-1", 10, Long.MAX_VALUE, 3, e -> some.add(e.seqNr()));
            assertEquals(List.of(10L, 11L, 12L), some, "at most max");
            assertEquals(List.of(), seqs(store, "block-2"));
            assertEquals(0, store.highestSeqNr("block-2"));
        }
    }

    @Test
    void deletedEventsAreGoneAndTheHighestSequenceNumberStays() throws Exception {
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        tmp.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            for (long seq = 1; seq <= 20; seq++) {
                store.appendEvents("node-a", List.of(event(seq, new byte[10]))).join();
            }
            store.appendEvents("node-b", List.of(event(1, new byte[10]))).join();
            store.deleteEventsTo("node-a", 12).join();
            assertEquals(range(13, 20), seqs(store, "node-a"));
            store.deleteEventsTo("node-a", Long.MAX_VALUE).join();
            assertEquals(List.of(), seqs(store, "node-a"));
            assertEquals(20, store.highestSeqNr("node-a"), "kept: the next event is 21");
            assertEquals(List.of(1L), seqs(store, "node-b"), "another id's events stay");
            assertFalse(store.isEmpty());
        }
    }

    @Test
    void snapshotsAreSelectedAndDeletedByCriteria() throws Exception {
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        tmp.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            assertTrue(store.isEmpty());
            for (long seq : List.of(100L, 200L, 300L)) {
                store.saveSnapshot(
                                new RocksJournalStore.Snapshot(
                                        "block-s", seq, seq * 10, 40, "S", new byte[] {(byte) seq}))
                        .join();
            }
            store.saveSnapshot(
                            new RocksJournalStore.Snapshot(
                                    "block-s0", 999, 1, 40, "S", new byte[] {1}))
                    .join();
            assertEquals(
                    300,
                    store.latestSnapshot("block-s", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow()
                            .seqNr());
            assertEquals(
                    200,
                    store.latestSnapshot("block-s", 0, 299, 0, Long.MAX_VALUE)
                            .orElseThrow()
                            .seqNr());
            assertEquals(
                    100,
                    store.latestSnapshot("block-s", 0, Long.MAX_VALUE, 0, 1_999)
                            .orElseThrow()
                            .seqNr(),
                    "by timestamp");
            assertEquals(
                    Optional.empty(),
                    store.latestSnapshot("block-s", 301, Long.MAX_VALUE, 0, Long.MAX_VALUE));
            assertTrue(store.hasSnapshotAfter("block-s", 299));
            assertFalse(store.hasSnapshotAfter("block-s", 300));

            store.deleteSnapshots("block-s", 0, 300, 2_500, Long.MAX_VALUE).join();
            assertEquals(
                    200,
                    store.latestSnapshot("block-s", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow()
                            .seqNr(),
                    "only the one with a timestamp in range went");
            store.deleteSnapshots("block-s", 0, 150, 0, Long.MAX_VALUE).join();
            assertEquals(
                    Optional.empty(), store.latestSnapshot("block-s", 0, 199, 0, Long.MAX_VALUE));
            assertEquals(
                    200,
                    store.latestSnapshot("block-s", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow()
                            .seqNr());
            assertEquals(
                    999,
                    store.latestSnapshot("block-s0", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow()
                            .seqNr(),
                    "another id's snapshot stays");
        }
    }

    /** Issue 18: a writer that is no longer the entity's owner cannot write a sequence number twice. */
    @Test
    void aWriteOfATakenSequenceNumberIsRefusedAndChangesNothing() throws Exception {
        Path dir = tmp.resolve("journal");
        byte[] owner = "owner".getBytes(StandardCharsets.UTF_8);
        byte[] stale = "stale".getBytes(StandardCharsets.UTF_8);
        try (RocksJournalStore store =
                RocksJournalStore.open(dir, RocksJournalStore.Settings.DEFAULT)) {
            store.appendEvents(
                            "block-f", List.of(event(1, owner), event(2, owner), event(3, owner)))
                    .join();
            Throwable refused =
                    failureOf(
                            store.appendEvents(
                                    "block-f", List.of(event(3, stale), event(4, stale))));
            assertInstanceOf(RocksJournalStore.StaleWriteException.class, refused);
            assertTrue(
                    refused.getMessage().contains("block-f")
                            && refused.getMessage().contains("up to 3"),
                    refused.getMessage());
            assertInstanceOf(
                    RocksJournalStore.StaleWriteException.class,
                    failureOf(store.appendEvents("block-f", List.of(event(1, stale)))));
            assertEquals(3, store.highestSeqNr("block-f"));
            List<RocksJournalStore.Event> events = new ArrayList<>();
            store.replay("block-f", 1, Long.MAX_VALUE, Long.MAX_VALUE, events::add);
            assertEquals(
                    List.of(1L, 2L, 3L),
                    events.stream().map(RocksJournalStore.Event::seqNr).toList());
            assertTrue(
                    events.stream()
                            .allMatch(
                                    e ->
                                            new String(e.payload(), StandardCharsets.UTF_8)
                                                    .equals("owner")));

            // Two writers racing for the same sequence number, queued together: exactly one wins,
            // and a refused write does not take the others of its group commit with it.
            CompletableFuture<Void> first = store.appendEvents("block-f", List.of(event(4, owner)));
            CompletableFuture<Void> second =
                    store.appendEvents("block-f", List.of(event(4, stale)));
            CompletableFuture<Void> other = store.appendEvents("block-g", List.of(event(1, owner)));
            first.join();
            assertInstanceOf(RocksJournalStore.StaleWriteException.class, failureOf(second));
            other.join();

            // Events of one write out of order: refused as a whole.
            assertInstanceOf(
                    IllegalArgumentException.class,
                    failureOf(
                            store.appendEvents(
                                    "block-f", List.of(event(6, owner), event(5, owner)))));
            assertEquals(4, store.highestSeqNr("block-f"));

            store.deleteEventsTo("block-f", Long.MAX_VALUE).join();
            assertInstanceOf(
                    RocksJournalStore.StaleWriteException.class,
                    failureOf(store.appendEvents("block-f", List.of(event(4, stale)))),
                    "deleted events' sequence numbers stay taken");
        }
        try (RocksJournalStore store =
                RocksJournalStore.open(dir, RocksJournalStore.Settings.DEFAULT)) {
            assertInstanceOf(
                    RocksJournalStore.StaleWriteException.class,
                    failureOf(store.appendEvents("block-f", List.of(event(2, stale)))),
                    "after a restart too");
            store.appendEvents("block-f", List.of(event(5, owner))).join();
            assertEquals(List.of(5L), seqs(store, "block-f"));
        }
    }

    @Test
    void anImportRewritesItsKeysAndIsRepeatable() throws Exception {
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        tmp.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            List<RocksJournalStore.Imported> copies =
                    List.of(
                            new RocksJournalStore.Imported(
                                    "block-i",
                                    9,
                                    Optional.of(
                                            new RocksJournalStore.Snapshot(
                                                    "block-i", 7, 70, 33, "S", new byte[] {7})),
                                    List.of(event(8, new byte[] {8}), event(9, new byte[] {9}))),
                            new RocksJournalStore.Imported(
                                    "node-i", 4, Optional.empty(), List.of()));
            store.importAll(copies).join();
            store.importAll(copies).join();
            assertEquals(List.of(8L, 9L), seqs(store, "block-i"));
            assertEquals(9, store.highestSeqNr("block-i"));
            assertEquals(4, store.highestSeqNr("node-i"));
            assertEquals(
                    7,
                    store.latestSnapshot("block-i", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                            .orElseThrow()
                            .seqNr());
            assertInstanceOf(
                    RocksJournalStore.StaleWriteException.class,
                    failureOf(store.appendEvents("node-i", List.of(event(4, new byte[0])))),
                    "what was imported is fenced like what was written");
        }
    }

    @Test
    void concurrentWritersShareSyncsAndUnsyncedAppendsInterleave() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try (RocksJournalStore store =
                RocksJournalStore.open(
                        tmp.resolve("journal"), RocksJournalStore.Settings.DEFAULT)) {
            List<CompletableFuture<Void>> writers = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                String pid = "p" + t;
                writers.add(
                        CompletableFuture.runAsync(
                                () -> {
                                    // Every other append asks for no sync: written by this
                                    // thread when the writer is idle, else queued.
                                    for (int i = 1; i <= 100; i++) {
                                        store.appendEvents(
                                                        pid,
                                                        List.of(event(i, new byte[100])),
                                                        i % 2 == 0)
                                                .join();
                                    }
                                },
                                pool));
            }
            CompletableFuture.allOf(writers.toArray(CompletableFuture[]::new)).join();
            for (int t = 0; t < 16; t++) {
                assertEquals(range(1, 100), seqs(store, "p" + t));
            }
            assertTrue(
                    store.syncCount() < 800,
                    "800 synced appends took " + store.syncCount() + " synced writes");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anAppendWithoutItsOwnSyncWaitsForTheNextSyncedWrite() throws Exception {
        Path dir = tmp.resolve("journal");
        try (RocksJournalStore store =
                RocksJournalStore.open(dir, RocksJournalStore.Settings.DEFAULT)) {
            long before = store.syncCount();
            CompletableFuture<Void> unsynced =
                    store.appendEvents("block-1", List.of(event(1, new byte[] {1})), false);
            assertTrue(
                    unsynced.isDone(),
                    "with the writer idle, the caller's thread wrote it before returning");
            unsynced.join();
            assertEquals(before, store.syncCount(), "an append that asks for no sync made one");
            assertEquals(List.of(1L), seqs(store, "block-1"), "written, so replayed at once");
            store.appendEvents("node-1", List.of(event(1, new byte[] {2}))).join();
            assertEquals(before + 1, store.syncCount(), "the next append's own sync");
            assertInstanceOf(
                    RocksJournalStore.StaleWriteException.class,
                    failureOf(store.appendEvents("block-1", List.of(event(1, new byte[0])), false)),
                    "an append without a sync is fenced like any other");
        }
        try (RocksJournalStore store =
                RocksJournalStore.open(dir, RocksJournalStore.Settings.DEFAULT)) {
            assertEquals(List.of(1L), seqs(store, "block-1"));
            assertEquals(List.of(1L), seqs(store, "node-1"));
        }
    }

    @Test
    void aClosedStoreRefusesWritesAndReads() throws Exception {
        RocksJournalStore store =
                RocksJournalStore.open(tmp.resolve("journal"), RocksJournalStore.Settings.DEFAULT);
        store.close();
        assertInstanceOf(
                IOException.class,
                failureOf(store.appendEvents("p", List.of(event(1, new byte[1])))));
        assertThrows(IOException.class, () -> store.highestSeqNr("p"));
        store.close();
    }

    /**
     * Churn as the entities make it: events, a snapshot every 100 with the events and snapshots
     * before the previous one deleted. The directory stays bounded while running, and everything
     * live is there after a reopen.
     */
    @Test
    void staysBoundedUnderChurnAndRecoversWhatIsLive() throws Exception {
        Path dir = tmp.resolve("journal");
        Random random = new Random(17);
        long maxDisk = 0;
        int pids = 8;
        long written = 0;
        try (RocksJournalStore store = RocksJournalStore.open(dir, SMALL)) {
            for (int seq = 1; seq <= 2_500; seq++) {
                for (int p = 0; p < pids; p++) {
                    byte[] payload = new byte[150 + random.nextInt(200)];
                    random.nextBytes(payload);
                    written += payload.length;
                    store.appendEvents("block-" + p, List.of(event(seq, payload))).join();
                    if (seq % 100 == 0) {
                        store.saveSnapshot(
                                        new RocksJournalStore.Snapshot(
                                                "block-" + p, seq, seq, 33, "s", new byte[2000]))
                                .join();
                        if (seq > 200) {
                            store.deleteSnapshots("block-" + p, 0, seq - 200, 0, Long.MAX_VALUE)
                                    .join();
                            store.deleteEventsTo("block-" + p, seq - 200).join();
                        }
                    }
                }
                maxDisk = Math.max(maxDisk, store.diskBytes());
            }
            System.out.printf(
                    "churn: %,d payload bytes written, directory peaked at %,d bytes, %,d at the end, %d full compactions%n",
                    written, maxDisk, store.diskBytes(), store.compactionCount());
        }
        // ~5.5 MiB written (20,000 random events of ~250 bytes, 400 snapshots), ~0.6 MiB live at
        // any time: the memtables, logs and table files hold a few times what is live.
        assertTrue(maxDisk < 2_560 << 10, "the directory peaked at " + maxDisk + " bytes");
        assertOwnerOnly(dir, "files RocksDB created while running: ");
        try (RocksJournalStore store = RocksJournalStore.open(dir, SMALL)) {
            for (int p = 0; p < pids; p++) {
                assertEquals(range(2_301, 2_500), seqs(store, "block-" + p));
                assertEquals(2_500, store.highestSeqNr("block-" + p));
                assertEquals(
                        2_500,
                        store.latestSnapshot("block-" + p, 0, Long.MAX_VALUE, 0, Long.MAX_VALUE)
                                .orElseThrow()
                                .seqNr());
                assertEquals(
                        2_400,
                        store.latestSnapshot("block-" + p, 0, 2_499, 0, Long.MAX_VALUE)
                                .orElseThrow()
                                .seqNr());
                assertTrue(
                        store.latestSnapshot("block-" + p, 0, 2_299, 0, Long.MAX_VALUE).isEmpty());
            }
        }
    }

    /** Asserts that every file in {@code dir} is readable and writable by its owner alone. */
    private static void assertOwnerOnly(Path dir, String context) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                assertEquals(
                        "rw-------",
                        PosixFilePermissions.toString(
                                Files.getPosixFilePermissions(f, LinkOption.NOFOLLOW_LINKS)),
                        context + f);
            }
        }
    }
}
