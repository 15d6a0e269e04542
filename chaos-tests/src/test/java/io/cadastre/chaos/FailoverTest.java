package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.chaos.Failover.EntityAfterKill;
import io.cadastre.chaos.Failover.Fate;
import io.cadastre.chaos.Failover.HostAfterKill;
import io.cadastre.chaos.Failover.Kill;
import io.cadastre.chaos.Failover.Place;
import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
import io.cadastre.testsupport.AgentLogs;
import io.cadastre.testsupport.AgentLogs.Entity;
import io.cadastre.testsupport.AgentLogs.Recovery;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The failover report on hand-made histories and logs: no root, no cluster, milliseconds to run. */
class FailoverTest {
    private static final ZoneId ZONE = ZoneId.of("Europe/Berlin");

    private final List<Operation> ops = new ArrayList<>();
    private final List<FaultRecord> faults = new ArrayList<>();
    private final List<Recovery> recoveries = new ArrayList<>();

    /** An ok WORKLOAD ADD on the host invoked at {@code from} ms and completed at {@code to} ms. */
    private void add(String host, long from, long to) {
        op(Phase.WORKLOAD, Kind.ADD, host, from, to, Status.OK);
    }

    private void op(Phase phase, Kind kind, String host, long from, long to, Status status) {
        ops.add(
                new Operation(
                        ops.size() + 1,
                        phase,
                        kind,
                        Purpose.NEW,
                        host,
                        0,
                        new Attachment(host, "c" + ops.size()),
                        false,
                        Times.millis(from),
                        Times.millis(to),
                        status,
                        status == Status.OK && kind == Kind.ADD
                                ? List.of("10.0.0." + ops.size(), "fd00::" + ops.size())
                                : List.of(),
                        status == Status.OK ? 0 : 11,
                        null));
    }

    private void fault(String kind, String target, long fromMillis, long toMillis) {
        faults.add(
                new FaultRecord(
                        faults.size() + 1,
                        true,
                        kind,
                        target,
                        Times.millis(fromMillis),
                        Times.millis(toMillis),
                        null));
    }

    private void recovered(long atMillis, String node, String member) {
        recoveries.add(new Recovery(Times.millis(atMillis), Entity.node(node), member));
    }

    private void recoveredBlock(long atMillis, String cidr, String member) {
        recoveries.add(new Recovery(Times.millis(atMillis), Entity.block(cidr), member));
    }

    /** A NodeEntity's recovery as {@link AgentLogs} reads it. */
    private static Recovery node(long atNanos, String node, String member) {
        return new Recovery(atNanos, Entity.node(node), member);
    }

    private static Recovery block(long atNanos, String cidr, String member) {
        return new Recovery(atNanos, Entity.block(cidr), member);
    }

    /**
     * Four hosts. host2's NodeEntity lives on host1, host3's on host3, host4's is never seen
     * recovering. host1 is killed at 10 s; host2's entity recovers on host3 at 18.1 s. Then
     * host3 is killed at 40 s, with host2's entity on it again, and no ADD succeeds on host2 in
     * the workload after that; a pause at 45 s comes before host2's entity recovers at 49.1 s.
     */
    private void twoKills() {
        recovered(1_000, "host1", "host1");
        recovered(1_500, "host2", "host1");
        recovered(1_000, "host3", "host3");
        fault("kill", "host1", 10_000, 30_000);
        recovered(18_100, "host2", "host3");
        recovered(25_000, "host1", "host1"); // the restarted member recovers its own host's entity
        add("host2", 9_000, 19_000); // invoked before the kill: does not count
        op(Phase.WORKLOAD, Kind.ADD, "host2", 10_500, 15_000, Status.UNKNOWN);
        op(Phase.WORKLOAD, Kind.DEL, "host2", 10_200, 10_300, Status.OK); // a DEL is not an ADD
        add("host2", 13_000, 20_000);
        add("host2", 12_000, 18_900);
        add("host3", 10_100, 10_500);
        add("host4", 11_000, 11_200);
        fault("kill", "host3", 40_000, 60_000);
        fault("pause", "host1", 45_000, 55_000);
        recovered(49_100, "host2", "host1");
        add("host1", 41_000, 41_500);
        add("host4", 40_000, 40_100);
        add("host2", 39_000, 41_000); // invoked before the second kill
        op(
                Phase.SETTLE,
                Kind.ADD,
                "host2",
                100_000,
                100_100,
                Status.OK); // after the workload: does not count
    }

    private static HostAfterKill host(Kill kill, String host) {
        return kill.hosts().stream().filter(h -> h.host().equals(host)).findFirst().orElseThrow();
    }

    @Test
    void aHostWhoseNodeEntityLivedOnTheKilledMemberIsAffected() {
        twoKills();
        List<Kill> kills = Failover.analyze(faults, recoveries, ops);
        assertEquals(2, kills.size());
        Kill first = kills.get(0);
        assertEquals("host1", first.member());
        assertEquals(Times.millis(10_000), first.atNanos());
        assertEquals(Times.millis(40_000), first.nextFaultNanos());
        assertEquals(
                List.of("host2", "host3", "host4"),
                first.hosts().stream().map(HostAfterKill::host).toList(),
                "every host but the killed member's own");
        assertEquals(
                new HostAfterKill(
                        "host2",
                        Place.KILLED_MEMBER,
                        "host1",
                        Times.millis(8_100),
                        "host3",
                        Times.millis(8_900)),
                host(first, "host2"));
    }

    @Test
    void aHostWhoseNodeEntityLivedElsewhereIsNotAffectedButItsAddWindowIsMeasured() {
        twoKills();
        HostAfterKill host3 = host(Failover.analyze(faults, recoveries, ops).get(0), "host3");
        assertEquals(Place.ELSEWHERE, host3.place());
        assertEquals("host3", host3.livedOn());
        assertEquals(Times.millis(500), host3.addAfterNanos());
        assertEquals(Failover.NEVER, host3.recoveredAfterNanos(), "host3's entity never moved");
    }

    @Test
    void aHostWithNoRecoveryBeforeTheKillHasAnUnknownPlace() {
        twoKills();
        HostAfterKill host4 = host(Failover.analyze(faults, recoveries, ops).get(0), "host4");
        assertEquals(Place.UNKNOWN, host4.place());
        assertNull(host4.livedOn());
        assertEquals(Times.millis(1_200), host4.addAfterNanos());
    }

    @Test
    void anAffectedHostWithNoOkAddAfterTheKillNeverRecovered() {
        twoKills();
        Kill second = Failover.analyze(faults, recoveries, ops).get(1);
        assertEquals("host3", second.member());
        assertEquals(
                Times.millis(45_000),
                second.nextFaultNanos(),
                "the pause, a fault of another kind");
        HostAfterKill host2 = host(second, "host2");
        assertEquals(
                new HostAfterKill(
                        "host2",
                        Place.KILLED_MEMBER,
                        "host3",
                        Times.millis(9_100),
                        "host1",
                        Failover.NEVER),
                host2);
        assertEquals(
                Place.ELSEWHERE,
                host(second, "host1").place(),
                "host1's entity recovered on host1 at 25 s");
        assertEquals(Times.millis(1_500), host(second, "host1").addAfterNanos());
    }

    @Test
    void theMedianIsTheUsualOneAndNeverSortsLast() {
        assertNull(Failover.stats(List.of()));
        assertEquals(new Failover.Stats(3, 0, 5, 9), Failover.stats(List.of(9L, 1L, 5L)));
        assertEquals(
                new Failover.Stats(4, 0, 4, 9),
                Failover.stats(List.of(9L, 1L, 5L, 3L)),
                "(3 + 5) / 2");
        assertEquals(
                new Failover.Stats(3, 1, 5, Failover.NEVER),
                Failover.stats(List.of(Failover.NEVER, 1L, 5L)));
        assertEquals(
                new Failover.Stats(2, 1, Failover.NEVER, Failover.NEVER),
                Failover.stats(List.of(Failover.NEVER, 1L)));
    }

    @Test
    void theSectionSumsUpTheRunAndListsEveryKill() {
        twoKills();
        String section = Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops);
        List<String> lines = section.lines().toList();
        assertEquals(
                "failover after kills (NodeEntity on the killed member): 2 host-kills in 2 kills; "
                        + "ADD unavailable median never, worst never (1 of 2 without an ok ADD in the workload); "
                        + "NodeEntity recovered median 8.6 s, worst 9.1 s; "
                        + "other surviving hosts' ADD window median 1.0 s, worst 1.5 s; "
                        + "2 host-kills with the NodeEntity's member unknown (no recovery line before the kill)",
                lines.get(0));
        // host1's own NodeEntity came back on host1, restarted; host2's moved to host3 (8.1 s) at
        // the first kill, and came back on host1 only after the pause at the second.
        assertEquals(
                "entities moved by kills: 4 lived on killed members, 1 recovered on a survivor: median 8.1 s, "
                        + "worst 8.1 s after the kill; surviving hosts that waited for an ADD: 4 host-kills, median 5.2 s, "
                        + "worst never (1 of 4 without an ok ADD in the workload)",
                lines.get(1));
        assertEquals(
                "  kill host1 at 10.000s: host2 affected, NodeEntity recovered on host3 after 8.1 s, ADD after 8.9 s; "
                        + "host3 not affected (on host3), ADD after 0.5 s; host4 NodeEntity's member unknown, ADD after 1.2 s; "
                        + "entities on host1: 2 nodes, 0 blocks, 1 recovered elsewhere 8.1 s, 1 back on host1",
                lines.get(2));
        assertEquals(
                "  kill host3 at 40.000s: host1 not affected (on host1), ADD after 1.5 s; "
                        + "host2 affected, NodeEntity recovered on host1 after 9.1 s*, no ok ADD after the kill; "
                        + "host4 NodeEntity's member unknown, ADD after 0.1 s; "
                        + "entities on host3: 2 nodes, 0 blocks, 0 recovered elsewhere",
                lines.get(3));
        assertEquals("  (* ended after the next fault had started)", lines.get(4));
        assertEquals(5, lines.size());
    }

    @Test
    void withoutKillsOrRecoveryLinesTheSectionSaysSo() {
        recovered(1_000, "host2", "host1");
        add("host2", 2_000, 3_000);
        fault("pause", "host1", 5_000, 6_000);
        assertEquals(
                "failover after kills (NodeEntity on the killed member): no kill in this run\n",
                Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops));
        fault("kill", "host1", 10_000, 12_000);
        String none =
                Failover.section(
                        faults, new AgentLogs.Read(List.of(), List.of("host3: no agent.log")), ops);
        assertTrue(
                none.startsWith(
                        "failover after kills (NodeEntity on the killed member): 1 kill, but no "
                                + "\"recovered node entity\" or \"recovered block\" line"),
                none);
        assertTrue(none.contains("(agent logs not read: host3: no agent.log)"), none);
        assertEquals(1, none.lines().count());
    }

    @Test
    void anUnaffectedHostsMoveBeforeTheNextFaultIsShown() {
        recovered(1_000, "host3", "host3");
        recovered(1_000, "host2", "host2");
        fault("kill", "host1", 10_000, 12_000);
        recovered(15_000, "host3", "host1"); // e.g. a rebalance onto the restarted member
        fault("cassandra-restart", "db", 30_000, 40_000);
        recovered(35_000, "host2", "host3"); // after the next fault: that fault's doing
        add("host2", 10_000, 10_300);
        add("host3", 10_000, 15_500);
        List<String> lines =
                Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops)
                        .lines()
                        .toList();
        assertEquals(
                List.of(
                        "failover after kills (NodeEntity on the killed member): 0 host-kills in 1 kill; "
                                + "ADD unavailable: none; NodeEntity recovered: none; "
                                + "other surviving hosts' ADD window median 2.9 s, worst 5.5 s",
                        "entities moved by kills: 0 lived on killed members, 0 recovered on a survivor; "
                                + "surviving hosts that waited for an ADD: 1 host-kills, median 5.5 s, worst 5.5 s",
                        "  kill host1 at 10.000s: host2 not affected (on host2), ADD after 0.3 s; "
                                + "host3 not affected (on host3), moved to host1 after 5.0 s, ADD after 5.5 s; entities on host1: none"),
                lines);
    }

    private static final String A = "198.18.0.64/26";
    private static final String B = "fd00:198:3::1c0/122";
    private static final String IDLE = "198.18.0.128/26";
    private static final String LATE = "198.18.0.192/26";
    private static final String HOME = "198.18.1.0/26";
    private static final String LEFT = "198.18.0.0/26";

    /**
     * Three hosts, each NodeEntity on its own member. h2 is killed at 10 s, h1 paused at 40 s, h3
     * killed at 60 s, and nothing follows. Of the blocks on h2 at the first kill, A moves to h3
     * (8.7 s), B to h1 (9.9 s), IDLE is never used again, LATE recovers on h1 only after the pause
     * started, and HOME comes back on h2, restarted, as does h2's NodeEntity; LEFT had moved from
     * h2 to h1 before the kill. At the second kill A, now on h3, moves to h1 (10.4 s). h1 waits
     * 9.8 s for an ADD after the first kill, h2 11.0 s after the second; the other windows are
     * short.
     */
    private void blockMoves() {
        recovered(1_000, "h1", "h1");
        recovered(1_000, "h2", "h2");
        recovered(1_000, "h3", "h3");
        for (String cidr : List.of(B, LATE, IDLE, HOME, A)) {
            recoveredBlock(2_000, cidr, "h2");
        }
        recoveredBlock(1_000, LEFT, "h2");
        recoveredBlock(5_000, LEFT, "h1");
        fault("kill", "h2", 10_000, 30_000);
        recoveredBlock(19_900, B, "h1");
        recoveredBlock(18_700, A, "h3"); // logs are read member by member: any order
        recovered(28_000, "h2", "h2");
        recoveredBlock(29_000, HOME, "h2");
        fault("pause", "h1", 40_000, 50_000);
        recoveredBlock(45_000, LATE, "h1");
        fault("kill", "h3", 60_000, 80_000);
        recoveredBlock(70_400, A, "h1");
        add("h1", 10_100, 19_800);
        add("h3", 10_000, 10_400);
        add("h1", 60_000, 60_200);
        add("h2", 60_500, 71_000);
    }

    private static EntityAfterKill entity(Kill kill, Entity entity) {
        return kill.entities().stream()
                .filter(e -> e.entity().equals(entity))
                .findFirst()
                .orElseThrow(
                        () ->
                                new AssertionError(
                                        entity
                                                + " did not live on "
                                                + kill.member()
                                                + ": "
                                                + kill.entities()));
    }

    @Test
    void theEntitiesThatLivedOnTheKilledMemberAreTheOnesWhoseLatestRecoveryWasThere() {
        blockMoves();
        List<Kill> kills = Failover.analyze(faults, recoveries, ops);
        assertEquals(2, kills.size());
        assertEquals(
                List.of(
                        Entity.node("h2"),
                        Entity.block(HOME),
                        Entity.block(A),
                        Entity.block(IDLE),
                        Entity.block(LATE),
                        Entity.block(B)),
                kills.get(0).entities().stream().map(EntityAfterKill::entity).toList(),
                "nodes first; not LEFT, which had moved to h1; not h1's or h3's NodeEntity");
        assertEquals(
                List.of(Entity.node("h3"), Entity.block(A)),
                kills.get(1).entities().stream().map(EntityAfterKill::entity).toList(),
                "A had moved to h3");
    }

    @Test
    void aBlockThatRecoveredOnASurvivorBeforeTheNextFaultMoved() {
        blockMoves();
        List<Kill> kills = Failover.analyze(faults, recoveries, ops);
        assertEquals(
                new EntityAfterKill(
                        Entity.block(A), Fate.RECOVERED_ELSEWHERE, Times.millis(8_700), "h3"),
                entity(kills.get(0), Entity.block(A)));
        assertEquals(
                new EntityAfterKill(
                        Entity.block(B), Fate.RECOVERED_ELSEWHERE, Times.millis(9_900), "h1"),
                entity(kills.get(0), Entity.block(B)));
        assertEquals(
                new EntityAfterKill(
                        Entity.block(A), Fate.RECOVERED_ELSEWHERE, Times.millis(10_400), "h1"),
                entity(kills.get(1), Entity.block(A)),
                "no next fault: any later recovery counts");
    }

    @Test
    void anIdleBlockThatNeverRecoveredIsNotAFailoverRecovery() {
        blockMoves();
        Kill first = Failover.analyze(faults, recoveries, ops).get(0);
        assertEquals(
                new EntityAfterKill(Entity.block(IDLE), Fate.NOT_RECOVERED, Failover.NEVER, null),
                entity(first, Entity.block(IDLE)));
        assertEquals(
                new EntityAfterKill(Entity.node("h3"), Fate.NOT_RECOVERED, Failover.NEVER, null),
                entity(Failover.analyze(faults, recoveries, ops).get(1), Entity.node("h3")));
    }

    @Test
    void aRecoveryAfterTheNextFaultStartedIsNotCounted() {
        blockMoves();
        Kill first = Failover.analyze(faults, recoveries, ops).get(0);
        assertEquals(Times.millis(40_000), first.nextFaultNanos());
        assertEquals(
                new EntityAfterKill(
                        Entity.block(LATE), Fate.NOT_RECOVERED, Times.millis(35_000), "h1"),
                entity(first, Entity.block(LATE)));
        assertFalse(entity(first, Entity.block(LATE)).recoveredElsewhere());
    }

    @Test
    void anEntityThatCameBackOnTheRestartedMemberDidNotMove() {
        blockMoves();
        Kill first = Failover.analyze(faults, recoveries, ops).get(0);
        assertEquals(
                new EntityAfterKill(
                        Entity.block(HOME), Fate.BACK_ON_KILLED_MEMBER, Times.millis(19_000), "h2"),
                entity(first, Entity.block(HOME)));
        assertEquals(
                new EntityAfterKill(
                        Entity.node("h2"), Fate.BACK_ON_KILLED_MEMBER, Times.millis(18_000), "h2"),
                entity(first, Entity.node("h2")));
    }

    @Test
    void aHostWaitedWhenItsAddWindowWasOverOneSecond() {
        blockMoves();
        List<Kill> kills = Failover.analyze(faults, recoveries, ops);
        assertTrue(host(kills.get(0), "h1").waited(), "9.8 s");
        assertFalse(host(kills.get(0), "h3").waited(), "0.4 s");
        assertTrue(host(kills.get(1), "h2").waited(), "11.0 s");
        assertFalse(host(kills.get(1), "h1").waited(), "0.2 s");
        assertFalse(
                new HostAfterKill(
                                "h9",
                                Place.ELSEWHERE,
                                "h9",
                                Failover.NEVER,
                                null,
                                Times.millis(1_000))
                        .waited(),
                "exactly 1 s is not over it");
        assertTrue(
                new HostAfterKill(
                                "h9",
                                Place.ELSEWHERE,
                                "h9",
                                Failover.NEVER,
                                null,
                                Times.millis(1_001))
                        .waited());
        assertTrue(
                new HostAfterKill("h9", Place.ELSEWHERE, "h9", Failover.NEVER, null, Failover.NEVER)
                        .waited(),
                "no ok ADD after the kill");
    }

    @Test
    void theSectionCountsTheEntitiesThatMovedAndTheHostsThatWaited() {
        blockMoves();
        List<String> lines =
                Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops)
                        .lines()
                        .toList();
        assertEquals(
                List.of(
                        "failover after kills (NodeEntity on the killed member): 0 host-kills in 2 kills; "
                                + "ADD unavailable: none; NodeEntity recovered: none; "
                                + "other surviving hosts' ADD window median 5.1 s, worst 11.0 s",
                        "entities moved by kills: 8 lived on killed members, 3 recovered on a survivor: median 9.9 s, "
                                + "worst 10.4 s after the kill; surviving hosts that waited for an ADD: 2 host-kills, median 10.4 s, "
                                + "worst 11.0 s",
                        "  kill h2 at 10.000s: h1 not affected (on h1), ADD after 9.8 s; h3 not affected (on h3), ADD after 0.4 s; "
                                + "entities on h2: 1 node, 5 blocks, 2 recovered elsewhere 8.7-9.9 s, 2 back on h2",
                        "  kill h3 at 60.000s: h1 not affected (on h1), ADD after 0.2 s; h2 not affected (on h2), ADD after 11.0 s; "
                                + "entities on h3: 1 node, 1 block, 1 recovered elsewhere 10.4 s"),
                lines);
    }

    private static long epochMillis(
            int year, int month, int day, int hour, int minute, int second) {
        return ZonedDateTime.of(year, month, day, hour, minute, second, 0, ZONE)
                .toInstant()
                .toEpochMilli();
    }

    /** @return the recoveries in {@code host}'s log lines, read in {@link #ZONE} from {@code origin} (epoch ms) */
    private static List<Recovery> parse(String host, long origin, String... lines) {
        return AgentLogs.parse(host, List.of(lines), origin, ZONE);
    }

    private static final String NODE_ENTITY = " INFO  i.c.shards.NodeEntity - ";
    private static final String BLOCK_ENTITY = " INFO  i.c.shards.BlockEntity - ";

    @Test
    void logTimesAcrossMidnightFollowTheRun() {
        long origin = epochMillis(2024, 5, 31, 23, 59, 50);
        List<Recovery> found =
                parse(
                        "host3",
                        origin,
                        // read a little before the origin
                        "23:59:49.990 INFO  o.a.p.cluster.Cluster - starting",
                        "23:59:55.000"
                                + NODE_ENTITY
                                + "recovered node entity host2: 17 attachments, 3 affine blocks",
                        "00:00:05.250 INFO  io.cadastre.shards.NodeEntity - recovered node entity host3: 0 attachments, 0 affine blocks");
        assertEquals(
                List.of(
                        node(5_000_000_000L, "host2", "host3"),
                        node(15_250_000_000L, "host3", "host3")),
                found);
        // A member whose log starts after midnight.
        assertEquals(
                List.of(node(11_000_000_000L, "host1", "host1")),
                parse(
                        "host1",
                        origin,
                        "00:00:01.000"
                                + NODE_ENTITY
                                + "recovered node entity host1: 1 attachments, 1 affine blocks"));
        // A line stamped a little before the origin is just before it, not nearly a day later.
        assertEquals(
                List.of(node(-10_000_000L, "host1", "host1")),
                parse(
                        "host1",
                        origin,
                        "23:59:49.990"
                                + NODE_ENTITY
                                + "recovered node entity host1: 1 attachments, 1 affine blocks"));
    }

    @Test
    void aLongSoakCrossesMidnightToo() {
        long origin = epochMillis(2024, 6, 3, 10, 0, 0);
        List<String> lines = new ArrayList<>();
        for (String time :
                List.of(
                        "16:00:00.000",
                        "22:00:00.000",
                        "03:00:00.000",
                        "09:00:00.000",
                        "10:30:00.000")) {
            lines.add(
                    time
                            + NODE_ENTITY
                            + "recovered node entity host2: 1 attachments, 1 affine blocks");
        }
        assertEquals(
                List.of(6.0, 12.0, 17.0, 23.0, 24.5),
                AgentLogs.parse("host1", lines, origin, ZONE).stream()
                        .map(r -> r.atNanos() / 3_600e9)
                        .toList(),
                "hours since the origin");
    }

    @Test
    void otherLinesAndGarbageAreSkipped() {
        long origin = epochMillis(2024, 6, 3, 14, 0, 0);
        List<Recovery> found =
                parse(
                        "host2",
                        origin,
                        "",
                        "garbage",
                        "\u0000\u00ff\ufffd binary",
                        "Exception in thread \"main\" java.lang.IllegalStateException: recovered node entity host9: 1 attachments, "
                                + "0 affine blocks",
                        "\tat io.cadastre.shards.NodeEntity.lambda$create$0(NodeEntity.java:116)",
                        "14:03:07.412"
                                + NODE_ENTITY
                                + "recovered node entity host2: seventeen attachments, 3 affine blocks",
                        "25:61:00.000"
                                + NODE_ENTITY
                                + "recovered node entity host2: 1 attachments, 0 affine blocks",
                        "14:03:07.500 WARN  i.c.shards.Other - failed: recovered node entity host2: 1 attachments, 0 affine blocks",
                        "14:03:07.600"
                                + NODE_ENTITY
                                + "recovered node entity host2: 1 attachments, 0 affine blocks and more",
                        // a member killed in the middle of a line; its next incarnation's
                        // first line continues it
                        "14:03:07.41214:03:09.000 INFO  i.c.s.NodeEntity - recovered node entity host5: 2 attachments, 1 affine blocks",
                        "14:03:10.000 ERROR i.c.s.NodeEntity - recovered node entity host1: 0 attachments, 0 affine blocks  ",
                        "14:03:11.000 INFO  i.c.s.NodeEntity - recovered node entity host3: 4 attachments, 1 affine blocks, 2 borrowed blocks");
        assertEquals(
                List.of(
                        node(189_000_000_000L, "host5", "host2"),
                        node(190_000_000_000L, "host1", "host2"),
                        node(191_000_000_000L, "host3", "host2")),
                found);
    }

    @Test
    void blockRecoveriesAreReadAcrossMidnightToo() {
        long origin = epochMillis(2024, 5, 31, 23, 59, 50);
        List<Recovery> found =
                parse(
                        "h2",
                        origin,
                        "23:59:49.990 INFO  o.a.p.cluster.Cluster - starting",
                        "23:59:55.000"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.64/26: 12 allocations, affine to h2",
                        "00:00:05.250 INFO  io.cadastre.shards.BlockEntity - recovered block fd00:198:3::1c0/122: 0 allocations, "
                                + "affine to null",
                        "00:00:06.000"
                                + NODE_ENTITY
                                + "recovered node entity h3: 1 attachments, 1 affine blocks, 0 borrowed blocks");
        assertEquals(
                List.of(
                        block(5_000_000_000L, "198.18.0.64/26", "h2"),
                        block(15_250_000_000L, "fd00:198:3::1c0/122", "h2"),
                        node(16_000_000_000L, "h3", "h2")),
                found);
    }

    @Test
    void malformedBlockLinesAreSkipped() {
        long origin = epochMillis(2024, 6, 3, 14, 0, 0);
        List<Recovery> found =
                parse(
                        "h2",
                        origin,
                        "Exception in thread \"main\" java.lang.IllegalStateException: recovered block 198.18.0.0/26: "
                                + "1 allocations, affine to h1",
                        "\tat io.cadastre.shards.BlockEntity.lambda$signalHandler$0(BlockEntity.java:143)",
                        "14:03:07.412"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0/26: twelve allocations, affine to h1",
                        "14:03:07.413"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0/26: 1 allocations",
                        "14:03:07.414"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0/26: 1 allocations, affine to h1 and more",
                        "14:03:07.415"
                                + BLOCK_ENTITY
                                + "recovered block pool-1: 1 allocations, affine to h1",
                        "14:03:07.416"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0: 1 allocations, affine to h1",
                        "25:61:00.000"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0/26: 1 allocations, affine to h1",
                        "14:03:07.500 WARN  i.c.shards.Other - failed: recovered block 198.18.0.0/26: 1 allocations, affine to h1",
                        // a member killed in the middle of a line; its next incarnation's
                        // first line continues it
                        "14:03:08.000"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0/2"
                                + "14:03:09.000 INFO  i.c.s.BlockEntity - recovered block 198.18.1.0/26: 2 allocations, affine to h5",
                        "14:03:10.000 ERROR i.c.s.BlockEntity - recovered block 198.18.0.128/26: 0 allocations, affine to null  ",
                        "14:03:11.000 INFO  BlockEntity - recovered block FD00:198:3::/122: 3 allocations, affine to h3");
        assertEquals(
                List.of(
                        block(189_000_000_000L, "198.18.1.0/26", "h2"),
                        block(190_000_000_000L, "198.18.0.128/26", "h2"),
                        block(191_000_000_000L, "FD00:198:3::/122", "h2")),
                found);
    }

    @Test
    void everyMembersLogIsReadAndAnUnreadableOneIsReported(@TempDir Path dir) throws Exception {
        long origin = epochMillis(2024, 6, 3, 14, 0, 0);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        bytes.write("14:00:01.000 INFO  o.a.p.Cluster - up\n".getBytes(StandardCharsets.UTF_8));
        bytes.write(new byte[] {(byte) 0xc3, 0x28, (byte) 0xff, '\n'}); // not UTF-8
        bytes.write(
                ("14:00:02.000"
                                + NODE_ENTITY
                                + "recovered node entity host2: 3 attachments, 1 affine blocks\n")
                        .getBytes(StandardCharsets.UTF_8));
        bytes.write(
                ("14:00:02.500"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.64/26: 3 allocations, affine to host2\n")
                        .getBytes(StandardCharsets.UTF_8));
        Path host1 = dir.resolve("host1.log");
        Files.write(host1, bytes.toByteArray());
        Path host3 = dir.resolve("host3.log");
        Files.writeString(
                host3,
                "14:00:03.000"
                        + NODE_ENTITY
                        + "recovered node entity host3: 0 attachments, 0 affine blocks");
        Map<String, Path> logs = new LinkedHashMap<>();
        logs.put("host1", host1);
        logs.put("host2", dir.resolve("missing.log"));
        logs.put("host3", host3);
        AgentLogs.Read read = AgentLogs.read(logs, origin, ZONE);
        assertEquals(
                List.of(
                        node(2_000_000_000L, "host2", "host1"),
                        block(2_500_000_000L, "198.18.0.64/26", "host1"),
                        node(3_000_000_000L, "host3", "host3")),
                read.recoveries());
        assertEquals(1, read.problems().size());
        assertTrue(read.problems().get(0).startsWith("host2: no "), read.problems().toString());
    }

    @Test
    void theLogsDecideWhichHostsAKillAffects() {
        long origin = epochMillis(2024, 5, 31, 23, 59, 0);
        List<Recovery> all = new ArrayList<>();
        all.addAll(
                parse(
                        "host1",
                        origin,
                        "23:59:01.000"
                                + NODE_ENTITY
                                + "recovered node entity host1: 0 attachments, 0 affine blocks",
                        "23:59:02.000"
                                + NODE_ENTITY
                                + "recovered node entity host2: 0 attachments, 0 affine blocks"));
        all.addAll(
                parse(
                        "host3",
                        origin,
                        "23:59:01.500"
                                + NODE_ENTITY
                                + "recovered node entity host3: 0 attachments, 0 affine blocks",
                        "00:00:08.100"
                                + NODE_ENTITY
                                + "recovered node entity host2: 4 attachments, 1 affine blocks"));
        fault("kill", "host1", 60_000, 70_000); // 00:00:00 local
        add("host2", 60_500, 68_900);
        add("host3", 60_100, 60_300);
        Kill kill = Failover.analyze(faults, all, ops).get(0);
        assertEquals(
                new HostAfterKill(
                        "host2",
                        Place.KILLED_MEMBER,
                        "host1",
                        Times.millis(8_100),
                        "host3",
                        Times.millis(8_900)),
                host(kill, "host2"));
        assertEquals(Place.ELSEWHERE, host(kill, "host3").place());
    }

    @Test
    void theLogsDecideWhichBlocksMoved() {
        long origin = epochMillis(2024, 5, 31, 23, 59, 0);
        List<Recovery> all = new ArrayList<>();
        all.addAll(
                parse(
                        "host1",
                        origin,
                        "23:59:01.000"
                                + BLOCK_ENTITY
                                + "recovered block fd00:198:3::1c0/122: 5 allocations, affine to host2",
                        "23:59:02.000"
                                + BLOCK_ENTITY
                                + "recovered block 198.18.0.0/26: 0 allocations, affine to null"));
        all.addAll(
                parse(
                        "host3",
                        origin,
                        "00:00:09.900"
                                + BLOCK_ENTITY
                                + "recovered block fd00:198:3::1c0/122: 5 allocations, affine to host2"));
        fault("kill", "host1", 60_000, 70_000); // 00:00:00 local
        Kill kill = Failover.analyze(faults, all, ops).get(0);
        assertEquals(
                List.of(
                        new EntityAfterKill(
                                Entity.block("198.18.0.0/26"),
                                Fate.NOT_RECOVERED,
                                Failover.NEVER,
                                null),
                        new EntityAfterKill(
                                Entity.block("fd00:198:3::1c0/122"),
                                Fate.RECOVERED_ELSEWHERE,
                                Times.millis(9_900),
                                "host3")),
                kill.entities());
    }
}
