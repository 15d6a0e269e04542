package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.CniSocketClient;
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
 * The embedded journal with the real agent and the real plugin: every acknowledged ADD and DEL was
 * synced to disk first, once (fdatasync counted under strace), both survive SIGKILL, and the
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

    /** The IPAM-only calls' CNI_NETNS: no namespace is looked into. */
    private static final String UNUSED_NETNS = "/var/run/netns/unused";

    private static String ipamOnly(Path socket) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"journal\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + socket
                + "\",\"pools\":[\"test-ipv4\"]}}";
    }

    private static Result call(String verb, String id, Path socket)
            throws IOException, InterruptedException {
        return CniExec.run(CniExec.env(verb, id, UNUSED_NETNS, "eth0"), ipamOnly(socket));
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

    /** The syncs of the write-ahead log that strace saw while {@code calls} ran, and all fsync-family calls. */
    private record Syncs(List<Double> walSeconds, long any, String sample) {}

    /** Work under strace; it may throw. */
    private interface Calls {
        void run() throws Exception;
    }

    /**
     * Runs {@code calls} with strace attached to every thread of the agent, counting syncs. RocksDB
     * syncs its write-ahead log (NNNNNN.log) with fdatasync (fsync with use_fsync): both are
     * counted, on that file only (flushes and compactions sync table files and the MANIFEST
     * besides, which a call does not wait for).
     */
    private static Syncs syncsDuring(AgentProcess agent, Path dir, String name, Calls calls)
            throws Exception {
        Path out = dir.resolve(name + "-strace.txt");
        Path log = dir.resolve(name + "-strace.log");
        // -f on an attached process traces all its threads; -y names each call's file, -T times it.
        Process strace =
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
                        .redirectOutput(log.toFile())
                        .start();
        try {
            // strace says "Process N attached" once it traces the threads.
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!Files.readString(log).contains("attached")) {
                assertTrue(
                        System.nanoTime() < deadline,
                        "strace did not attach: " + Files.readString(log));
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            calls.run();
            new ProcessBuilder("kill", "-INT", Long.toString(strace.pid())).start().waitFor();
            assertTrue(strace.waitFor(30, TimeUnit.SECONDS), "strace did not stop");
        } finally {
            if (strace.isAlive()) {
                strace.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        List<String> trace = Files.readAllLines(out);
        List<Double> walSeconds = new ArrayList<>();
        long any = 0;
        for (String line : trace) {
            Matcher wal = WAL_SYNC.matcher(line);
            if (wal.find()) {
                walSeconds.add(Double.parseDouble(wal.group(2)));
            }
            if (ANY_SYNC.matcher(line).find()) {
                any++;
            }
        }
        Collections.sort(walSeconds);
        return new Syncs(
                walSeconds, any, String.join("\n", trace.subList(0, Math.min(10, trace.size()))));
    }

    /**
     * Serial calls: each acknowledged one waited for its own sync (at least one each), and no more
     * than one each beyond a few (the first block's claim): an ADD's assignment in the block, and a
     * DEL's forget on the node, are written without a sync of their own, the write after each
     * synced.
     */
    private static void assertOneSyncEach(Syncs syncs, int calls, String verb) {
        assertTrue(
                syncs.walSeconds().size() >= calls,
                syncs.walSeconds().size()
                        + " syncs of the write-ahead log over "
                        + calls
                        + " serial "
                        + verb
                        + "s ("
                        + syncs.any()
                        + " fsync-family calls in all):\n"
                        + syncs.sample());
        assertTrue(
                syncs.walSeconds().size() < calls * 3 / 2,
                syncs.walSeconds().size()
                        + " syncs of the write-ahead log over "
                        + calls
                        + " serial "
                        + verb
                        + "s: more than one each");
        List<Double> seconds = syncs.walSeconds();
        System.out.printf(
                "%d %ss: %d syncs of the write-ahead log (%.2f each), %d fsync-family calls in all;"
                        + " write-ahead log sync under strace: median %.3f ms, p99 %.3f ms%n",
                calls,
                verb,
                seconds.size(),
                seconds.size() / (double) calls,
                syncs.any(),
                1000 * seconds.get(seconds.size() / 2),
                1000 * seconds.get((int) Math.ceil(seconds.size() * 0.99) - 1));
    }

    @Test
    void everyAcknowledgedCallWasSyncedAndSurvivesSigkill() throws Exception {
        Path dir = Files.createTempDirectory("cad-journal");
        try (AgentProcess agent =
                new AgentProcess(dir, "journal-node", AgentProcess.TEST_POOLS).start()) {
            assertEquals(0, call("ADD", "warm", agent.socket()).exit(), "warm-up ADD");
            int adds = 50;
            Map<String, String> acknowledged = new HashMap<>();
            Syncs addSyncs =
                    syncsDuring(
                            agent,
                            dir,
                            "add",
                            () -> {
                                for (int i = 0; i < adds; i++) {
                                    Result r = call("ADD", "pod-" + i, agent.socket());
                                    assertEquals(0, r.exit(), r.toString());
                                    acknowledged.put(
                                            "pod-" + i,
                                            r.json().path("ips").get(0).path("address").asText());
                                }
                            });
            assertOneSyncEach(addSyncs, adds, "ADD");

            int dels = 25;
            List<String> deleted = new ArrayList<>();
            Syncs delSyncs =
                    syncsDuring(
                            agent,
                            dir,
                            "del",
                            () -> {
                                for (int i = 0; i < dels; i++) {
                                    Result r = call("DEL", "pod-" + i, agent.socket());
                                    assertEquals(0, r.exit(), r.toString());
                                    deleted.add(acknowledged.remove("pod-" + i));
                                }
                            });
            assertOneSyncEach(delSyncs, dels, "DEL");

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
            // The DELs' forgets survived too: a forget lost would bring the node's record back,
            // and a repeated ADD would answer its old address. A new assignment does not: the
            // block hands out its never-used addresses, then the freed ones in the order freed.
            for (int i = 0; i < dels; i++) {
                Result r = call("ADD", "pod-" + i, agent.socket());
                assertEquals(0, r.exit(), r.toString());
                assertTrue(
                        !deleted.get(i)
                                .equals(r.json().path("ips").get(0).path("address").asText()),
                        "after SIGKILL the node still knew deleted pod-" + i);
            }
        } finally {
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
        int calls = longRun ? longCalls : 6_000;
        // The short run, measured: the directory peaks at ~305 KB with the events that snapshots
        // cover deleted (~230 KB when each call was a plugin exec, the compactions keeping closer
        // behind), and at 1.1 MB without that deletion; H2 grew by 64 KiB per call. The long
        // run: the issue's goal.
        long bound = longRun ? 10 << 20 : 384 << 10;
        Path dir = Files.createTempDirectory("cad-journal");
        try (AgentProcess agent =
                new AgentProcess(dir, "churn-node", longRun ? AgentProcess.TEST_POOLS : SMALL_STORE)
                        .start()) {
            for (int i = 0; i < live; i++) {
                assertEquals(0, call("ADD", "live-" + i, agent.socket()).exit());
            }
            long peak = 0;
            long started = System.nanoTime();
            // The churn straight on the socket, as the plugin speaks to it: the journal sees the
            // same events, without a process exec per call.
            CniSocketClient socket =
                    new CniSocketClient(agent.socket(), ipamOnly(agent.socket()), UNUSED_NETNS);
            for (int done = 0; done < calls; done += 2) {
                String id = "churn-" + done;
                CniSocketClient.Reply add = socket.call("ADD", id);
                assertEquals(200, add.status(), add.body());
                CniSocketClient.Reply del = socket.call("DEL", id);
                assertEquals(200, del.status(), del.body());
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
