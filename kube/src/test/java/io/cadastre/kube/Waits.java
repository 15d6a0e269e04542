package io.cadastre.kube;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assertions;

/** Waiting for a condition with a deadline, checking every 50 ms. */
final class Waits {
    private Waits() {}

    /** @throws AssertionError with {@code why}'s text when the condition does not hold within {@code deadline} */
    static void until(Duration deadline, BooleanSupplier condition, Supplier<String> why) {
        long end = System.nanoTime() + deadline.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                Assertions.fail("not within " + deadline + ": " + why.get());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}
