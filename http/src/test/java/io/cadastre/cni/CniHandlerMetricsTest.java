package io.cadastre.cni;

import static io.cadastre.cni.CniHandlerTest.PLUGIN;
import static io.cadastre.cni.CniHandlerTest.add;
import static io.cadastre.cni.CniHandlerTest.req;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.shards.CadastreMetrics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Every request the handler answers is reported once, with its verb and result, to the listener,
 * which the agent wires to {@link CadastreMetrics#cniAnswered} as here. In module http, beside the
 * endpoint that serves these series, since cni-bridge does not depend on the metrics registry.
 */
class CniHandlerMetricsTest {
    private record Heard(String verb, String result, Duration took) {}

    private final FakeBackend backend = new FakeBackend();
    private final CadastreMetrics metrics = new CadastreMetrics();
    private final List<Heard> heard = new CopyOnWriteArrayList<>();
    private final CniHandler handler =
            new CniHandler(
                    backend,
                    (verb, result, took) -> {
                        heard.add(new Heard(verb, result, took));
                        metrics.cniAnswered(verb, result, took);
                    });

    private CniResponse run(CniRequest request) {
        return handler.handle(request).toCompletableFuture().join();
    }

    /** @return {@code cadastre_cni_requests_total{verb, result}}, 0 when there is no such series */
    private double requests(String verb, String result) {
        return metrics.sample("cadastre_cni_requests_total", "verb", verb, "result", result)
                .orElse(0);
    }

    /** @return how many durations {@code cadastre_cni_request_duration_seconds{verb}} observed, 0 when none */
    private double timed(String verb) {
        return metrics.sample("cadastre_cni_request_duration_seconds_count", "verb", verb)
                .orElse(0);
    }

    @Test
    void aSuccessfulAddCountsOkForAddAndIsTimed() {
        assertEquals(200, run(add(PLUGIN)).httpStatus());
        assertEquals(1.0, requests("ADD", "ok"));
        assertEquals(1.0, timed("ADD"));
        assertEquals(0.0, timed("DEL"));
        assertEquals(
                List.of("ADD ok"), heard.stream().map(h -> h.verb() + " " + h.result()).toList());
    }

    @Test
    void eachVerbIsCountedUnderItsOwnNameWithTheCodeItWasAnswered() {
        backend.onCheck =
                CompletableFuture.completedFuture(List.of("eth0: no address 198.18.0.5/32"));
        run(req("DEL", "c1", null, "eth0", null, PLUGIN));
        run(
                req(
                        "CHECK",
                        "c1",
                        "/n",
                        "eth0",
                        null,
                        "{'cniVersion':'1.1.0','name':'n','type':'cadastre','prevResult':{'cniVersion':'1.1.0','ips':[]}}"));
        run(
                req(
                        "GC",
                        null,
                        null,
                        null,
                        null,
                        "{'cniVersion':'1.1.0','name':'n','type':'cadastre','cni.dev/valid-attachments':[]}"));
        run(
                req(
                        "STATUS",
                        null,
                        null,
                        null,
                        null,
                        "{'cniVersion':'1.1.0','name':'n','type':'cadastre'}"));
        run(req("VERSION", null, null, null, null, "{'cniVersion':'1.1.0'}"));

        assertEquals(1.0, requests("DEL", "ok"));
        assertEquals(1.0, requests("CHECK", String.valueOf(CniCodes.CHECK_FAILED)));
        assertEquals(1.0, requests("GC", "ok"));
        assertEquals(1.0, requests("STATUS", "ok"));
        assertEquals(1.0, requests("VERSION", "ok"));
        for (String verb : List.of("DEL", "CHECK", "GC", "STATUS", "VERSION")) {
            assertEquals(1.0, timed(verb), verb);
        }
        assertEquals(0.0, requests("ADD", "ok"));
    }

    @Test
    void failuresAreCountedByTheirCniCode() {
        backend.onAdd =
                r ->
                        CompletableFuture.failedFuture(
                                new CniException(CniCodes.POOL_EXHAUSTED, "no address left"));
        run(add(PLUGIN));
        backend.onAdd =
                r -> {
                    throw new IllegalStateException("a bug");
                };
        run(add(PLUGIN));
        run(req("ADD", "c1", null, "eth0", null, PLUGIN)); // no CNI_NETNS: refused in validation
        assertEquals(1.0, requests("ADD", "100"));
        assertEquals(1.0, requests("ADD", "11"), "anything but a CniException is code 11");
        assertEquals(1.0, requests("ADD", "4"));
        assertEquals(0.0, requests("ADD", "ok"));
        assertEquals(3.0, timed("ADD"));
    }

    @Test
    void aRequestWithoutAVerbIsCountedAsUnknown() {
        run(req("UPDATE", "c1", "/n", "eth0", null, PLUGIN));
        run(req(null, "c1", "/n", "eth0", null, PLUGIN));
        Map<String, Optional<String>> undecodable =
                Map.of(CniRequest.HEADER_COMMAND, Optional.of("%ZZ"));
        CniResponse refused =
                handler.handle(
                                name -> undecodable.getOrDefault(name, Optional.empty()),
                                PLUGIN.getBytes(StandardCharsets.UTF_8))
                        .toCompletableFuture()
                        .join();
        assertEquals(400, refused.httpStatus());
        assertEquals(3.0, requests(CniListener.UNKNOWN_VERB, "4"));
        assertEquals(3, heard.size());
    }

    @Test
    void aRequestIsReportedOnceWhenItsAnswerIsReadyWithTheTimeSinceItArrived() {
        CompletableFuture<CniBackend.AddResult> pending = new CompletableFuture<>();
        backend.onAdd = r -> pending;
        long before = System.nanoTime();
        CompletionStage<CniResponse> answer = handler.handle(add(PLUGIN));
        long handed = System.nanoTime();
        assertFalse(answer.toCompletableFuture().isDone());
        assertTrue(heard.isEmpty(), "nothing is reported before the answer");
        assertEquals(0.0, timed("ADD"));

        // The handler reads its clock inside complete(): after this, before complete() returns.
        long completing = System.nanoTime();
        pending.complete(FakeBackend.DEFAULT_RESULT);
        assertEquals(200, answer.toCompletableFuture().join().httpStatus());
        long after = System.nanoTime();
        assertEquals(1, heard.size());
        Duration took = heard.get(0).took();
        assertTrue(took.toNanos() >= completing - handed, "covers the backend's time: " + took);
        assertTrue(took.toNanos() <= after - before, "no longer than the call: " + took);
        assertEquals(1.0, requests("ADD", "ok"));
    }

    @Test
    void aFailingListenerDoesNotFailTheAnswer() {
        CniHandler failing =
                new CniHandler(
                        backend,
                        (verb, result, took) -> {
                            throw new IllegalStateException("metrics broke");
                        });
        assertEquals(200, failing.handle(add(PLUGIN)).toCompletableFuture().join().httpStatus());
    }
}
