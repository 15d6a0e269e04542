package io.cadastre.agent;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ConfiguratorRank;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.spi.ContextAwareBase;
import java.util.Locale;
import java.util.Optional;
import java.util.function.UnaryOperator;

/**
 * The agent's logging, set up in code when logback starts (a {@link Configurator} found through
 * {@code META-INF/services}): every event on stderr, as one JSON object per line (logback's {@link
 * JsonEncoder}, the message formatted) or, with {@code CADASTRE_LOG_FORMAT=text}, as the line
 * {@value #TEXT_PATTERN}. The root level is {@code CADASTRE_LOG_LEVEL} (TRACE, DEBUG, INFO, WARN,
 * ERROR or OFF; INFO when unset or anything else).
 *
 * <p>In code rather than in a {@code logback.xml}, because reading XML loads logback's Joran
 * configurator and the JDK's XML parser, about 430 classes, into every agent (class data and
 * metaspace, and their loading at start: {@code benchmarks/DESIGN.md}, "Where the agent's memory
 * goes"). An operator's own file still wins: with {@code -Dlogback.configurationFile=FILE} this
 * does nothing and logback reads that file as usual.
 *
 * <p>Each setting is read from the system property of its name first ({@code
 * -DCADASTRE_LOG_FORMAT=text}), then from the environment, as logback's own {@code ${NAME}} does.
 */
@ConfiguratorRank(ConfiguratorRank.CUSTOM_NORMAL_PRIORITY)
public final class AgentLogging extends ContextAwareBase implements Configurator {
    /** The text format's line: time of day (milliseconds), level, logger, message. */
    public static final String TEXT_PATTERN = "%d{HH:mm:ss.SSS} %-5level %logger{30} - %msg%n";

    /** {@code json} (the default) or {@code text}. */
    static final String FORMAT = "CADASTRE_LOG_FORMAT";

    /** The root logger's level. */
    static final String LEVEL = "CADASTRE_LOG_LEVEL";

    private final UnaryOperator<String> setting;
    private final boolean ownFile;

    /** As logback creates it: settings from system properties and the environment. */
    public AgentLogging() {
        this(
                name ->
                        Optional.ofNullable(System.getProperty(name))
                                .orElseGet(() -> System.getenv(name)),
                System.getProperty("logback.configurationFile") != null);
    }

    /**
     * @param setting a setting's value by name, null when unset
     * @param ownFile whether a configuration file of the operator's is given
     */
    AgentLogging(UnaryOperator<String> setting, boolean ownFile) {
        this.setting = setting;
        this.ownFile = ownFile;
    }

    /**
     * @return {@link ExecutionStatus#INVOKE_NEXT_IF_ANY} when a configuration file is given (logback
     *     reads it next), else {@link ExecutionStatus#DO_NOT_INVOKE_NEXT_IF_ANY} once the console
     *     appender is attached to the root logger
     */
    @Override
    public ExecutionStatus configure(LoggerContext context) {
        if (ownFile) {
            return ExecutionStatus.INVOKE_NEXT_IF_ANY;
        }
        ConsoleAppender<ILoggingEvent> out = new ConsoleAppender<>();
        out.setContext(context);
        out.setName("OUT");
        out.setTarget("System.err");
        out.setEncoder(encoder(context));
        out.start();
        ch.qos.logback.classic.Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.setLevel(level());
        root.addAppender(out);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    /** @return the root level the settings ask for; INFO when unset or not a level's name */
    Level level() {
        String value = setting.apply(LEVEL);
        return value == null ? Level.INFO : Level.toLevel(value.trim(), Level.INFO);
    }

    /** @return whether the settings ask for text lines rather than JSON */
    boolean text() {
        String value = setting.apply(FORMAT);
        return value != null && value.trim().toLowerCase(Locale.ROOT).equals("text");
    }

    private Encoder<ILoggingEvent> encoder(LoggerContext context) {
        if (text()) {
            PatternLayoutEncoder pattern = new PatternLayoutEncoder();
            pattern.setContext(context);
            pattern.setPattern(TEXT_PATTERN);
            pattern.start();
            return pattern;
        }
        JsonEncoder json = new JsonEncoder();
        json.setContext(context);
        json.setWithFormattedMessage(true);
        json.setWithMessage(false);
        json.setWithArguments(false);
        json.setWithContext(false);
        json.setWithSequenceNumber(false);
        json.setWithNanoseconds(false);
        json.start();
        return json;
    }
}
