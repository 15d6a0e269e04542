package io.cadastre.cni;

/** CNI error codes: the spec's well-known ones (CNI spec 1.1 §Error) and Cadastre's own (100+). */
public final class CniCodes {
    public static final int INCOMPATIBLE_VERSION = 1;
    public static final int UNSUPPORTED_FIELD = 2;
    public static final int UNKNOWN_CONTAINER = 3;
    public static final int INVALID_ENVIRONMENT = 4;
    public static final int IO_FAILURE = 5;
    public static final int DECODING_FAILURE = 6;
    public static final int INVALID_NETWORK_CONFIG = 7;
    public static final int TRY_AGAIN_LATER = 11;
    public static final int NOT_AVAILABLE = 50;
    public static final int LIMITED_CONNECTIVITY = 51;

    /** No address left in the pools that may serve this node. */
    public static final int POOL_EXHAUSTED = 100;

    /** A requested specific address is already held by another attachment. */
    public static final int ADDRESS_TAKEN = 101;

    /** A requested specific address lies in no pool, or in a block this node may not use. */
    public static final int ADDRESS_NOT_IN_POOL = 102;

    /** The kernel refused a dataplane step (veth, address, route). */
    public static final int DATAPLANE_FAILURE = 103;

    /**
     * CHECK found the attachment differing from its {@code prevResult}; {@code details} lists the
     * differences, one per line (added by the {@code http} module: CniBackend#check reports
     * differences as data, and the spec defines no code for them).
     */
    public static final int CHECK_FAILED = 104;

    /**
     * A block's pool gave it to this node while the block still serves another node's
     * allocations: IPAM's state needs a look ({@code cadastrectl ipam check}); retrying alone does
     * not help.
     */
    public static final int BLOCK_AFFINITY_CONFLICT = 105;

    private CniCodes() {}
}
