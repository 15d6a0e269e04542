package io.cadastre.bench.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.bench.report.Goal;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The burst's goals of issue 17, judged from figures (no agent, no root). */
class BurstGoalsTest {
    @Test
    void delsAtHalfTheReferencesTimeMeetTheGoalAndSlowerOnesSayWhy() {
        Goal met = BurstScenario.delGoal(0.42);
        assertTrue(met.met());
        assertEquals("0.42×", met.measured());
        assertNull(met.bound());

        Goal missed = BurstScenario.delGoal(0.51);
        assertFalse(missed.met());
        assertNotNull(missed.bound());
    }

    @Test
    void memoryComparesTheMediansOfThePeaksAndAMissSaysWhatTheAgentHoldsAtRest() {
        // Medians 250 and 125: the outliers on either side do not count.
        Goal missed =
                BurstScenario.memoryGoal(
                        List.of(240.0, 250.0, 900.0), List.of(10.0, 125.0, 130.0), 200.0, 80.0);
        assertFalse(missed.met());
        assertEquals("250 MiB ÷ 125 MiB = 2.00×", missed.measured());
        assertTrue(
                missed.bound()
                        .contains(
                                "before any burst it held 200 MiB (1.60× the reference's peak), "
                                        + "80 MiB of it the class data archives"),
                missed.bound());

        Goal met = BurstScenario.memoryGoal(List.of(100.0), List.of(100.0), 90.0, 40.0);
        assertTrue(met.met());
        assertNull(met.bound());
    }
}
