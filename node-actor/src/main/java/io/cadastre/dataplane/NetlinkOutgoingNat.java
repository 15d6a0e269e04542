package io.cadastre.dataplane;

import io.cadastre.dataplane.HostRouting.OutgoingNat;
import io.cadastre.dataplane.Nftables.Installed;
import io.cadastre.dataplane.Nftables.OpenExpression;
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
 * (someone removed a rule, or the pools changed). The nfnetlink pieces are {@link Nftables}'s;
 * the numbers here are from linux/netfilter.h and nf_nat.h.
 */
final class NetlinkOutgoingNat {
    private static final Nftables TABLE = new Nftables(HostRouting.NAT_TABLE);
    private static final int NFTA_MASQ_FLAGS = 1;
    private static final int NF_INET_POST_ROUTING = 4;

    /** NF_IP_PRI_NAT_SRC, nft's {@code srcnat}. */
    private static final int PRIORITY_SRCNAT = 100;

    /** NF_NAT_RANGE_PROTO_RANDOM_FULLY: source ports drawn at random, as kube-proxy masquerades. */
    private static final int NF_NAT_RANGE_PROTO_RANDOM_FULLY = 0x10;

    private NetlinkOutgoingNat() {}

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
            TABLE.delete(nf);
            return Optional.of(
                    new Applied(
                            Action.REMOVED,
                            new HostRouting.Change(HostRouting.Kind.NAT, "table " + TABLE.name())));
        }
        Installed expected = new Installed(comment(wanted), ruleCount(wanted));
        if (installed.isPresent() && installed.get().equals(expected)) {
            return Optional.empty();
        }
        write(nf, wanted, expected.comment());
        String was = installed.map(i -> " (was " + i.text() + ")").orElse("");
        return Optional.of(
                new Applied(
                        installed.isPresent() ? Action.REPLACED : Action.ADDED,
                        new HostRouting.Change(HostRouting.Kind.NAT, wanted + was)));
    }

    /** @return the table's comment and rule count, or empty when there is no such table */
    static Optional<Installed> read(NetlinkSocket nf) throws SyscallException {
        return TABLE.read(nf);
    }

    /** @return the comment that names {@code nat}'s state: a prefix and a digest of its text */
    static String comment(OutgoingNat nat) {
        return Nftables.comment(nat.toString());
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
        Nftables.Batch batch = TABLE.replace(comment);
        batch.add(
                TABLE.baseChain(
                        HostRouting.NAT_CHAIN, "nat", NF_INET_POST_ROUTING, PRIORITY_SRCNAT),
                "NFT_MSG_NEWCHAIN " + HostRouting.NAT_CHAIN + " (nat, postrouting, srcnat)");
        for (boolean v4 : new boolean[] {true, false}) {
            List<IpPrefix> sources = OutgoingNat.of(nat.sources(), v4);
            if (sources.isEmpty()) {
                continue;
            }
            String familyChain = familyChain(v4);
            int nfproto = v4 ? Nftables.NFPROTO_IPV4 : Nftables.NFPROTO_IPV6;
            batch.add(TABLE.chain(familyChain), "NFT_MSG_NEWCHAIN " + familyChain);
            for (IpPrefix source : sources) {
                NetlinkRequest r = TABLE.rule(HostRouting.NAT_CHAIN);
                int exprs = r.nest(Nftables.NFTA_RULE_EXPRESSIONS);
                Nftables.nfproto(r, nfproto);
                Nftables.prefixMatch(r, source, v4 ? 12 : 8, Nftables.NFT_CMP_EQ);
                Nftables.verdict(r, Nftables.NFT_GOTO, familyChain);
                r.end(exprs);
                batch.add(r, "NFT_MSG_NEWRULE " + source + " goto " + familyChain);
            }
            for (IpPrefix destination : OutgoingNat.of(nat.exempt(), v4)) {
                NetlinkRequest r = TABLE.rule(familyChain);
                int exprs = r.nest(Nftables.NFTA_RULE_EXPRESSIONS);
                // Only the goto brings packets of this family here; the protocol check makes
                // nft show the rule as "ip daddr …" rather than raw header bytes.
                Nftables.nfproto(r, nfproto);
                Nftables.prefixMatch(r, destination, v4 ? 16 : 24, Nftables.NFT_CMP_EQ);
                Nftables.verdict(r, Nftables.NF_ACCEPT, null);
                r.end(exprs);
                batch.add(r, "NFT_MSG_NEWRULE " + familyChain + ": to " + destination + " accept");
            }
            NetlinkRequest masquerade = TABLE.rule(familyChain);
            int exprs = masquerade.nest(Nftables.NFTA_RULE_EXPRESSIONS);
            OpenExpression data = Nftables.expression(masquerade, "masq");
            masquerade.attrBe32(NFTA_MASQ_FLAGS, NF_NAT_RANGE_PROTO_RANDOM_FULLY);
            Nftables.endExpression(masquerade, data);
            masquerade.end(exprs);
            batch.add(masquerade, "NFT_MSG_NEWRULE " + familyChain + ": masquerade");
        }
        batch.send(nf);
    }

    static String familyChain(boolean v4) {
        return v4 ? "masquerade-ipv4" : "masquerade-ipv6";
    }
}
