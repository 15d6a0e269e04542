package io.cadastre.dataplane;

import static io.cadastre.dataplane.LibC.C;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An open network namespace: an fd on its nsfs file (e.g. {@code /var/run/netns/x}), usable as
 * IFLA_NET_NS_FD, and the way to get a netlink socket that talks to that namespace.
 *
 * <p>setns(2) moves only the calling OS thread, so {@link #rtnetlink()} never switches a caller's
 * thread (which may be a pooled or virtual thread). A platform thread of its own
 * ({@code cadastre-netns}) enters the namespace, creates the socket and switches back; a socket
 * keeps the namespace it was created in, so the caller then uses it from its own thread. That
 * thread runs nothing else, and each of its tasks enters the target namespace explicitly, so it
 * never acts on the namespace it happens to be in. A thread whose switch back failed ends (its
 * task throws past the pool, which replaces it): it never runs another task. It is one thread
 * reused, not one per socket: starting a thread cost about 0.1 ms per socket, twice per ADD.
 * Close to release the fd; not shared between threads.
 */
final class Netns implements AutoCloseable {
    private static final AtomicLong THREADS = new AtomicLong();

    /** Runs {@link #socketInside} only; a worker whose switch back failed is replaced. */
    private static final ThreadPoolExecutor SOCKET_THREAD =
            new ThreadPoolExecutor(
                    1,
                    1,
                    0,
                    TimeUnit.MILLISECONDS,
                    new LinkedBlockingQueue<>(),
                    r -> {
                        Thread t = new Thread(r, "cadastre-netns-" + THREADS.incrementAndGet());
                        t.setDaemon(true);
                        t.setUncaughtExceptionHandler(
                                (thread, e) -> {}); // the task's caller has the failure
                        return t;
                    });

    private final String path;
    private final int fd;
    private boolean closed;

    private Netns(String path, int fd) {
        this.path = path;
        this.fd = fd;
    }

    /**
     * Opens the namespace file, not yet checking what it is ({@link #openPod} does).
     *
     * @throws DataplaneException with {@code netnsMissing()} when the path does not exist
     */
    private static Netns open(String path) throws DataplaneException {
        int fd = C.open(path, LibC.O_RDONLY | LibC.O_CLOEXEC);
        if (fd < 0) {
            int errno = LibC.errno();
            // A path no file can have (a loop of links, a name past NAME_MAX) is a bad CNI_NETNS.
            DataplaneException.Kind kind =
                    errno == LibC.ENOENT || errno == LibC.ENOTDIR
                            ? DataplaneException.Kind.NETNS_MISSING
                            : errno == LibC.ELOOP || errno == LibC.ENAMETOOLONG
                                    ? DataplaneException.Kind.INVALID_NETNS
                                    : DataplaneException.Kind.FAILED;
            throw new DataplaneException(
                    "open netns " + shown(path) + ": " + LibC.describe(errno), kind, null);
        }
        return new Netns(path, fd);
    }

    /**
     * Opens a pod's namespace file and refuses one that is a host's (see {@link Identity#host()}):
     * a runtime, or whoever controls {@code CNI_NETNS}, could otherwise make the pod's wiring
     * land in the host namespace. The identity is read from the open fd, so a path swapped after
     * the check cannot slip past it.
     *
     * @param host the identities of the namespaces no pod may use
     * @throws DataplaneException {@code NETNS_MISSING} when the path does not exist or is no
     *     network namespace, {@code INVALID_NETNS} when it is one of {@code host} or no file can
     *     have it (a loop of symbolic links, a name longer than NAME_MAX)
     */
    static Netns openPod(String path, List<Identity> host) throws DataplaneException {
        Netns netns = open(path);
        try {
            // Any other file (a plain file, the mount point of a deleted namespace, another
            // kind of namespace) fails the ioctl or answers another type.
            if (C.ioctl(netns.fd, LibC.NS_GET_NSTYPE) != LibC.CLONE_NEWNET) {
                throw new DataplaneException(
                        "netns " + shown(path) + " is not a network namespace",
                        DataplaneException.Kind.NETNS_MISSING,
                        null);
            }
            Identity identity = Identity.of(Path.of("/proc/self/fd/" + netns.fd));
            if (host.contains(identity)) {
                throw new DataplaneException(
                        "netns " + shown(path) + " is the host's network namespace, not a pod's",
                        DataplaneException.Kind.INVALID_NETNS,
                        null);
            }
            return netns;
        } catch (IOException e) {
            netns.close();
            throw new DataplaneException(
                    "stat netns " + shown(path) + ": " + e, DataplaneException.Kind.FAILED, e);
        } catch (DataplaneException e) {
            netns.close();
            throw e;
        }
    }

    /**
     * A namespace's identity: the device and inode of its nsfs file, equal for every path that
     * names the same namespace (ioctl NS_GET_NSTYPE's man page, namespaces(7) "/proc/[pid]/ns/").
     *
     * @param dev st_dev of the nsfs file
     * @param ino st_ino of the nsfs file
     */
    record Identity(long dev, long ino) {
        /**
         * @return the identity of what {@code path} names, following links (so {@code /proc/self/ns/net}
         *     gives the namespace, not the link)
         * @throws IOException when it cannot be read
         */
        static Identity of(Path path) throws IOException {
            Map<String, Object> a = Files.readAttributes(path, "unix:dev,ino");
            return new Identity(
                    ((Number) a.get("dev")).longValue(), ((Number) a.get("ino")).longValue());
        }

        /**
         * @return the network namespaces of this process and of PID 1 (the machine's own when the
         *     agent runs in a container or a test namespace), those that can be read
         */
        static List<Identity> host() {
            List<Identity> ids = new ArrayList<>();
            for (String p : new String[] {"/proc/self/ns/net", "/proc/1/ns/net"}) {
                try {
                    ids.add(of(Path.of(p)));
                } catch (IOException | UnsupportedOperationException e) {
                    // /proc/1 may be hidden (hidepid); this process's own is enough then.
                }
            }
            return List.copyOf(ids);
        }
    }

    /** @return the path as messages show it ({@link #shown}) */
    String path() {
        return shown(path);
    }

    /**
     * A {@code CNI_NETNS} as an error message or log line shows it: cut to 64 characters, as the
     * CNI handler cuts every value it echoes (SECURITY.md), so a 4 KiB path cannot fill a reply.
     *
     * @param path a namespace path
     * @return the path, or its first 64 characters, "…" and its length
     */
    static String shown(String path) {
        return path.length() <= 64
                ? path
                : path.substring(0, 64) + "… (" + path.length() + " characters)";
    }

    /** @return the fd for IFLA_NET_NS_FD; valid until {@link #close()} */
    int fd() {
        return fd;
    }

    /**
     * Opens a netlink socket inside this namespace.
     *
     * @throws DataplaneException with {@code netnsMissing()} when the file is not a network
     *     namespace (e.g. the mount point of a deleted one), or on any socket error
     */
    Rtnetlink rtnetlink() throws DataplaneException {
        CompletableFuture<Integer> socket = new CompletableFuture<>();
        SOCKET_THREAD.execute(
                () -> {
                    try {
                        socket.complete(socketInside());
                    } catch (StrandedThread e) {
                        socket.completeExceptionally(e.getCause());
                        // This thread may be left in the pod's namespace: it ends here, and
                        // the pool starts another for the next socket.
                        throw e;
                    } catch (SyscallException | NotANetns | RuntimeException e) {
                        socket.completeExceptionally(e);
                    }
                });
        int socketFd;
        try {
            socketFd = getUninterruptibly(socket);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw new DataplaneException(cause.getMessage(), cause instanceof NotANetns, cause);
        }
        try {
            return new Rtnetlink(NetlinkSocket.adopt(socketFd), " in netns " + shown(path));
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage() + " in netns " + shown(path), false, e);
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            LibC.closeQuietly(fd);
        }
    }

    /** Runs on {@link #SOCKET_THREAD}: enter, socket(), leave. */
    private int socketInside() throws SyscallException, NotANetns {
        int own = C.open("/proc/thread-self/ns/net", LibC.O_RDONLY | LibC.O_CLOEXEC);
        if (own < 0) {
            throw new SyscallException("open /proc/thread-self/ns/net", LibC.errno());
        }
        try {
            if (C.setns(fd, LibC.CLONE_NEWNET) != 0) {
                int errno = LibC.errno();
                if (errno == LibC.EINVAL) {
                    throw new NotANetns(
                            "setns "
                                    + path
                                    + ": not a network namespace ("
                                    + LibC.describe(errno)
                                    + ")");
                }
                throw new SyscallException("setns " + shown(path), errno);
            }
            int socketFd = -1;
            SyscallException failure = null;
            try {
                socketFd = NetlinkSocket.createFd();
            } catch (SyscallException e) {
                failure = e;
            }
            if (C.setns(own, LibC.CLONE_NEWNET) != 0) {
                int errno = LibC.errno();
                LibC.closeQuietly(socketFd);
                throw new StrandedThread(
                        new SyscallException("setns back from " + shown(path), errno));
            }
            if (failure != null) {
                throw failure;
            }
            return socketFd;
        } finally {
            LibC.closeQuietly(own);
        }
    }

    private static int getUninterruptibly(CompletableFuture<Integer> task)
            throws ExecutionException {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return task.get();
                } catch (InterruptedException e) {
                    // The thread is about to hand over an fd; leaving now would leak it.
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The switch back failed: the thread that threw it must end. */
    private static final class StrandedThread extends RuntimeException {
        StrandedThread(SyscallException cause) {
            super(cause.getMessage(), cause, false, false);
        }
    }

    /** setns refused the fd: the path exists but is no (longer a) network namespace. */
    private static final class NotANetns extends Exception {
        private static final long serialVersionUID = 1L;

        NotANetns(String message) {
            super(message);
        }
    }
}
