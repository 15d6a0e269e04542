package io.cadastre.admin;

import io.cadastre.shards.CadastreMetrics;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@code GET /metrics} answers: the actor system's {@link CadastreMetrics} in the Prometheus
 * text format (version 0.0.4, {@link #CONTENT_TYPE}), written by the Prometheus client's own writer.
 *
 * <p>The cluster-wide {@code cadastre_ipam_*} gauges are computed from the entities ({@link
 * Inventory#usage()}), which walks every pool and claimed block, so a reading is reused for
 * {@code refresh}: several scrapes (several Prometheus servers, or a short scrape interval) do not
 * each walk the cluster. A scrape that finds the last reading older than that starts one (scrapes
 * meanwhile share it) and waits for it at most {@code wait}, which keeps the answer within
 * Prometheus's scrape timeout when an entity is slow (the ask timeouts run to 15 s); past that it
 * is answered with the last values, and the reading goes on for the next scrape. A reading that
 * fails (an entity did not answer) is counted in {@code cadastre_ipam_metrics_refresh_failures_total}
 * and leaves the last values in place; the next scrape tries again.
 *
 * <p>Thread-safe; scrapes arrive on the admin server's event loop, readings complete on actor
 * threads.
 */
final class MetricsEndpoint {
    /** The Prometheus text format, version 0.0.4. */
    static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;

    /** How long a scrape waits for a reading of the IPAM usage before it is answered with the last values. */
    static final Duration WAIT = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(MetricsEndpoint.class);

    private final CadastreMetrics metrics;
    private final Supplier<CompletionStage<CadastreMetrics.IpamUsage>> usage;
    private final long refreshNanos;
    private final Duration wait;
    private final LongSupplier nanoClock;
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();

    private final Object lock = new Object();

    /** When the last successful reading started, by {@link #nanoClock}; guarded by lock. */
    private long lastReadNanos;

    private boolean everRead; // guarded by lock

    /** The reading in flight, or null; guarded by lock. */
    private CompletableFuture<Void> reading;

    /**
     * @param usage reads the cluster-wide IPAM usage ({@link Inventory#usage()})
     * @param refresh how long a reading is reused; zero reads at every scrape
     * @param wait how long a scrape waits for a reading
     * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime})
     */
    MetricsEndpoint(
            CadastreMetrics metrics,
            Supplier<CompletionStage<CadastreMetrics.IpamUsage>> usage,
            Duration refresh,
            Duration wait,
            LongSupplier nanoClock) {
        this.metrics = metrics;
        this.usage = usage;
        this.refreshNanos = refresh.toNanos();
        this.wait = wait;
        this.nanoClock = nanoClock;
    }

    /** @return the metrics in the text format; never fails (a failed reading leaves the last values) */
    CompletionStage<byte[]> scrape() {
        return refreshed().thenApply(v -> render());
    }

    /** @return done once the IPAM usage is fresh, or {@link #wait} has passed */
    private CompletionStage<Void> refreshed() {
        CompletableFuture<Void> current;
        synchronized (lock) {
            if (reading == null) {
                if (everRead && nanoClock.getAsLong() - lastReadNanos < refreshNanos) {
                    return CompletableFuture.completedFuture(null);
                }
                CompletableFuture<Void> started = read();
                // A reading that completed at once (on this thread) has cleared itself already.
                if (!started.isDone()) {
                    reading = started;
                }
                current = started;
            } else {
                current = reading;
            }
        }
        return current.copy().completeOnTimeout(null, wait.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Starts a reading; its stage never fails. Called with the lock held. */
    private CompletableFuture<Void> read() {
        long started = nanoClock.getAsLong();
        CompletionStage<CadastreMetrics.IpamUsage> stage;
        try {
            stage = usage.get();
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        return stage.toCompletableFuture()
                .handle(
                        (read, failure) -> {
                            synchronized (lock) {
                                if (failure == null) {
                                    metrics.publishIpamUsage(read);
                                    lastReadNanos = started;
                                    everRead = true;
                                } else {
                                    metrics.ipamRefreshFailed();
                                    log.warn(
                                            "could not read the IPAM usage for /metrics; serving the last values: {}",
                                            EntityReads.unwrap(failure).toString());
                                }
                                reading = null;
                            }
                            return null;
                        });
    }

    private byte[] render() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            writer.write(out, metrics.registry().scrape());
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return out.toByteArray();
    }
}
