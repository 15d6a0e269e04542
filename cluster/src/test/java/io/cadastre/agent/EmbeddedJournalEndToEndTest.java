package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The embedded journal with the real agent and the real plugin: every acknowledged ADD was synced
 * to disk first (fdatasync counted under strace), an acknowledged ADD survives SIGKILL, and the
 * journal's footprint stays bounded under ADD/DEL churn.
 */
class EmbeddedJournalEndToEndTest {
    /** The store's smallest sizes, so that flushes and compactions run within this test's churn. */
    private static final String SMALL_STORE =
            AgentProcess.TEST_POOLS
                    + """
            cadastre.embedded-journal.write-buffer-size = 64KiB
            cadastre.embedded-journal.max-wal-size = 128KiB
            cadastre.embedded-journal.compact-above = 256KiB
            """;

    private static String ipamOnly(Path socket) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"journal\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + socket
                + "\",\"pools\":[\"test-ipv4\"]}}";
    }

    private static Result call(String verb, String id, Path socket)
            throws IOException, InterruptedException {
        return CniExec.run(
                CniExec.env(verb, id, "/var/run/netns/unused", "eth0"), ipamOnly(socket));
    }

    private static long journalBytes(AgentProcess agent) throws IOException {
        try (Stream<Path> files = Files.list(agent.dataDir().resolve("journal"))) {
            return files.mapToLong(f -> f.toFile().length()).sum();
        }
    }

    /** A sync of RocksDB's write-ahead log, as {@code strace -y -T} prints it: the call and its duration (s). */
    private static final Pattern WAL_SYNC =
            Pattern.compile(
                    "\\b(fsync|fdatasync)\\(\\d+</[^>]*/journal/\\d+\\.log>\\) = 0 <([0-9.]+)>");

    private static final Pattern ANY_SYNC = Pattern.compile("\\b(fsync|fdatasync)\\(");

    @Test
    void everyAcknowledgedAddWasSyncedAndSurvivesSigkill() throws Exception {
        Path dir = Files.createTempDirectory("cad-journal");
        Process strace = null;
        try (AgentProcess agent =
                new AgentProcess(dir, "journal-node", AgentProcess.TEST_POOLS).start()) {
            assertEquals(0, call("ADD", "warm", agent.socket()).exit(), "warm-up ADD");
            Path out = dir.resolve("strace.txt");
            // -f on an attached process traces all its threads; -y names each call's file, -T
            // times it. RocksDB syncs its write-ahead log (NNNNNN.log) with fdatasync (fsync with
            // use_fsync): both are counted, on that file only (flushes and compactions sync table
            // files and the MANIFEST besides, which an ADD does not wait for).
            strace =
                    new ProcessBuilder(
                                    "strace",
                                    "-f",
                                    "-y",
                                    "-T",
                                    "-e",
                                    "trace=fsync,fdatasync",
                                    "-o",
                                    out.toString(),
                                    "-p",
                                    Long.toString(agent.pid()))
                            .redirectErrorStream(true)
                            .redirectOutput(dir.resolve("strace.log").toFile())
                            .start();
            // strace says "Process N attached" once it traces the threads.
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!Files.readString(dir.resolve("strace.log")).contains("attached")) {
                assertTrue(
                        System.nanoTime() < deadline,
                        "strace did not attach: " + Files.readString(dir.resolve("strace.log")));
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            int adds = 50;
            Map<String, String> acknowledged = new HashMap<>();
            for (int i = 0; i < adds; i++) {
                Result r = call("ADD", "pod-" + i, agent.socket());
                assertEquals(0, r.exit(), r.toString());
                acknowledged.put("pod-" + i, r.json().path("ips").get(0).path("address").asText());
            }
            new ProcessBuilder("kill", "-INT", Long.toString(strace.pid())).start().waitFor();
            assertTrue(strace.waitFor(30, TimeUnit.SECONDS), "strace did not stop");
            List<String> trace = Files.readAllLines(out);
            List<Double> walSyncSeconds = new ArrayList<>();
            long anySyncs = 0;
            for (String line : trace) {
                Matcher wal = WAL_SYNC.matcher(line);
                if (wal.find()) {
                    walSyncSeconds.add(Double.parseDouble(wal.group(2)));
                }
                if (ANY_SYNC.matcher(line).find()) {
                    anySyncs++;
                }
            }
            String sample = String.join("\n", trace.subList(0, Math.min(10, trace.size())));
            // Serial ADDs: each acknowledged one waited for its own sync (at least one each).
            assertTrue(
                    walSyncSeconds.size() >= adds,
                    walSyncSeconds.size()
                            + " syncs of the write-ahead log over "
                            + adds
                            + " serial ADDs ("
                            + anySyncs
                            + " fsync-family calls in all):\n"
                            + sample);
            // And no more than one each beyond the few of the first block's claim: the block's
            // assignment is written without a sync of its own, the node's record after it synced.
            assertTrue(
                    walSyncSeconds.size() < adds * 3 / 2,
                    walSyncSeconds.size()
                            + " syncs of the write-ahead log over "
                            + adds
                            + " serial ADDs: more than one per ADD");
            Collections.sort(walSyncSeconds);
            System.out.printf(
                    "%d ADDs: %d syncs of the write-ahead log (%.2f per ADD), %d fsync-family calls in all;"
                            + " write-ahead log sync under strace: median %.3f ms, p99 %.3f ms%n",
                    adds,
                    walSyncSeconds.size(),
                    walSyncSeconds.size() / (double) adds,
                    anySyncs,
                    1000 * walSyncSeconds.get(walSyncSeconds.size() / 2),
                    1000 * walSyncSeconds.get((int) Math.ceil(walSyncSeconds.size() * 0.99) - 1));

            agent.kill();
            agent.start();
            for (Map.Entry<String, String> e : acknowledged.entrySet()) {
                Result again = call("ADD", e.getKey(), agent.socket());
                assertEquals(0, again.exit(), again.toString());
                assertEquals(
                        e.getValue(),
                        again.json().path("ips").get(0).path("address").asText(),
                        "a repeated ADD after SIGKILL gets the acknowledged address of "
                                + e.getKey());
            }
        } finally {
            if (strace != null && strace.isAlive()) {
                strace.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            deleteTree(dir);
        }
    }

    /**
     * ADD/DEL churn around live pods: the journal's directory stays bounded while the agent runs,
     * and the live pods' addresses survive a SIGKILL. By default a short run with the store's
     * smallest sizes (flushes and compactions happen within it); with
     * {@code -Dcadastre.test.journal-churn-calls=100000} the issue's case: that many calls around
     * 100 live pods with the default sizes, its figures printed.
     */
    @Test
    void theJournalStaysBoundedUnderChurn() throws Exception {
        int longCalls = Integer.getInteger("cadastre.test.journal-churn-calls", 0);
        boolean longRun = longCalls > 0;
        int live = longRun ? 100 : 10;
        int calls = longRun ? longCalls : 3_000;
        // The short run, measured: the directory peaks at ~230 KB with the events that snapshots
        // cover deleted, and at 400 KB after these 3,000 calls without that deletion (growing by
        // ~130 KB per 1,000 calls); H2 grew by 64 KiB per call. The long run: the issue's goal.
        long bound = longRun ? 10 << 20 : 320 << 10;
        Path dir = Files.createTempDirectory("cad-journal");
        try (AgentProcess agent =
                new AgentProcess(dir, "churn-node", longRun ? AgentProcess.TEST_POOLS : SMALL_STORE)
                        .start()) {
            for (int i = 0; i < live; i++) {
                assertEquals(0, call("ADD", "live-" + i, agent.socket()).exit());
            }
            long peak = 0;
            long started = System.nanoTime();
            for (int done = 0; done < calls; done += 2) {
                String id = "churn-" + done;
                Result add = call("ADD", id, agent.socket());
                assertEquals(0, add.exit(), add.toString());
                assertEquals(0, call("DEL", id, agent.socket()).exit());
                peak = Math.max(peak, journalBytes(agent));
            }
            System.out.printf(
                    "churn: %,d ADD/DEL calls around %d live pods in %d s: the journal directory peaked at %,d bytes,"
                            + " %,d at the end (%s allocated)%n",
                    calls,
                    live,
                    (System.nanoTime() - started) / 1_000_000_000L,
                    peak,
                    journalBytes(agent),
                    allocated(agent.dataDir().resolve("journal")));
            assertTrue(
                    peak <= bound, "journal peaked at " + peak + " bytes over " + calls + " calls");
            agent.kill();
            agent.start();
            for (int i = 0; i < live; i++) {
                Result again = call("ADD", "live-" + i, agent.socket());
                assertEquals(
                        0,
                        again.exit(),
                        "the live pods' addresses survived compaction and a SIGKILL: " + again);
            }
        } finally {
            deleteTree(dir);
        }
    }

    /** @return what {@code du} says the directory takes on disk (blocks, preallocation included), for the report */
    private static String allocated(Path dir) throws IOException, InterruptedException {
        Process du =
                new ProcessBuilder("du", "-s", "--block-size=1", dir.toString())
                        .redirectErrorStream(true)
                        .start();
        String out = new String(du.getInputStream().readAllBytes()).trim();
        du.waitFor(10, TimeUnit.SECONDS);
        return out.split("\\s+")[0] + " bytes";
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
