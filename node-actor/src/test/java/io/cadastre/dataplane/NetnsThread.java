package io.cadastre.dataplane;

import static io.cadastre.dataplane.LibC.C;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * One platform thread that entered a test's network namespace for good, to run code that acts on
 * "the calling thread's namespace" (NetlinkHostRouting, HostSysctls, NetlinkDataplane's host side)
 * against a test host. Only this thread moves: the process and the test's own threads stay where
 * they are. Nothing that starts threads may run on it (they would inherit the namespace), so the
 * tests never call {@link Ip} here; the thread dies with {@link #close}.
 */
final class NetnsThread implements AutoCloseable {
    private final String netns;
    private final ExecutorService executor;

    private NetnsThread(String netns, ExecutorService executor) {
        this.netns = netns;
        this.executor = executor;
    }

    /** @param netns a name under /var/run/netns */
    static NetnsThread enter(String netns) throws Exception {
        ExecutorService executor =
                Executors.newSingleThreadExecutor(
                        r -> {
                            Thread t = new Thread(r, "cadtest-in-" + netns);
                            t.setDaemon(true);
                            return t;
                        });
        NetnsThread thread = new NetnsThread(netns, executor);
        try {
            thread.call(
                    () -> {
                        int fd = C.open("/var/run/netns/" + netns, LibC.O_RDONLY | LibC.O_CLOEXEC);
                        if (fd < 0) {
                            throw new SyscallException("open netns " + netns, LibC.errno());
                        }
                        try {
                            if (C.setns(fd, LibC.CLONE_NEWNET) != 0) {
                                throw new SyscallException("setns " + netns, LibC.errno());
                            }
                        } finally {
                            LibC.closeQuietly(fd);
                        }
                        return null;
                    });
        } catch (Exception | Error e) {
            executor.shutdownNow();
            throw e;
        }
        return thread;
    }

    String netns() {
        return netns;
    }

    /** Runs {@code task} on the thread inside the namespace; its exception is rethrown as is. */
    <T> T call(Callable<T> task) throws Exception {
        try {
            return executor.submit(task).get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception ex) {
                throw ex;
            }
            throw (Error) cause;
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
