package io.cadastre.dataplane;

import io.cadastre.dataplane.HostRouting.Change;
import io.cadastre.dataplane.HostRouting.Kind;
import io.cadastre.dataplane.Nftables.Installed;
import io.cadastre.dataplane.PolicyRules.Direction;
import io.cadastre.dataplane.PolicyRules.Peer;
import io.cadastre.dataplane.PolicyRules.PodPolicy;
import io.cadastre.dataplane.PolicyRules.Ports;
import io.cadastre.dataplane.PolicyRules.Rule;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The production {@link HostPolicy}: the table {@code inet cadastre-policy} in nf_tables, spoken
 * over NETLINK_NETFILTER ({@link Nftables}, as {@link NetlinkOutgoingNat} writes its table): no
 * process, no library. The whole table is written in one transaction, so a packet meets either
 * the old rules or the new ones.
 *
 * <p>The table, as {@code nft list table inet cadastre-policy} shows it, for pod 0 ({@code
 * default/a}) isolated for egress with no rule and pod 1 ({@code default/b}) isolated for
 * ingress, letting 198.18.0.1 reach its TCP port 8080:
 *
 * <pre>
 * table inet cadastre-policy {
 *   comment "managed by cadastre-agent, state 5b0e…"
 *   chain forward {
 *     type filter hook forward priority filter; policy accept;
 *     ct state established,related accept
 *     ip saddr 198.18.0.1 jump egress-0 comment "default/a"
 *     ip daddr 198.18.0.2 jump ingress-1 comment "default/b"
 *   }
 *   chain egress-0 {
 *     counter packets 0 bytes 0 drop
 *   }
 *   chain ingress-1 {
 *     ip saddr 198.18.0.1 tcp dport 8080 accept
 *     counter packets 0 bytes 0 drop
 *   }
 * }
 * </pre>
 *
 * <p>The pods a rule selects, when {@link #SET_MIN} or more addresses of a family, are a set
 * instead of a rule each ({@code ip saddr @peers-0 tcp dport 8080 accept}, with {@code set
 * peers-0 { type ipv4_addr; elements = { ... } }}): one lookup whatever their number, one set for
 * every rule that selects the same pods ({@link #peerMatches}).
 *
 * <p>A pod's egress chain ends an allowed packet's visit with {@code return}, not {@code accept}:
 * an accept would end the base chain too, and a packet to another pod of this node would skip
 * that pod's ingress check. A peer matches only packets of its own family ({@code meta nfproto}),
 * so an IPv4 peer lets no IPv6 packet through; a rule without peers matches both.
 *
 * <p>"The host" is the network namespace of the calling thread, as for {@link NetlinkHostRouting}.
 * {@link #reconcile}, {@link #isolate} and {@link #dropped} are synchronized: one at a time per
 * instance. Requires CAP_NET_ADMIN.
 */
public final class NetlinkHostPolicy implements HostPolicy {
    private static final Nftables NFT = new Nftables(TABLE);

    /** NF_INET_FORWARD (linux/netfilter.h). */
    private static final int NF_INET_FORWARD = 2;

    /** NF_IP_PRI_FILTER, nft's {@code filter}. */
    private static final int PRIORITY_FILTER = 0;

    /** ct state bits of IP_CT_ESTABLISHED (0) and IP_CT_RELATED (1): 1 &lt;&lt; (ctinfo + 1), bit 0 being invalid. */
    private static final int ESTABLISHED_RELATED = (1 << 1) | (1 << 2);

    /**
     * From this many pods' addresses of one family in a rule, they are one set lookup rather than
     * a rule each: fewer than this cost less as rules than a set's own messages.
     */
    static final int SET_MIN = 4;

    /** The transport header's destination port: TCP, UDP and SCTP alike (RFC 9293, 768, 9260). */
    private static final int DESTINATION_PORT_OFFSET = 2;

    /** Drops counted by tables, or chains, that are gone: replaced, removed, or flushed by others. */
    private Drops retired = new Drops(0, 0);

    /** Chain → packets its counter held at the last reading of the table as it is now. */
    private Map<String, Long> lastSeen = Map.of();

    /** Writes the table of the calling thread's network namespace. */
    public NetlinkHostPolicy() {}

    @Override
    public synchronized Optional<Change> reconcile(PolicyRules wanted) throws DataplaneException {
        try (NetlinkSocket nf = NetlinkSocket.openNetfilter()) {
            Optional<Nftables.Reading> reading = NFT.readCounting(nf);
            observe(reading);
            Optional<Installed> installed = reading.map(Nftables.Reading::installed);
            if (!wanted.enforced()) {
                if (installed.isEmpty()) {
                    return Optional.empty();
                }
                NFT.delete(nf);
                retireAll();
                return Optional.of(new Change(Kind.POLICY, "table " + NFT.name() + " removed"));
            }
            Installed expected = new Installed(comment(wanted), ruleCount(wanted));
            if (installed.isPresent() && installed.get().equals(expected)) {
                return Optional.empty();
            }
            batch(wanted, expected.comment()).send(nf);
            retireAll();
            long isolated =
                    wanted.pods().stream()
                            .filter(p -> p.ingress().isolated() || p.egress().isolated())
                            .count();
            return Optional.of(
                    new Change(
                            Kind.POLICY,
                            "table "
                                    + NFT.name()
                                    + " written: "
                                    + isolated
                                    + " pods isolated, "
                                    + expected.rules()
                                    + " rules"
                                    + installed.map(i -> " (was " + i.text() + ")").orElse("")));
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    @Override
    public synchronized Optional<Change> isolate(PodPolicy pod) throws DataplaneException {
        if (pod.addresses().isEmpty() || !(pod.ingress().isolated() || pod.egress().isolated())) {
            return Optional.empty();
        }
        try (NetlinkSocket nf = NetlinkSocket.openNetfilter()) {
            if (!NFT.exists(nf)) {
                // No table: no other pod is isolated, so the pod alone is the whole table.
                return reconcile(new PolicyRules(List.of(pod)));
            }
            Nftables.Batch batch = isolation(pod);
            batch.send(nf);
            return Optional.of(
                    new Change(
                            Kind.POLICY,
                            "table "
                                    + NFT.name()
                                    + ": "
                                    + pod.pod()
                                    + " isolated ahead of the next write ("
                                    + batch.steps().size()
                                    + " chains and rules added)"));
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>One dump of the table's rules, as an idle {@link #reconcile} makes. A chain that went,
     * or whose counter went back, since the last reading (the table deleted or flushed by
     * someone else) is counted with what it held then.
     */
    @Override
    public synchronized Drops dropped() throws DataplaneException {
        try (NetlinkSocket nf = NetlinkSocket.openNetfilter()) {
            observe(NFT.readCounting(nf));
            Drops now = drops(lastSeen);
            return new Drops(retired.ingress() + now.ingress(), retired.egress() + now.egress());
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    /** Takes a reading of the table as it is: what went since the last one is retired. */
    private void observe(Optional<Nftables.Reading> reading) {
        Map<String, Long> now = reading.map(Nftables.Reading::packets).orElse(Map.of());
        Map<String, Long> gone = new HashMap<>();
        lastSeen.forEach(
                (chain, seen) -> {
                    Long current = now.get(chain);
                    if (current == null || current < seen) {
                        gone.put(chain, seen);
                    }
                });
        retire(gone);
        lastSeen = now;
    }

    /**
     * The table was just replaced or removed by this instance: what it counted at the reading
     * before is retired (the drops between that reading and the transaction are not counted).
     */
    private void retireAll() {
        retire(lastSeen);
        lastSeen = Map.of();
    }

    private void retire(Map<String, Long> packetsByChain) {
        Drops d = drops(packetsByChain);
        retired = new Drops(retired.ingress() + d.ingress(), retired.egress() + d.egress());
    }

    /**
     * @return the packets counted in the pods' chains ({@link #chain}, and {@link #isolation}'s
     *     {@code new-} ones), by direction; the base chain counts nothing
     */
    static Drops drops(Map<String, Long> packetsByChain) {
        long ingress = 0;
        long egress = 0;
        for (Map.Entry<String, Long> e : packetsByChain.entrySet()) {
            String chain = e.getKey().replaceFirst("^new-", "");
            if (chain.startsWith("ingress-")) {
                ingress += e.getValue();
            } else if (chain.startsWith("egress-")) {
                egress += e.getValue();
            }
        }
        return new Drops(ingress, egress);
    }

    /** @return the comment that names {@code wanted}: a prefix and a digest of {@link #canonical} */
    static String comment(PolicyRules wanted) {
        return Nftables.comment(canonical(wanted));
    }

    /**
     * @return one text per state, equal for equal rules whatever the {@link InetAddress}
     *     instances: a line per pod (index, name, addresses), then per direction {@code open} or
     *     {@code isolated} and a line per rule
     */
    static String canonical(PolicyRules wanted) {
        StringBuilder text = new StringBuilder();
        // A resolution hands every pod that a peer concerns the same list: its text is made once.
        Map<List<Peer>, String> peersText = new IdentityHashMap<>();
        for (int i = 0; i < wanted.pods().size(); i++) {
            PodPolicy pod = wanted.pods().get(i);
            text.append("pod ").append(i).append(' ').append(pod.pod()).append(' ');
            text.append(pod.addresses().stream().map(Rtnetlink::text).toList()).append('\n');
            canonical(text, "ingress", pod.ingress(), peersText);
            canonical(text, "egress", pod.egress(), peersText);
        }
        return text.toString();
    }

    private static void canonical(
            StringBuilder text, String direction, Direction d, Map<List<Peer>, String> peersText) {
        text.append(' ').append(direction).append(d.isolated() ? " isolated\n" : " open\n");
        for (Rule rule : d.rules()) {
            text.append("  peers");
            text.append(
                    peersText.computeIfAbsent(
                            rule.peers(),
                            peers -> {
                                StringBuilder t = new StringBuilder();
                                peers.forEach(p -> t.append(' ').append(peer(p)));
                                return t.toString();
                            }));
            text.append(" ports");
            rule.ports().forEach(p -> text.append(' ').append(ports(p)));
            text.append('\n');
        }
    }

    /**
     * @return the rules the table holds for {@code wanted}: the established one, a jump per
     *     address of each isolated direction, and per isolated direction its final drop and a
     *     rule per peer (or one for none) per ports entry (or one for none) of each of its rules
     */
    static int ruleCount(PolicyRules wanted) {
        int rules = 1;
        Map<List<Peer>, Integer> matches = new IdentityHashMap<>();
        for (PodPolicy pod : wanted.pods()) {
            for (Direction d : List.of(pod.ingress(), pod.egress())) {
                if (d.isolated()) {
                    rules += pod.addresses().size() + 1;
                    for (Rule rule : d.rules()) {
                        rules +=
                                Math.max(
                                                1,
                                                matches.computeIfAbsent(
                                                        rule.peers(),
                                                        peers -> peerMatches(peers).size()))
                                        * Math.max(1, rule.ports().size());
                    }
                }
            }
        }
        return rules;
    }

    /** @return the chain of pod {@code index}'s egress or ingress rules */
    static String chain(boolean egress, int index) {
        return (egress ? "egress-" : "ingress-") + index;
    }

    /**
     * @return the transaction that replaces the table with {@code wanted}'s, {@code comment} on
     *     it; its steps name every chain and rule
     */
    static Nftables.Batch batch(PolicyRules wanted, String comment) {
        Nftables.Batch batch = NFT.replace(comment);
        batch.add(
                NFT.baseChain(CHAIN, "filter", NF_INET_FORWARD, PRIORITY_FILTER),
                "NFT_MSG_NEWCHAIN " + CHAIN + " (filter, forward, filter)");
        // A jump's target must exist when the jump is added.
        for (boolean egress : new boolean[] {true, false}) {
            for (int i = 0; i < wanted.pods().size(); i++) {
                if (direction(wanted.pods().get(i), egress).isolated()) {
                    batch.add(NFT.chain(chain(egress, i)), "NFT_MSG_NEWCHAIN " + chain(egress, i));
                }
            }
        }
        NetlinkRequest established = NFT.rule(CHAIN);
        int exprs = established.nest(Nftables.NFTA_RULE_EXPRESSIONS);
        Nftables.ctState(established, ESTABLISHED_RELATED);
        Nftables.verdict(established, Nftables.NF_ACCEPT, null);
        established.end(exprs);
        batch.add(
                established, "NFT_MSG_NEWRULE " + CHAIN + ": ct state established,related accept");
        for (boolean egress : new boolean[] {true, false}) {
            for (int i = 0; i < wanted.pods().size(); i++) {
                addJumps(batch, wanted.pods().get(i), egress, chain(egress, i));
            }
        }
        SetNames sets = new SetNames("peers-");
        for (boolean egress : new boolean[] {true, false}) {
            for (int i = 0; i < wanted.pods().size(); i++) {
                Direction d = direction(wanted.pods().get(i), egress);
                if (d.isolated()) {
                    addRules(batch, sets, chain(egress, i), d, egress);
                }
            }
        }
        return batch;
    }

    /**
     * The base chain's jumps to {@code chain} for each of the pod's addresses, when the pod is
     * isolated in that direction: the pod is the source of its egress, the destination of its
     * ingress.
     */
    private static void addJumps(
            Nftables.Batch batch, PodPolicy pod, boolean egress, String chain) {
        if (!direction(pod, egress).isolated()) {
            return;
        }
        for (InetAddress address : pod.addresses()) {
            NetlinkRequest r = NFT.rule(CHAIN);
            int exprs = r.nest(Nftables.NFTA_RULE_EXPRESSIONS);
            IpPrefix host = IpPrefix.host(address);
            Nftables.nfproto(r, nfproto(host.v4()));
            Nftables.prefixMatch(r, host, offset(host.v4(), egress), Nftables.NFT_CMP_EQ);
            Nftables.verdict(r, Nftables.NFT_JUMP, chain);
            r.end(exprs);
            Nftables.ruleComment(r, pod.pod());
            batch.add(
                    r,
                    "NFT_MSG_NEWRULE "
                            + CHAIN
                            + ": "
                            + host
                            + " jump "
                            + chain
                            + " ("
                            + pod.pod()
                            + ")");
        }
    }

    /**
     * The transaction {@link #isolate} sends: the pod's chains with their rules, then the jumps
     * to them, appended to what the table holds.
     */
    static Nftables.Batch isolation(PodPolicy pod) {
        String suffix = HexFormat.of().formatHex(sha256(pod.pod() + pod.addresses()), 0, 8);
        Nftables.Batch batch = new Nftables.Batch();
        SetNames sets = new SetNames("new-peers-" + suffix + "-");
        for (boolean egress : new boolean[] {true, false}) {
            Direction d = direction(pod, egress);
            if (d.isolated()) {
                String chain = (egress ? "new-egress-" : "new-ingress-") + suffix;
                batch.add(NFT.chain(chain), "NFT_MSG_NEWCHAIN " + chain);
                addRules(batch, sets, chain, d, egress);
            }
        }
        for (boolean egress : new boolean[] {true, false}) {
            addJumps(batch, pod, egress, (egress ? "new-egress-" : "new-ingress-") + suffix);
        }
        return batch;
    }

    private static byte[] sha256(String text) {
        try {
            return java.security.MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError("every Java platform has SHA-256", e);
        }
    }

    /**
     * The rules of one pod's chain for one direction: a rule per peer per ports entry of each rule, {@code
     * return} (egress) or {@code accept} (ingress) on a match; then a counted drop (Kubernetes
     * NetworkPolicy API: an isolated pod's traffic passes only when a rule allows it).
     */
    private static void addRules(
            Nftables.Batch batch, SetNames sets, String chain, Direction d, boolean egress) {
        int verdict = egress ? Nftables.NFT_RETURN : Nftables.NF_ACCEPT;
        for (Rule rule : d.rules()) {
            for (PeerMatch match : orAny(sets.matches(rule.peers()))) {
                String set = match == null || !match.isSet() ? null : sets.name(batch, match);
                for (Ports ports : orAny(rule.ports())) {
                    NetlinkRequest r = NFT.rule(chain);
                    int exprs = r.nest(Nftables.NFTA_RULE_EXPRESSIONS);
                    // The peer is the destination of egress, the source of ingress.
                    if (set != null) {
                        Nftables.nfproto(r, nfproto(match.v4()));
                        Nftables.payload(
                                r,
                                Nftables.NFT_PAYLOAD_NETWORK_HEADER,
                                offset(match.v4(), !egress),
                                match.v4() ? 4 : 16);
                        Nftables.lookup(r, set);
                    } else if (match != null) {
                        Peer peer = match.peer();
                        int offset = offset(peer.network().v4(), !egress);
                        Nftables.nfproto(r, nfproto(peer.network().v4()));
                        Nftables.prefixMatch(r, peer.network(), offset, Nftables.NFT_CMP_EQ);
                        for (IpPrefix except : peer.except()) {
                            Nftables.prefixMatch(r, except, offset, Nftables.NFT_CMP_NEQ);
                        }
                    }
                    if (ports != null) {
                        portsMatch(r, ports);
                    }
                    Nftables.verdict(r, verdict, null);
                    r.end(exprs);
                    batch.add(
                            r,
                            "NFT_MSG_NEWRULE "
                                    + chain
                                    + ": "
                                    + (match == null
                                            ? "any"
                                            : set != null
                                                    ? "@"
                                                            + set
                                                            + " ("
                                                            + match.set().size()
                                                            + " addresses)"
                                                    : peer(match.peer()))
                                    + " "
                                    + (ports == null ? "any port" : ports(ports))
                                    + (egress ? " return" : " accept"));
                }
            }
        }
        NetlinkRequest drop = NFT.rule(chain);
        int exprs = drop.nest(Nftables.NFTA_RULE_EXPRESSIONS);
        Nftables.counter(drop);
        Nftables.verdict(drop, Nftables.NF_DROP, null);
        drop.end(exprs);
        batch.add(drop, "NFT_MSG_NEWRULE " + chain + ": counter drop");
    }

    /**
     * nft(8): {@code meta l4proto tcp tcp dport 80-90}; the port as the header holds it, in
     * network byte order, which orders like the number.
     */
    private static void portsMatch(NetlinkRequest r, Ports ports) {
        Nftables.meta(r, Nftables.NFT_META_L4PROTO);
        Nftables.cmp(r, Nftables.NFT_CMP_EQ, new byte[] {(byte) ports.protocol()});
        if (ports.everyPort()) {
            return;
        }
        Nftables.payload(r, Nftables.NFT_PAYLOAD_TRANSPORT_HEADER, DESTINATION_PORT_OFFSET, 2);
        if (ports.first() == ports.last()) {
            Nftables.cmp(r, Nftables.NFT_CMP_EQ, be16(ports.first()));
        } else {
            Nftables.cmp(r, Nftables.NFT_CMP_GTE, be16(ports.first()));
            Nftables.cmp(r, Nftables.NFT_CMP_LTE, be16(ports.last()));
        }
    }

    private static Direction direction(PodPolicy pod, boolean egress) {
        return egress ? pod.egress() : pod.ingress();
    }

    /** @return {@code list}, or one null (no match on that field) when it is empty */
    private static <T> List<T> orAny(List<T> list) {
        return list.isEmpty() ? Collections.singletonList(null) : list;
    }

    private static int nfproto(boolean v4) {
        return v4 ? Nftables.NFPROTO_IPV4 : Nftables.NFPROTO_IPV6;
    }

    /** @return the offset of the source or destination address in the IPv4 or IPv6 header */
    private static int offset(boolean v4, boolean source) {
        return v4 ? (source ? 12 : 16) : (source ? 8 : 24);
    }

    /**
     * One match of a rule's peers: a set of pods' addresses of one family, or one peer.
     *
     * @param peer the peer, when not a set
     * @param v4 the set's family
     * @param set the set's addresses, distinct, in the order of the rule's peers; null for a peer
     */
    record PeerMatch(Peer peer, boolean v4, List<InetAddress> set) {
        boolean isSet() {
            return set != null;
        }
    }

    /**
     * @return {@code peers} as matches: the host addresses (pods, /32 and /128 without exceptions)
     *     of each family as one set when there are {@link #SET_MIN} or more of them, IPv4 first,
     *     then every other peer one by one, in order. A rule of pods selected by a namespace
     *     selector is one set lookup per family, not a rule per pod.
     */
    static List<PeerMatch> peerMatches(List<Peer> peers) {
        List<PeerMatch> matches = new ArrayList<>();
        List<Peer> others = new ArrayList<>(peers);
        for (boolean v4 : new boolean[] {true, false}) {
            Set<InetAddress> hosts = new LinkedHashSet<>();
            for (Peer p : peers) {
                if (isHost(p) && p.network().v4() == v4) {
                    hosts.add(p.network().address());
                }
            }
            if (hosts.size() >= SET_MIN) {
                matches.add(new PeerMatch(null, v4, List.copyOf(hosts)));
                others.removeIf(p -> isHost(p) && p.network().v4() == v4);
            }
        }
        others.forEach(p -> matches.add(new PeerMatch(p, p.network().v4(), null)));
        return matches;
    }

    private static boolean isHost(Peer p) {
        return p.except().isEmpty() && p.network().length() == (p.network().v4() ? 32 : 128);
    }

    /**
     * The sets of one transaction: one per distinct group of addresses, named {@code prefix} and
     * the order of first use, added to the batch before the first rule that looks it up.
     */
    static final class SetNames {
        private final String prefix;
        private final Map<List<InetAddress>, String> names = new HashMap<>();
        private final Map<List<Peer>, List<PeerMatch>> matches = new IdentityHashMap<>();

        SetNames(String prefix) {
            this.prefix = prefix;
        }

        /** @return {@link #peerMatches} of {@code peers}, made once per list of the resolution */
        List<PeerMatch> matches(List<Peer> peers) {
            return matches.computeIfAbsent(peers, NetlinkHostPolicy::peerMatches);
        }

        String name(Nftables.Batch batch, PeerMatch match) {
            String known = names.get(match.set());
            if (known != null) {
                return known;
            }
            int id = names.size();
            String name = prefix + id;
            names.put(match.set(), name);
            NFT.addressSet(batch, name, id + 1, match.v4(), match.set());
            return name;
        }
    }

    private static byte[] be16(int value) {
        return new byte[] {(byte) (value >>> 8), (byte) value};
    }

    /** @return e.g. {@code 198.18.0.0/16 except 198.18.1.0/24} */
    private static String peer(Peer peer) {
        return peer.network()
                + (peer.except().isEmpty()
                        ? ""
                        : peer.except().stream()
                                .map(IpPrefix::toString)
                                .collect(Collectors.joining(",", " except ", "")));
    }

    /** @return e.g. {@code 6/80-90}, {@code 17/all} */
    private static String ports(Ports ports) {
        return ports.protocol()
                + "/"
                + (ports.everyPort() ? "all" : ports.first() + "-" + ports.last());
    }
}
