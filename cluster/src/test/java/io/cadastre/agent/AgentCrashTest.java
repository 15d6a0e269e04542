package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.TestNetns;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Durability (an acknowledged allocation survives a crash; no address is handed out twice): ADDs run concurrently, the agent is killed with SIGKILL
 * while some are in flight, and a new agent on the same journal must still hold every
 * acknowledged allocation (a retried ADD returns the same address) and must never hand an address
 * to two attachments.
 */
class AgentCrashTest {

    private static String ipamOnly(Path socket) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"crash\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + socket
                + "\",\"pools\":[\"test-ipv4\"]}}";
    }

    private static String full(Path socket) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"crash\",\"type\":\"cadastre\",\"agentSocket\":\""
                + socket
                + "\"}";
    }

    private static Result add(String conf, String id, String netns) {
        try {
            return CniExec.run(CniExec.env("ADD", id, netns, "eth0"), conf);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void everyAcknowledgedAllocationSurvivesSigkillAndNoneIsHandedOutTwice() throws Exception {
        Path dir = Files.createTempDirectory("cad-crash");
        ExecutorService runtime = Executors.newFixedThreadPool(8);
        try (AgentProcess first =
                        new AgentProcess(dir, "crash-node", AgentProcess.TEST_POOLS).start();
                TestNetns pod = TestNetns.create()) {
            String conf = ipamOnly(first.socket());
            // A fully wired pod before the crash, too.
            Result wired = add(full(first.socket()), "wired", pod.path());
            assertEquals(0, wired.exit(), wired.toString());

            List<String> ids = new ArrayList<>();
            Map<String, CompletableFuture<Result>> inFlight = new HashMap<>();
            AtomicInteger done = new AtomicInteger();
            for (int i = 0; i < 60; i++) {
                String id = "k" + i + "-" + UUID.randomUUID().toString().substring(0, 6);
                ids.add(id);
                inFlight.put(
                        id,
                        CompletableFuture.supplyAsync(
                                        () -> add(conf, id, "/var/run/netns/unused"), runtime)
                                .whenComplete((r, e) -> done.incrementAndGet()));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (done.get() < 20 && System.nanoTime() < deadline) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
            first.kill();

            Map<String, String> acknowledged = new HashMap<>();
            for (String id : ids) {
                Result r = inFlight.get(id).join();
                if (r.exit() == 0) {
                    acknowledged.put(id, r.json().path("ips").get(0).path("address").asText());
                }
            }
            assertTrue(
                    acknowledged.size() >= 20,
                    "acknowledged before the kill: " + acknowledged.size());
            assertEquals(
                    acknowledged.size(),
                    new HashSet<>(acknowledged.values()).size(),
                    "duplicates before the crash");

            try (AgentProcess second =
                    new AgentProcess(dir, "crash-node", AgentProcess.TEST_POOLS).start()) {
                String conf2 = ipamOnly(second.socket());
                // Every acknowledged ADD, retried, gets the same address; the rest get new ones.
                Set<String> all = new HashSet<>();
                for (String id : ids) {
                    Result retried = add(conf2, id, "/var/run/netns/unused");
                    assertEquals(0, retried.exit(), retried.toString());
                    String address = retried.json().path("ips").get(0).path("address").asText();
                    if (acknowledged.containsKey(id)) {
                        assertEquals(
                                acknowledged.get(id),
                                address,
                                "allocation of " + id + " lost in the crash");
                    }
                    assertTrue(all.add(address), address + " handed out twice");
                }
                for (int i = 0; i < 20; i++) {
                    Result fresh = add(conf2, "after-" + i, "/var/run/netns/unused");
                    assertTrue(
                            all.add(fresh.json().path("ips").get(0).path("address").asText()),
                            "duplicate after restart");
                }
                // The wired pod's allocation survived too, and CHECK still agrees with its
                // prevResult.
                String full = full(second.socket());
                String check =
                        full.substring(0, full.length() - 1)
                                + ",\"prevResult\":"
                                + wired.stdout()
                                + "}";
                Result checked =
                        CniExec.run(CniExec.env("CHECK", "wired", pod.path(), "eth0"), check);
                assertEquals(0, checked.exit(), checked.toString());
                assertEquals(
                        0,
                        CniExec.run(
                                        CniExec.env("DEL", "wired", pod.path(), "eth0"),
                                        full(second.socket()))
                                .exit());
            }
        } finally {
            runtime.shutdownNow();
            CniEndToEndTest.deleteTree(dir);
        }
    }
}
