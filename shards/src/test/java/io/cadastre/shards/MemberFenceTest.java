package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** When a member refuses to serve: no majority in sight, or just after a scheduling gap. */
class MemberFenceTest {
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final AtomicReference<MemberFence.Reach> reach =
            new AtomicReference<>(new MemberFence.Reach(3, 3));
    private final MemberFence fence =
            new MemberFence(
                    reach::get, Duration.ofSeconds(1), Duration.ofSeconds(3), clock::get, false);

    private void advance(long millis) {
        clock.addAndGet(millis * 1_000_000L);
    }

    /** Ticks every 100 ms for the given time, as the ticker thread does. */
    private void run(long millis) {
        for (long t = 0; t < millis; t += 100) {
            advance(100);
            fence.tick();
        }
    }

    @Test
    void servesWithAMajorityAndNoGap() {
        run(5_000);
        assertEquals(Optional.empty(), fence.refusal());
        reach.set(new MemberFence.Reach(3, 2));
        assertEquals(Optional.empty(), fence.refusal(), "two of three is a majority");
        reach.set(new MemberFence.Reach(1, 1));
        assertEquals(Optional.empty(), fence.refusal(), "a cluster of one");
    }

    @Test
    void refusesWithoutAMajority() {
        reach.set(new MemberFence.Reach(3, 1));
        assertTrue(fence.refusal().orElseThrow().contains("reaches 1 of 3"));
        reach.set(new MemberFence.Reach(2, 1));
        assertTrue(fence.refusal().isPresent(), "one of two is not a majority");
        reach.set(new MemberFence.Reach(2, 2));
        assertEquals(Optional.empty(), fence.refusal());
    }

    @Test
    void aRequestRightAfterAPauseIsRefusedBeforeTheTickerNotices() {
        run(1_000);
        advance(8_000); // SIGSTOP for 8 s: no ticks
        assertTrue(fence.refusal().orElseThrow().contains("did not run for 8.0 s"));
    }

    @Test
    void servingResumesOnlyAfterTheHold() {
        run(1_000);
        advance(5_000);
        fence.tick(); // the ticker resumes and records the gap
        run(2_900);
        assertTrue(fence.refusal().isPresent(), "within 3 s after the gap");
        run(200);
        assertEquals(Optional.empty(), fence.refusal());
    }

    @Test
    void aShortHiccupIsNoGap() {
        run(1_000);
        advance(900);
        fence.tick();
        assertEquals(Optional.empty(), fence.refusal());
    }
}
