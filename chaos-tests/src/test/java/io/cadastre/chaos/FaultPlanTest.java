package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The fault schedule is a function of the seed and holds the mandatory faults first. */
class FaultPlanTest {
    private static List<FaultPlan.Fault> take(FaultPlan plan, int n) {
        List<FaultPlan.Fault> faults = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            faults.add(plan.next());
        }
        return faults;
    }

    @Test
    void aSeedNamesOneSchedule() {
        assertEquals(
                take(new FaultPlan(7, 3, 10, 3, 2, 1), 40),
                take(new FaultPlan(7, 3, 10, 3, 2, 1), 40));
        assertNotEquals(
                take(new FaultPlan(7, 3, 10, 3, 2, 1), 40),
                take(new FaultPlan(8, 3, 10, 3, 2, 1), 40));
    }

    @Test
    void theMandatoryFaultsComeFirstAndEveryParameterIsInRange() {
        for (long seed = 0; seed < 50; seed++) {
            FaultPlan plan = new FaultPlan(seed, 3, 10, 3, 2, 1);
            assertEquals(16, plan.mandatoryCount());
            Map<FaultPlan.Kind, Integer> counts = new EnumMap<>(FaultPlan.Kind.class);
            List<FaultPlan.Fault> faults = take(plan, 60);
            faults.subList(0, 16).forEach(f -> counts.merge(f.kind(), 1, Integer::sum));
            assertEquals(
                    Map.of(
                            FaultPlan.Kind.KILL,
                            10,
                            FaultPlan.Kind.PAUSE,
                            3,
                            FaultPlan.Kind.PARTITION,
                            2,
                            FaultPlan.Kind.CASSANDRA_RESTART,
                            1),
                    counts);
            for (FaultPlan.Fault f : faults) {
                assertTrue(f.gapMillis() >= 500 && f.gapMillis() <= 2_500, f.toString());
                switch (f.kind()) {
                    case KILL -> assertTrue(f.millis() >= 500 && f.millis() <= 4_000, f.toString());
                    case PAUSE ->
                            assertTrue(f.millis() >= 8_000 && f.millis() <= 12_000, f.toString());
                    case PARTITION ->
                            assertTrue(f.millis() >= 10_000 && f.millis() <= 15_000, f.toString());
                    case CASSANDRA_RESTART -> assertEquals(0, f.host());
                }
                if (f.kind() != FaultPlan.Kind.CASSANDRA_RESTART) {
                    assertTrue(f.host() >= 1 && f.host() <= 3, f.toString());
                }
            }
        }
    }
}
