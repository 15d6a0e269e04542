package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code cadastre.reclaim}: the defaults, overrides, and non-positive durations refused by name. */
class ReclaimSettingsTest {
    private static AgentSettings settings(String forced) {
        return AgentSettings.from(
                AgentMain.loadConfig(
                        null, ConfigFactory.parseString("cadastre.node-name = n\n" + forced)));
    }

    @Test
    void defaultsAreThirtySecondsAndFiveMinutes() {
        assertEquals(
                new AgentSettings.Reclaim(Duration.ofSeconds(30), Duration.ofMinutes(5)),
                settings("").reclaim());
    }

    @Test
    void overridesAreRead() {
        assertEquals(
                new AgentSettings.Reclaim(Duration.ofMillis(200), Duration.ofSeconds(1)),
                settings("cadastre.reclaim { interval = 200ms, grace = 1s }").reclaim());
    }

    @Test
    void nonPositiveDurationsAreRefusedByName() {
        IllegalArgumentException grace =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> settings("cadastre.reclaim.grace = 0s"));
        assertTrue(grace.getMessage().contains("cadastre.reclaim.grace"), grace.getMessage());
        IllegalArgumentException interval =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> settings("cadastre.reclaim.interval = -1s"));
        assertTrue(
                interval.getMessage().contains("cadastre.reclaim.interval"), interval.getMessage());
    }
}
