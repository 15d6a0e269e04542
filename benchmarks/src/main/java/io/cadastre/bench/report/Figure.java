package io.cadastre.bench.report;

/**
 * One measured quantity of one subject, a row of the report's table.
 *
 * @param metric what was measured ({@code ADD}, {@code DEL}, {@code burst of 50: all wired})
 * @param subject who was measured: {@code cadastre} or a peer ({@code bridge+host-local})
 * @param unit the unit of the distribution's values ({@code ms}, {@code ops/s}, {@code MiB}, {@code bytes})
 */
public record Figure(String metric, String subject, String unit, Distribution distribution) {}
