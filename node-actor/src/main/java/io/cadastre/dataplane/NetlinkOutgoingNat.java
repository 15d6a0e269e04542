package io.cadastre.dataplane;

import io.cadastre.dataplane.HostRouting.OutgoingNat;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

/**
 * Cadastre's outgoing NAT in nf_tables, spoken over NETLINK_NETFILTER as {@code nft} speaks it: no
 * process, no library. The whole table is written in one transaction (nfnetlink's batch), so a
 * packet meets either the old rules or the new ones, never half of each.
 *
 * <p>The table {@code inet cadastre}, as {@code nft list table inet cadastre} shows it:
 *
 * <pre>
 * table inet cadastre {
 *   comment "managed by cadastre-agent, state 2d17a444018fafc82fe4dceb4836d12e"
 *   chain nat-outgoing {
 *     type nat hook postrouting priority srcnat; policy accept;
 *     ip saddr 198.18.0.0/20 goto masquerade-ipv4
 *     ip6 saddr fd00:198::/112 goto masquerade-ipv6
 *   }
 *   chain masquerade-ipv4 {
 *     ip daddr 198.18.0.0/20 accept
 *     masquerade fully-random
 *   }
 *   …
 * }
 * </pre>
 *
 * <p>The comment carries a digest of the state it was written for; {@link #reconcile} compares it
 * and the number of rules with the wanted state and writes the table again when either differs
 * (someone removed a rule, or the pools changed). Numbers are from linux/netfilter/nf_tables.h,
 * nfnetlink.h and nf_nat.h; every u32 attribute of nf_tables is in network byte order.
 */
final class NetlinkOutgoingNat {
    private static final int NFNL_SUBSYS_NFTABLES = 10;
    private static final int NFNL_MSG_BATCH_BEGIN = 0x10;
    private static final int NFNL_MSG_BATCH_END = 0x11;
    private static final int NFPROTO_UNSPEC = 0;
    private static final int NFPROTO_INET = 1;
    private static final int NFPROTO_IPV4 = 2;
    private static final int NFPROTO_IPV6 = 10;
    private static final int NLM_F_APPEND = 0x800;

    private static final int NFT_MSG_NEWTABLE = 0;
    private static final int NFT_MSG_GETTABLE = 1;
    private static final int NFT_MSG_DELTABLE = 2;
    private static final int NFT_MSG_NEWCHAIN = 3;
    private static final int NFT_MSG_NEWRULE = 6;
    private static final int NFT_MSG_GETRULE = 7;

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
    private static final int NFTA_RULE_EXPRESSIONS = 4;
    private static final int NFTA_LIST_ELEM = 1;
    private static final int NFTA_EXPR_NAME = 1;
    private static final int NFTA_EXPR_DATA = 2;
    private static final int NFTA_DATA_VALUE = 1;
    private static final int NFTA_DATA_VERDICT = 2;
    private static final int NFTA_VERDICT_CODE = 1;
    private static final int NFTA_VERDICT_CHAIN = 2;
    private static final int NFTA_META_DREG = 1;
    private static final int NFTA_META_KEY = 2;
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
    private static final int NFTA_IMMEDIATE_DREG = 1;
    private static final int NFTA_IMMEDIATE_DATA = 2;
    private static final int NFTA_MASQ_FLAGS = 1;

    private static final int NFT_REG_VERDICT = 0;
    private static final int NFT_REG_1 = 1;
    private static final int NFT_META_NFPROTO = 15;
    private static final int NFT_CMP_EQ = 0;
    private static final int NFT_PAYLOAD_NETWORK_HEADER = 1;
    private static final int NFT_GOTO = -4;
    private static final int NF_ACCEPT = 1;
    private static final int NF_INET_POST_ROUTING = 4;

    /** NF_IP_PRI_NAT_SRC, nft's {@code srcnat}. */
    private static final int PRIORITY_SRCNAT = 100;

    /** NF_NAT_RANGE_PROTO_RANDOM_FULLY: source ports drawn at random, as kube-proxy masquerades. */
    private static final int NF_NAT_RANGE_PROTO_RANDOM_FULLY = 0x10;

    /** libnftnl's user-data TLV type of a table's comment (NFTNL_UDATA_TABLE_COMMENT). */
    private static final int UDATA_TABLE_COMMENT = 0;

    private static final String COMMENT_PREFIX = "managed by cadastre-agent, state ";

    private NetlinkOutgoingNat() {}

    /**
     * What the kernel holds of the table.
     *
     * @param comment the table's comment, or "" when it has none
     * @param rules how many rules its chains hold
     */
    record Installed(String comment, int rules) {}

    /** What {@link #reconcile} did to the table. */
    enum Action {
        ADDED,
        REPLACED,
        REMOVED
    }

    /** One change to the table, and what it was. */
    record Applied(Action action, HostRouting.Change change) {}

    /**
     * Makes the table what {@code wanted} asks: written when absent or different, removed when
     * {@code wanted} is off, left alone when equal.
     *
     * @return the change made, or empty when there was nothing to do
     * @throws SyscallException when the kernel refused a read or the transaction (nothing changed)
     */
    static Optional<Applied> reconcile(NetlinkSocket nf, OutgoingNat wanted)
            throws SyscallException {
        Optional<Installed> installed = read(nf);
        if (!wanted.enabled()) {
            if (installed.isEmpty()) {
                return Optional.empty();
            }
            NetlinkRequest delete = table(NFT_MSG_DELTABLE, 0);
            nf.batch(
                    batchMessage(NFNL_MSG_BATCH_BEGIN),
                    List.of(delete),
                    List.of("NFT_MSG_DELTABLE inet " + HostRouting.NAT_TABLE),
                    batchMessage(NFNL_MSG_BATCH_END));
            return Optional.of(
                    new Applied(
                            Action.REMOVED,
                            new HostRouting.Change(
                                    HostRouting.Kind.NAT, "table inet " + HostRouting.NAT_TABLE)));
        }
        Installed expected = new Installed(comment(wanted), ruleCount(wanted));
        if (installed.isPresent() && installed.get().equals(expected)) {
            return Optional.empty();
        }
        write(nf, wanted, expected.comment());
        String was =
                installed
                        .map(
                                i ->
                                        " (was "
                                                + i.rules()
                                                + " rules, "
                                                + (i.comment().isEmpty()
                                                        ? "no comment"
                                                        : i.comment())
                                                + ")")
                        .orElse("");
        return Optional.of(
                new Applied(
                        installed.isPresent() ? Action.REPLACED : Action.ADDED,
                        new HostRouting.Change(HostRouting.Kind.NAT, wanted + was)));
    }

    /** @return the table's comment and rule count, or empty when there is no such table */
    static Optional<Installed> read(NetlinkSocket nf) throws SyscallException {
        List<NetlinkMessage> tables;
        try {
            tables =
                    nf.request(
                            table(NFT_MSG_GETTABLE, 0),
                            "NFT_MSG_GETTABLE inet " + HostRouting.NAT_TABLE);
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
                        .attrString(NFTA_RULE_TABLE, HostRouting.NAT_TABLE);
        int count = 0;
        for (NetlinkMessage m : nf.dump(rules, "NFT_MSG_GETRULE inet " + HostRouting.NAT_TABLE)) {
            if (m.type() == type(NFT_MSG_NEWRULE)) {
                count++;
            }
        }
        return Optional.of(new Installed(comment, count));
    }

    /** @return the comment that names {@code nat}'s state: a prefix and a digest of its text */
    static String comment(OutgoingNat nat) {
        try {
            byte[] digest =
                    MessageDigest.getInstance("SHA-256")
                            .digest(nat.toString().getBytes(StandardCharsets.UTF_8));
            return COMMENT_PREFIX + HexFormat.of().formatHex(digest, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** @return the rules the table holds for {@code nat}: one per source, then per family in use one per exempt destination and the masquerade */
    static int ruleCount(OutgoingNat nat) {
        int rules = nat.sources().size();
        for (boolean v4 : new boolean[] {true, false}) {
            if (!OutgoingNat.of(nat.sources(), v4).isEmpty()) {
                rules += OutgoingNat.of(nat.exempt(), v4).size() + 1;
            }
        }
        return rules;
    }

    /**
     * Replaces the table with {@code nat}'s, in one transaction (created first if absent, so that
     * the delete cannot fail), {@code comment} ({@link #comment}) on it.
     */
    private static void write(NetlinkSocket nf, OutgoingNat nat, String comment)
            throws SyscallException {
        List<NetlinkRequest> requests = new ArrayList<>();
        List<String> steps = new ArrayList<>();
        String table = "inet " + HostRouting.NAT_TABLE;
        requests.add(table(NFT_MSG_NEWTABLE, LinuxNetlinkAbi.NLM_F_CREATE));
        steps.add("NFT_MSG_NEWTABLE " + table);
        requests.add(table(NFT_MSG_DELTABLE, 0));
        steps.add("NFT_MSG_DELTABLE " + table);
        requests.add(
                table(NFT_MSG_NEWTABLE, LinuxNetlinkAbi.NLM_F_CREATE | LinuxNetlinkAbi.NLM_F_EXCL)
                        .attr(NFTA_TABLE_USERDATA, userData(comment)));
        steps.add("NFT_MSG_NEWTABLE " + table + " (" + comment + ")");

        NetlinkRequest base = chain(HostRouting.NAT_CHAIN);
        int hook = base.nest(NFTA_CHAIN_HOOK);
        base.attrBe32(NFTA_HOOK_HOOKNUM, NF_INET_POST_ROUTING)
                .attrBe32(NFTA_HOOK_PRIORITY, PRIORITY_SRCNAT)
                .end(hook);
        base.attrBe32(NFTA_CHAIN_POLICY, NF_ACCEPT).attrString(NFTA_CHAIN_TYPE, "nat");
        requests.add(base);
        steps.add("NFT_MSG_NEWCHAIN " + HostRouting.NAT_CHAIN + " (nat, postrouting, srcnat)");

        for (boolean v4 : new boolean[] {true, false}) {
            List<IpPrefix> sources = OutgoingNat.of(nat.sources(), v4);
            if (sources.isEmpty()) {
                continue;
            }
            String familyChain = familyChain(v4);
            requests.add(chain(familyChain));
            steps.add("NFT_MSG_NEWCHAIN " + familyChain);
            for (IpPrefix source : sources) {
                NetlinkRequest r = rule(HostRouting.NAT_CHAIN);
                int exprs = r.nest(NFTA_RULE_EXPRESSIONS);
                meta(r, v4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
                prefixMatch(r, source, v4 ? 12 : 8);
                goTo(r, familyChain);
                r.end(exprs);
                requests.add(r);
                steps.add("NFT_MSG_NEWRULE " + source + " goto " + familyChain);
            }
            for (IpPrefix destination : OutgoingNat.of(nat.exempt(), v4)) {
                NetlinkRequest r = rule(familyChain);
                int exprs = r.nest(NFTA_RULE_EXPRESSIONS);
                // Only the goto brings packets of this family here; the protocol check makes
                // nft show the rule as "ip daddr …" rather than raw header bytes.
                meta(r, v4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
                prefixMatch(r, destination, v4 ? 16 : 24);
                accept(r);
                r.end(exprs);
                requests.add(r);
                steps.add("NFT_MSG_NEWRULE " + familyChain + ": to " + destination + " accept");
            }
            NetlinkRequest masquerade = rule(familyChain);
            int exprs = masquerade.nest(NFTA_RULE_EXPRESSIONS);
            OpenExpression data = expression(masquerade, "masq");
            masquerade.attrBe32(NFTA_MASQ_FLAGS, NF_NAT_RANGE_PROTO_RANDOM_FULLY);
            endExpression(masquerade, data);
            masquerade.end(exprs);
            requests.add(masquerade);
            steps.add("NFT_MSG_NEWRULE " + familyChain + ": masquerade");
        }
        nf.batch(
                batchMessage(NFNL_MSG_BATCH_BEGIN),
                requests,
                steps,
                batchMessage(NFNL_MSG_BATCH_END));
    }

    static String familyChain(boolean v4) {
        return v4 ? "masquerade-ipv4" : "masquerade-ipv6";
    }

    private static int type(int message) {
        return (NFNL_SUBSYS_NFTABLES << 8) | message;
    }

    private static NetlinkRequest batchMessage(int type) {
        return new NetlinkRequest(type, 0).nfgenmsg(NFPROTO_UNSPEC, NFNL_SUBSYS_NFTABLES);
    }

    private static NetlinkRequest table(int message, int flags) {
        return new NetlinkRequest(type(message), flags)
                .nfgenmsg(NFPROTO_INET, 0)
                .attrString(NFTA_TABLE_NAME, HostRouting.NAT_TABLE);
    }

    private static NetlinkRequest chain(String name) {
        return new NetlinkRequest(type(NFT_MSG_NEWCHAIN), LinuxNetlinkAbi.NLM_F_CREATE)
                .nfgenmsg(NFPROTO_INET, 0)
                .attrString(NFTA_CHAIN_TABLE, HostRouting.NAT_TABLE)
                .attrString(NFTA_CHAIN_NAME, name);
    }

    /** A rule appended to {@code chain} (without NLM_F_APPEND the kernel puts it first). */
    private static NetlinkRequest rule(String chain) {
        return new NetlinkRequest(
                        type(NFT_MSG_NEWRULE), LinuxNetlinkAbi.NLM_F_CREATE | NLM_F_APPEND)
                .nfgenmsg(NFPROTO_INET, 0)
                .attrString(NFTA_RULE_TABLE, HostRouting.NAT_TABLE)
                .attrString(NFTA_RULE_CHAIN, chain);
    }

    /** Where an open expression's nested attributes start: its list element and its data. */
    private record OpenExpression(int element, int data) {}

    /** Opens one expression of a rule's list; close it with {@link #endExpression}. */
    private static OpenExpression expression(NetlinkRequest r, String name) {
        int element = r.nest(NFTA_LIST_ELEM);
        r.attrString(NFTA_EXPR_NAME, name);
        return new OpenExpression(element, r.nest(NFTA_EXPR_DATA));
    }

    private static void endExpression(NetlinkRequest r, OpenExpression open) {
        r.end(open.data());
        r.end(open.element());
    }

    /** {@code meta nfproto ipv4}: the inet table sees both families; the payload offsets are one family's. */
    private static void meta(NetlinkRequest r, int nfproto) {
        OpenExpression e = expression(r, "meta");
        r.attrBe32(NFTA_META_DREG, NFT_REG_1).attrBe32(NFTA_META_KEY, NFT_META_NFPROTO);
        endExpression(r, e);
        cmpEq(r, new byte[] {(byte) nfproto});
    }

    /** {@code ip saddr 198.18.0.0/20} and the like: the address at {@code offset} of the network header, masked, equal to the prefix. */
    private static void prefixMatch(NetlinkRequest r, IpPrefix prefix, int offset) {
        byte[] network = prefix.address().getAddress();
        OpenExpression e = expression(r, "payload");
        r.attrBe32(NFTA_PAYLOAD_DREG, NFT_REG_1)
                .attrBe32(NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER)
                .attrBe32(NFTA_PAYLOAD_OFFSET, offset)
                .attrBe32(NFTA_PAYLOAD_LEN, network.length);
        endExpression(r, e);
        e = expression(r, "bitwise");
        r.attrBe32(NFTA_BITWISE_SREG, NFT_REG_1)
                .attrBe32(NFTA_BITWISE_DREG, NFT_REG_1)
                .attrBe32(NFTA_BITWISE_LEN, network.length);
        value(r, NFTA_BITWISE_MASK, mask(prefix.length(), network.length));
        value(r, NFTA_BITWISE_XOR, new byte[network.length]);
        endExpression(r, e);
        cmpEq(r, network);
    }

    private static void cmpEq(NetlinkRequest r, byte[] data) {
        OpenExpression e = expression(r, "cmp");
        r.attrBe32(NFTA_CMP_SREG, NFT_REG_1).attrBe32(NFTA_CMP_OP, NFT_CMP_EQ);
        value(r, NFTA_CMP_DATA, data);
        endExpression(r, e);
    }

    private static void goTo(NetlinkRequest r, String chain) {
        verdict(r, NFT_GOTO, chain);
    }

    private static void accept(NetlinkRequest r) {
        verdict(r, NF_ACCEPT, null);
    }

    private static void verdict(NetlinkRequest r, int code, String chain) {
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

    static byte[] mask(int length, int bytes) {
        byte[] mask = new byte[bytes];
        for (int bit = 0; bit < length; bit++) {
            mask[bit / 8] |= (byte) (0x80 >>> (bit % 8));
        }
        return mask;
    }

    /** The comment as libnftnl stores it, so that {@code nft list} shows it: type, length, text with its NUL. */
    static byte[] userData(String comment) {
        byte[] text = comment.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[text.length + 3];
        out[0] = UDATA_TABLE_COMMENT;
        out[1] = (byte) (text.length + 1);
        System.arraycopy(text, 0, out, 2, text.length);
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
            if (type == UDATA_TABLE_COMMENT) {
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
