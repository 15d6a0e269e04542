package io.cadastre.dataplane;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One received netlink message: the nlmsghdr fields and the payload after it (family header
 * then rtattrs), as a buffer in host byte order whose position 0 is the payload's first byte.
 */
record NetlinkMessage(int type, int flags, int seq, int pid, ByteBuffer payload) {

    /** Parses the rtattrs in {@code payload} from {@code offset} (the family header's size) on. */
    Attributes attributes(int offset) throws SyscallException {
        return Attributes.parse(payload, offset, payload.limit());
    }

    /**
     * rtattrs by type, each value a buffer of exactly its payload (position 0, host order). Later
     * duplicates win; NLA_F_NESTED and NLA_F_NET_BYTEORDER are masked off the type.
     */
    static final class Attributes {
        private static final int TYPE_MASK = 0x3fff;
        private final Map<Integer, ByteBuffer> values;

        private Attributes(Map<Integer, ByteBuffer> values) {
            this.values = values;
        }

        static Attributes parse(ByteBuffer buf, int from, int to) throws SyscallException {
            Map<Integer, ByteBuffer> values = new HashMap<>();
            int pos = from;
            while (pos + 4 <= to) {
                int len = Short.toUnsignedInt(buf.getShort(pos));
                int type = Short.toUnsignedInt(buf.getShort(pos + 2)) & TYPE_MASK;
                if (len < 4 || pos + len > to) {
                    throw new SyscallException(
                            "malformed rtattr (type " + type + ", length " + len + ")");
                }
                values.put(type, buf.slice(pos + 4, len - 4).order(ByteOrder.nativeOrder()));
                pos += NetlinkRequest.align(len);
            }
            return new Attributes(values);
        }

        boolean has(int type) {
            return values.containsKey(type);
        }

        /** @return the attribute's value, or -1 if absent (for u32 indexes and sizes) */
        int u32(int type) {
            ByteBuffer v = values.get(type);
            return v == null || v.limit() < 4 ? -1 : v.getInt(0);
        }

        /** @return the value of a u8 attribute (NDA_PROTOCOL, IFLA_VXLAN_LEARNING), or -1 if absent */
        int u8(int type) {
            ByteBuffer v = values.get(type);
            return v == null || v.limit() < 1 ? -1 : Byte.toUnsignedInt(v.get(0));
        }

        /** @return a 16-bit value sent in network byte order (IFLA_VXLAN_PORT), or -1 if absent */
        int be16(int type) {
            ByteBuffer v = values.get(type);
            return v == null || v.limit() < 2
                    ? -1
                    : (Byte.toUnsignedInt(v.get(0)) << 8) | Byte.toUnsignedInt(v.get(1));
        }

        /** @return the value of a NUL-terminated string attribute, or null if absent */
        String string(int type) {
            byte[] b = bytes(type);
            if (b == null) {
                return null;
            }
            int n = 0;
            while (n < b.length && b[n] != 0) {
                n++;
            }
            return new String(b, 0, n, StandardCharsets.UTF_8);
        }

        /** @return a copy of the value, or null if absent */
        byte[] bytes(int type) {
            ByteBuffer v = values.get(type);
            if (v == null) {
                return null;
            }
            byte[] b = new byte[v.limit()];
            v.get(0, b);
            return b;
        }

        /** @return an IPv4 or IPv6 address attribute, or null if absent or of another size */
        InetAddress address(int type) {
            byte[] b = bytes(type);
            if (b == null || (b.length != 4 && b.length != 16)) {
                return null;
            }
            try {
                return InetAddress.getByAddress(b);
            } catch (UnknownHostException e) {
                throw new AssertionError("4 or 16 bytes are always an address", e);
            }
        }

        /** @return a 64-bit value sent in network byte order (NFTA_COUNTER_PACKETS), or -1 if absent */
        long be64(int type) {
            ByteBuffer v = values.get(type);
            return v == null || v.limit() < 8
                    ? -1
                    : v.duplicate().order(ByteOrder.BIG_ENDIAN).getLong(0);
        }

        /**
         * @return the elements of the list nested in {@code type} (NFTA_RULE_EXPRESSIONS), each
         *     element's own attributes, in order; empty when absent. Unlike the attributes of one
         *     level, a list's elements share a type, so none replaces another.
         */
        List<Attributes> list(int type) throws SyscallException {
            ByteBuffer v = values.get(type);
            List<Attributes> elements = new ArrayList<>();
            if (v == null) {
                return elements;
            }
            int pos = 0;
            while (pos + 4 <= v.limit()) {
                int len = Short.toUnsignedInt(v.getShort(pos));
                if (len < 4 || pos + len > v.limit()) {
                    throw new SyscallException("malformed list element (length " + len + ")");
                }
                elements.add(parse(v, pos + 4, pos + len));
                pos += NetlinkRequest.align(len);
            }
            return elements;
        }

        /** @return the attributes nested in {@code type} (after {@code header} bytes), or empty */
        Attributes nested(int type, int header) throws SyscallException {
            ByteBuffer v = values.get(type);
            return v == null ? new Attributes(Map.of()) : parse(v, header, v.limit());
        }
    }
}
