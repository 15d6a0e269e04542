package io.cadastre.chaos;

import java.util.Locale;

/** Formatting of the history's times (nanoseconds since its origin). */
final class Times {
    private Times() {}

    /** @return e.g. {@code 12.345s}, or {@code end} for {@link Long#MAX_VALUE} */
    static String seconds(long nanos) {
        if (nanos == Long.MAX_VALUE) {
            return "end";
        }
        return String.format(Locale.ROOT, "%.3fs", nanos / 1e9);
    }

    static long millis(long ms) {
        return ms * 1_000_000L;
    }
}
