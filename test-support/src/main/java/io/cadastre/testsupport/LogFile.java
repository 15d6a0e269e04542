package io.cadastre.testsupport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The end of a process's log file, for the message of a failed start or a failed test. */
public final class LogFile {
    /** How many lines {@link #tail(Path)} shows. */
    public static final int TAIL_LINES = 40;

    private LogFile() {}

    /** @return the last 40 lines of {@code log}, or {@code (no log: <why>)} when it cannot be read */
    public static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join(
                    "\n", lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
