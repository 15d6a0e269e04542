package io.cadastre.dataplane;

/**
 * rtnetlink numbers from the Linux UAPI headers (linux/netlink.h, rtnetlink.h, if_link.h, veth.h,
 * neighbour.h, if_addr.h), plus Cadastre's own route protocol number.
 */
final class LinuxNetlinkAbi {
    private LinuxNetlinkAbi() {}

    static final int NLMSG_HDRLEN = 16;
    static final int NLMSG_NOOP = 1;
    static final int NLMSG_ERROR = 2;
    static final int NLMSG_DONE = 3;

    static final int NLM_F_REQUEST = 0x1;
    static final int NLM_F_MULTI = 0x2;
    static final int NLM_F_ACK = 0x4;
    static final int NLM_F_DUMP_INTR = 0x10;
    static final int NLM_F_DUMP = 0x300;
    static final int NLM_F_EXCL = 0x200;

    /** On a NEW request: replace an existing object (same value as NLM_F_CAPPED, another context). */
    static final int NLM_F_REPLACE = 0x100;

    static final int NLM_F_CREATE = 0x400;

    /** In an NLMSG_ERROR: the echoed request was cut to its header (NETLINK_CAP_ACK). */
    static final int NLM_F_CAPPED = 0x100;

    /** In an NLMSG_ERROR: extended-ACK attributes follow. */
    static final int NLM_F_ACK_TLVS = 0x200;

    static final int NLMSGERR_ATTR_MSG = 1;

    static final int RTM_NEWLINK = 16;
    static final int RTM_DELLINK = 17;
    static final int RTM_GETLINK = 18;
    static final int RTM_SETLINK = 19;
    static final int RTM_NEWADDR = 20;
    static final int RTM_DELADDR = 21;
    static final int RTM_GETADDR = 22;
    static final int RTM_NEWROUTE = 24;
    static final int RTM_DELROUTE = 25;
    static final int RTM_GETROUTE = 26;
    static final int RTM_NEWNEIGH = 28;
    static final int RTM_DELNEIGH = 29;
    static final int RTM_GETNEIGH = 30;
    static final int RTM_NEWQDISC = 36;
    static final int RTM_GETQDISC = 38;
    static final int RTM_NEWTFILTER = 44;
    static final int RTM_GETTFILTER = 46;

    static final int AF_UNSPEC = 0;
    static final int AF_INET = 2;

    /** Neighbour requests in this family address a device's forwarding database (FDB). */
    static final int AF_BRIDGE = 7;

    static final int AF_INET6 = 10;

    /** sizeof(struct ifinfomsg), ifaddrmsg, rtmsg. */
    static final int IFINFOMSG_LEN = 16;

    static final int IFADDRMSG_LEN = 8;
    static final int RTMSG_LEN = 12;

    /** sizeof(struct ndmsg). */
    static final int NDMSG_LEN = 12;

    /** sizeof(struct tcmsg): family, pads, ifindex, handle, parent, info. */
    static final int TCMSG_LEN = 20;

    /** Traffic control (linux/rtnetlink.h, pkt_sched.h, pkt_cls.h, gen_stats.h). */
    static final int TCA_KIND = 1;

    static final int TCA_OPTIONS = 2;
    static final int TCA_STATS2 = 7;

    /** In TCA_STATS2: struct gnet_stats_queue (u32 qlen, backlog, drops, requeues, overlimits). */
    static final int TCA_STATS_QUEUE = 3;

    /** The clsact qdisc's parent (TC_H_CLSACT, the same value as TC_H_INGRESS) and its handle ffff:. */
    static final int TC_H_CLSACT = 0xFFFFFFF1;

    static final int TC_H_CLSACT_HANDLE = 0xFFFF0000;

    /** Filters on clsact's ingress hook: TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS). */
    static final int TC_H_CLSACT_INGRESS = 0xFFFFFFF2;

    /** Every protocol, for a filter's tcm_info (sent in network byte order there). */
    static final int ETH_P_ALL = 0x0003;

    /** Options of a cls_bpf filter: u16 instruction count, the classic instructions, u32 flags. */
    static final int TCA_BPF_OPS_LEN = 4;

    static final int TCA_BPF_OPS = 5;
    static final int TCA_BPF_FLAGS = 8;

    /** The program's return value is the action (TC_ACT_*), no action list needed. */
    static final int TCA_BPF_FLAG_ACT_DIRECT = 1;

    /** A cls_bpf filter's action list (not in direct-action mode): nested, one entry per action. */
    static final int TCA_BPF_ACT = 1;

    /** An action in a list (linux/rtnetlink.h TCA_ACT_*): its kind and its options. */
    static final int TCA_ACT_KIND = 1;

    static final int TCA_ACT_OPTIONS = 2;

    /** The mirred action's struct tc_mirred (tc_act/tc_mirred.h), and what it does. */
    static final int TCA_MIRRED_PARMS = 2;

    static final int TCA_EGRESS_REDIR = 1;

    /** tc_gen's action after a redirect: the packet is consumed (pkt_cls.h). */
    static final int TC_ACT_STOLEN = 4;

    /** The root of a device's egress qdisc tree (TC_H_ROOT), and the handle 1: given to a root qdisc. */
    static final int TC_H_ROOT = 0xFFFFFFFF;

    static final int TC_H_ROOT_HANDLE = 0x00010000;

    /** Options of a token bucket filter (pkt_sched.h): struct tc_tbf_qopt, a u64 rate, a u32 burst. */
    static final int TCA_TBF_PARMS = 1;

    static final int TCA_TBF_RATE64 = 4;
    static final int TCA_TBF_BURST = 6;

    /** tc_ratespec.linklayer: the kernel computes the times itself, no rate table needed. */
    static final int TC_LINKLAYER_ETHERNET = 1;

    static final int IFF_UP = 0x1;

    static final int IFLA_ADDRESS = 1;
    static final int IFLA_IFNAME = 3;
    static final int IFLA_MTU = 4;
    static final int IFLA_LINK = 5;
    static final int IFLA_LINKINFO = 18;
    static final int IFLA_NET_NS_FD = 28;
    static final int IFLA_EXT_MASK = 29;
    static final int IFLA_INFO_KIND = 1;
    static final int IFLA_INFO_DATA = 2;
    static final int VETH_INFO_PEER = 1;

    /** IFLA_INFO_DATA of kind "vxlan" (if_link.h): u32 VNI, u32 ifindex, be32/in6 local, u8, be16. */
    static final int IFLA_VXLAN_ID = 1;

    static final int IFLA_VXLAN_LINK = 3;
    static final int IFLA_VXLAN_LOCAL = 4;
    static final int IFLA_VXLAN_LEARNING = 7;
    static final int IFLA_VXLAN_PORT = 15;
    static final int IFLA_VXLAN_LOCAL6 = 17;
    static final int RTEXT_FILTER_SKIP_STATS = 1 << 3;

    static final int IFA_ADDRESS = 1;
    static final int IFA_LOCAL = 2;
    static final int IFA_FLAGS = 8;
    static final int IFA_F_NODAD = 0x02;

    static final int RTA_DST = 1;
    static final int RTA_OIF = 4;
    static final int RTA_GATEWAY = 5;
    static final int RTA_PRIORITY = 6;
    static final int RTA_METRICS = 8;
    static final int RTA_TABLE = 15;

    /** In RTA_METRICS: the path MTU, u32 bytes. */
    static final int RTAX_MTU = 2;

    static final int RT_TABLE_MAIN = 254;
    static final int RTPROT_KERNEL = 2;
    static final int RTPROT_BOOT = 3;
    static final int RTPROT_STATIC = 4;

    /**
     * rtm_protocol of every route and neighbour entry Cadastre programs, so that a dump tells them
     * from everyone else's. Free in the kernel's list (rtnetlink.h stops at 192, RTPROT_EIGRP) and
     * in iproute2's /etc/iproute2/rt_protos, and neither Calico's 80 nor BIRD's 12. The range
     * above 192 is where private daemons pick theirs; `ip route show proto 202` lists Cadastre's.
     */
    static final int RTPROT_CADASTRE = 202;

    static final int RT_SCOPE_UNIVERSE = 0;
    static final int RT_SCOPE_LINK = 253;

    /** In a delete: any scope matches (as iproute2 sends). */
    static final int RT_SCOPE_NOWHERE = 255;

    static final int RTN_UNICAST = 1;
    static final int RTN_BLACKHOLE = 6;

    /** rtm_flags: the gateway is on the link even though no address's prefix covers it. */
    static final int RTNH_F_ONLINK = 4;

    static final int NDA_DST = 1;
    static final int NDA_LLADDR = 2;

    /** u8, like rtm_protocol (since Linux 5.2; older kernels ignore it and report none). */
    static final int NDA_PROTOCOL = 12;

    static final int NUD_STALE = 0x04;
    static final int NUD_NOARP = 0x40;
    static final int NUD_PERMANENT = 0x80;

    /** ndm_flags: the entry is the device's own FDB (here the VXLAN driver's), not a bridge's. */
    static final int NTF_SELF = 0x02;
}
