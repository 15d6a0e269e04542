package io.cadastre.bench.report;

/**
 * A goal of issue 5 and whether this run met it.
 *
 * @param text the goal as stated ({@code plugin ADD median ≤ bridge+host-local})
 * @param measured what the run measured, in words and numbers ({@code 0.62× the reference})
 * @param met whether the goal was met
 * @param bound when missed, what bounds the figure; else {@code null}
 */
public record Goal(String text, String measured, boolean met, String bound) {}
