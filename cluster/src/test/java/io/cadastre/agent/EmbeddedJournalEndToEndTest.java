package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.agent.CniExec.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
    /** Small segments, so that compaction runs within this test's churn. */
    private static final String SMALL_SEGMENTS = AgentProcess.TEST_POOLS
            + "cadastre.embedded-journal.segment-size = 64KiB\ncadastre.embedded-journal.compact-above = 256KiB\n";

    private static String ipamOnly(Path socket) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"journal\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\"" + socket + "\",\"pools\":[\"test-ipv4\"]}}";
    }

    private static Result call(String verb, String id, Path socket) throws IOException, InterruptedException {
        return CniExec.run(CniExec.env(verb, id, "/var/run/netns/unused", "eth0"), ipamOnly(socket));
    }

    private static long journalBytes(AgentProcess agent) throws IOException {
        try (Stream<Path> files = Files.list(agent.dataDir().resolve("journal"))) {
            return files.mapToLong(f -> f.toFile().length()).sum();
        }
    }

    @Test
    void everyAcknowledgedAddWasSyncedAndSurvivesSigkill() throws Exception {
        Path dir = Files.createTempDirectory("cad-journal");
        Process strace = null;
        try (AgentProcess agent = new AgentProcess(dir, "journal-node", AgentProcess.TEST_POOLS).start()) {
            assertEquals(0, call("ADD", "warm", agent.socket()).exit(), "warm-up ADD");
            Path out = dir.resolve("strace.txt");
            // -f on an attached process traces all its threads; -c counts calls per syscall.
            strace = new ProcessBuilder("strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out.toString(),
                    "-p", Long.toString(agent.pid())).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("strace.log").toFile()).start();
            // strace says "Process N attached" once it traces the threads.
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (!Files.readString(dir.resolve("strace.log")).contains("attached")) {
                assertTrue(System.nanoTime() < deadline, "strace did not attach: " + Files.readString(dir.resolve("strace.log")));
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
            String summary = Files.readString(out);
            Matcher m = Pattern.compile("(\\d+)(?:\\s+\\d+)?\\s+fdatasync").matcher(summary);
            assertTrue(m.find(), "no fdatasync at all over " + adds + " ADDs:\n" + summary);
            long syncs = Long.parseLong(m.group(1));
            // Serial ADDs: each acknowledged one waited for its own sync (at least one each).
            assertTrue(syncs >= adds, syncs + " fdatasync calls over " + adds + " serial ADDs:\n" + summary);

            agent.kill();
            agent.start();
            for (Map.Entry<String, String> e : acknowledged.entrySet()) {
                Result again = call("ADD", e.getKey(), agent.socket());
                assertEquals(0, again.exit(), again.toString());
                assertEquals(e.getValue(), again.json().path("ips").get(0).path("address").asText(),
                        "a repeated ADD after SIGKILL gets the acknowledged address of " + e.getKey());
            }
        } finally {
            if (strace != null && strace.isAlive()) {
                strace.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            deleteTree(dir);
        }
    }

    @Test
    void theJournalStaysBoundedUnderChurn() throws Exception {
        Path dir = Files.createTempDirectory("cad-journal");
        try (AgentProcess agent = new AgentProcess(dir, "churn-node", SMALL_SEGMENTS).start()) {
            int live = 10;
            for (int i = 0; i < live; i++) {
                assertEquals(0, call("ADD", "live-" + i, agent.socket()).exit());
            }
            long peak = 0;
            int calls = 0;
            for (int round = 0; round < 250; round++) {
                String id = "churn-" + round;
                Result add = call("ADD", id, agent.socket());
                assertEquals(0, add.exit(), add.toString());
                assertEquals(0, call("DEL", id, agent.socket()).exit());
                calls += 2;
                peak = Math.max(peak, journalBytes(agent));
            }
            // Without compaction the 500 calls' events alone pass 256 KiB + a segment; the
            // bound is compact-above plus what is live plus a segment, reached many times over.
            assertTrue(peak < 640 << 10, "journal peaked at " + peak + " bytes over " + calls + " calls");
            agent.kill();
            agent.start();
            for (int i = 0; i < live; i++) {
                Result again = call("ADD", "live-" + i, agent.socket());
                assertEquals(0, again.exit(), "the live pods' addresses survived compaction and a SIGKILL: " + again);
            }
            assertEquals(List.of(), List.of(), "");
        } finally {
            deleteTree(dir);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
