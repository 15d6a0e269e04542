package io.cadastre.dataplane;

import static io.cadastre.dataplane.LibC.C;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A netlink socket (NETLINK_ROUTE, or NETLINK_NETFILTER for nf_tables) bound to a kernel-assigned
 * port. The network namespace it talks to is fixed when the socket is created ({@link #open} on
 * the calling thread, or {@link #adopt} of an fd that {@link Netns} created inside another netns);
 * after that it may be used from any thread, one request at a time (not thread-safe).
 *
 * <p>Every request carries NLM_F_ACK and a fresh sequence number; replies whose sequence number,
 * port or sender (not the kernel) do not match are skipped. A failed request throws
 * {@link SyscallException} with the kernel's errno and extended-ACK text.
 */
final class NetlinkSocket implements AutoCloseable {
    /** Larger than any single datagram the kernel sends for dumps (32 KiB) and for one link. */
    private static final int RECV_BUFFER = 64 * 1024;

    /** The kernel answers every request; this bounds a wait if it ever does not. */
    private static final int RECV_TIMEOUT_SECONDS = 30;

    /** Below the default send buffer (net.core.wmem_default, 212,992 bytes) with room to spare. */
    private static final int DEFAULT_SEND_BUFFER_BYTES = 128 << 10;

    private static final int DUMP_ATTEMPTS = 5;
    private static final int SOCKADDR_NL_LEN = 12;

    private final int fd;
    private final int portId;
    private final byte[] receiveBuffer = new byte[RECV_BUFFER];
    private int seq;
    private boolean closed;

    private NetlinkSocket(int fd, int portId) {
        this.fd = fd;
        this.portId = portId;
    }

    /** Opens a NETLINK_ROUTE socket in the calling thread's network namespace. */
    static NetlinkSocket open() throws SyscallException {
        return adopt(createFd());
    }

    /** Opens a NETLINK_NETFILTER socket (nf_tables) in the calling thread's network namespace. */
    static NetlinkSocket openNetfilter() throws SyscallException {
        return adopt(createFd(LibC.NETLINK_NETFILTER, "NETLINK_NETFILTER"));
    }

    /** socket(2) alone, so that {@link Netns} does as little as possible inside another netns. */
    static int createFd() throws SyscallException {
        return createFd(LibC.NETLINK_ROUTE, "NETLINK_ROUTE");
    }

    private static int createFd(int protocol, String name) throws SyscallException {
        int fd = C.socket(LibC.AF_NETLINK, LibC.SOCK_RAW | LibC.SOCK_CLOEXEC, protocol);
        if (fd < 0) {
            throw new SyscallException("socket(AF_NETLINK, " + name + ")", LibC.errno());
        }
        return fd;
    }

    /** Takes ownership of a fresh netlink socket fd: configures and binds it, or closes it and throws. */
    static NetlinkSocket adopt(int fd) throws SyscallException {
        try {
            // Both options only improve error reports (kernel text, no echoed request); kernels
            // older than 4.12 lack them, which is no reason to fail.
            setIntOption(fd, LibC.SOL_NETLINK, LibC.NETLINK_EXT_ACK, 1);
            setIntOption(fd, LibC.SOL_NETLINK, LibC.NETLINK_CAP_ACK, 1);
            byte[] timeval =
                    ByteBuffer.allocate(16)
                            .order(ByteOrder.nativeOrder())
                            .putLong(RECV_TIMEOUT_SECONDS)
                            .putLong(0)
                            .array();
            if (C.setsockopt(fd, LibC.SOL_SOCKET, LibC.SO_RCVTIMEO, timeval, timeval.length) != 0) {
                throw new SyscallException("setsockopt(SO_RCVTIMEO)", LibC.errno());
            }
            byte[] local =
                    ByteBuffer.allocate(SOCKADDR_NL_LEN)
                            .order(ByteOrder.nativeOrder())
                            .putShort((short) LibC.AF_NETLINK)
                            .array();
            if (C.bind(fd, local, local.length) != 0) {
                throw new SyscallException("bind(AF_NETLINK)", LibC.errno());
            }
            int[] len = {SOCKADDR_NL_LEN};
            if (C.getsockname(fd, local, len) != 0) {
                throw new SyscallException("getsockname(AF_NETLINK)", LibC.errno());
            }
            return new NetlinkSocket(
                    fd, ByteBuffer.wrap(local).order(ByteOrder.nativeOrder()).getInt(4));
        } catch (SyscallException | RuntimeException e) {
            LibC.closeQuietly(fd);
            throw e;
        }
    }

    /**
     * Sends a request with NLM_F_ACK and waits for its ACK.
     *
     * @param step names the operation in error messages, e.g. {@code "RTM_NEWADDR 198.18.0.5/32 dev eth0"}
     * @return the replies that came before the ACK (one RTM_NEWLINK for an RTM_GETLINK; none for changes)
     * @throws SyscallException with the kernel's errno if it refused, or on a socket or protocol error
     */
    List<NetlinkMessage> request(NetlinkRequest request, String step) throws SyscallException {
        int sent = send(request, LinuxNetlinkAbi.NLM_F_REQUEST | LinuxNetlinkAbi.NLM_F_ACK, step);
        List<NetlinkMessage> replies = new ArrayList<>();
        while (true) {
            for (NetlinkMessage m : receive(step)) {
                if (m.seq() != sent
                        || m.pid() != portId
                        || m.type() == LinuxNetlinkAbi.NLMSG_NOOP) {
                    continue;
                }
                if (m.type() == LinuxNetlinkAbi.NLMSG_ERROR) {
                    throwIfError(m, step);
                    return replies;
                }
                replies.add(m);
            }
        }
    }

    /**
     * Sends an nfnetlink batch in one datagram: {@code begin}, the requests, then {@code end}. The
     * kernel applies the requests as one transaction (all or none), answers every refused request
     * with its error, and the last request, which alone asks for one (NLM_F_ACK), with an ACK
     * (nfnetlink's batch, as {@code nft -f} sends it).
     *
     * <p>Sizes: a batch is one datagram, which netlink refuses beyond the socket's send buffer
     * (EMSGSIZE; 208 KiB by default, a table of some thousand rules), so a larger batch first
     * raises this socket's buffer (SO_SNDBUFFORCE, CAP_NET_ADMIN, as nft does). One ACK per
     * request would, for such a batch, overflow the receive buffer (ENOBUFS, ACKs lost); errors
     * are sent whatever the flags, so only the last request asks for an ACK.
     *
     * @param begin NFNL_MSG_BATCH_BEGIN for the subsystem
     * @param end NFNL_MSG_BATCH_END for the subsystem
     * @param steps names of the requests, in order, for error messages
     * @throws SyscallException with the first refused request's step, errno and the kernel's
     *     text; the transaction was then not applied
     */
    void batch(
            NetlinkRequest begin,
            List<NetlinkRequest> requests,
            List<String> steps,
            NetlinkRequest end)
            throws SyscallException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int first = ++seq;
        out.writeBytes(begin.encode(first, LinuxNetlinkAbi.NLM_F_REQUEST));
        Map<Integer, String> named = new HashMap<>();
        for (int i = 0; i < requests.size(); i++) {
            int s = ++seq;
            named.put(s, steps.get(i));
            int flags =
                    i == requests.size() - 1
                            ? LinuxNetlinkAbi.NLM_F_REQUEST | LinuxNetlinkAbi.NLM_F_ACK
                            : LinuxNetlinkAbi.NLM_F_REQUEST;
            out.writeBytes(requests.get(i).encode(s, flags));
        }
        int last = seq;
        out.writeBytes(end.encode(++seq, LinuxNetlinkAbi.NLM_F_REQUEST));
        String step = "nfnetlink batch of " + requests.size();
        byte[] datagram = out.toByteArray();
        if (datagram.length > DEFAULT_SEND_BUFFER_BYTES) {
            // The kernel doubles the value for its bookkeeping; the datagram must fit in the rest.
            byte[] size =
                    ByteBuffer.allocate(4)
                            .order(ByteOrder.nativeOrder())
                            .putInt(datagram.length + 65_536)
                            .array();
            if (C.setsockopt(fd, LibC.SOL_SOCKET, LibC.SO_SNDBUFFORCE, size, size.length) != 0) {
                throw new SyscallException(
                        step + " of " + datagram.length + " bytes: setsockopt(SO_SNDBUFFORCE)",
                        LibC.errno());
            }
        }
        sendBytes(datagram, step);
        if (requests.isEmpty()) {
            return;
        }
        while (true) {
            for (NetlinkMessage m : receive(step)) {
                if (m.pid() != portId
                        || m.type() != LinuxNetlinkAbi.NLMSG_ERROR
                        || m.seq() < first
                        || m.seq() > seq) {
                    continue;
                }
                // The batch's begin and end are not ACKed, but a refused one (no permission, no
                // nf_tables) is answered with its error, and nothing after it is.
                throwIfError(m, named.getOrDefault(m.seq(), step));
                if (m.seq() == last) {
                    return;
                }
            }
        }
    }

    /**
     * Sends a dump request (NLM_F_DUMP) and collects every part up to NLMSG_DONE. A dump the
     * kernel marks inconsistent (NLM_F_DUMP_INTR: the table changed meanwhile) is repeated.
     *
     * @return the dumped objects, e.g. one RTM_NEWADDR per address
     * @throws SyscallException on a kernel, socket or protocol error
     */
    List<NetlinkMessage> dump(NetlinkRequest request, String step) throws SyscallException {
        for (int attempt = 0; attempt < DUMP_ATTEMPTS; attempt++) {
            int sent =
                    send(request, LinuxNetlinkAbi.NLM_F_REQUEST | LinuxNetlinkAbi.NLM_F_DUMP, step);
            List<NetlinkMessage> parts = new ArrayList<>();
            boolean interrupted = false;
            boolean done = false;
            while (!done) {
                for (NetlinkMessage m : receive(step)) {
                    if (m.seq() != sent
                            || m.pid() != portId
                            || m.type() == LinuxNetlinkAbi.NLMSG_NOOP) {
                        continue;
                    }
                    interrupted |= (m.flags() & LinuxNetlinkAbi.NLM_F_DUMP_INTR) != 0;
                    if (m.type() == LinuxNetlinkAbi.NLMSG_DONE) {
                        int error = m.payload().limit() >= 4 ? m.payload().getInt(0) : 0;
                        if (error < 0) {
                            throw new SyscallException(step, -error);
                        }
                        done = true;
                        break;
                    } else if (m.type() == LinuxNetlinkAbi.NLMSG_ERROR) {
                        throwIfError(m, step);
                    } else {
                        parts.add(m);
                    }
                }
            }
            if (!interrupted) {
                return parts;
            }
        }
        throw new SyscallException(
                step + ": dump interrupted by concurrent changes " + DUMP_ATTEMPTS + " times");
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            LibC.closeQuietly(fd);
        }
    }

    private int send(NetlinkRequest request, int flags, String step) throws SyscallException {
        int s = ++seq;
        sendBytes(request.encode(s, flags), step);
        return s;
    }

    /** One datagram, whole: a netlink socket never sends part of one. */
    private void sendBytes(byte[] bytes, String step) throws SyscallException {
        while (true) {
            long n = C.send(fd, bytes, bytes.length, 0);
            if (n == bytes.length) {
                return;
            }
            int errno = n < 0 ? LibC.errno() : 0;
            if (errno != LibC.EINTR) {
                throw n < 0
                        ? new SyscallException(step + " (send)", errno)
                        : new SyscallException(step + ": short send of " + n + " bytes");
            }
        }
    }

    /** Receives one datagram from the kernel and splits it into messages (copies: the buffer is reused). */
    private List<NetlinkMessage> receive(String step) throws SyscallException {
        byte[] from = new byte[SOCKADDR_NL_LEN];
        while (true) {
            int[] fromLen = {from.length};
            // MSG_TRUNC makes recv report the datagram's real size, so truncation is detected.
            long n =
                    C.recvfrom(
                            fd, receiveBuffer, receiveBuffer.length, LibC.MSG_TRUNC, from, fromLen);
            if (n < 0) {
                int errno = LibC.errno();
                if (errno == LibC.EINTR) {
                    continue;
                }
                throw new SyscallException(
                        step + (errno == LibC.EAGAIN ? " (no reply)" : " (recv)"), errno);
            }
            if (n > receiveBuffer.length) {
                throw new SyscallException(step + ": reply of " + n + " bytes truncated");
            }
            // Other processes may send unicast netlink messages to our port; only trust the kernel.
            if (ByteBuffer.wrap(from).order(ByteOrder.nativeOrder()).getInt(4) != 0) {
                continue;
            }
            return split((int) n, step);
        }
    }

    private List<NetlinkMessage> split(int length, String step) throws SyscallException {
        ByteBuffer buf = ByteBuffer.wrap(receiveBuffer, 0, length).order(ByteOrder.nativeOrder());
        List<NetlinkMessage> messages = new ArrayList<>();
        int pos = 0;
        while (pos + LinuxNetlinkAbi.NLMSG_HDRLEN <= length) {
            int len = buf.getInt(pos);
            if (len < LinuxNetlinkAbi.NLMSG_HDRLEN || pos + len > length) {
                throw new SyscallException(step + ": malformed reply (nlmsg_len " + len + ")");
            }
            ByteBuffer payload =
                    ByteBuffer.wrap(
                                    Arrays.copyOfRange(
                                            receiveBuffer,
                                            pos + LinuxNetlinkAbi.NLMSG_HDRLEN,
                                            pos + len))
                            .order(ByteOrder.nativeOrder());
            messages.add(
                    new NetlinkMessage(
                            Short.toUnsignedInt(buf.getShort(pos + 4)),
                            Short.toUnsignedInt(buf.getShort(pos + 6)),
                            buf.getInt(pos + 8),
                            buf.getInt(pos + 12),
                            payload));
            pos += NetlinkRequest.align(len);
        }
        return messages;
    }

    /** An NLMSG_ERROR is an ACK when its error is 0; otherwise it carries -errno and maybe a text. */
    private static void throwIfError(NetlinkMessage m, String step) throws SyscallException {
        ByteBuffer p = m.payload();
        if (p.limit() < 4) {
            throw new SyscallException(step + ": malformed NLMSG_ERROR");
        }
        int error = p.getInt(0);
        if (error == 0) {
            return;
        }
        String text = null;
        if ((m.flags() & LinuxNetlinkAbi.NLM_F_ACK_TLVS) != 0
                && p.limit() >= 4 + LinuxNetlinkAbi.NLMSG_HDRLEN) {
            int echoed =
                    (m.flags() & LinuxNetlinkAbi.NLM_F_CAPPED) != 0
                            ? LinuxNetlinkAbi.NLMSG_HDRLEN
                            : NetlinkRequest.align(p.getInt(4));
            if (4 + echoed <= p.limit()) {
                text =
                        NetlinkMessage.Attributes.parse(p, 4 + echoed, p.limit())
                                .string(LinuxNetlinkAbi.NLMSGERR_ATTR_MSG);
            }
        }
        throw new SyscallException(step, -error, text);
    }

    private static void setIntOption(int fd, int level, int option, int value) {
        byte[] v = ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(value).array();
        C.setsockopt(fd, level, option, v, v.length);
    }
}
