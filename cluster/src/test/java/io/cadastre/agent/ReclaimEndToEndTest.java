package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.TestNetns;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 4, the leak without a DEL, with real parts: a real agent process on the embedded journal
 * (reconciliation every 200 ms, grace 1 s), the real plugin executable invoked as a runtime
 * invokes it, real network namespaces (root) removed under their pods with {@code ip netns del}.
 * The agent's pools hold four addresses per family, so reuse is visible.
 */
class ReclaimEndToEndTest {
    private static final String CONFIG =
            """
            cadastre.pools = [
              { name = "reclaim-ipv4", cidr = "198.18.64.0/30", block-size = 30, strict-affinity = true }
              { name = "reclaim-ipv6", cidr = "fd00:198:5::/126", block-size = 126, strict-affinity = true }
            ]
            cadastre.default-pools = ["reclaim-ipv4", "reclaim-ipv6"]
            cadastre.cleanup.attachments { interval = 200ms, grace = 1s }
            """;
    private static final Duration RECLAIM_WITHIN = Duration.ofSeconds(30);

    private static Path dir;
    private static AgentProcess agent;

    @BeforeAll
    static void startAgent() throws Exception {
        dir = Files.createTempDirectory("cad-reclaim");
        agent = new AgentProcess(dir, "reclaim-node", CONFIG).start();
    }

    @AfterAll
    static void stopAgent() throws Exception {
        try {
            assertEquals(143, agent.stop(), "agent exit code on SIGTERM");
        } finally {
            agent.close();
            CniEndToEndTest.deleteTree(dir);
        }
    }

    private static String netconf() {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"reclaim\",\"type\":\"cadastre\",\"agentSocket\":\""
                + agent.socket()
                + "\",\"ipam\":{}}";
    }

    /** The same network as {@link #netconf()}, through the IPAM-only plugin: CHECK looks at IPAM alone. */
    private static String ipamOnlyNetconf(String extra) {
        return "{\"cniVersion\":\"1.1.0\",\"name\":\"reclaim\",\"type\":\"bridge\",\"ipam\":{\"type\":\"cadastre-ipam\","
                + "\"agentSocket\":\""
                + agent.socket()
                + "\"}"
                + extra
                + "}";
    }

    private static Result cni(String command, String container, String netnsPath, String stdin)
            throws Exception {
        return CniExec.run(CniExec.env(command, container, netnsPath, "eth0"), stdin);
    }

    /** A pod: its netns, container ID and the ADD's result. */
    private record Pod(TestNetns ns, String container, Result add) {
        String v4() {
            return add.json().path("ips").get(0).path("address").asText();
        }

        /** @return IPAM's view through CHECK: exit 0 when it holds the ADD's addresses, code 3 when it holds none */
        Result ipamCheck() throws Exception {
            return cni(
                    "CHECK",
                    container,
                    ns.path(),
                    ipamOnlyNetconf(",\"prevResult\":" + add.stdout()));
        }
    }

    private static Pod add(TestNetns ns) throws Exception {
        String container = CniEndToEndTest.container();
        Result add = cni("ADD", container, ns.path(), netconf());
        assertEquals(0, add.exit(), add.toString());
        return new Pod(ns, container, add);
    }

    @Test
    void attachmentsWhoseNetnsVanishWithoutDelAreReclaimedAfterTheGrace() throws Exception {
        try (TestNetns nsA = TestNetns.create();
                TestNetns nsB = TestNetns.create();
                TestNetns nsC = TestNetns.create()) {
            Pod a = add(nsA);
            Pod b = add(nsB);
            Pod c = add(nsC);
            for (Pod p : List.of(a, b, c)) {
                assertEquals(0, p.ipamCheck().exit(), "held after ADD: " + p.container());
            }

            // The runtime removes two namespaces and never sends DEL (it crashed, say).
            nsA.close();
            nsB.close();

            long deadline = System.nanoTime() + RECLAIM_WITHIN.toNanos();
            while (a.ipamCheck().exit() == 0 || b.ipamCheck().exit() == 0) {
                assertTrue(
                        System.nanoTime() < deadline,
                        "not reclaimed within " + RECLAIM_WITHIN + ":\n" + agent.tail());
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
            }
            assertEquals(3, a.ipamCheck().code(), "IPAM holds nothing for a");
            assertEquals(3, b.ipamCheck().code(), "IPAM holds nothing for b");
            assertEquals(0, c.ipamCheck().exit(), "the pod whose netns lives keeps its addresses");
            Result checkC =
                    cni(
                            "CHECK",
                            c.container(),
                            nsC.path(),
                            "{\"cniVersion\":\"1.1.0\",\"name\":\"reclaim\","
                                    + "\"type\":\"cadastre\",\"agentSocket\":\""
                                    + agent.socket()
                                    + "\",\"ipam\":{},\"prevResult\":"
                                    + c.add().stdout()
                                    + "}");
            assertEquals(0, checkC.exit(), "and its wiring: " + checkC);
            assertTrue(
                    TestNetns.hostHasLink(HostInterfaceName.of("reclaim", c.container(), "eth0")));

            String log = Files.readString(agent.log());
            assertTrue(
                    log.contains("reclaimed attachment reclaim." + a.container() + "/eth0"), log);
            assertTrue(
                    log.contains("reclaimed attachment reclaim." + b.container() + "/eth0"), log);
            assertFalse(log.contains("reclaimed attachment reclaim." + c.container()), log);

            // The four-address pools had one address left; now a's and b's are free again too.
            try (TestNetns nsD = TestNetns.create();
                    TestNetns nsE = TestNetns.create();
                    TestNetns nsF = TestNetns.create()) {
                List<Pod> fresh = new ArrayList<>();
                for (TestNetns ns : List.of(nsD, nsE, nsF)) {
                    fresh.add(add(ns));
                }
                Set<String> granted = new HashSet<>();
                fresh.forEach(p -> granted.add(p.v4()));
                assertEquals(3, granted.size());
                assertTrue(
                        granted.containsAll(Set.of(a.v4(), b.v4())),
                        granted + " reuses " + a.v4() + " and " + b.v4());
                assertFalse(granted.contains(c.v4()));
                Result fifth =
                        cni(
                                "ADD",
                                CniEndToEndTest.container(),
                                "/var/run/netns/cadtest-absent",
                                ipamOnlyNetconf(""));
                assertEquals(100, fifth.code(), "the pools are full: " + fifth);
                for (Pod p : fresh) {
                    assertEquals(0, cni("DEL", p.container(), p.ns().path(), netconf()).exit());
                }
            }
            assertEquals(0, cni("DEL", c.container(), nsC.path(), netconf()).exit());
            // A DEL that comes after all is still a success.
            assertEquals(0, cni("DEL", a.container(), nsA.path(), netconf()).exit());
        }
    }
}
