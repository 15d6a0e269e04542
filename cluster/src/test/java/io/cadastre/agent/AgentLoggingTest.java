package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

class AgentLoggingTest {

    /** Logs through a context set up by {@link AgentLogging} and returns what reached stderr. */
    private static String logged(Map<String, String> settings, Level level, String message) {
        LoggerContext context = new LoggerContext();
        AgentLogging logging = new AgentLogging(settings::get, false);
        logging.setContext(context);
        assertEquals(
                Configurator.ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY, logging.configure(context));
        // What slf4j's logback provider gives the context it starts; a bare one has none.
        context.setMDCAdapter(new LogbackMDCAdapter());
        PrintStream stderr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            Logger log = context.getLogger("io.cadastre.shards.PoolEntity");
            switch (level.toString()) {
                case "DEBUG" -> log.debug(message, "p1");
                case "INFO" -> log.info(message, "p1");
                case "WARN" -> log.warn(message, "p1");
                default -> throw new IllegalArgumentException(level.toString());
            }
        } finally {
            System.setErr(stderr);
            context.stop();
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void byDefaultEachEventIsOneJsonLineAtInfo() throws Exception {
        String out = logged(Map.of(), Level.INFO, "pool {} defined");
        List<String> lines = out.lines().toList();
        assertEquals(1, lines.size(), out);
        JsonNode event = new ObjectMapper().readTree(lines.get(0));
        assertEquals("INFO", event.get("level").asText());
        assertEquals("io.cadastre.shards.PoolEntity", event.get("loggerName").asText());
        assertEquals("pool p1 defined", event.get("formattedMessage").asText());
        assertFalse(event.has("arguments"), "arguments are left out: " + out);

        assertEquals("", logged(Map.of(), Level.DEBUG, "pool {} defined"));
    }

    @Test
    void textLinesAndTheLevelFromTheSettings() {
        Map<String, String> settings =
                Map.of(AgentLogging.FORMAT, "text", AgentLogging.LEVEL, "warn");
        assertEquals("", logged(settings, Level.INFO, "pool {} defined"));
        String out = logged(settings, Level.WARN, "pool {} full");
        assertTrue(
                out.matches(
                        "\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  io\\.cadastre\\.shards\\.PoolEntity - pool p1 full\\R"),
                out);
    }

    @Test
    void aLevelThatIsNoLevelMeansInfo() {
        assertEquals(
                Level.INFO,
                new AgentLogging(Map.of(AgentLogging.LEVEL, "loud")::get, false).level());
        assertEquals(
                Level.DEBUG,
                new AgentLogging(Map.of(AgentLogging.LEVEL, " DEBUG ")::get, false).level());
        assertFalse(new AgentLogging(Map.of(AgentLogging.FORMAT, "xml")::get, false).text());
    }

    @Test
    void anOperatorsOwnFileIsLeftToLogback() {
        LoggerContext context = new LoggerContext();
        AgentLogging logging = new AgentLogging(Map.<String, String>of()::get, true);
        logging.setContext(context);
        assertEquals(Configurator.ExecutionStatus.INVOKE_NEXT_IF_ANY, logging.configure(context));
        assertFalse(
                context.getLogger(Logger.ROOT_LOGGER_NAME).iteratorForAppenders().hasNext(),
                "no appender of ours");
    }

    @Test
    void logbackFindsItAsAService() {
        assertTrue(
                ServiceLoader.load(Configurator.class).stream()
                        .anyMatch(p -> p.type() == AgentLogging.class));
    }
}
