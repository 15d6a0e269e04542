package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.CadastreMetrics.IpamUsage;
import io.cadastre.shards.CadastreMetrics.NodeUsage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * When /metrics reads the IPAM usage afresh, and what it serves meanwhile: a reading is reused
 * for the refresh period, shared by concurrent scrapes, and a failed or slow one leaves the last
 * values. Readings are futures the test completes; time is a clock the test moves.
 */
class MetricsEndpointTest {
    private static final Duration REFRESH = Duration.ofSeconds(10);

    private final CadastreMetrics metrics = new CadastreMetrics();
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

    /** What the next readings answer, in order; a reading beyond them fails the test. */
    private final Queue<CompletableFuture<IpamUsage>> readings = new ArrayDeque<>();

    private int reads;

    private MetricsEndpoint endpoint(Duration wait) {
        return new MetricsEndpoint(
                metrics,
                () -> {
                    reads++;
                    CompletableFuture<IpamUsage> next = readings.poll();
                    if (next == null) {
                        throw new AssertionError("an unexpected reading");
                    }
                    return next;
                },
                REFRESH,
                wait,
                nanos::get);
    }

    private static IpamUsage inUse(long addresses) {
        return new IpamUsage(
                Map.of("p", 256.0), List.of(new NodeUsage("p", "n1", addresses, 0, 1)));
    }

    private static Map<String, Double> scrape(CompletionStage<byte[]> stage) {
        try {
            return PrometheusText.samples(
                    new String(
                            stage.toCompletableFuture().get(10, TimeUnit.SECONDS),
                            StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static Double inUseSample(Map<String, Double> samples) {
        return samples.get("cadastre_ipam_allocations_in_use{node=\"n1\",pool=\"p\"}");
    }

    private static Double failures(Map<String, Double> samples) {
        return samples.get("cadastre_ipam_metrics_refresh_failures_total");
    }

    @Test
    void aReadingIsReusedForTheRefreshPeriodThenReadAgain() {
        MetricsEndpoint endpoint = endpoint(Duration.ofSeconds(5));
        readings.add(CompletableFuture.completedFuture(inUse(3)));
        assertEquals(3.0, inUseSample(scrape(endpoint.scrape())));
        nanos.addAndGet(REFRESH.toNanos() - 1);
        assertEquals(3.0, inUseSample(scrape(endpoint.scrape())));
        assertEquals(1, reads, "within the refresh period: no second reading");

        nanos.addAndGet(1);
        readings.add(CompletableFuture.completedFuture(inUse(5)));
        assertEquals(5.0, inUseSample(scrape(endpoint.scrape())));
        assertEquals(2, reads);
        assertEquals(0.0, failures(scrape(endpoint.scrape())));
    }

    @Test
    void scrapesDuringAReadingShareIt() {
        MetricsEndpoint endpoint = endpoint(Duration.ofSeconds(30));
        CompletableFuture<IpamUsage> slow = new CompletableFuture<>();
        readings.add(slow);
        CompletionStage<byte[]> first = endpoint.scrape();
        CompletionStage<byte[]> second = endpoint.scrape();
        assertFalse(first.toCompletableFuture().isDone(), "waits for the reading");
        assertEquals(1, reads);

        slow.complete(inUse(7));
        assertEquals(7.0, inUseSample(scrape(first)));
        assertEquals(7.0, inUseSample(scrape(second)));
        assertEquals(1, reads);
    }

    @Test
    void aFailedReadingIsCountedAndLeavesTheLastValuesAndTheNextScrapeTriesAgain() {
        MetricsEndpoint endpoint = endpoint(Duration.ofSeconds(5));
        readings.add(CompletableFuture.completedFuture(inUse(3)));
        scrape(endpoint.scrape());
        nanos.addAndGet(REFRESH.toNanos());
        readings.add(CompletableFuture.failedFuture(AdminException.notFound("entity gone")));
        Map<String, Double> afterFailure = scrape(endpoint.scrape());
        assertEquals(3.0, inUseSample(afterFailure), "the last values");
        assertEquals(256.0, afterFailure.get("cadastre_ipam_ippool_size{pool=\"p\"}"));
        assertEquals(1.0, failures(afterFailure));

        readings.add(CompletableFuture.completedFuture(inUse(4)));
        assertEquals(
                4.0,
                inUseSample(scrape(endpoint.scrape())),
                "a failure is not reused: read again at once");
        assertEquals(3, reads);
    }

    @Test
    void aSourceThatThrowsIsAFailedReading() {
        MetricsEndpoint endpoint =
                new MetricsEndpoint(
                        metrics,
                        () -> {
                            throw new IllegalStateException("a bug");
                        },
                        REFRESH,
                        Duration.ofSeconds(5),
                        nanos::get);
        Map<String, Double> samples = scrape(endpoint.scrape());
        assertEquals(1.0, failures(samples));
        assertEquals(null, inUseSample(samples), "no values yet");
    }

    @Test
    void aSlowReadingIsNotWaitedForBeyondTheWaitAndServesTheNextScrape() {
        MetricsEndpoint endpoint = endpoint(Duration.ZERO);
        readings.add(CompletableFuture.completedFuture(inUse(3)));
        scrape(endpoint.scrape());
        nanos.addAndGet(REFRESH.toNanos());
        CompletableFuture<IpamUsage> slow = new CompletableFuture<>();
        readings.add(slow);
        assertEquals(3.0, inUseSample(scrape(endpoint.scrape())), "answered with the last values");

        slow.complete(inUse(9));
        assertEquals(9.0, inUseSample(scrape(endpoint.scrape())));
        assertEquals(2, reads, "the slow reading served the later scrape");
    }

    @Test
    void everyMetricOfTheRegistryIsServedInTheTextFormat() {
        metrics.cniAnswered("ADD", "ok", Duration.ofMillis(4));
        readings.add(CompletableFuture.completedFuture(inUse(1)));
        byte[] body = endpoint(Duration.ofSeconds(5)).scrape().toCompletableFuture().join();
        String text = new String(body, StandardCharsets.UTF_8);
        assertTrue(text.contains("# TYPE cadastre_cni_requests_total counter\n"), text);
        assertTrue(
                text.contains("cadastre_cni_requests_total{result=\"ok\",verb=\"ADD\"} 1.0\n"),
                text);
        assertTrue(text.contains("# TYPE cadastre_cni_request_duration_seconds histogram\n"), text);
        assertTrue(
                text.contains(
                        "cadastre_cni_request_duration_seconds_bucket{verb=\"ADD\",le=\"0.005\"} 1\n"),
                text);
        assertTrue(
                text.contains(
                        "cadastre_cni_request_duration_seconds_bucket{verb=\"ADD\",le=\"+Inf\"} 1\n"),
                text);
        assertTrue(text.contains("# TYPE cadastre_ipam_allocations_in_use gauge\n"), text);
        assertEquals("text/plain; version=0.0.4; charset=utf-8", MetricsEndpoint.CONTENT_TYPE);
    }
}
