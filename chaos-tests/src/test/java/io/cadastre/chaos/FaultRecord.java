package io.cadastre.chaos;

/**
 * A fault the harness injected (kill, pause, partition, Cassandra restart), or something it
 * observed about a member (it exited, the supervisor restarted it, recovery timed out).
 *
 * @param injected true for an injected fault, false for an observation
 * @param target a host name or {@code db}
 * @param endNanos when the fault was lifted ({@link Operation#PENDING} while it lasts); equal to
 *     the start for observations
 */
record FaultRecord(
        long id,
        boolean injected,
        String kind,
        String target,
        long startNanos,
        long endNanos,
        String detail) {
    String describe() {
        return (injected ? "FAULT " : "EVENT ")
                + kind
                + " "
                + target
                + " ["
                + Times.seconds(startNanos)
                + (endNanos == startNanos ? "" : " .. " + Times.seconds(endNanos))
                + "]"
                + (detail == null || detail.isBlank() ? "" : " " + detail);
    }
}
