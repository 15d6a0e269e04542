package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code cadastre.block-reclaim}: the defaults, overrides, and non-positive durations refused by name. */
class BlockReclaimSettingsTest {
    private static AgentSettings settings(String forced) {
        return AgentSettings.from(
                AgentMain.loadConfig(
                        null, ConfigFactory.parseString("cadastre.node-name = n\n" + forced)));
    }

    @Test
    void defaultsAreOneMinuteAndTenMinutes() {
        assertEquals(
                new AgentSettings.BlockReclaim(Duration.ofMinutes(1), Duration.ofMinutes(10)),
                settings("").blockReclaim());
    }

    @Test
    void overridesAreRead() {
        assertEquals(
                new AgentSettings.BlockReclaim(Duration.ofSeconds(5), Duration.ofSeconds(30)),
                settings("cadastre.block-reclaim { interval = 5s, grace = 30s }").blockReclaim());
    }

    @Test
    void nonPositiveDurationsAreRefusedByName() {
        IllegalArgumentException grace =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> settings("cadastre.block-reclaim.grace = 0s"));
        assertTrue(grace.getMessage().contains("cadastre.block-reclaim.grace"), grace.getMessage());
        IllegalArgumentException interval =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> settings("cadastre.block-reclaim.interval = -1m"));
        assertTrue(
                interval.getMessage().contains("cadastre.block-reclaim.interval"),
                interval.getMessage());
    }
}
