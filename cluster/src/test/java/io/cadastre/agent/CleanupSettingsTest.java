package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.cadastre.agent.AgentSettings.Cleanup;
import io.cadastre.agent.AgentSettings.Rounds;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code cadastre.cleanup}: the defaults, overrides, and non-positive durations refused by name. */
class CleanupSettingsTest {
    private static Cleanup cleanup(String forced) {
        return AgentSettings.from(
                        AgentMain.loadConfig(
                                null,
                                ConfigFactory.parseString("cadastre.node-name = n\n" + forced)))
                .cleanup();
    }

    @Test
    void defaults() {
        assertEquals(
                new Cleanup(
                        new Rounds(Duration.ofSeconds(30), Duration.ofMinutes(5)),
                        true,
                        new Rounds(Duration.ofMinutes(1), Duration.ofMinutes(10)),
                        Optional.of(new Rounds(Duration.ofMinutes(1), Duration.ofMinutes(5)))),
                cleanup(""));
    }

    @Test
    void overridesAreRead() {
        assertEquals(
                new Cleanup(
                        new Rounds(Duration.ofMillis(200), Duration.ofSeconds(1)),
                        false,
                        new Rounds(Duration.ofSeconds(5), Duration.ofSeconds(30)),
                        Optional.empty()),
                cleanup(
                        """
                        cadastre.cleanup {
                          attachments { interval = 200ms, grace = 1s, pods-deleted-from-api = off }
                          blocks { interval = 5s, grace = 30s }
                          deleted-nodes.enabled = off
                        }
                        """));
    }

    @Test
    void nonPositiveDurationsAreRefusedByName() {
        for (String key :
                new String[] {
                    "cadastre.cleanup.attachments.grace",
                    "cadastre.cleanup.attachments.interval",
                    "cadastre.cleanup.blocks.grace",
                    "cadastre.cleanup.blocks.interval",
                    "cadastre.cleanup.deleted-nodes.grace",
                    "cadastre.cleanup.deleted-nodes.interval"
                }) {
            for (String bad : new String[] {"0s", "-1s"}) {
                IllegalArgumentException e =
                        assertThrows(
                                IllegalArgumentException.class,
                                () -> cleanup(key + " = " + bad),
                                key + " = " + bad);
                assertTrue(e.getMessage().contains(key), e.getMessage());
            }
        }
    }
}
