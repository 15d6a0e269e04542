package io.cadastre.bench.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.bench.report.Goal;
import org.junit.jupiter.api.Test;

/** The cluster's goals of issue 17, judged from figures (no cluster, no root). */
class ThroughputGoalsTest {
    private static final String PLACEMENT = "3 of 3 on their own member";

    @Test
    void aMissedThroughputSaysWhatCpuTheGoalsRateWouldLeaveAnAddAndDel() {
        Goal missed =
                IpamThroughputScenario.throughputGoal(
                        500, 5_000, 2_500, 30, 2.4, 0.5, 0.6, PLACEMENT);
        assertFalse(missed.met());
        assertEquals(
                "500 ADD+DEL/s ÷ 5000 persist+reply/s = 10% (means over 30 s)", missed.measured());
        // 40% of 5,000 is 2,000 ADD+DEL/s: 2 cores leave 1 ms for each.
        assertTrue(
                missed.bound()
                        .startsWith(
                                "CPU: at 40% (2000 ADD+DEL/s) the machine's 2 cores would leave 1.00 ms"),
                missed.bound());
        assertTrue(
                missed.bound()
                        .contains("used 0.50 ms of it in this run, their IPAM work 1.90 ms more"),
                missed.bound());
        assertTrue(missed.bound().contains(PLACEMENT), missed.bound());

        Goal met =
                IpamThroughputScenario.throughputGoal(
                        2_000, 5_000, 2_500, 30, 0.5, 0.2, 0.2, PLACEMENT);
        assertTrue(met.met());
        assertNull(met.bound());
    }

    @Test
    void theMembersCpuGoalSplitsAMissIntoEndpointsDriverAndTheRest() {
        Goal missed = IpamThroughputScenario.memberCpuGoal(2.4, 2.3, 0.5, 0.6);
        assertFalse(missed.met());
        assertEquals("2.40 ms with mutual TLS, 2.30 ms on plain TCP", missed.measured());
        assertTrue(missed.bound().contains("CNI endpoints alone used 0.50 ms"), missed.bound());
        assertTrue(missed.bound().contains("driver's I/O 0.60 ms"), missed.bound());
        assertTrue(missed.bound().contains("the rest 1.30 ms"), missed.bound());

        Goal met = IpamThroughputScenario.memberCpuGoal(1.0, 1.2, 0.3, 0.3);
        assertTrue(met.met());
        assertNull(met.bound());
    }
}
