package io.cadastre.dataplane;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Builds one netlink request: the 16-byte nlmsghdr, one family header (ifinfomsg, ifaddrmsg,
 * rtmsg, ndmsg, tcmsg or nfgenmsg) and rtattrs, each padded to 4 bytes as NLMSG_ALIGN/RTA_ALIGN
 * require. Integers are in host byte order (nf_tables' in network order: {@link #attrBe32}),
 * addresses in network order. {@link NetlinkSocket} fills in the length, the sequence number and
 * the REQUEST/ACK/DUMP flags when it sends. Not thread-safe; build and send on one thread.
 */
final class NetlinkRequest {
    private static final int ALIGN = 4;
    private ByteBuffer buf = ByteBuffer.allocate(256).order(ByteOrder.nativeOrder());
    private final int type;

    /** @param flags operation flags such as NLM_F_CREATE | NLM_F_EXCL; the socket adds the rest */
    NetlinkRequest(int type, int flags) {
        this.type = type;
        buf.putInt(0).putShort((short) type).putShort((short) flags).putInt(0).putInt(0);
    }

    int type() {
        return type;
    }

    NetlinkRequest ifinfomsg(int family, int index, int flags, int change) {
        ensure(LinuxNetlinkAbi.IFINFOMSG_LEN);
        buf.put((byte) family)
                .put((byte) 0)
                .putShort((short) 0)
                .putInt(index)
                .putInt(flags)
                .putInt(change);
        return this;
    }

    NetlinkRequest ifaddrmsg(int family, int prefixLength, int flags, int scope, int index) {
        ensure(LinuxNetlinkAbi.IFADDRMSG_LEN);
        buf.put((byte) family)
                .put((byte) prefixLength)
                .put((byte) flags)
                .put((byte) scope)
                .putInt(index);
        return this;
    }

    NetlinkRequest rtmsg(
            int family, int dstLength, int table, int protocol, int scope, int routeType) {
        return rtmsg(family, dstLength, table, protocol, scope, routeType, 0);
    }

    /** @param flags rtm_flags, e.g. {@link LinuxNetlinkAbi#RTNH_F_ONLINK} */
    NetlinkRequest rtmsg(
            int family,
            int dstLength,
            int table,
            int protocol,
            int scope,
            int routeType,
            int flags) {
        ensure(LinuxNetlinkAbi.RTMSG_LEN);
        buf.put((byte) family)
                .put((byte) dstLength)
                .put((byte) 0)
                .put((byte) 0)
                .put((byte) table)
                .put((byte) protocol)
                .put((byte) scope)
                .put((byte) routeType)
                .putInt(flags);
        return this;
    }

    /** struct ndmsg: a neighbour (AF_INET, AF_INET6) or FDB (AF_BRIDGE) entry on device {@code index}. */
    NetlinkRequest ndmsg(int family, int index, int state, int flags) {
        ensure(LinuxNetlinkAbi.NDMSG_LEN);
        buf.put((byte) family)
                .put((byte) 0)
                .putShort((short) 0)
                .putInt(index)
                .putShort((short) state)
                .put((byte) flags)
                .put((byte) 0);
        return this;
    }

    /** struct tcmsg: a qdisc or filter on device {@code index}; {@code info} is a filter's priority and protocol. */
    NetlinkRequest tcmsg(int family, int index, int handle, int parent, int info) {
        ensure(LinuxNetlinkAbi.TCMSG_LEN);
        buf.put((byte) family)
                .put((byte) 0)
                .putShort((short) 0)
                .putInt(index)
                .putInt(handle)
                .putInt(parent)
                .putInt(info);
        return this;
    }

    /**
     * struct nfgenmsg, nfnetlink's family header: the protocol family (NFPROTO_INET for an inet
     * table), version 0, and the resource id in network order (the subsystem, in a batch's begin
     * and end).
     */
    NetlinkRequest nfgenmsg(int family, int resourceId) {
        ensure(4);
        buf.put((byte) family).put((byte) 0).put((byte) (resourceId >>> 8)).put((byte) resourceId);
        return this;
    }

    /** A 32-bit value in network byte order, as nf_tables wants every u32 attribute. */
    NetlinkRequest attrBe32(int attrType, int value) {
        return attr(
                attrType, ByteBuffer.allocate(4).order(ByteOrder.BIG_ENDIAN).putInt(value).array());
    }

    /** A u16 attribute in host byte order (TCA_BPF_OPS_LEN). */
    NetlinkRequest attrU16(int attrType, int value) {
        return attr(
                attrType,
                ByteBuffer.allocate(2)
                        .order(ByteOrder.nativeOrder())
                        .putShort((short) value)
                        .array());
    }

    NetlinkRequest attr(int attrType, byte[] value) {
        int len = 4 + value.length;
        ensure(align(len));
        buf.putShort((short) len).putShort((short) attrType).put(value);
        pad();
        return this;
    }

    NetlinkRequest attrU32(int attrType, int value) {
        return attr(
                attrType,
                ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(value).array());
    }

    NetlinkRequest attrU8(int attrType, int value) {
        return attr(attrType, new byte[] {(byte) value});
    }

    /** A 16-bit value in network byte order, as IFLA_VXLAN_PORT wants it. */
    NetlinkRequest attrBe16(int attrType, int value) {
        return attr(attrType, new byte[] {(byte) (value >>> 8), (byte) value});
    }

    /** A NUL-terminated string attribute (IFLA_IFNAME, IFLA_INFO_KIND). */
    NetlinkRequest attrString(int attrType, String value) {
        byte[] s = value.getBytes(StandardCharsets.UTF_8);
        byte[] z = new byte[s.length + 1];
        System.arraycopy(s, 0, z, 0, s.length);
        return attr(attrType, z);
    }

    /** Opens a nested attribute; close it with {@link #end}. @return its start, for {@link #end} */
    int nest(int attrType) {
        ensure(4);
        int start = buf.position();
        buf.putShort((short) 0).putShort((short) attrType);
        return start;
    }

    /** Closes the nested attribute opened at {@code start}: its length covers the padded children. */
    NetlinkRequest end(int start) {
        buf.putShort(start, (short) (buf.position() - start));
        return this;
    }

    /** @return the wire bytes with nlmsg_len, nlmsg_seq and the extra flags filled in */
    byte[] encode(int seq, int extraFlags) {
        byte[] bytes = Arrays.copyOf(buf.array(), buf.position());
        ByteBuffer out = ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder());
        out.putInt(0, bytes.length);
        out.putShort(6, (short) (out.getShort(6) | extraFlags));
        out.putInt(8, seq);
        return bytes;
    }

    static int align(int len) {
        return (len + ALIGN - 1) & ~(ALIGN - 1);
    }

    private void pad() {
        while (buf.position() % ALIGN != 0) {
            buf.put((byte) 0);
        }
    }

    private void ensure(int bytes) {
        if (buf.remaining() < bytes) {
            ByteBuffer bigger =
                    ByteBuffer.allocate(Math.max(buf.capacity() * 2, buf.position() + bytes))
                            .order(ByteOrder.nativeOrder());
            buf.flip();
            bigger.put(buf);
            buf = bigger;
        }
    }
}
