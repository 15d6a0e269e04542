package io.cadastre.shards;

import java.time.Duration;

/**
 * How long {@link Ipam} waits for the sharded entities.
 *
 * <p>A message sent to a member that has just crashed is lost, and sharding only routes to the
 * entity's new home once the member is downed and removed. So a request does not wait the whole
 * {@code total} on one message: it asks again every {@code perAttempt} until {@code total} has
 * passed. Asking again is safe because every command Ipam sends is idempotent per attachment, and
 * a claim of a new block names the blocks its node already uses, so that a repeated one finds the
 * block the first claimed ({@code PoolEntity.ClaimBlock}, its {@code known}).
 *
 * @param total how long a request waits for an entity in all before it fails UNAVAILABLE
 * @param perAttempt how long one message waits for its reply before it is sent again; at most
 *     {@code total}
 * @param confirmSlowerThan replies to state-changing commands slower than this are confirmed by a
 *     read (see {@link Ipam}); zero confirms every one
 */
public record AskTimeouts(Duration total, Duration perAttempt, Duration confirmSlowerThan) {
    public AskTimeouts {
        if (total.isNegative()
                || total.isZero()
                || perAttempt.isNegative()
                || perAttempt.isZero()
                || perAttempt.compareTo(total) > 0
                || confirmSlowerThan.isNegative()) {
            throw new IllegalArgumentException(
                    "ask timeouts must be positive, per attempt at most the total: "
                            + total
                            + ", "
                            + perAttempt
                            + ", "
                            + confirmSlowerThan);
        }
    }

    /** One attempt only: waits {@code total} for each reply. */
    public static AskTimeouts single(Duration total, Duration confirmSlowerThan) {
        return new AskTimeouts(total, total, confirmSlowerThan);
    }
}
