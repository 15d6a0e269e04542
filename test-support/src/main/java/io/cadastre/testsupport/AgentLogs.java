package io.cadastre.testsupport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the entity recoveries out of the members' agent logs ({@link Member#log()}, one file per
 * host, appended across restarts), for the chaos tests' failover figures and the benchmarks. The agents log with logback's
 * {@code %d{HH:mm:ss.SSS} %-5level %logger{30} - %msg%n} (the agent's {@code CADASTRE_LOG_FORMAT=text}); each time an entity
 * recovers on a member, that member logs
 * <ul>
 *   <li>a NodeEntity: {@code recovered node entity <node>: <n> attachments, <m> affine blocks, <b> borrowed blocks}
 *       (older agents: without the borrowed blocks);
 *   <li>a BlockEntity: {@code recovered block <cidr>: <n> allocations, affine to <node>} ({@code null}
 *       when unclaimed), the CIDR in CIDR notation ({@code 198.18.0.64/26}, {@code fd00:198:3::1c0/122}).
 * </ul>
 * The message is what is matched, whatever the logger name's abbreviation. Every other line, and
 * any garbage, is skipped.
 *
 * <p>The log's times are this machine's local wall-clock time of day, without a date; the agents
 * run on this machine, in this JVM's time zone. A time of day is put on the day that brings it
 * nearest the previous time read from the same file (for the first one, the history's origin):
 * lines are appended in time order and far less than 12 hours apart, so this follows a run across
 * midnight however long it lasts, and takes a line stamped a little before the origin (the two
 * clocks are read at slightly different moments) as just before it, not a day later.
 */
public final class AgentLogs {
    /** The sharded entities whose recoveries the agents log. */
    public enum EntityKind {
        NODE,
        BLOCK
    }

    /**
     * One sharded entity.
     *
     * @param id a NodeEntity's node name (its host's name), or a BlockEntity's CIDR as the agents
     *     print it ({@code 198.18.0.64/26}, {@code fd00:198:3::1c0/122})
     */
    public record Entity(EntityKind kind, String id) {
        public static Entity node(String name) {
            return new Entity(EntityKind.NODE, name);
        }

        public static Entity block(String cidr) {
            return new Entity(EntityKind.BLOCK, cidr);
        }
    }

    /**
     * An entity recovered (started, journal replayed), as a member logged it.
     *
     * @param atNanos when the line was logged, in history time (millisecond precision: the log's)
     * @param member the member (host name) whose log holds the line: where the entity now lives
     */
    public record Recovery(long atNanos, Entity entity, String member) {}

    private static final String TIME = "(\\d{2}):(\\d{2}):(\\d{2})\\.(\\d{3})";

    /** Where the time starts: a line's first characters, before level, logger and message. */
    private static final Pattern LINE_TIME = Pattern.compile("^" + TIME + " ");

    /** Time, level and logger before a recovery message; the entity's id is then group 5. */
    private static final String BEFORE_MESSAGE = TIME + " +[A-Z]+ +\\S+ - ";

    /**
     * A recovery line's shape. The patterns are not anchored at the line's start: a member killed
     * in the middle of a line leaves it unterminated, and its next incarnation's first line
     * continues it.
     *
     * @param message the message's fixed start, to skip most lines before running the pattern
     */
    private record Shape(EntityKind kind, String message, Pattern pattern) {
        Shape(EntityKind kind, String message, String rest) {
            this(kind, message, Pattern.compile(BEFORE_MESSAGE + message + rest));
        }
    }

    private static final List<Shape> SHAPES =
            List.of(
                    new Shape(
                            EntityKind.NODE,
                            "recovered node entity ",
                            "(\\S+): \\d+ attachments, \\d+ affine blocks(, \\d+ borrowed blocks)?\\s*$"),
                    new Shape(
                            EntityKind.BLOCK,
                            "recovered block ",
                            "([0-9A-Fa-f.:]+/\\d{1,3}): \\d+ allocations, affine to \\S+\\s*$"));

    /**
     * @param recoveries every recovery found, per file in the file's order
     * @param problems the files that could not be read, and why
     */
    public record Read(List<Recovery> recoveries, List<String> problems) {
        public Read {
            recoveries = List.copyOf(recoveries);
            problems = List.copyOf(problems);
        }
    }

    private AgentLogs() {}

    /**
     * Where each node's NodeEntity lives now: an entity lives on the member that logged its
     * latest recovery.
     *
     * @param logs each member's host name and the path of its agent log (all on this machine's clock)
     * @return node name → host name of the member it last recovered on; nodes never recovered are absent
     * @throws IOException when a log cannot be read
     */
    public static Map<String, String> nodeEntityHomes(Map<String, Path> logs) throws IOException {
        Read read = read(logs, System.currentTimeMillis(), ZoneId.systemDefault());
        if (!read.problems().isEmpty()) {
            throw new IOException("cannot read the agents' logs: " + read.problems());
        }
        Map<String, Recovery> latest = new HashMap<>();
        read.recoveries().stream()
                .filter(r -> r.entity().kind() == EntityKind.NODE)
                .forEach(
                        r ->
                                latest.merge(
                                        r.entity().id(),
                                        r,
                                        (a, b) -> b.atNanos() >= a.atNanos() ? b : a));
        Map<String, String> homes = new TreeMap<>();
        latest.forEach((node, r) -> homes.put(node, r.member()));
        return homes;
    }

    /**
     * Reads every member's log. A file that is missing or cannot be read adds a problem and no
     * recovery; the others are still read.
     *
     * @param logs each member's host name and the path of its agent log
     * @param originEpochMillis the history's origin on the wall clock (ms since the epoch)
     * @param zone the time zone the agents log in
     */
    public static Read read(Map<String, Path> logs, long originEpochMillis, ZoneId zone) {
        List<Recovery> recoveries = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        logs.forEach(
                (member, file) -> {
                    // The decoder replaces bytes that are not UTF-8 (a line cut by SIGKILL, binary
                    // noise) rather than failing the whole file, which Files.newBufferedReader
                    // would.
                    try (BufferedReader in =
                            new BufferedReader(
                                    new InputStreamReader(
                                            Files.newInputStream(file), StandardCharsets.UTF_8))) {
                        recoveries.addAll(
                                parse(member, in.lines()::iterator, originEpochMillis, zone));
                    } catch (NoSuchFileException e) {
                        problems.add(member + ": no " + file);
                    } catch (IOException | UncheckedIOException e) {
                        problems.add(member + ": " + e);
                    }
                });
        return new Read(recoveries, problems);
    }

    /**
     * The recoveries among one member's log lines (read once, in order), in history time.
     *
     * @param member the host name whose log it is
     * @param originEpochMillis the history's origin on the wall clock (ms since the epoch)
     */
    public static List<Recovery> parse(
            String member, Iterable<String> lines, long originEpochMillis, ZoneId zone) {
        List<Recovery> found = new ArrayList<>();
        long anchor = originEpochMillis;
        for (String line : lines) {
            Shape shape = null;
            Matcher recovered = null;
            for (Shape s : SHAPES) {
                if (line.contains(s.message())) {
                    Matcher m = s.pattern().matcher(line);
                    if (m.find()) {
                        shape = s;
                        recovered = m;
                        break;
                    }
                }
            }
            Matcher stamped = LINE_TIME.matcher(line);
            Matcher time = recovered != null ? recovered : stamped.find() ? stamped : null;
            if (time == null) {
                continue;
            }
            LocalTime of;
            try {
                of =
                        LocalTime.of(
                                Integer.parseInt(time.group(1)),
                                Integer.parseInt(time.group(2)),
                                Integer.parseInt(time.group(3)),
                                Integer.parseInt(time.group(4)) * 1_000_000);
            } catch (DateTimeException e) {
                continue; // 25:61:00.000 and the like: not a log line's time
            }
            anchor = nearest(of, anchor, zone);
            if (recovered != null) {
                found.add(
                        new Recovery(
                                (anchor - originEpochMillis) * 1_000_000L,
                                new Entity(shape.kind(), recovered.group(5)),
                                member));
            }
        }
        return found;
    }

    /**
     * @return the wall-clock time (ms since the epoch) with that time of day, in the zone, that is
     *     nearest {@code anchorEpochMillis}: on the anchor's day, the day before or the day after
     */
    public static long nearest(LocalTime time, long anchorEpochMillis, ZoneId zone) {
        LocalDate day = Instant.ofEpochMilli(anchorEpochMillis).atZone(zone).toLocalDate();
        long best = 0;
        long bestDistance = Long.MAX_VALUE;
        for (int d = -1; d <= 1; d++) {
            long candidate =
                    ZonedDateTime.of(day.plusDays(d), time, zone).toInstant().toEpochMilli();
            long distance = Math.abs(candidate - anchorEpochMillis);
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        return best;
    }
}
