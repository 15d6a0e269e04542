package io.cadastre.shards;

/** An IPAM request that cannot be served; {@link #reason()} says which kind, the message says why. */
public class IpamException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The kinds of refusal, each mapped to one CNI error code at the edge. */
    public enum Reason {
        /** The request names a pool that is not defined. */
        UNKNOWN_POOL,
        /** The request itself is malformed (e.g. two addresses of one family). */
        INVALID_REQUEST,
        /** No pool that may serve this node has an address left. */
        POOL_EXHAUSTED,
        /** A requested specific address is held by another attachment. */
        ADDRESS_TAKEN,
        /** A requested specific address is in no pool, or in a block this node may not use. */
        ADDRESS_NOT_IN_POOL,
        /**
         * The state forbids a change: a pool with that name or an overlapping range exists, or a
         * pool or node still holds allocations. Nothing changed unless the message says so.
         */
        CONFLICT,
        /** An entity did not answer in time or failed; the caller may retry. */
        UNAVAILABLE
    }

    private final Reason reason;

    public IpamException(Reason reason, String message) {
        this(reason, message, null);
    }

    public IpamException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
