package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** When a member refuses to serve: no majority in sight, or just after a scheduling gap. */
class ServingGuardTest {
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final AtomicReference<ServingGuard.Reach> reach = new AtomicReference<>(new ServingGuard.Reach(3, 3));
    private final ServingGuard guard = new ServingGuard(reach::get, Duration.ofSeconds(1), Duration.ofSeconds(3),
            clock::get, false);

    private void advance(long millis) {
        clock.addAndGet(millis * 1_000_000L);
    }

    /** Ticks every 100 ms for the given time, as the ticker thread does. */
    private void run(long millis) {
        for (long t = 0; t < millis; t += 100) {
            advance(100);
            guard.tick();
        }
    }

    @Test
    void servesWithAMajorityAndNoGap() {
        run(5_000);
        assertEquals(Optional.empty(), guard.refusal());
        reach.set(new ServingGuard.Reach(3, 2));
        assertEquals(Optional.empty(), guard.refusal(), "two of three is a majority");
        reach.set(new ServingGuard.Reach(1, 1));
        assertEquals(Optional.empty(), guard.refusal(), "a cluster of one");
    }

    @Test
    void refusesWithoutAMajority() {
        reach.set(new ServingGuard.Reach(3, 1));
        assertTrue(guard.refusal().orElseThrow().contains("reaches 1 of 3"));
        reach.set(new ServingGuard.Reach(2, 1));
        assertTrue(guard.refusal().isPresent(), "one of two is not a majority");
        reach.set(new ServingGuard.Reach(2, 2));
        assertEquals(Optional.empty(), guard.refusal());
    }

    @Test
    void aRequestRightAfterAPauseIsRefusedBeforeTheTickerNotices() {
        run(1_000);
        advance(8_000); // SIGSTOP for 8 s: no ticks
        assertTrue(guard.refusal().orElseThrow().contains("did not run for 8.0 s"));
    }

    @Test
    void servingResumesOnlyAfterTheHold() {
        run(1_000);
        advance(5_000);
        guard.tick(); // the ticker resumes and records the gap
        run(2_900);
        assertTrue(guard.refusal().isPresent(), "within 3 s after the gap");
        run(200);
        assertEquals(Optional.empty(), guard.refusal());
    }

    @Test
    void aShortHiccupIsNoGap() {
        run(1_000);
        advance(900);
        guard.tick();
        assertEquals(Optional.empty(), guard.refusal());
    }
}
