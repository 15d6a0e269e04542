package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** The message builder, the attribute parser and address text, without a kernel. */
class NetlinkCodecTest {

    @Test
    void requestHasHeaderPaddedAttributesAndNesting() throws Exception {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_NEWLINK, LinuxNetlinkAbi.NLM_F_CREATE)
                        .ifinfomsg(
                                LinuxNetlinkAbi.AF_UNSPEC,
                                7,
                                LinuxNetlinkAbi.IFF_UP,
                                LinuxNetlinkAbi.IFF_UP)
                        .attrString(LinuxNetlinkAbi.IFLA_IFNAME, "eth0");
        int outer = req.nest(LinuxNetlinkAbi.IFLA_LINKINFO);
        req.attrString(LinuxNetlinkAbi.IFLA_INFO_KIND, "veth");
        req.end(outer);
        ByteBuffer b =
                ByteBuffer.wrap(
                                req.encode(
                                        42,
                                        LinuxNetlinkAbi.NLM_F_REQUEST | LinuxNetlinkAbi.NLM_F_ACK))
                        .order(ByteOrder.nativeOrder());

        // 16 header + 16 ifinfomsg + (4+5 -> 12) ifname + 4 nest header + (4+5 -> 12) kind
        assertEquals(60, b.limit());
        assertEquals(60, b.getInt(0));
        assertEquals(LinuxNetlinkAbi.RTM_NEWLINK, b.getShort(4));
        assertEquals(
                LinuxNetlinkAbi.NLM_F_CREATE
                        | LinuxNetlinkAbi.NLM_F_REQUEST
                        | LinuxNetlinkAbi.NLM_F_ACK,
                b.getShort(6));
        assertEquals(42, b.getInt(8));
        assertEquals(7, b.getInt(20));
        assertEquals(9, b.getShort(32));
        assertEquals(LinuxNetlinkAbi.IFLA_IFNAME, b.getShort(34));
        assertEquals(16, b.getShort(44), "nest length covers the padded child");
        assertEquals(LinuxNetlinkAbi.IFLA_LINKINFO, b.getShort(46));

        NetlinkMessage m =
                new NetlinkMessage(
                        LinuxNetlinkAbi.RTM_NEWLINK,
                        0,
                        42,
                        0,
                        b.slice(16, b.limit() - 16).order(ByteOrder.nativeOrder()));
        NetlinkMessage.Attributes a = m.attributes(LinuxNetlinkAbi.IFINFOMSG_LEN);
        assertEquals("eth0", a.string(LinuxNetlinkAbi.IFLA_IFNAME));
        assertEquals(
                "veth",
                a.nested(LinuxNetlinkAbi.IFLA_LINKINFO, 0).string(LinuxNetlinkAbi.IFLA_INFO_KIND));
        assertEquals(-1, a.u32(LinuxNetlinkAbi.IFLA_MTU));
        assertFalse(a.has(LinuxNetlinkAbi.IFLA_ADDRESS));
        assertNull(a.address(LinuxNetlinkAbi.IFLA_ADDRESS));
    }

    @Test
    void encodingTwiceGivesTheSameBytesButTheNewSequence() {
        NetlinkRequest req =
                new NetlinkRequest(LinuxNetlinkAbi.RTM_GETLINK, 0).ifinfomsg(0, 0, 0, 0);
        byte[] first = req.encode(1, LinuxNetlinkAbi.NLM_F_REQUEST);
        byte[] second = req.encode(2, LinuxNetlinkAbi.NLM_F_REQUEST);
        first[8] = 2;
        assertArrayEquals(first, second);
    }

    @Test
    void malformedAttributeIsAnError() {
        ByteBuffer b =
                ByteBuffer.allocate(8)
                        .order(ByteOrder.nativeOrder())
                        .putShort((short) 12)
                        .putShort((short) 1);
        assertThrows(SyscallException.class, () -> NetlinkMessage.Attributes.parse(b, 0, 8));
    }

    @Test
    void ipv6TextIsCompressedAsRfc5952Says() throws Exception {
        assertEquals("fd00:198::5", Rtnetlink.text(InetAddress.getByName("fd00:198:0:0:0:0:0:5")));
        assertEquals("::", Rtnetlink.text(InetAddress.getByName("::")));
        assertEquals(
                "fe80::ecee:eeff:feee:eeee",
                Rtnetlink.text(InetAddress.getByName("fe80::ecee:eeff:feee:eeee")));
        assertEquals("1:0:1::1", Rtnetlink.text(InetAddress.getByName("1:0:1:0:0:0:0:1")));
        assertEquals(
                "1:0:0:1::1",
                Rtnetlink.text(InetAddress.getByName("1:0:0:1:0:0:0:1")),
                "longest run");
        assertEquals(
                "1::1:0:0:1:1",
                Rtnetlink.text(InetAddress.getByName("1:0:0:1:0:0:1:1")),
                "first of equal runs");
        assertEquals(
                "2001:db8:0:1:1:1:1:1",
                Rtnetlink.text(InetAddress.getByName("2001:db8:0:1:1:1:1:1")));
        assertEquals("198.18.0.5", Rtnetlink.text(InetAddress.getByName("198.18.0.5")));
    }
}
