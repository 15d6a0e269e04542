package io.cadastre.cni;

import java.time.Duration;

/**
 * Told of every request {@link CniHandler} answers, once, when it answers: for metrics. The agent
 * wires it to {@code CadastreMetrics#cniAnswered}; this module stays free of the metrics registry.
 * Called on whatever thread completes the request (an I/O or actor thread): it must be quick and
 * must not block. What it throws is logged and otherwise ignored.
 */
@FunctionalInterface
public interface CniListener {
    /** The verb reported for a request whose {@code CNI_COMMAND} is missing, undecodable or no CNI verb. */
    String UNKNOWN_VERB = "unknown";

    /** The result reported for a success. */
    String OK = "ok";

    /** Hears nothing. */
    CniListener NONE = (verb, result, took) -> {};

    /**
     * @param verb the {@link CniCommand} name ({@code ADD}, ...), or {@value #UNKNOWN_VERB}
     * @param result {@value #OK}, or the CNI error code answered, in decimal ({@code "7"}, {@code "100"})
     * @param took from the handler receiving the request to its answer
     */
    void answered(String verb, String result, Duration took);
}
