package io.cadastre.http;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * The buffer pool of the agent's HTTP endpoints (the CNI socket and the admin API), sized for
 * what they carry: requests and replies of a few KiB, one event-loop thread each.
 *
 * <p>Netty's default pool has an arena per core and per buffer kind and grows each arena by chunks
 * of 4 MiB, and a direct chunk is zeroed, hence resident, when it is allocated: the CNI endpoint's
 * first call made 4 MiB of the agent's resident set. Here one arena of each kind grows by chunks of
 * 256 KiB (8 KiB pages, order 5): 175.4 against 179.2 MiB resident after 300 IPAM pairs (four
 * agents each, in turns). A buffer larger than a chunk (a large admin reply; a CNI request may be
 * up to 4 MiB) is allocated and freed on its own, outside the pool.
 */
public final class ServerBuffers {
    /** 8 KiB: Netty's default page. */
    private static final int PAGE_BYTES = 8192;

    /** A chunk is {@code PAGE_BYTES << CHUNK_ORDER}: 256 KiB. */
    private static final int CHUNK_ORDER = 5;

    /** The pool both endpoints allocate from; direct buffers first, which epoll reads into. */
    public static final ByteBufAllocator ALLOCATOR =
            new PooledByteBufAllocator(
                    true,
                    1,
                    1,
                    PAGE_BYTES,
                    CHUNK_ORDER,
                    PooledByteBufAllocator.defaultSmallCacheSize(),
                    PooledByteBufAllocator.defaultNormalCacheSize(),
                    PooledByteBufAllocator.defaultUseCacheForAllThreads());

    private ServerBuffers() {}
}
