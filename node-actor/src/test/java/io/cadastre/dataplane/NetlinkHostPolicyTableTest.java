package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.dataplane.PolicyRules.Direction;
import io.cadastre.dataplane.PolicyRules.Peer;
import io.cadastre.dataplane.PolicyRules.PodPolicy;
import io.cadastre.dataplane.PolicyRules.Ports;
import io.cadastre.dataplane.PolicyRules.Rule;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@link NetlinkHostPolicy}'s table without a kernel: the state in its comment, its rule count. */
class NetlinkHostPolicyTableTest {
    private static final Rule FROM_A_ON_8080 =
            new Rule(
                    List.of(Peer.host(ip("198.18.9.1"))),
                    List.of(new Ports(Ports.TCP, 8080, 8080)));

    private static final List<InetAddress> B = List.of(ip("198.18.9.2"), ip("fd00:198::9:2"));

    private static PolicyRules onePod(
            String name, List<InetAddress> addresses, Direction ingress, Direction egress) {
        return new PolicyRules(List.of(new PodPolicy(name, addresses, ingress, egress)));
    }

    private static PolicyRules rules(Rule ingress) {
        return new PolicyRules(
                List.of(
                        new PodPolicy(
                                "default/b",
                                B,
                                new Direction(true, List.of(ingress)),
                                Direction.OPEN),
                        new PodPolicy(
                                "default/a",
                                List.of(ip("198.18.9.1")),
                                Direction.OPEN,
                                Direction.DENY_ALL)));
    }

    @Test
    void dropsAreCountedByTheDirectionOfTheirChain() {
        assertEquals(
                new HostPolicy.Drops(3 + 7, 4 + 1),
                NetlinkHostPolicy.drops(
                        Map.of(
                                NetlinkHostPolicy.chain(false, 0),
                                3L,
                                NetlinkHostPolicy.chain(true, 2),
                                1L,
                                "new-ingress-0a1b2c3d",
                                7L,
                                "new-egress-0a1b2c3d",
                                4L,
                                HostPolicy.CHAIN,
                                9L)));
    }

    @Test
    void equalRulesGiveOneCommentWhateverTheAddressObjectsAndOrder() throws Exception {
        PolicyRules one = rules(FROM_A_ON_8080);
        // Same addresses, other instances (one carrying a host name), pods in another order.
        PolicyRules other =
                new PolicyRules(
                        List.of(
                                one.pods().get(0),
                                new PodPolicy(
                                        "default/b",
                                        List.of(
                                                InetAddress.getByAddress(
                                                        "b.example", ip("198.18.9.2").getAddress()),
                                                ip("fd00:198:0:0:0:0:9:2")),
                                        new Direction(
                                                true,
                                                List.of(
                                                        new Rule(
                                                                List.of(
                                                                        new Peer(
                                                                                IpPrefix.parse(
                                                                                        "198.18.9.1/32"),
                                                                                List.of())),
                                                                List.of(
                                                                        new Ports(
                                                                                Ports.TCP, 8080,
                                                                                8080))))),
                                        Direction.OPEN)));
        assertEquals(NetlinkHostPolicy.canonical(one), NetlinkHostPolicy.canonical(other));
        assertEquals(NetlinkHostPolicy.comment(one), NetlinkHostPolicy.comment(other));
        assertTrue(
                NetlinkHostPolicy.comment(one)
                        .matches("managed by cadastre-agent, state [0-9a-f]{32}"),
                NetlinkHostPolicy.comment(one));
    }

    @Test
    void anyDifferenceGivesAnotherComment() {
        Peer block =
                new Peer(IpPrefix.parse("198.18.0.0/16"), List.of(IpPrefix.parse("198.18.9.0/24")));
        List<PolicyRules> variants =
                List.of(
                        PolicyRules.NONE,
                        rules(FROM_A_ON_8080),
                        rules(new Rule(List.of(), List.of())),
                        rules(
                                new Rule(
                                        List.of(Peer.host(ip("198.18.9.3"))),
                                        FROM_A_ON_8080.ports())),
                        rules(
                                new Rule(
                                        List.of(Peer.host(ip("fd00:198::9:1"))),
                                        FROM_A_ON_8080.ports())),
                        rules(
                                new Rule(
                                        FROM_A_ON_8080.peers(),
                                        List.of(new Ports(Ports.UDP, 8080, 8080)))),
                        rules(
                                new Rule(
                                        FROM_A_ON_8080.peers(),
                                        List.of(new Ports(Ports.TCP, 8080, 8081)))),
                        rules(
                                new Rule(
                                        FROM_A_ON_8080.peers(),
                                        List.of(new Ports(Ports.TCP, 8079, 8080)))),
                        rules(new Rule(FROM_A_ON_8080.peers(), List.of(Ports.all(Ports.TCP)))),
                        rules(new Rule(List.of(block), FROM_A_ON_8080.ports())),
                        rules(
                                new Rule(
                                        List.of(new Peer(block.network(), List.of())),
                                        FROM_A_ON_8080.ports())),
                        new PolicyRules(List.of(rules(FROM_A_ON_8080).pods().get(0))),
                        onePod(
                                "default/c",
                                B,
                                new Direction(true, List.of(FROM_A_ON_8080)),
                                Direction.OPEN),
                        onePod(
                                "default/b",
                                B.subList(0, 1),
                                new Direction(true, List.of(FROM_A_ON_8080)),
                                Direction.OPEN),
                        onePod(
                                "default/b",
                                B.subList(0, 1),
                                Direction.OPEN,
                                new Direction(true, List.of(FROM_A_ON_8080))),
                        onePod("default/b", B.subList(0, 1), Direction.DENY_ALL, Direction.OPEN));
        Set<String> comments = new HashSet<>();
        variants.forEach(v -> comments.add(NetlinkHostPolicy.comment(v)));
        assertEquals(variants.size(), comments.size(), "two variants share a comment");
    }

    @Test
    void ruleCountIsWhatTheTransactionWrites() {
        Peer block =
                new Peer(IpPrefix.parse("198.18.0.0/16"), List.of(IpPrefix.parse("198.18.9.0/24")));
        Rule wide =
                new Rule(
                        List.of(block, Peer.host(ip("fd00:198::9:1"))),
                        List.of(
                                new Ports(Ports.TCP, 9000, 9010),
                                Ports.all(Ports.UDP),
                                new Ports(Ports.SCTP, 7, 7)));
        PolicyRules wanted =
                new PolicyRules(
                        List.of(
                                new PodPolicy(
                                        "default/b",
                                        List.of(ip("198.18.9.2"), ip("fd00:198::9:2")),
                                        new Direction(true, List.of(FROM_A_ON_8080, wide)),
                                        new Direction(
                                                true, List.of(new Rule(List.of(), List.of())))),
                                new PodPolicy(
                                        "default/a",
                                        List.of(ip("198.18.9.1")),
                                        Direction.OPEN,
                                        Direction.DENY_ALL)));
        // forward: established, 1 egress jump of a, 2 egress and 2 ingress jumps of b;
        // egress-0 (a): drop; egress-1 (b): any, drop; ingress-1: 1 + 2 × 3, drop.
        int expected = 1 + 1 + 2 + 2 + 1 + 2 + (1 + 6 + 1);
        assertEquals(expected, NetlinkHostPolicy.ruleCount(wanted));
        for (PolicyRules rules : List.of(wanted, rules(FROM_A_ON_8080), rules(wide))) {
            long written =
                    NetlinkHostPolicy.batch(rules, NetlinkHostPolicy.comment(rules))
                            .steps()
                            .stream()
                            .filter(s -> s.startsWith("NFT_MSG_NEWRULE"))
                            .count();
            assertEquals(written, NetlinkHostPolicy.ruleCount(rules), rules.toString());
        }
    }

    @Test
    void podsSelectedInNumbersAreOneSetPerFamilyAndEachDistinctSetIsWrittenOnce() {
        List<Peer> peers = new ArrayList<>();
        Peer block = new Peer(IpPrefix.parse("198.18.0.0/24"), List.of());
        peers.add(block);
        for (int i = 1; i <= NetlinkHostPolicy.SET_MIN; i++) {
            peers.add(Peer.host(ip("198.18.9." + i)));
            peers.add(Peer.host(ip("198.18.9." + i))); // twice: one element
        }
        peers.add(Peer.host(ip("fd00:198::9:1"))); // too few IPv6 addresses for a set
        List<NetlinkHostPolicy.PeerMatch> matches = NetlinkHostPolicy.peerMatches(peers);
        assertEquals(3, matches.size(), matches.toString());
        assertTrue(matches.get(0).isSet() && matches.get(0).v4(), matches.toString());
        assertEquals(NetlinkHostPolicy.SET_MIN, matches.get(0).set().size());
        assertEquals(block, matches.get(1).peer());
        assertEquals(Peer.host(ip("fd00:198::9:1")), matches.get(2).peer());

        // Two pods selecting the same pods share one set; the rule count holds.
        Rule fromSelected = new Rule(peers, List.of(new Ports(Ports.TCP, 8080, 8080)));
        PolicyRules two =
                new PolicyRules(
                        List.of(
                                new PodPolicy(
                                        "default/b",
                                        B,
                                        new Direction(true, List.of(fromSelected)),
                                        Direction.OPEN),
                                new PodPolicy(
                                        "default/c",
                                        List.of(ip("198.18.9.3")),
                                        new Direction(true, List.of(fromSelected)),
                                        Direction.OPEN)));
        List<String> steps = NetlinkHostPolicy.batch(two, NetlinkHostPolicy.comment(two)).steps();
        assertEquals(
                1,
                steps.stream().filter(s -> s.startsWith("NFT_MSG_NEWSET ")).count(),
                steps.toString());
        assertEquals(
                steps.stream().filter(s -> s.startsWith("NFT_MSG_NEWRULE")).count(),
                NetlinkHostPolicy.ruleCount(two));
        assertTrue(
                steps.contains("NFT_MSG_NEWSETELEM peers-0: 4 addresses from 0"), steps.toString());
    }

    @Test
    void aCommentSurvivesTheUserDataRoundTrip() {
        String comment = NetlinkHostPolicy.comment(rules(FROM_A_ON_8080));
        assertEquals(comment, Nftables.commentOf(Nftables.userData(comment)));
        assertEquals("x".repeat(127), Nftables.commentOf(Nftables.userData("x".repeat(400))));
    }

    private static InetAddress ip(String literal) {
        return IpPrefix.literal(literal);
    }
}
