package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.journal.PowerLossFs;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an acknowledged ADD and DEL survive on the embedded journal: a power loss. The agent's
 * journal directory is a {@link PowerLossFs}, which loses every byte no sync covered; the agent
 * serves ADDs and DELs from several clients through the real plugin, is killed with SIGKILL in the
 * middle of them while its journal waits for a sync (so that writes are sure to be lost), the
 * disk loses its cache, and the agent starts again on what is left. Then
 * every pod whose last acknowledged call was an ADD still holds its address, no pod whose last
 * acknowledged call was a DEL is known to the node, and the consistency check finds no recorded
 * address that its block does not hold (root DESIGN.md, invariants 1 and 2). Calls in flight at
 * the kill may have happened or not.
 */
class EmbeddedJournalPowerLossTest {
    private static final int CLIENTS = 4;
    private static final int ROUNDS = 2;

    @TempDir Path tmp;

    private static String ipamOnly(Path socket) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"journal\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + socket
                + "\",\"pools\":[\"test-ipv4\"]}}";
    }

    /** A pod's last acknowledged call: its address after an ADD, or null after a DEL. */
    private record Acknowledged(String address) {}

    @Test
    void acknowledgedAddsAndDelsSurviveAPowerLoss() throws Exception {
        AgentProcess agent = new AgentProcess(tmp, "power-node", AgentProcess.TEST_POOLS);
        Path dataDir =
                Files.createDirectory(
                        agent.dataDir(),
                        PosixFilePermissions.asFileAttribute(
                                PosixFilePermissions.fromString("rwx------")));
        Path journal = Files.createDirectory(dataDir.resolve("journal"));
        Map<String, Acknowledged> acknowledged = new ConcurrentHashMap<>();
        Set<String> inFlightAtKill = new TreeSet<>();
        ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
        try (PowerLossFs disk = PowerLossFs.mountOn(journal);
                AgentProcess running = agent.start()) {
            for (int round = 0; round < ROUNDS; round++) {
                Killed killed = churnUntilKilled(agent, disk, clients, round, acknowledged);
                inFlightAtKill.addAll(killed.inFlight());
                long lost = killed.lost();
                assertTrue(lost > 0, "the kill left no unsynced write to lose");
                System.out.printf(
                        "round %d: %d pods acknowledged so far, killed with %s in flight; the power loss lost %,d bytes%n",
                        round, acknowledged.size(), inFlightAtKill, lost);
                agent.start();
                assertSurvived(agent, acknowledged, inFlightAtKill);
            }
        } finally {
            clients.shutdownNow();
        }
    }

    /**
     * Each client ADDs pods one after the other and DELs every second one right after its ADD,
     * until the clients together acknowledged 120 calls in this round; then the disk holds the
     * next sync, and the agent is killed while its journal waits for it with writes unsynced; then
     * the power loss.
     */
    private static Killed churnUntilKilled(
            AgentProcess agent,
            PowerLossFs disk,
            ExecutorService clients,
            int round,
            Map<String, Acknowledged> acknowledged)
            throws Exception {
        AtomicInteger calls = new AtomicInteger();
        Set<String> failed = ConcurrentHashMap.newKeySet();
        List<Future<?>> running = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            String prefix = "r" + round + "c" + c + "-";
            running.add(
                    clients.submit(
                            () -> {
                                for (int i = 0; ; i++) {
                                    String pod = prefix + i;
                                    Optional<Result> add = call("ADD", pod, agent, failed);
                                    if (add.isEmpty()) {
                                        return null;
                                    }
                                    acknowledged.put(
                                            pod,
                                            new Acknowledged(
                                                    address(
                                                            add.get()
                                                                    .json()
                                                                    .path("ips")
                                                                    .get(0)
                                                                    .path("address")
                                                                    .asText())));
                                    calls.incrementAndGet();
                                    if (i % 2 == 1) {
                                        if (call("DEL", pod, agent, failed).isEmpty()) {
                                            return null;
                                        }
                                        acknowledged.put(pod, new Acknowledged(null));
                                        calls.incrementAndGet();
                                    }
                                }
                            }));
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (calls.get() < 120) {
            for (Future<?> client : running) {
                if (client.isDone()) {
                    client.get(); // a failure before the kill: its exception
                    throw new AssertionError("a client stopped before the kill");
                }
            }
            assertTrue(System.nanoTime() < deadline, "120 calls not acknowledged within 120 s");
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
        disk.holdSyncs();
        while (disk.syncsWaiting() == 0) {
            assertTrue(System.nanoTime() < deadline, "no sync came within 120 s");
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        // SIGKILL. The threads waiting in a held sync cannot die yet (the kernel waits out a FUSE
        // request its daemon took), nor those waiting for the file they hold; every other thread
        // does, and the power loss comes after them.
        ProcessHandle.of(agent.pid()).ifPresent(ProcessHandle::destroyForcibly);
        Path tasks = Path.of("/proc/" + agent.pid() + "/task");
        while (!onlyUninterruptibleLeft(tasks)) {
            assertTrue(System.nanoTime() < deadline, "the killed agent's threads did not end");
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        long lost = disk.powerLoss(); // the held syncs fail, and the agent is gone
        agent.kill();
        for (Future<?> client : running) {
            client.get(60, TimeUnit.SECONDS);
        }
        // A call that failed was in flight at the kill, or came after it (its client stopped).
        return new Killed(new TreeSet<>(failed), lost);
    }

    /** What a round's kill left: the pods whose call was in flight, the bytes the power loss lost. */
    private record Killed(Set<String> inFlight, long lost) {}

    /**
     * @return whether every thread of the process left is in uninterruptible sleep ({@code D} in
     *     its {@code stat}), or none is left
     */
    private static boolean onlyUninterruptibleLeft(Path tasks) {
        try (Stream<Path> threads = Files.list(tasks)) {
            for (Path thread : threads.toList()) {
                String stat = Files.readString(thread.resolve("stat"));
                // The state follows the command name in parentheses, which may hold spaces.
                char state = stat.charAt(stat.lastIndexOf(')') + 2);
                if (state != 'D' && state != 'Z' && state != 'X') {
                    return false;
                }
            }
        } catch (IOException gone) {
            // the process, or a thread, ended while listed: look again
            return !Files.exists(tasks);
        }
        return true;
    }

    /**
     * One call through the plugin. @return its result when it succeeded; empty when it failed
     * (the agent's kill; the clients check nothing else), the pod then added to {@code failed}
     */
    private static Optional<Result> call(
            String verb, String pod, AgentProcess agent, Set<String> failed) {
        try {
            Result r =
                    CniExec.run(
                            CniExec.env(verb, pod, "/var/run/netns/unused", "eth0"),
                            ipamOnly(agent.socket()));
            if (r.exit() == 0) {
                return Optional.of(r);
            }
        } catch (Exception e) {
            // as a failed call
        }
        failed.add(pod);
        return Optional.empty();
    }

    private static void assertSurvived(
            AgentProcess agent, Map<String, Acknowledged> acknowledged, Set<String> inFlightAtKill)
            throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        String url = agent.adminUrl();
        String token = Files.readString(agent.adminTokenFile()).trim();
        JsonNode node = get(http, url + "/v1/nodes/power-node", token);
        Map<String, String> known = new HashMap<>();
        for (JsonNode a : node.path("attachmentList")) {
            known.put(a.path("containerId").asText(), address(a.path("addresses").get(0).asText()));
        }
        int live = 0;
        for (Map.Entry<String, Acknowledged> e : acknowledged.entrySet()) {
            String pod = e.getKey();
            if (inFlightAtKill.contains(pod)) {
                continue;
            }
            String address = e.getValue().address();
            if (address == null) {
                assertTrue(
                        !known.containsKey(pod),
                        pod + "'s DEL was acknowledged, and the node knows it again");
            } else {
                live++;
                assertEquals(
                        address,
                        known.get(pod),
                        pod + "'s ADD was acknowledged: its address after the power loss");
            }
        }
        assertTrue(live > 0, "no pod was left live to check");
        JsonNode check = get(http, url + "/v1/check", token);
        assertEquals(
                0,
                check.path("attachmentsWithoutAllocation").size(),
                "a recorded address its block does not hold: " + check);
    }

    /** @return the IP literal of an address with or without its prefix length */
    private static String address(String cidrOrAddress) {
        return cidrOrAddress.replaceFirst("/\\d+$", "");
    }

    private static JsonNode get(HttpClient http, String url, String token) throws Exception {
        HttpResponse<String> response =
                http.send(
                        HttpRequest.newBuilder(URI.create(url))
                                .timeout(Duration.ofSeconds(30))
                                .header("Authorization", "Bearer " + token)
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), url + ": " + response.body());
        return CniExec.JSON.readTree(response.body());
    }
}
