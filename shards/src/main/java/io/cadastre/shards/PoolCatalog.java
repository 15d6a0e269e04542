package io.cadastre.shards;

import io.cadastre.shards.PoolRegistry.Catalog;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * This agent's view of the {@link PoolRegistry}: the catalogue read at most once per
 * {@code maxAge} and shared by every caller meanwhile, so an ADD does not cost a round trip to the
 * registry's one entity. A pool created, disabled or deleted is therefore seen by every agent
 * within {@code maxAge} (a disabled pool's {@link PoolEntity} refuses new blocks at once).
 *
 * <p>When a read fails (the registry is moving after a crash) the last catalogue is served, so
 * allocation does not depend on the registry being up; with none yet the stage fails with
 * UNAVAILABLE.
 */
public final class PoolCatalog {
    private final EntityAsks asks;
    private final long maxAgeNanos;
    private final LongSupplier nanoClock;

    private record Read(long atNanos, CompletableFuture<Catalog> catalog) {}

    private final AtomicReference<Read> latest = new AtomicReference<>();
    private final AtomicReference<Catalog> lastGood = new AtomicReference<>();

    /** @param maxAge how long a catalogue read is used before it is read again */
    public PoolCatalog(ActorSystem<?> system, AskTimeouts timeouts, Duration maxAge) {
        this(new EntityAsks(system, timeouts), maxAge, System::nanoTime);
    }

    PoolCatalog(EntityAsks asks, Duration maxAge, LongSupplier nanoClock) {
        this.asks = asks;
        this.maxAgeNanos = maxAge.toNanos();
        this.nanoClock = nanoClock;
    }

    /** @return the catalogue, read again when the last read is older than the maximum age */
    public CompletionStage<Catalog> current() {
        long now = nanoClock.getAsLong();
        Read read = latest.get();
        if (read != null
                && now - read.atNanos() < maxAgeNanos
                && !read.catalog().isCompletedExceptionally()) {
            return read.catalog();
        }
        return readAgain(read, now);
    }

    /** @return the catalogue read now (after a change this agent made, or a pool not found) */
    public CompletionStage<Catalog> fresh() {
        return readAgain(latest.get(), nanoClock.getAsLong());
    }

    /** @return the last catalogue read successfully, if any */
    public Optional<Catalog> last() {
        return Optional.ofNullable(lastGood.get());
    }

    private CompletionStage<Catalog> readAgain(Read seen, long now) {
        CompletableFuture<Catalog> next = new CompletableFuture<>();
        Read candidate = new Read(now, next);
        if (!latest.compareAndSet(seen, candidate)) {
            // Another caller started a read meanwhile: share it.
            return latest.get().catalog();
        }
        asks.ask(asks.registry(), PoolRegistry.GetCatalog::new)
                .whenComplete(
                        (catalog, error) -> {
                            if (error == null) {
                                lastGood.set(catalog);
                                next.complete(catalog);
                            } else if (lastGood.get() != null) {
                                // Serve the last catalogue, but read again at the next call.
                                latest.compareAndSet(
                                        candidate,
                                        new Read(
                                                now - maxAgeNanos,
                                                CompletableFuture.completedFuture(lastGood.get())));
                                next.complete(lastGood.get());
                            } else {
                                next.completeExceptionally(EntityAsks.asIpam(error));
                            }
                        });
        return next;
    }
}
