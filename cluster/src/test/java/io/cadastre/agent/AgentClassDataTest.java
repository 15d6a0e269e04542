package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The agents the tests start map the class data archive their JVM recorded once ({@code
 * AgentClassData}), as the launcher's agents map theirs: without it every one of the suite's
 * agent starts takes about a second longer, and nothing else would notice.
 */
class AgentClassDataTest {

    @Test
    void anAgentStartedForATestMapsTheSharedClassDataArchive() throws Exception {
        Path dir = Files.createTempDirectory("cad-class-data");
        try (AgentProcess agent =
                new AgentProcess(dir, "class-data-node", AgentProcess.TEST_POOLS).start()) {
            List<String> archives =
                    Files.readAllLines(Path.of("/proc", Long.toString(agent.pid()), "maps"))
                            .stream()
                            .filter(line -> line.endsWith("/cadastre-agent.jsa"))
                            .toList();
            assertTrue(
                    !archives.isEmpty(),
                    "the agent maps no cadastre-agent.jsa; its log:\n" + agent.tail());
        } finally {
            CniEndToEndTest.deleteTree(dir);
        }
    }
}
