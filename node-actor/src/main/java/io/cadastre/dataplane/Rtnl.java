package io.cadastre.dataplane;

/** rtnetlink numbers from the Linux UAPI headers (linux/netlink.h, rtnetlink.h, if_link.h, veth.h). */
final class Rtnl {
    private Rtnl() {}

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
    static final int RTM_GETADDR = 22;
    static final int RTM_NEWROUTE = 24;
    static final int RTM_GETROUTE = 26;

    static final int AF_UNSPEC = 0;
    static final int AF_INET = 2;
    static final int AF_INET6 = 10;

    /** sizeof(struct ifinfomsg), ifaddrmsg, rtmsg. */
    static final int IFINFOMSG_LEN = 16;
    static final int IFADDRMSG_LEN = 8;
    static final int RTMSG_LEN = 12;

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
    static final int RTEXT_FILTER_SKIP_STATS = 1 << 3;

    static final int IFA_ADDRESS = 1;
    static final int IFA_LOCAL = 2;
    static final int IFA_FLAGS = 8;
    static final int IFA_F_NODAD = 0x02;

    static final int RTA_DST = 1;
    static final int RTA_OIF = 4;
    static final int RTA_GATEWAY = 5;
    static final int RTA_TABLE = 15;

    static final int RT_TABLE_MAIN = 254;
    static final int RTPROT_BOOT = 3;
    static final int RT_SCOPE_UNIVERSE = 0;
    static final int RT_SCOPE_LINK = 253;
    static final int RTN_UNICAST = 1;
}
