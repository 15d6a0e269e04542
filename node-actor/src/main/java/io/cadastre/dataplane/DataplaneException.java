package io.cadastre.dataplane;

/**
 * A dataplane operation failed. The message names the step and the kernel's error
 * (e.g. {@code "RTM_NEWLINK veth cad1a2b3c4d5e6: File exists (errno 17)"}); {@link #kind()} says
 * what the caller can tell the runtime (the CNI layer maps it to an error code).
 */
public class DataplaneException extends Exception {
    private static final long serialVersionUID = 1L;

    /** What went wrong, as far as the caller's answer depends on it. */
    public enum Kind {
        /** The kernel refused a step, or the state could not be read. */
        FAILED,
        /** The pod's network namespace does not exist (or its file is no network namespace any more). */
        NETNS_MISSING,
        /**
         * The path names a network namespace this pod may not be wired into: the host's own (this
         * process's or PID 1's; wiring it would put the pod's addresses and default routes on the
         * host), or another than the one the attachment is wired into already.
         */
        INVALID_NETNS,
        /**
         * The pod's host-side link exists already but is not wired as the attachment asks (a
         * half-done earlier attempt, or a different netns or address set): it must be unwired
         * before it can be wired again.
         */
        WIRED_DIFFERENTLY
    }

    private final Kind kind;

    public DataplaneException(String message, Kind kind, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public DataplaneException(String message, boolean netnsMissing, Throwable cause) {
        this(message, netnsMissing ? Kind.NETNS_MISSING : Kind.FAILED, cause);
    }

    public DataplaneException(String message) {
        this(message, Kind.FAILED, null);
    }

    /** @return what went wrong (see {@link Kind}) */
    public Kind kind() {
        return kind;
    }

    /** @return true when the failure is that the pod's network namespace does not exist */
    public boolean netnsMissing() {
        return kind == Kind.NETNS_MISSING;
    }
}
