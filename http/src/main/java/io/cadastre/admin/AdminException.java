package io.cadastre.admin;

/**
 * A request the admin API answers with an error: {@link #kind()} picks the HTTP status, the
 * message becomes the body's {@code error}.
 */
public final class AdminException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The kinds of failure and their HTTP statuses. */
    public enum Kind {
        /** Malformed input (address, JSON, a missing or conflicting field): 400, nothing changed. */
        BAD_REQUEST(400),
        /** No bearer token, or the wrong one: 401. */
        UNAUTHORIZED(401),
        /** An unknown pool, node, or an address in no pool: 404. */
        NOT_FOUND(404),
        /**
         * The state forbids the change: a pool name or range taken, a pool or node that still holds
         * allocations, a node whose agent is a member: 409, nothing changed unless the message says so.
         */
        CONFLICT(409),
        /** An entity did not answer in time: 503; the caller may retry (reads and releases are idempotent). */
        UNAVAILABLE(503),
        /** A bug in the server (logged): 500. */
        INTERNAL(500);

        private final int status;

        Kind(int status) {
            this.status = status;
        }

        /** @return the HTTP status code */
        public int status() {
            return status;
        }
    }

    private final Kind kind;

    public AdminException(Kind kind, String message) {
        this(kind, message, null);
    }

    public AdminException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    static AdminException badRequest(String message) {
        return new AdminException(Kind.BAD_REQUEST, message);
    }

    static AdminException conflict(String message) {
        return new AdminException(Kind.CONFLICT, message);
    }

    static AdminException notFound(String message) {
        return new AdminException(Kind.NOT_FOUND, message);
    }
}
