package io.cadastre.shards;

/** An IPAM request that cannot be served; {@link #reason()} says which kind, the message says why. */
public class IpamException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * The kinds of refusal, each mapped to one CNI error code at the edge (the table is in the
     * README, section "CNI error codes", and in {@code NodeAgentCniBackend.toCni}). Entities send
     * them in {@link Refusal}s.
     */
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
        /** The pool is disabled: no new block comes from it (a specific address in it included). */
        POOL_DISABLED,
        /** The node already holds the pool's {@code maxBlocksPerNode} blocks: it may claim no other. */
        NODE_BLOCK_LIMIT,
        /**
         * The block is being released ({@link BlockReleases}); the release finishes or is cancelled
         * within a few round trips, after which the block may be claimed again.
         */
        BLOCK_RELEASING,
        /**
         * The block (or the pool's claim of it) is affine to another node than the one asking. On
         * an ADD this means the pool and the block disagree about the block's node: the state
         * needs a look ({@code cadastrectl ipam check}).
         */
        AFFINE_TO_OTHER_NODE,
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
