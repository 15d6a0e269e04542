package io.cadastre.dataplane;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One nf_tables table of family inet that Cadastre owns whole, spoken over NETLINK_NETFILTER as
 * {@code nft} speaks it: reading its comment and rule count, deleting it, replacing it in one
 * transaction, and the expressions its rules are made of. Shared by {@link NetlinkOutgoingNat} and
 * {@link NetlinkHostPolicy}.
 *
 * <p>The comment carries a digest of the state the table was written for ({@link #comment}); its
 * owner compares it and the number of rules with the wanted state and writes the table again
 * when either differs. Numbers are from linux/netfilter/nf_tables.h, nfnetlink.h,
 * nf_conntrack_common.h and libnftnl's udata.h; every u32 attribute of nf_tables is in network
 * byte order.
 */
final class Nftables {
    static final int NFPROTO_IPV4 = 2;
    static final int NFPROTO_IPV6 = 10;
    static final int NF_DROP = 0;
    static final int NF_ACCEPT = 1;
    static final int NFT_JUMP = -3;
    static final int NFT_GOTO = -4;
    static final int NFT_RETURN = -5;
    static final int NFT_CMP_EQ = 0;
    static final int NFT_CMP_NEQ = 1;
    static final int NFT_CMP_LTE = 3;
    static final int NFT_CMP_GTE = 5;
    static final int NFT_PAYLOAD_NETWORK_HEADER = 1;
    static final int NFT_PAYLOAD_TRANSPORT_HEADER = 2;
    static final int NFT_META_NFPROTO = 15;
    static final int NFT_META_L4PROTO = 16;
    static final int NFTA_RULE_EXPRESSIONS = 4;

    private static final int NFNL_SUBSYS_NFTABLES = 10;
    private static final int NFNL_MSG_BATCH_BEGIN = 0x10;
    private static final int NFNL_MSG_BATCH_END = 0x11;
    private static final int NFPROTO_UNSPEC = 0;
    private static final int NFPROTO_INET = 1;
    private static final int NLM_F_APPEND = 0x800;

    private static final int NFT_MSG_NEWTABLE = 0;
    private static final int NFT_MSG_GETTABLE = 1;
    private static final int NFT_MSG_DELTABLE = 2;
    private static final int NFT_MSG_NEWCHAIN = 3;
    private static final int NFT_MSG_NEWRULE = 6;
    private static final int NFT_MSG_GETRULE = 7;
    private static final int NFT_MSG_NEWSET = 9;
    private static final int NFT_MSG_NEWSETELEM = 12;

    private static final int NFTA_TABLE_NAME = 1;
    private static final int NFTA_TABLE_USERDATA = 6;
    private static final int NFTA_CHAIN_TABLE = 1;
    private static final int NFTA_CHAIN_NAME = 3;
    private static final int NFTA_CHAIN_HOOK = 4;
    private static final int NFTA_CHAIN_POLICY = 5;
    private static final int NFTA_CHAIN_TYPE = 7;
    private static final int NFTA_HOOK_HOOKNUM = 1;
    private static final int NFTA_HOOK_PRIORITY = 2;
    private static final int NFTA_RULE_TABLE = 1;
    private static final int NFTA_RULE_CHAIN = 2;
    private static final int NFTA_RULE_USERDATA = 7;
    private static final int NFTA_LIST_ELEM = 1;
    private static final int NFTA_EXPR_NAME = 1;
    private static final int NFTA_EXPR_DATA = 2;
    private static final int NFTA_DATA_VALUE = 1;
    private static final int NFTA_DATA_VERDICT = 2;
    private static final int NFTA_VERDICT_CODE = 1;
    private static final int NFTA_VERDICT_CHAIN = 2;
    private static final int NFTA_META_DREG = 1;
    private static final int NFTA_META_KEY = 2;
    private static final int NFTA_CT_DREG = 1;
    private static final int NFTA_CT_KEY = 2;
    private static final int NFTA_CMP_SREG = 1;
    private static final int NFTA_CMP_OP = 2;
    private static final int NFTA_CMP_DATA = 3;
    private static final int NFTA_PAYLOAD_DREG = 1;
    private static final int NFTA_PAYLOAD_BASE = 2;
    private static final int NFTA_PAYLOAD_OFFSET = 3;
    private static final int NFTA_PAYLOAD_LEN = 4;
    private static final int NFTA_BITWISE_SREG = 1;
    private static final int NFTA_BITWISE_DREG = 2;
    private static final int NFTA_BITWISE_LEN = 3;
    private static final int NFTA_BITWISE_MASK = 4;
    private static final int NFTA_BITWISE_XOR = 5;
    private static final int NFTA_COUNTER_PACKETS = 2;
    private static final int NFTA_SET_TABLE = 1;
    private static final int NFTA_SET_NAME = 2;
    private static final int NFTA_SET_KEY_TYPE = 4;
    private static final int NFTA_SET_KEY_LEN = 5;
    private static final int NFTA_SET_ID = 10;
    private static final int NFTA_SET_ELEM_LIST_TABLE = 1;
    private static final int NFTA_SET_ELEM_LIST_SET = 2;
    private static final int NFTA_SET_ELEM_LIST_ELEMENTS = 3;
    private static final int NFTA_SET_ELEM_KEY = 1;
    private static final int NFTA_LOOKUP_SET = 1;
    private static final int NFTA_LOOKUP_SREG = 2;
    private static final int NFTA_IMMEDIATE_DREG = 1;
    private static final int NFTA_IMMEDIATE_DATA = 2;

    /** nft's datatypes of a set's key, which {@code nft list} shows (nftables' datatype.h). */
    private static final int TYPE_IPADDR = 7;

    private static final int TYPE_IP6ADDR = 8;

    /**
     * Elements per NFT_MSG_NEWSETELEM: their list is one attribute, whose length field has 16
     * bits; 1,000 IPv6 elements take 28,000 bytes.
     */
    private static final int ELEMENTS_PER_MESSAGE = 1_000;

    private static final int NFT_REG_VERDICT = 0;
    private static final int NFT_REG_1 = 1;
    private static final int NFT_CT_STATE = 0;

    /**
     * libnftnl's user-data TLV type of a table's and of a rule's comment
     * (NFTNL_UDATA_TABLE_COMMENT, NFTNL_UDATA_RULE_COMMENT).
     */
    private static final int UDATA_COMMENT = 0;

    private static final String COMMENT_PREFIX = "managed by cadastre-agent, state ";

    private final String table;

    /** @param table the table's name, e.g. {@code cadastre}; its family is always inet */
    Nftables(String table) {
        this.table = table;
    }

    /**
     * What the kernel holds of the table.
     *
     * @param comment the table's comment, or "" when it has none
     * @param rules how many rules its chains hold
     */
    record Installed(String comment, int rules) {
        /** @return e.g. {@code "4 rules, managed by cadastre-agent, state 2d17…"} */
        String text() {
            return rules + " rules, " + (comment.isEmpty() ? "no comment" : comment);
        }
    }

    /** @return the comment that names a state: a prefix and 32 hex digits of SHA-256 of its text */
    static String comment(String state) {
        try {
            byte[] digest =
                    MessageDigest.getInstance("SHA-256")
                            .digest(state.getBytes(StandardCharsets.UTF_8));
            return COMMENT_PREFIX + HexFormat.of().formatHex(digest, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** @return e.g. {@code "inet cadastre"}, for steps and reports */
    String name() {
        return "inet " + table;
    }

    /**
     * What the kernel holds of the table, with what its counters counted.
     *
     * @param installed its comment and rule count
     * @param packets chain name → packets that reached the {@code counter} expressions of its
     *     rules, summed (only chains with a counter)
     */
    record Reading(Installed installed, Map<String, Long> packets) {}

    /**
     * @return the table's comment and rule count, or empty when there is no such table
     * @throws SyscallException when the kernel refused the read
     */
    Optional<Installed> read(NetlinkSocket nf) throws SyscallException {
        return readCounting(nf).map(Reading::installed);
    }

    /**
     * @return the table's comment, rule count and counters, from one dump of its rules; empty when
     *     there is no such table
     * @throws SyscallException when the kernel refused the read
     */
    Optional<Reading> readCounting(NetlinkSocket nf) throws SyscallException {
        List<NetlinkMessage> tables;
        try {
            tables = nf.request(table(NFT_MSG_GETTABLE, 0), "NFT_MSG_GETTABLE " + name());
        } catch (SyscallException e) {
            if (e.errno() == LibC.ENOENT) {
                return Optional.empty();
            }
            throw e;
        }
        String comment = "";
        for (NetlinkMessage m : tables) {
            byte[] udata = m.attributes(4).bytes(NFTA_TABLE_USERDATA);
            if (udata != null) {
                comment = commentOf(udata);
            }
        }
        NetlinkRequest rules =
                new NetlinkRequest(type(NFT_MSG_GETRULE), 0)
                        .nfgenmsg(NFPROTO_INET, 0)
                        .attrString(NFTA_RULE_TABLE, table);
        int count = 0;
        Map<String, Long> packets = new HashMap<>();
        for (NetlinkMessage m : nf.dump(rules, "NFT_MSG_GETRULE " + name())) {
            if (m.type() == type(NFT_MSG_NEWRULE)) {
                count++;
                NetlinkMessage.Attributes rule = m.attributes(4);
                String chain = rule.string(NFTA_RULE_CHAIN);
                for (NetlinkMessage.Attributes e : rule.list(NFTA_RULE_EXPRESSIONS)) {
                    if (chain != null && "counter".equals(e.string(NFTA_EXPR_NAME))) {
                        long n = e.nested(NFTA_EXPR_DATA, 0).be64(NFTA_COUNTER_PACKETS);
                        packets.merge(chain, Math.max(0, n), Long::sum);
                    }
                }
            }
        }
        return Optional.of(new Reading(new Installed(comment, count), Map.copyOf(packets)));
    }

    /**
     * @return whether the table exists (one NFT_MSG_GETTABLE; its rules are not read)
     * @throws SyscallException when the kernel refused the read
     */
    boolean exists(NetlinkSocket nf) throws SyscallException {
        try {
            nf.request(table(NFT_MSG_GETTABLE, 0), "NFT_MSG_GETTABLE " + name());
            return true;
        } catch (SyscallException e) {
            if (e.errno() == LibC.ENOENT) {
                return false;
            }
            throw e;
        }
    }

    /** Deletes the table, chains and rules with it, in a transaction of its own. */
    void delete(NetlinkSocket nf) throws SyscallException {
        Batch batch = new Batch();
        batch.add(table(NFT_MSG_DELTABLE, 0), "NFT_MSG_DELTABLE " + name());
        batch.send(nf);
    }

    /**
     * @return a transaction that replaces the table whole, {@code comment} on it: created first
     *     if absent (so that the delete cannot fail), deleted, created again; add its chains and
     *     rules, then {@link Batch#send}
     */
    Batch replace(String comment) {
        Batch batch = new Batch();
        batch.add(
                table(NFT_MSG_NEWTABLE, LinuxNetlinkAbi.NLM_F_CREATE),
                "NFT_MSG_NEWTABLE " + name());
        batch.add(table(NFT_MSG_DELTABLE, 0), "NFT_MSG_DELTABLE " + name());
        batch.add(
                table(NFT_MSG_NEWTABLE, LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .attr(NFTA_TABLE_USERDATA, userData(comment)),
                "NFT_MSG_NEWTABLE " + name() + " (" + comment + ")");
        return batch;
    }

    /** Requests applied as one transaction (nfnetlink's batch): all or none. */
    static final class Batch {
        private final List<NetlinkRequest> requests = new ArrayList<>();
        private final List<String> steps = new ArrayList<>();

        /** @param step names the request in an error message */
        void add(NetlinkRequest request, String step) {
            requests.add(request);
            steps.add(step);
        }

        /** @return the names of its requests, in order */
        List<String> steps() {
            return List.copyOf(steps);
        }

        /** @throws SyscallException with the first refused step; nothing was applied then */
        void send(NetlinkSocket nf) throws SyscallException {
            nf.batch(
                    batchMessage(NFNL_MSG_BATCH_BEGIN),
                    requests,
                    steps,
                    batchMessage(NFNL_MSG_BATCH_END));
        }
    }

    /**
     * A base chain: one that a netfilter hook calls.
     *
     * @param type {@code filter} or {@code nat}
     * @param hook NF_INET_FORWARD (2), NF_INET_POST_ROUTING (4), ...
     * @param priority e.g. 0 for nft's {@code filter}, 100 for {@code srcnat}
     */
    NetlinkRequest baseChain(String name, String type, int hook, int priority) {
        NetlinkRequest base = chain(name);
        int nest = base.nest(NFTA_CHAIN_HOOK);
        base.attrBe32(NFTA_HOOK_HOOKNUM, hook).attrBe32(NFTA_HOOK_PRIORITY, priority).end(nest);
        return base.attrBe32(NFTA_CHAIN_POLICY, NF_ACCEPT).attrString(NFTA_CHAIN_TYPE, type);
    }

    /** A regular chain: one that only jumps and gotos reach. */
    NetlinkRequest chain(String name) {
        return new NetlinkRequest(type(NFT_MSG_NEWCHAIN), LinuxNetlinkAbi.NLM_F_CREATE)
                .nfgenmsg(NFPROTO_INET, 0)
                .attrString(NFTA_CHAIN_TABLE, table)
                .attrString(NFTA_CHAIN_NAME, name);
    }

    /**
     * A rule appended to {@code chain} (without NLM_F_APPEND the kernel puts it first); add its
     * expressions inside a nest of {@link #NFTA_RULE_EXPRESSIONS}.
     */
    NetlinkRequest rule(String chain) {
        return new NetlinkRequest(
                        type(NFT_MSG_NEWRULE), LinuxNetlinkAbi.NLM_F_CREATE | NLM_F_APPEND)
                .nfgenmsg(NFPROTO_INET, 0)
                .attrString(NFTA_RULE_TABLE, table)
                .attrString(NFTA_RULE_CHAIN, chain);
    }

    /**
     * Adds to {@code batch} the named set {@code name} of addresses of one family with its
     * elements, as nft's {@code set NAME { type ipv4_addr; elements = { ... } }}: a hash the
     * kernel looks an address up in at once, however many it holds (Calico's ipsets). The
     * elements go in messages of {@link #ELEMENTS_PER_MESSAGE}.
     *
     * @param id the set's number in the transaction, unique there (the kernel requires one)
     * @param addresses distinct addresses, all IPv4 ({@code v4}) or all IPv6
     */
    void addressSet(Batch batch, String name, int id, boolean v4, List<InetAddress> addresses) {
        batch.add(
                new NetlinkRequest(type(NFT_MSG_NEWSET), LinuxNetlinkAbi.NLM_F_CREATE)
                        .nfgenmsg(NFPROTO_INET, 0)
                        .attrString(NFTA_SET_TABLE, table)
                        .attrString(NFTA_SET_NAME, name)
                        .attrBe32(NFTA_SET_KEY_TYPE, v4 ? TYPE_IPADDR : TYPE_IP6ADDR)
                        .attrBe32(NFTA_SET_KEY_LEN, v4 ? 4 : 16)
                        .attrBe32(NFTA_SET_ID, id),
                "NFT_MSG_NEWSET " + name + " (" + (v4 ? "ipv4_addr" : "ipv6_addr") + ")");
        for (int from = 0; from < addresses.size(); from += ELEMENTS_PER_MESSAGE) {
            List<InetAddress> part =
                    addresses.subList(
                            from, Math.min(addresses.size(), from + ELEMENTS_PER_MESSAGE));
            NetlinkRequest r =
                    new NetlinkRequest(type(NFT_MSG_NEWSETELEM), LinuxNetlinkAbi.NLM_F_CREATE)
                            .nfgenmsg(NFPROTO_INET, 0)
                            .attrString(NFTA_SET_ELEM_LIST_TABLE, table)
                            .attrString(NFTA_SET_ELEM_LIST_SET, name);
            int elements = r.nest(NFTA_SET_ELEM_LIST_ELEMENTS);
            for (InetAddress a : part) {
                int element = r.nest(NFTA_LIST_ELEM);
                value(r, NFTA_SET_ELEM_KEY, a.getAddress());
                r.end(element);
            }
            r.end(elements);
            batch.add(
                    r,
                    "NFT_MSG_NEWSETELEM " + name + ": " + part.size() + " addresses from " + from);
        }
    }

    /** A rule's comment, as {@code nft list} shows it; after its expressions. */
    static void ruleComment(NetlinkRequest r, String comment) {
        r.attr(NFTA_RULE_USERDATA, userData(comment));
    }

    private static int type(int message) {
        return (NFNL_SUBSYS_NFTABLES << 8) | message;
    }

    private static NetlinkRequest batchMessage(int type) {
        return new NetlinkRequest(type, 0).nfgenmsg(NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES);
    }

    private NetlinkRequest table(int message, int flags) {
        return new NetlinkRequest(type(message), flags)
                .nfgenmsg(NFPROTO_INET, 0)
                .attrString(NFTA_TABLE_NAME, table);
    }

    // ---- expressions ----

    /** Where an open expression's nested attributes start: its list element and its data. */
    record OpenExpression(int element, int data) {}

    /** Opens one expression of a rule's list; close it with {@link #endExpression}. */
    static OpenExpression expression(NetlinkRequest r, String name) {
        int element = r.nest(NFTA_LIST_ELEM);
        r.attrString(NFTA_EXPR_NAME, name);
        return new OpenExpression(element, r.nest(NFTA_EXPR_DATA));
    }

    static void endExpression(NetlinkRequest r, OpenExpression open) {
        r.end(open.data());
        r.end(open.element());
    }

    /**
     * {@code meta nfproto ipv4}: the inet table sees both families; the payload offsets that
     * follow are one family's.
     */
    static void nfproto(NetlinkRequest r, int nfproto) {
        meta(r, NFT_META_NFPROTO);
        cmp(r, NFT_CMP_EQ, new byte[] {(byte) nfproto});
    }

    /** Loads a meta key (NFT_META_NFPROTO, NFT_META_L4PROTO, ...) into the register. */
    static void meta(NetlinkRequest r, int key) {
        OpenExpression e = expression(r, "meta");
        r.attrBe32(NFTA_META_DREG, NFT_REG_1).attrBe32(NFTA_META_KEY, key);
        endExpression(r, e);
    }

    /**
     * {@code ip saddr 198.18.0.0/20}, {@code ip daddr != 198.18.1.0/24} and the like: the address
     * at {@code offset} of the network header, masked, compared with {@code op} to the prefix.
     */
    static void prefixMatch(NetlinkRequest r, IpPrefix prefix, int offset, int op) {
        byte[] network = prefix.address().getAddress();
        payload(r, NFT_PAYLOAD_NETWORK_HEADER, offset, network.length);
        bitwise(r, mask(prefix.length(), network.length));
        cmp(r, op, network);
    }

    /** Loads {@code length} bytes at {@code offset} of a header (NFT_PAYLOAD_*) into the register. */
    static void payload(NetlinkRequest r, int base, int offset, int length) {
        OpenExpression e = expression(r, "payload");
        r.attrBe32(NFTA_PAYLOAD_DREG, NFT_REG_1)
                .attrBe32(NFTA_PAYLOAD_BASE, base)
                .attrBe32(NFTA_PAYLOAD_OFFSET, offset)
                .attrBe32(NFTA_PAYLOAD_LEN, length);
        endExpression(r, e);
    }

    /** The register ANDed with {@code mask} (as long as the value in it). */
    static void bitwise(NetlinkRequest r, byte[] mask) {
        OpenExpression e = expression(r, "bitwise");
        r.attrBe32(NFTA_BITWISE_SREG, NFT_REG_1)
                .attrBe32(NFTA_BITWISE_DREG, NFT_REG_1)
                .attrBe32(NFTA_BITWISE_LEN, mask.length);
        value(r, NFTA_BITWISE_MASK, mask);
        value(r, NFTA_BITWISE_XOR, new byte[mask.length]);
        endExpression(r, e);
    }

    /** The rule goes on when the register compares with {@code op} (NFT_CMP_*) to {@code data}. */
    static void cmp(NetlinkRequest r, int op, byte[] data) {
        OpenExpression e = expression(r, "cmp");
        r.attrBe32(NFTA_CMP_SREG, NFT_REG_1).attrBe32(NFTA_CMP_OP, op);
        value(r, NFTA_CMP_DATA, data);
        endExpression(r, e);
    }

    /**
     * nft(8): {@code ct state}, matching when the connection's state is one of {@code states}
     * (bits 1 &lt;&lt; IP_CT_*: 2 established, 4 related, 8 new). The state is a u32 in host
     * byte order, unlike the attributes.
     */
    static void ctState(NetlinkRequest r, int states) {
        OpenExpression e = expression(r, "ct");
        r.attrBe32(NFTA_CT_DREG, NFT_REG_1).attrBe32(NFTA_CT_KEY, NFT_CT_STATE);
        endExpression(r, e);
        bitwise(r, ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(states).array());
        cmp(r, NFT_CMP_NEQ, new byte[4]);
    }

    /** nft(8): {@code @set}, the register's value is an element of the table's set {@code set}. */
    static void lookup(NetlinkRequest r, String set) {
        OpenExpression e = expression(r, "lookup");
        r.attrString(NFTA_LOOKUP_SET, set).attrBe32(NFTA_LOOKUP_SREG, NFT_REG_1);
        endExpression(r, e);
    }

    /** nft(8): {@code counter}, the packets and bytes that reached it. */
    static void counter(NetlinkRequest r) {
        endExpression(r, expression(r, "counter"));
    }

    /**
     * The rule's verdict: NF_ACCEPT, NF_DROP, NFT_RETURN, or NFT_JUMP or NFT_GOTO to {@code
     * chain} (null for the others).
     */
    static void verdict(NetlinkRequest r, int code, String chain) {
        OpenExpression e = expression(r, "immediate");
        r.attrBe32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
        int data = r.nest(NFTA_IMMEDIATE_DATA);
        int verdict = r.nest(NFTA_DATA_VERDICT);
        r.attrBe32(NFTA_VERDICT_CODE, code);
        if (chain != null) {
            r.attrString(NFTA_VERDICT_CHAIN, chain);
        }
        r.end(verdict);
        r.end(data);
        endExpression(r, e);
    }

    private static void value(NetlinkRequest r, int attribute, byte[] bytes) {
        int nest = r.nest(attribute);
        r.attr(NFTA_DATA_VALUE, bytes);
        r.end(nest);
    }

    /** @return {@code length} one bits, then zeros, in {@code bytes} bytes */
    static byte[] mask(int length, int bytes) {
        byte[] mask = new byte[bytes];
        for (int bit = 0; bit < length; bit++) {
            mask[bit / 8] |= (byte) (0x80 >>> (bit % 8));
        }
        return mask;
    }

    /**
     * A comment as libnftnl stores it, so that {@code nft list} shows it: type, length, text
     * with its NUL. Longer texts are cut to nft's limit of 128 bytes.
     */
    static byte[] userData(String comment) {
        byte[] text = comment.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, 127);
        byte[] out = new byte[length + 3];
        out[0] = UDATA_COMMENT;
        out[1] = (byte) (length + 1);
        System.arraycopy(text, 0, out, 2, length);
        return out;
    }

    /** @return the comment in libnftnl's user data, or "" when it holds none */
    static String commentOf(byte[] udata) {
        int pos = 0;
        while (pos + 2 <= udata.length) {
            int type = Byte.toUnsignedInt(udata[pos]);
            int len = Byte.toUnsignedInt(udata[pos + 1]);
            if (pos + 2 + len > udata.length) {
                break;
            }
            if (type == UDATA_COMMENT) {
                int end = pos + 2;
                while (end < pos + 2 + len && udata[end] != 0) {
                    end++;
                }
                return new String(udata, pos + 2, end - pos - 2, StandardCharsets.UTF_8);
            }
            pos += 2 + len;
        }
        return "";
    }
}
