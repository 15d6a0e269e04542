package io.cadastre.journal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SegmentLogTest {
    @TempDir
    Path tmp;

    private static SegmentLog.Event event(long seq, byte[] payload) {
        return new SegmentLog.Event(seq, "writer-1", "", 1000 + seq, 33, "m", payload);
    }

    private static List<Long> seqs(SegmentLog log, String pid) throws IOException {
        List<Long> seqs = new ArrayList<>();
        log.replay(pid, 1, Long.MAX_VALUE, Long.MAX_VALUE, e -> seqs.add(e.seqNr()));
        return seqs;
    }

    @Test
    void whatWasAcknowledgedIsThereAfterReopeningAndATornTailIsCutOff() throws Exception {
        Path dir = tmp.resolve("j");
        byte[] payload = "assigned 198.18.0.7".getBytes();
        try (SegmentLog log = SegmentLog.open(dir, 1 << 20, 4 << 20)) {
            log.appendEvents("block-a", List.of(event(1, payload), event(2, payload))).join();
            log.appendEvents("block-a", List.of(event(3, payload))).join();
            log.deleteEventsTo("block-a", 1).join();
            log.saveSnapshot(new SegmentLog.Snapshot("block-a", 2, 77, 33, "s", new byte[] {9})).join();
        }
        Path segment;
        try (Stream<Path> files = Files.list(dir)) {
            segment = files.filter(f -> f.toString().endsWith(".seg")).findFirst().orElseThrow();
        }
        // A write the crash cut short: a frame header promising more than is there.
        try (FileChannel c = FileChannel.open(segment, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            c.write(ByteBuffer.allocate(12).putInt(500).putInt(1).putInt(7).flip());
        }
        long before = Files.size(segment);
        try (SegmentLog log = SegmentLog.open(dir, 1 << 20, 4 << 20)) {
            assertEquals(List.of(2L, 3L), seqs(log, "block-a"));
            assertEquals(3, log.highestSeqNr("block-a"));
            SegmentLog.Snapshot s = log.latestSnapshot("block-a", 0, Long.MAX_VALUE, 0, Long.MAX_VALUE).orElseThrow();
            assertEquals(2, s.seqNr());
            assertArrayEquals(new byte[] {9}, s.payload());
            List<SegmentLog.Event> events = new ArrayList<>();
            log.replay("block-a", 3, 3, 10, events::add);
            assertArrayEquals(payload, events.get(0).payload());
            assertEquals("writer-1", events.get(0).writerUuid());
            assertEquals(before - 12, Files.size(segment), "the torn frame was cut off");
        }
    }

    @Test
    void corruptionBeforeTheNewestSegmentIsRefused() throws Exception {
        Path dir = tmp.resolve("j");
        try (SegmentLog log = SegmentLog.open(dir, 4096, 1 << 30)) {
            for (int i = 1; i <= 40; i++) {
                log.appendEvents("p", List.of(event(i, new byte[200]))).join();
            }
        }
        Path first = dir.resolve(String.format("%016x.seg", 0));
        try (FileChannel c = FileChannel.open(first, StandardOpenOption.WRITE)) {
            c.write(ByteBuffer.wrap(new byte[] {1, 2, 3}), 30);
        }
        IOException e = assertThrows(IOException.class, () -> SegmentLog.open(dir, 4096, 1 << 30));
        assertTrue(e.getMessage().contains("refusing"), e.getMessage());
    }

    /**
     * Churn as the entities make it: events, a snapshot every 100 with the events before the
     * previous one deleted. The disk footprint stays bounded while running, and everything live
     * is there after a reopen.
     */
    @Test
    void staysBoundedUnderChurnAndRecoversWhatIsLive() throws Exception {
        Path dir = tmp.resolve("j");
        Random random = new Random(17);
        long maxDisk = 0;
        int pids = 8;
        try (SegmentLog log = SegmentLog.open(dir, 64 << 10, 256 << 10)) {
            for (int seq = 1; seq <= 2_500; seq++) {
                for (int p = 0; p < pids; p++) {
                    byte[] payload = new byte[150 + random.nextInt(200)];
                    random.nextBytes(payload);
                    log.appendEvents("block-" + p, List.of(event(seq, payload))).join();
                    if (seq % 100 == 0) {
                        log.saveSnapshot(new SegmentLog.Snapshot("block-" + p, seq, seq, 33, "s", new byte[2000])).join();
                        if (seq > 200) {
                            log.deleteSnapshots("block-" + p, 0, seq - 200, 0, Long.MAX_VALUE).join();
                            log.deleteEventsTo("block-" + p, seq - 200).join();
                        }
                    }
                }
                maxDisk = Math.max(maxDisk, log.diskBytes());
            }
        }
        // ~5.5 MiB written (20,000 events of ~250 bytes, 400 snapshots); ~0.5 MiB live at any
        // time. Compaction runs once the sealed segments are over 256 KiB and at least twice
        // what is live: the peak is about twice the live data plus a segment, not what was written.
        assertTrue(maxDisk < 1_536 << 10, "disk use peaked at " + maxDisk + " bytes");
        try (SegmentLog log = SegmentLog.open(dir, 64 << 10, 256 << 10)) {
            for (int p = 0; p < pids; p++) {
                List<Long> expected = new ArrayList<>();
                for (long s = 2_301; s <= 2_500; s++) {
                    expected.add(s);
                }
                assertEquals(expected, seqs(log, "block-" + p));
                assertEquals(2_500, log.highestSeqNr("block-" + p));
                assertEquals(2_500, log.latestSnapshot("block-" + p, 0, Long.MAX_VALUE, 0, Long.MAX_VALUE).orElseThrow().seqNr());
                assertEquals(2_400, log.latestSnapshot("block-" + p, 0, 2_499, 0, Long.MAX_VALUE).orElseThrow().seqNr());
                assertTrue(log.latestSnapshot("block-" + p, 0, 2_299, 0, Long.MAX_VALUE).isEmpty());
            }
        }
    }

    @Test
    void concurrentWritersShareSyncs() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try (SegmentLog log = SegmentLog.open(tmp.resolve("j"), 1 << 20, 4 << 20)) {
            List<CompletableFuture<Void>> writes = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                String pid = "p" + t;
                writes.add(CompletableFuture.runAsync(() -> {
                    for (int i = 1; i <= 100; i++) {
                        log.appendEvents(pid, List.of(event(i, new byte[100]))).join();
                    }
                }, pool));
            }
            CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).join();
            for (int t = 0; t < 16; t++) {
                assertEquals(100, seqs(log, "p" + t).size());
            }
            assertTrue(log.syncCount() < 1_600, "1,600 writes took " + log.syncCount() + " syncs");
        } finally {
            pool.shutdownNow();
        }
    }
}
