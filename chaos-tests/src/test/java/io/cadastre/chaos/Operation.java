package io.cadastre.chaos;

import java.util.List;
import java.util.Objects;

/**
 * One CNI call as the {@link History} saw it: invoked at one time and completed at a later one,
 * with the outcome the plugin reported. Times are nanoseconds since the history's origin (one
 * monotonic clock for every thread of the test).
 *
 * @param id unique, increasing in invocation order
 * @param client the client thread on the host (-1 for the harness's own calls)
 * @param attachment the attachment, or {@code null} for GC
 * @param full whether the full plugin wired a pod netns (else IPAM-only)
 * @param completedNanos {@link #PENDING} while the call has not returned
 * @param addresses for an ADD that succeeded: every address of the result, without prefix
 * @param code the CNI error code for FAIL and UNKNOWN (-1 when the plugin gave none), 0 for OK
 * @param detail the error's msg and details, or the exception, shortened
 */
record Operation(
        long id,
        Phase phase,
        Kind kind,
        Purpose purpose,
        String host,
        int client,
        Attachment attachment,
        boolean full,
        long invokedNanos,
        long completedNanos,
        Status status,
        List<String> addresses,
        int code,
        String detail) {

    static final long PENDING = Long.MAX_VALUE;

    enum Kind {
        ADD,
        DEL,
        GC
    }

    /**
     * OK: it took effect. FAIL: a definite error (nothing allocated; e.g. 100 pool exhausted).
     * UNKNOWN: code 11, no reply, or no answer at all — it may or may not have taken effect.
     */
    enum Status {
        OK,
        FAIL,
        UNKNOWN
    }

    /** The test's phases, in order; the checker reads the live set at the end of WORKLOAD. */
    enum Phase {
        WORKLOAD,
        SETTLE,
        DURABLE,
        CLEANUP,
        EXHAUST,
        EXHAUST_CLEANUP
    }

    /**
     * Why the call was made. NEW: ADD of a fresh attachment. RETRY: ADD of a live acknowledged
     * attachment (must answer the same addresses). RESOLVE: ADD repeated after an unknown outcome.
     * RELEASE: DEL. PROBE: the settle check's ADD. VERIFY: the durability check's ADD. SWEEP: GC.
     * FILL: the exhaustion check's ADD.
     */
    enum Purpose {
        NEW,
        RETRY,
        RESOLVE,
        RELEASE,
        PROBE,
        VERIFY,
        SWEEP,
        FILL
    }

    Operation {
        Objects.requireNonNull(phase);
        Objects.requireNonNull(kind);
        Objects.requireNonNull(purpose);
        Objects.requireNonNull(host);
        Objects.requireNonNull(status);
        addresses = List.copyOf(addresses);
    }

    boolean ok() {
        return status == Status.OK;
    }

    /** @return whether this is a successful ADD of the workload phase */
    boolean okWorkloadAdd() {
        return phase == Phase.WORKLOAD && kind == Kind.ADD && ok();
    }

    boolean pending() {
        return completedNanos == PENDING;
    }

    Operation completed(
            long atNanos, Status status, List<String> addresses, int code, String detail) {
        return new Operation(
                id,
                phase,
                kind,
                purpose,
                host,
                client,
                attachment,
                full,
                invokedNanos,
                atNanos,
                status,
                addresses,
                code,
                detail);
    }

    /** A short human-readable line for reports. */
    String describe() {
        StringBuilder b = new StringBuilder();
        b.append('#')
                .append(id)
                .append(' ')
                .append(kind)
                .append('/')
                .append(purpose)
                .append(full ? " full" : "")
                .append(' ')
                .append(attachment == null ? host : attachment)
                .append(" [")
                .append(Times.seconds(invokedNanos))
                .append(" .. ")
                .append(pending() ? "never" : Times.seconds(completedNanos))
                .append("] ")
                .append(status);
        if (!addresses.isEmpty()) {
            b.append(' ').append(addresses);
        }
        if (status != Status.OK) {
            b.append(" code ").append(code);
            if (detail != null && !detail.isBlank()) {
                b.append(": ").append(detail);
            }
        }
        return b.toString();
    }
}
