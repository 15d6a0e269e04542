package io.cadastre.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

class DistributionTest {
    @Test
    void nearestRankPercentilesOfValues() {
        double[] values = new double[200];
        for (int i = 0; i < values.length; i++) {
            values[i] = 200 - i; // 200 .. 1, unsorted on purpose
        }
        Distribution d = Distribution.of(values);
        assertEquals(200, d.count());
        assertEquals(100, d.median());
        assertEquals(198, d.p99());
        assertEquals(200, d.max());
        assertEquals(new Distribution(1, 7, 7, 7), Distribution.of(7));
        assertThrows(IllegalArgumentException.class, Distribution::of);
    }

    @Test
    void histogramsOfNanosecondsAreReportedInMilliseconds() {
        Histogram h = Percentiles.newNanosHistogram();
        for (int i = 1; i <= 100; i++) {
            h.recordValue(i * 1_000_000L);
        }
        Distribution d = Distribution.millisOf(h);
        assertEquals(100, d.count());
        assertEquals(50, d.median(), 0.1);
        assertEquals(99, d.p99(), 0.1);
        assertEquals(100, d.max(), 0.1);
    }

    @Test
    void sideBySideComparesMediansAgainstPeersOnly() {
        SideBySide s = new SideBySide("cadastre", java.util.Set.of("peer"));
        s.record("ADD", "cadastre", 10_000_000);
        s.record("ADD", "peer", 20_000_000);
        s.record("ADD", "other", 5_000_000);
        assertEquals(1, s.comparisons().size());
        assertEquals(0.5, s.comparisons().get(0).ratio(), 0.001);
        assertEquals(0.5, s.ratio("ADD", "peer"), 0.001);
        assertEquals(3, s.figures().size());
    }
}
