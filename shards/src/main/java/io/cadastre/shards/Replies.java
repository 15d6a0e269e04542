package io.cadastre.shards;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * Where the continuations of an ask run. Pekko's Java asks hand back Scala's adapter of their
 * reply future, which runs every continuation attached without an executor ({@code thenApply},
 * {@code handle}, {@code thenCompose}) on {@code ForkJoinPool.commonPool()}, so that user code can
 * never hold the thread that completed the reply. Cadastre's continuations are short and never
 * block (blocking kernel work has its own executor), so that hop buys nothing and costs a thread
 * wake-up and a context switch per ask: measured by the benchmark suite's {@code agent-cost}
 * profile, the common pool's workers took about 8% of the agent's CPU per IPAM call.
 */
public final class Replies {
    /** Runs a continuation on the thread that completed the stage before it. */
    private static final Executor SAME_THREAD = Runnable::run;

    private Replies() {}

    /**
     * @return a stage completed as {@code reply} is, on the thread that completes {@code reply}
     *     (an actor's, when it is a Pekko reply); its own continuations run there too, unless
     *     given an executor
     */
    public static <T> CompletableFuture<T> onReplyingThread(CompletionStage<T> reply) {
        CompletableFuture<T> direct = new CompletableFuture<>();
        reply.whenCompleteAsync(
                (value, failure) -> {
                    if (failure != null) {
                        direct.completeExceptionally(failure);
                    } else {
                        direct.complete(value);
                    }
                },
                SAME_THREAD);
        return direct;
    }
}
