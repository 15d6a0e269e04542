package io.cadastre.agent;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Waits for the agent's actor system to end, and says so when it never will: a shutdown whose
 * phases have all run (each bounded by Pekko's phase timeouts) while the system still has not
 * terminated {@code grace} later. An actor blocked on its thread cannot stop, and the system
 * then waits for it forever; a member downed by the cluster would sit there as a process that
 * looks alive to its supervisor (kubelet, systemd) yet serves nothing and never rejoins, as a
 * chaos run saw after a SIGSTOP. The caller ends the process instead, so that it is restarted.
 */
final class TerminationWatch {
    /** How often the shutdown's start is looked for, in milliseconds. */
    static final long POLL_MILLIS = 200;

    private TerminationWatch() {}

    /**
     * Blocks until the actor system has terminated, or its coordinated shutdown has run all its
     * phases and {@code grace} has passed without termination.
     *
     * @return true when the system terminated, false when it is stuck
     */
    static boolean await(ActorSystem<?> system, Duration grace) throws InterruptedException {
        CompletableFuture<?> terminated = system.getWhenTerminated().toCompletableFuture();
        CoordinatedShutdown shutdown = CoordinatedShutdown.get(system);
        while (!waitFor(terminated, POLL_MILLIS)) {
            if (shutdown.getShutdownReason().isPresent()) {
                // Already running: this returns the running shutdown's completion; the reason is
                // not used.
                CompletableFuture<?> phases =
                        shutdown.runAll(CoordinatedShutdown.unknownReason()).toCompletableFuture();
                while (!phases.isDone() && !terminated.isDone()) {
                    waitFor(CompletableFuture.anyOf(phases, terminated), POLL_MILLIS);
                }
                return waitFor(terminated, grace.toMillis());
            }
        }
        return true;
    }

    /** @return whether {@code future} completed (normally or not) within {@code millis} */
    private static boolean waitFor(CompletableFuture<?> future, long millis)
            throws InterruptedException {
        try {
            future.get(millis, TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            return true;
        } catch (TimeoutException e) {
            return false;
        }
    }
}
