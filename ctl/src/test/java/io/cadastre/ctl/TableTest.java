package io.cadastre.ctl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Column alignment, placeholders, and what a cell may not carry to the terminal. */
class TableTest {
    @Test
    void columnsAlignOnTheWidestCellWithoutTrailingBlanks() {
        String text =
                new Table("A", "LONGER", "C").row("wide cell", 1, "x").row("b", 22, "").render();
        assertEquals(
                """
                A           LONGER   C
                wide cell   1        x
                b           22       -
                """,
                text);
    }

    @Test
    void nullAndEmptyCellsPrintAsADash() {
        assertEquals("A   B\n-   -\n", new Table("A", "B").row(null, "").render());
    }

    @Test
    void aHeaderAloneIsATableWithoutRows() {
        assertEquals("NAME   CIDR\n", new Table("NAME", "CIDR").render());
    }

    @Test
    void controlCharactersAreShownAsQuestionMarks() {
        assertEquals("A\nx?[2J?y?z\n", new Table("A").row("x\u001b[2J\ny\u009bz").render());
        assertEquals("ünïcode ok", Table.clean("ünïcode ok"));
    }

    @Test
    void widthIsCountedInCharactersNotUtf16Units() {
        assertEquals(
                "A    B\n😀    x\nab   y\n",
                new Table("A", "B").row("😀", "x").row("ab", "y").render());
    }

    @Test
    void aRowOfTheWrongWidthIsABug() {
        assertThrows(IllegalArgumentException.class, () -> new Table("A", "B").row("only one"));
    }
}
