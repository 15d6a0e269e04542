package io.cadastre.ctl;

import java.util.ArrayList;
import java.util.List;

/**
 * A plain text table: a header row and left-aligned columns separated by three spaces, no
 * borders, no trailing blanks, so that {@code grep}, {@code awk} and {@code column} read it.
 * Cells come from the agent; control characters in them are shown as {@code ?} so that a
 * hostile or broken answer cannot move the terminal's cursor.
 */
final class Table {
    private static final String GAP = "   ";

    private final List<String> header;
    private final List<List<String>> rows = new ArrayList<>();

    /** @param header the column titles, upper case by convention */
    Table(String... header) {
        this.header = List.of(header);
    }

    /**
     * Adds a row; {@code null} cells print as {@code -}.
     *
     * @throws IllegalArgumentException when the row's width differs from the header's
     */
    Table row(Object... cells) {
        if (cells.length != header.size()) {
            throw new IllegalArgumentException(
                    "row of " + cells.length + " cells for " + header.size() + " columns");
        }
        List<String> row = new ArrayList<>(cells.length);
        for (Object cell : cells) {
            String text = cell == null ? "" : clean(cell.toString());
            row.add(text.isEmpty() ? "-" : text);
        }
        rows.add(row);
        return this;
    }

    /** @return whether no row was added */
    boolean isEmpty() {
        return rows.isEmpty();
    }

    /** @return the header and the rows, each line ending with a newline */
    String render() {
        int[] widths = new int[header.size()];
        List<List<String>> all = new ArrayList<>(rows.size() + 1);
        all.add(header);
        all.addAll(rows);
        for (List<String> row : all) {
            for (int i = 0; i < widths.length; i++) {
                widths[i] = Math.max(widths[i], width(row.get(i)));
            }
        }
        StringBuilder out = new StringBuilder();
        for (List<String> row : all) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < widths.length; i++) {
                String cell = row.get(i);
                line.append(cell);
                if (i < widths.length - 1) {
                    line.append(" ".repeat(widths[i] - width(cell))).append(GAP);
                }
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
        return out.toString();
    }

    /** @return {@code text} with C0/C1 control characters (and DEL) replaced by {@code ?} */
    static String clean(String text) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints()
                .forEach(
                        c -> {
                            if (Character.getType(c) == Character.CONTROL) {
                                out.append('?');
                            } else {
                                out.appendCodePoint(c);
                            }
                        });
        return out.toString();
    }

    private static int width(String cell) {
        return cell.codePointCount(0, cell.length());
    }
}
