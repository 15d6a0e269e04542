package io.cadastre.dataplane;

/**
 * A libc call or a netlink request failed. The message names the step, the errno text and, when
 * the kernel sent one (extended ACK), its explanation:
 * {@code "RTM_NEWADDR fd00:198::5/128 dev eth0: Permission denied (errno 13): IPv6 is disabled on this device"}.
 * {@link #errno()} is 0 for protocol errors (a malformed or truncated reply).
 */
final class SyscallException extends Exception {
    private static final long serialVersionUID = 1L;
    private final int errno;

    SyscallException(String step, int errno, String kernelMessage) {
        super(
                step
                        + ": "
                        + LibC.describe(errno)
                        + (kernelMessage == null ? "" : ": " + kernelMessage));
        this.errno = errno;
    }

    SyscallException(String step, int errno) {
        this(step, errno, null);
    }

    /** A protocol error, not an errno. */
    SyscallException(String message) {
        this(message, (Throwable) null);
    }

    /** A failure that is not an errno, e.g. a /proc/sys write that threw an IOException. */
    SyscallException(String message, Throwable cause) {
        super(message, cause);
        this.errno = 0;
    }

    int errno() {
        return errno;
    }
}
