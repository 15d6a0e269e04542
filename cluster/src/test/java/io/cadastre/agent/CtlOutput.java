package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.testsupport.CniExec;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reading what cadastrectl printed, for the end-to-end tests: its tables cell by column name (so
 * that columns the tool adds later do not break them), its JSON, and its failures.
 */
final class CtlOutput {
    private CtlOutput() {}

    /** One run of cadastrectl: its exit code and what it printed. */
    record Run(int code, String out, String err) {
        JsonNode json() throws IOException {
            return CniExec.JSON.readTree(out);
        }

        @Override
        public String toString() {
            return "exit " + code + "\nstdout:\n" + out + "stderr:\n" + err;
        }
    }

    /** Asserts exit 2, nothing on stdout, and each text on stderr. */
    static void assertFailed(Run run, String... inErr) {
        assertEquals(2, run.code(), run.toString());
        assertEquals("", run.out(), "nothing on stdout");
        for (String text : inErr) {
            assertTrue(run.err().contains(text), "stderr has '" + text + "': " + run.err());
        }
    }

    /** Asserts exit 0 and nothing on stderr. @return the run */
    static Run assertOk(Run run) {
        assertEquals(0, run.code(), run.toString());
        assertEquals("", run.err(), run.toString());
        return run;
    }

    /**
     * @return the cells of {@code pool list}'s row for a pool with every setting at its default:
     *     no strict affinity, borrowing allowed, no block limit, enabled, selecting all nodes
     */
    static Map<String, String> defaultPoolRow(String name, String cidr, String blockSize) {
        return Map.of(
                "NAME",
                name,
                "CIDR",
                cidr,
                "BLOCK-SIZE",
                blockSize,
                "STRICT-AFFINITY",
                "false",
                "ALLOW-BORROWING",
                "true",
                "MAX-BLOCKS-PER-NODE",
                "no limit",
                "DISABLED",
                "false",
                "NODE-SELECTOR",
                "all()");
    }

    static void assertCells(Map<String, String> row, Map<String, String> expected) {
        assertTrue(row != null, "no such row");
        expected.forEach(
                (column, value) -> assertEquals(value, row.get(column), column + " of " + row));
    }

    /** @return the pool named {@code name} in an answer holding {@code pools} */
    static JsonNode pool(JsonNode answer, String name) {
        for (JsonNode pool : answer.path("pools")) {
            if (pool.path("name").asText().equals(name)) {
                return pool;
            }
        }
        throw new AssertionError("no pool " + name + " in " + answer);
    }

    /**
     * @param out cadastrectl's table output: tables separated by blank lines (lines before the first
     *     header, such as the check's verdict, belong to no table when they hold no double blank)
     * @param index which table, from 0
     * @return its rows, each cell under its header; columns start where the header's titles do
     */
    static List<Map<String, String>> table(String out, int index) {
        String[] tables = out.split("\n\n");
        assertTrue(index < tables.length, "no table " + index + " in:\n" + out);
        List<String> lines = tables[index].lines().toList();
        String header = lines.get(0);
        List<Integer> starts = new ArrayList<>();
        List<String> titles = new ArrayList<>();
        for (int i = 0; i < header.length(); i++) {
            if (header.charAt(i) != ' ' && (i == 0 || header.charAt(i - 1) == ' ')) {
                starts.add(i);
                int end = header.indexOf(' ', i);
                titles.add(header.substring(i, end < 0 ? header.length() : end));
            }
        }
        List<Map<String, String>> rows = new ArrayList<>();
        for (String line : lines.subList(1, lines.size())) {
            Map<String, String> row = new LinkedHashMap<>();
            for (int c = 0; c < starts.size(); c++) {
                int from = Math.min(starts.get(c), line.length());
                int to =
                        c + 1 < starts.size()
                                ? Math.min(starts.get(c + 1), line.length())
                                : line.length();
                row.put(titles.get(c), line.substring(from, to).strip());
            }
            rows.add(row);
        }
        return rows;
    }

    /** @return the rows by their cell in {@code column} */
    static Map<String, Map<String, String>> rowsBy(String column, List<Map<String, String>> rows) {
        Map<String, Map<String, String>> byKey = new LinkedHashMap<>();
        rows.forEach(row -> byKey.put(row.get(column), row));
        return byKey;
    }
}
