package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.chaos.Failover.HostAfterKill;
import io.cadastre.chaos.Failover.Kill;
import io.cadastre.chaos.Failover.Place;
import io.cadastre.chaos.Failover.Recovery;
import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
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
        ops.add(new Operation(ops.size() + 1, phase, kind, Purpose.NEW, host, 0,
                new Attachment(host, "c" + ops.size()), false, Times.millis(from), Times.millis(to), status,
                status == Status.OK && kind == Kind.ADD ? List.of("10.0.0." + ops.size(), "fd00::" + ops.size()) : List.of(),
                status == Status.OK ? 0 : 11, null));
    }

    private void fault(String kind, String target, long fromMillis, long toMillis) {
        faults.add(new FaultRecord(faults.size() + 1, true, kind, target, Times.millis(fromMillis), Times.millis(toMillis),
                null));
    }

    private void recovered(long atMillis, String node, String member) {
        recoveries.add(new Recovery(Times.millis(atMillis), node, member));
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
        op(Phase.SETTLE, Kind.ADD, "host2", 100_000, 100_100, Status.OK); // after the workload: does not count
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
        assertEquals(List.of("host2", "host3", "host4"), first.hosts().stream().map(HostAfterKill::host).toList(),
                "every host but the killed member's own");
        assertEquals(new HostAfterKill("host2", Place.KILLED_MEMBER, "host1", Times.millis(8_100), "host3",
                Times.millis(8_900)), host(first, "host2"));
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
        assertEquals(Times.millis(45_000), second.nextFaultNanos(), "the pause, a fault of another kind");
        HostAfterKill host2 = host(second, "host2");
        assertEquals(new HostAfterKill("host2", Place.KILLED_MEMBER, "host3", Times.millis(9_100), "host1",
                Failover.NEVER), host2);
        assertEquals(Place.ELSEWHERE, host(second, "host1").place(), "host1's entity recovered on host1 at 25 s");
        assertEquals(Times.millis(1_500), host(second, "host1").addAfterNanos());
    }

    @Test
    void theMedianIsTheUsualOneAndNeverSortsLast() {
        assertNull(Failover.stats(List.of()));
        assertEquals(new Failover.Stats(3, 0, 5, 9), Failover.stats(List.of(9L, 1L, 5L)));
        assertEquals(new Failover.Stats(4, 0, 4, 9), Failover.stats(List.of(9L, 1L, 5L, 3L)), "(3 + 5) / 2");
        assertEquals(new Failover.Stats(3, 1, 5, Failover.NEVER), Failover.stats(List.of(Failover.NEVER, 1L, 5L)));
        assertEquals(new Failover.Stats(2, 1, Failover.NEVER, Failover.NEVER), Failover.stats(List.of(Failover.NEVER, 1L)));
    }

    @Test
    void theSectionSumsUpTheRunAndListsEveryKill() {
        twoKills();
        String section = Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops);
        List<String> lines = section.lines().toList();
        assertEquals("failover after kills (NodeEntity on the killed member): 2 host-kills in 2 kills; "
                + "ADD unavailable median never, worst never (1 of 2 without an ok ADD in the workload); "
                + "NodeEntity recovered median 8.6 s, worst 9.1 s; "
                + "other surviving hosts' ADD window median 1.0 s, worst 1.5 s; "
                + "2 host-kills with the NodeEntity's member unknown (no recovery line before the kill)", lines.get(0));
        assertEquals("  kill host1 at 10.000s: host2 affected, NodeEntity recovered on host3 after 8.1 s, ADD after 8.9 s; "
                + "host3 not affected (on host3), ADD after 0.5 s; host4 NodeEntity's member unknown, ADD after 1.2 s",
                lines.get(1));
        assertEquals("  kill host3 at 40.000s: host1 not affected (on host1), ADD after 1.5 s; "
                + "host2 affected, NodeEntity recovered on host1 after 9.1 s*, no ok ADD after the kill; "
                + "host4 NodeEntity's member unknown, ADD after 0.1 s", lines.get(2));
        assertEquals("  (* ended after the next fault had started)", lines.get(3));
        assertEquals(4, lines.size());
    }

    @Test
    void withoutKillsOrRecoveryLinesTheSectionSaysSo() {
        recovered(1_000, "host2", "host1");
        add("host2", 2_000, 3_000);
        fault("pause", "host1", 5_000, 6_000);
        assertEquals("failover after kills (NodeEntity on the killed member): no kill in this run\n",
                Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops));
        fault("kill", "host1", 10_000, 12_000);
        String none = Failover.section(faults, new AgentLogs.Read(List.of(), List.of("host3: no agent.log")), ops);
        assertTrue(none.startsWith("failover after kills (NodeEntity on the killed member): 1 kill, but no "
                + "\"recovered node entity\" line"), none);
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
        List<String> lines = Failover.section(faults, new AgentLogs.Read(recoveries, List.of()), ops).lines().toList();
        assertEquals(List.of("failover after kills (NodeEntity on the killed member): 0 host-kills in 1 kill; "
                + "ADD unavailable: none; NodeEntity recovered: none; "
                + "other surviving hosts' ADD window median 2.9 s, worst 5.5 s",
                "  kill host1 at 10.000s: host2 not affected (on host2), ADD after 0.3 s; "
                + "host3 not affected (on host3), moved to host1 after 5.0 s, ADD after 5.5 s"), lines);
    }

    private static long epochMillis(int year, int month, int day, int hour, int minute, int second) {
        return ZonedDateTime.of(year, month, day, hour, minute, second, 0, ZONE).toInstant().toEpochMilli();
    }

    private static final String NODE_ENTITY = " INFO  i.c.shards.NodeEntity - ";

    @Test
    void logTimesAcrossMidnightFollowTheRun() {
        long origin = epochMillis(2024, 5, 31, 23, 59, 50);
        List<Recovery> found = AgentLogs.parse("host3", List.of(
                "23:59:49.990 INFO  o.a.p.cluster.Cluster - starting", // read a little before the origin
                "23:59:55.000" + NODE_ENTITY + "recovered node entity host2: 17 attachments, 3 affine blocks",
                "00:00:05.250 INFO  io.cadastre.shards.NodeEntity - recovered node entity host3: 0 attachments, 0 affine blocks"),
                origin, ZONE);
        assertEquals(List.of(new Recovery(5_000_000_000L, "host2", "host3"), new Recovery(15_250_000_000L, "host3", "host3")),
                found);
        // A member whose log starts after midnight.
        assertEquals(List.of(new Recovery(11_000_000_000L, "host1", "host1")), AgentLogs.parse("host1",
                List.of("00:00:01.000" + NODE_ENTITY + "recovered node entity host1: 1 attachments, 1 affine blocks"),
                origin, ZONE));
        // A line stamped a little before the origin is just before it, not nearly a day later.
        assertEquals(List.of(new Recovery(-10_000_000L, "host1", "host1")), AgentLogs.parse("host1",
                List.of("23:59:49.990" + NODE_ENTITY + "recovered node entity host1: 1 attachments, 1 affine blocks"),
                origin, ZONE));
    }

    @Test
    void aLongSoakCrossesMidnightToo() {
        long origin = epochMillis(2024, 6, 3, 10, 0, 0);
        List<String> lines = new ArrayList<>();
        for (String time : List.of("16:00:00.000", "22:00:00.000", "03:00:00.000", "09:00:00.000", "10:30:00.000")) {
            lines.add(time + NODE_ENTITY + "recovered node entity host2: 1 attachments, 1 affine blocks");
        }
        assertEquals(List.of(6.0, 12.0, 17.0, 23.0, 24.5), AgentLogs.parse("host1", lines, origin, ZONE).stream()
                .map(r -> r.atNanos() / 3_600e9).toList(), "hours since the origin");
    }

    @Test
    void otherLinesAndGarbageAreSkipped() {
        long origin = epochMillis(2024, 6, 3, 14, 0, 0);
        List<Recovery> found = AgentLogs.parse("host2", List.of(
                "",
                "garbage",
                "\u0000\u00ff\ufffd binary",
                "Exception in thread \"main\" java.lang.IllegalStateException: recovered node entity host9: 1 attachments, "
                        + "0 affine blocks",
                "\tat io.cadastre.shards.NodeEntity.lambda$create$0(NodeEntity.java:116)",
                "14:03:07.412" + NODE_ENTITY + "recovered node entity host2: seventeen attachments, 3 affine blocks",
                "25:61:00.000" + NODE_ENTITY + "recovered node entity host2: 1 attachments, 0 affine blocks",
                "14:03:07.500 WARN  i.c.shards.Other - failed: recovered node entity host2: 1 attachments, 0 affine blocks",
                "14:03:07.600" + NODE_ENTITY + "recovered node entity host2: 1 attachments, 0 affine blocks and more",
                // a member killed in the middle of a line; its next incarnation's first line continues it
                "14:03:07.41214:03:09.000 INFO  i.c.s.NodeEntity - recovered node entity host5: 2 attachments, 1 affine blocks",
                "14:03:10.000 ERROR i.c.s.NodeEntity - recovered node entity host1: 0 attachments, 0 affine blocks  ",
                "14:03:11.000 INFO  i.c.s.NodeEntity - recovered node entity host3: 4 attachments, 1 affine blocks, 2 borrowed blocks"),
                origin, ZONE);
        assertEquals(List.of(new Recovery(189_000_000_000L, "host5", "host2"),
                new Recovery(190_000_000_000L, "host1", "host2"), new Recovery(191_000_000_000L, "host3", "host2")), found);
    }

    @Test
    void everyMembersLogIsReadAndAnUnreadableOneIsReported(@TempDir Path dir) throws Exception {
        long origin = epochMillis(2024, 6, 3, 14, 0, 0);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        bytes.write("14:00:01.000 INFO  o.a.p.Cluster - up\n".getBytes(StandardCharsets.UTF_8));
        bytes.write(new byte[] {(byte) 0xc3, 0x28, (byte) 0xff, '\n'}); // not UTF-8
        bytes.write(("14:00:02.000" + NODE_ENTITY + "recovered node entity host2: 3 attachments, 1 affine blocks\n")
                .getBytes(StandardCharsets.UTF_8));
        Path host1 = dir.resolve("host1.log");
        Files.write(host1, bytes.toByteArray());
        Path host3 = dir.resolve("host3.log");
        Files.writeString(host3, "14:00:03.000" + NODE_ENTITY + "recovered node entity host3: 0 attachments, 0 affine blocks");
        Map<String, Path> logs = new LinkedHashMap<>();
        logs.put("host1", host1);
        logs.put("host2", dir.resolve("missing.log"));
        logs.put("host3", host3);
        AgentLogs.Read read = AgentLogs.read(logs, origin, ZONE);
        assertEquals(List.of(new Recovery(2_000_000_000L, "host2", "host1"), new Recovery(3_000_000_000L, "host3", "host3")),
                read.recoveries());
        assertEquals(1, read.problems().size());
        assertTrue(read.problems().get(0).startsWith("host2: no "), read.problems().toString());
    }

    @Test
    void theLogsDecideWhichHostsAKillAffects() {
        long origin = epochMillis(2024, 5, 31, 23, 59, 0);
        List<Recovery> all = new ArrayList<>();
        all.addAll(AgentLogs.parse("host1", List.of(
                "23:59:01.000" + NODE_ENTITY + "recovered node entity host1: 0 attachments, 0 affine blocks",
                "23:59:02.000" + NODE_ENTITY + "recovered node entity host2: 0 attachments, 0 affine blocks"), origin, ZONE));
        all.addAll(AgentLogs.parse("host3", List.of(
                "23:59:01.500" + NODE_ENTITY + "recovered node entity host3: 0 attachments, 0 affine blocks",
                "00:00:08.100" + NODE_ENTITY + "recovered node entity host2: 4 attachments, 1 affine blocks"), origin, ZONE));
        fault("kill", "host1", 60_000, 70_000); // 00:00:00 local
        add("host2", 60_500, 68_900);
        add("host3", 60_100, 60_300);
        Kill kill = Failover.analyze(faults, all, ops).get(0);
        assertEquals(new HostAfterKill("host2", Place.KILLED_MEMBER, "host1", Times.millis(8_100), "host3",
                Times.millis(8_900)), host(kill, "host2"));
        assertEquals(Place.ELSEWHERE, host(kill, "host3").place());
    }
}
