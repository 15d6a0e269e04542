package io.cadastre.dataplane;

import jnr.ffi.LastError;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Platform;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;
import jnr.ffi.annotations.In;
import jnr.ffi.annotations.Out;
import jnr.ffi.annotations.SaveError;
import jnr.ffi.types.size_t;
import jnr.ffi.types.ssize_t;

/**
 * The libc calls the dataplane needs, bound through jnr-ffi once per JVM ({@link #C}), plus the
 * Linux constants that go with them (x86-64 and arm64 share these values).
 */
final class LibC {
    static final int AF_INET = 2;
    static final int AF_NETLINK = 16;
    static final int SOCK_DGRAM = 2;
    static final int SOCK_RAW = 3;
    static final int SOCK_CLOEXEC = 0x80000;
    static final int NETLINK_ROUTE = 0;
    static final int NETLINK_NETFILTER = 12;
    static final int SOL_SOCKET = 1;
    static final int SO_RCVTIMEO = 20;
    static final int SO_SNDBUFFORCE = 32;
    static final int SOL_NETLINK = 270;
    static final int NETLINK_CAP_ACK = 10;
    static final int NETLINK_EXT_ACK = 11;
    static final int MSG_TRUNC = 0x20;
    static final int O_RDONLY = 0;
    static final int O_CLOEXEC = 0x80000;
    static final int CLONE_NEWNET = 0x40000000;

    /** ioctl on a namespace fd: its CLONE_NEW* type (ioctl_ns(2), since Linux 4.11); _IO(0xb7, 0x3). */
    static final long NS_GET_NSTYPE = 0xb703;

    /** ioctl on any socket: an ethtool command for the device named in the ifreq (linux/sockios.h). */
    static final long SIOCETHTOOL = 0x8946;

    static final int ENOENT = 2;
    static final int EINTR = 4;
    static final int EAGAIN = 11;
    static final int EEXIST = 17;
    static final int ENODEV = 19;
    static final int ENOTDIR = 20;
    static final int ENAMETOOLONG = 36;
    static final int ELOOP = 40;
    static final int EINVAL = 22;
    static final int ESRCH = 3;
    static final int EOPNOTSUPP = 95;

    /**
     * The functions. Every call saves errno; read it with {@link LibC#errno()} on the same thread
     * right after the call. The interface is public only because jnr-ffi generates its
     * implementation in another class loader; the enclosing class keeps it out of the API.
     */
    public interface Functions {
        @SaveError
        int socket(int domain, int type, int protocol);

        @SaveError
        int bind(int fd, @In byte[] addr, int addrlen);

        @SaveError
        int getsockname(int fd, @Out byte[] addr, @In @Out int[] addrlen);

        @SaveError
        int setsockopt(int fd, int level, int optname, @In byte[] optval, int optlen);

        @SaveError
        @ssize_t
        long send(int fd, @In byte[] buf, @size_t long len, int flags);

        @SaveError
        @ssize_t
        long recvfrom(
                int fd,
                @Out byte[] buf,
                @size_t long len,
                int flags,
                @Out byte[] addr,
                @In @Out int[] addrlen);

        @SaveError
        int open(String path, int flags);

        @SaveError
        int close(int fd);

        @SaveError
        int setns(int fd, int nstype);

        /** Only for requests without an argument, such as {@link LibC#NS_GET_NSTYPE}. */
        @SaveError
        int ioctl(int fd, long request);

        /** For requests whose argument is a pointer to native memory, such as {@link LibC#SIOCETHTOOL}. */
        @SaveError
        int ioctl(int fd, long request, Pointer arg);

        String strerror(int errnum);
    }

    static final Functions C =
            LibraryLoader.create(Functions.class)
                    .load(Platform.getNativePlatform().getStandardCLibraryName());
    private static final Runtime RUNTIME = Runtime.getRuntime(C);

    private LibC() {}

    /** The runtime {@link #C} is bound in, for allocating native memory ({@code Memory.allocateDirect}). */
    static Runtime runtime() {
        return RUNTIME;
    }

    /** @return the errno saved by this thread's last call through {@link #C} */
    static int errno() {
        return LastError.getLastError(RUNTIME);
    }

    /** @return e.g. {@code "File exists (errno 17)"} (glibc's strerror is thread-safe since 2.32) */
    static String describe(int errno) {
        return C.strerror(errno) + " (errno " + errno + ")";
    }

    /** Closes {@code fd} if it is one, ignoring errors: for cleanup paths where nothing can be done. */
    static void closeQuietly(int fd) {
        if (fd >= 0) {
            C.close(fd);
        }
    }
}
