package io.cadastre.dataplane;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The anti-spoofing program of one pod: a classic BPF filter run in direct-action mode on the
 * ingress (clsact) hook of the pod's host-side veth, where every packet the pod sends arrives.
 * It drops ({@code TC_ACT_SHOT}) an IPv4 packet whose source is not the pod's IPv4 address and an
 * IPv6 packet whose source is neither the pod's IPv6 address, nor link-local (fe80::/10: neighbour
 * discovery, MLD; the kernel never forwards such a source), nor unspecified (::, duplicate address
 * detection). Everything else (ARP, other EtherTypes) goes on as the filter found it
 * ({@code TC_ACT_UNSPEC}: later filters, if any, still run).
 *
 * <p>Why here: the hook runs before routing, so a spoofed packet reaches neither another pod nor
 * any host (the pod's own included), for both families; Calico (iptables) and Cilium (eBPF at the
 * same tc hook) filter pods' sources the same way. Strict rp_filter would cover IPv4 only and is
 * weakened to loose mode by {@code net.ipv4.conf.all.rp_filter = 2} (the kernel uses the larger
 * value); FIB rules would let a spoofed packet reach the host itself (the {@code local} rule comes
 * first). Classic BPF needs no bpf(2) call: the instructions travel in the netlink request
 * (TCA_BPF_OPS), and the clsact qdisc counts the drops (its {@code drops} statistic), which the
 * agent exports as {@code cadastre_pod_spoofed_packets_dropped_total}.
 *
 * <p>Offsets count from the Ethernet header (cls_bpf pushes it back at ingress): EtherType at 12,
 * the IPv4 source at 26, the IPv6 source at 22..37. A packet too short for a load ends the
 * program with 0 ({@code TC_ACT_OK}); such a frame is no valid IP packet, and the IP layer drops it.
 */
public final class PodSourceFilter {
    /** tc action codes (linux/pkt_cls.h). */
    static final int TC_ACT_UNSPEC = -1;

    static final int TC_ACT_SHOT = 2;

    private static final int ETH_P_IP = 0x0800;
    private static final int ETH_P_IPV6 = 0x86dd;
    private static final int LD_H_ABS = 0x28;
    private static final int LD_W_ABS = 0x20;
    private static final int JEQ_K = 0x15;
    private static final int AND_K = 0x54;
    private static final int RET_K = 0x06;

    private PodSourceFilter() {}

    /** One cBPF instruction with its jump targets still as labels. */
    private record Insn(int code, String jt, String jf, int k, String label) {}

    /**
     * @param v4 the pod's IPv4 address, or null (then every IPv4 packet is dropped)
     * @param v6 the pod's IPv6 address, or null (then only link-local and unspecified sources pass)
     * @return the instructions, each {@code struct sock_filter} (u16 code, u8 jt, u8 jf, u32 k) in
     *     host byte order, as TCA_BPF_OPS carries them
     */
    public static byte[] program(InetAddress v4, InetAddress v6) {
        if ((v4 != null && !(v4 instanceof Inet4Address))
                || (v6 != null && !(v6 instanceof Inet6Address))) {
            throw new IllegalArgumentException("addresses of the wrong family: " + v4 + ", " + v6);
        }
        List<Insn> p = new ArrayList<>();
        p.add(new Insn(LD_H_ABS, null, null, 12, null));
        p.add(new Insn(JEQ_K, "v4", null, ETH_P_IP, null));
        p.add(new Insn(JEQ_K, "v6", "pass", ETH_P_IPV6, null));
        if (v4 != null) {
            p.add(new Insn(LD_W_ABS, null, null, 26, "v4"));
            p.add(new Insn(JEQ_K, "pass", "drop", word(v4.getAddress(), 0), null));
        } else {
            p.add(new Insn(RET_K, null, null, TC_ACT_SHOT, "v4"));
        }
        String first = "v6";
        if (v6 != null) {
            byte[] b = v6.getAddress();
            for (int i = 0; i < 4; i++) {
                p.add(new Insn(LD_W_ABS, null, null, 22 + 4 * i, i == 0 ? "v6" : null));
                p.add(new Insn(JEQ_K, i == 3 ? "pass" : null, "linklocal", word(b, 4 * i), null));
            }
            first = "linklocal";
        }
        p.add(new Insn(LD_W_ABS, null, null, 22, first));
        p.add(new Insn(AND_K, null, null, 0xffc00000, null));
        p.add(new Insn(JEQ_K, "pass", "unspecified", 0xfe800000, null));
        for (int i = 0; i < 4; i++) {
            p.add(new Insn(LD_W_ABS, null, null, 22 + 4 * i, i == 0 ? "unspecified" : null));
            p.add(new Insn(JEQ_K, i == 3 ? "pass" : null, "drop", 0, null));
        }
        p.add(new Insn(RET_K, null, null, TC_ACT_UNSPEC, "pass"));
        p.add(new Insn(RET_K, null, null, TC_ACT_SHOT, "drop"));
        return assemble(p);
    }

    /** @return how many instructions {@code program} holds (TCA_BPF_OPS_LEN) */
    static int length(byte[] program) {
        return program.length / 8;
    }

    /** Resolves labels to forward offsets (cBPF jumps only forward, at most 255 instructions). */
    private static byte[] assemble(List<Insn> p) {
        Map<String, Integer> at = new HashMap<>();
        for (int i = 0; i < p.size(); i++) {
            if (p.get(i).label() != null) {
                at.put(p.get(i).label(), i);
            }
        }
        ByteBuffer out = ByteBuffer.allocate(p.size() * 8).order(ByteOrder.nativeOrder());
        for (int i = 0; i < p.size(); i++) {
            Insn insn = p.get(i);
            out.putShort((short) insn.code())
                    .put((byte) offset(at, insn.jt(), i))
                    .put((byte) offset(at, insn.jf(), i))
                    .putInt(insn.k());
        }
        return out.array();
    }

    /** @return the jump from instruction {@code i} to {@code label}; null means the next instruction */
    private static int offset(Map<String, Integer> at, String label, int i) {
        if (label == null) {
            return 0;
        }
        int distance = at.get(label) - i - 1;
        if (distance < 0 || distance > 255) {
            throw new IllegalStateException("jump to " + label + " out of range: " + distance);
        }
        return distance;
    }

    /** The 32-bit word at {@code from}, as {@code ld [k]} loads it (network order, value as an int). */
    private static int word(byte[] b, int from) {
        return ((b[from] & 0xff) << 24)
                | ((b[from + 1] & 0xff) << 16)
                | ((b[from + 2] & 0xff) << 8)
                | (b[from + 3] & 0xff);
    }
}
