package io.cadastre.agent;

import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import org.apache.pekko.actor.ActorSystemImpl;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * The JVM's threads with their whole stacks and the locks they hold or wait for, as text for the
 * agent's log: what {@code jstack} would show, taken from inside when a stall is seen, because by
 * the time an operator looks the evidence is gone (the process has exited or recovered).
 * {@link ThreadInfo#toString()} is not used: it cuts every stack at eight frames.
 */
final class ThreadDump {
    /** Frames kept per thread; deeper frames are counted, not printed. */
    static final int MAX_FRAMES = 48;

    private ThreadDump() {}

    /** @return every live thread, one block per thread, each frame on its own line */
    static String take() {
        StringBuilder out = new StringBuilder();
        for (ThreadInfo thread : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
            append(out, thread);
        }
        return out.toString();
    }

    /**
     * @return the actors still alive in {@code system}, one per line with its mailbox's status
     *     (Pekko's own rendering: an actor that does not stop shows which child it waits for), or
     *     why they cannot be listed
     */
    static String actorTree(ActorSystem<?> system) {
        try {
            return ((ActorSystemImpl) Adapter.toClassic(system)).printTree();
        } catch (RuntimeException e) {
            return "(not listed: " + e + ")\n";
        }
    }

    private static void append(StringBuilder out, ThreadInfo thread) {
        out.append('"')
                .append(thread.getThreadName())
                .append("\" ")
                .append(thread.getThreadState());
        if (thread.getLockName() != null) {
            out.append(" on ").append(thread.getLockName());
        }
        if (thread.getLockOwnerName() != null) {
            out.append(" owned by \"").append(thread.getLockOwnerName()).append('"');
        }
        out.append('\n');
        StackTraceElement[] frames = thread.getStackTrace();
        MonitorInfo[] monitors = thread.getLockedMonitors();
        for (int i = 0; i < Math.min(frames.length, MAX_FRAMES); i++) {
            out.append("    at ").append(frames[i]).append('\n');
            for (MonitorInfo monitor : monitors) {
                if (monitor.getLockedStackDepth() == i) {
                    out.append("    - locked ").append(monitor).append('\n');
                }
            }
        }
        if (frames.length > MAX_FRAMES) {
            out.append("    ... ").append(frames.length - MAX_FRAMES).append(" more frames\n");
        }
        for (LockInfo synchronizer : thread.getLockedSynchronizers()) {
            out.append("    - holds ").append(synchronizer).append('\n');
        }
    }
}
