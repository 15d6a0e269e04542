package io.cadastre.cni;

/**
 * How a value taken from a request appears in an error message or a log line: quoted, with
 * control characters, quotes and backslashes escaped (so a CR/LF in {@code CNI_CONTAINERID}
 * cannot forge a log line) and cut to {@value #MAX_SHOWN} characters (so a 100 KiB value cannot
 * flood the runtime's log). Values that may be secrets ({@code CNI_ARGS} values, netconf
 * subtrees) are never shown at all: messages name the key instead.
 */
public final class CniText {
    /** At most this many characters of a value are shown. */
    public static final int MAX_SHOWN = 64;

    private CniText() {}

    /**
     * @param value any text from a request, or null
     * @return e.g. {@code "ab\ncd"} with its quotes, {@code "aaaa…" (120000 characters)} when cut,
     *     {@code null} for null
     */
    public static String quoted(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(Math.min(value.length(), MAX_SHOWN) + 8).append('"');
        int shown = 0;
        for (int i = 0; i < value.length() && shown < MAX_SHOWN; i++, shown++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20
                            || c == 0x7f
                            || (c >= 0x80 && c < 0xa0)
                            || c == '\u2028'
                            || c == '\u2029') {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
        if (value.length() > MAX_SHOWN) {
            out.insert(out.length() - 1, '…')
                    .append(" (")
                    .append(value.length())
                    .append(" characters)");
        }
        return out.toString();
    }
}
