package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.AddressRange;
import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ADD/DEL flows over real sharded entities in a one-member cluster, every message serialized
 * (serialize-messages = on). Each test uses its own pools and nodes, so tests do not interact.
 */
class IpamTest {
    private static ActorTestKit testKit;
    private static final AtomicInteger counter = new AtomicInteger();

    @BeforeAll
    static void startCluster() {
        testKit = TestCluster.start("IpamTest");
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    private record Setup(String v4, String v6, String prefix) {}

    /** Unique pool names and a unique /24 (v4) and /120 (v6) range per test. */
    private static Setup names() {
        int n = counter.incrementAndGet();
        return new Setup("v4-" + n, "v6-" + n, "t" + n);
    }

    private static PoolSpec v4Pool(
            String name, String cidr, int blockPrefix, boolean strict, boolean borrow) {
        return new PoolSpec(name, Cidr.parse(cidr), blockPrefix, strict, borrow, 0);
    }

    private static Ipam ipam(String node, List<PoolSpec> pools) {
        // Zero: every state-changing reply is confirmed by a read, so these tests cover that path
        // too.
        return ipam(node, pools, AskTimeouts.single(Duration.ofSeconds(10), Duration.ZERO));
    }

    /** An IPAM for the node whose default pools are the first pool of each family given; the pools are defined. */
    private static Ipam ipam(String node, List<PoolSpec> pools, AskTimeouts timeouts) {
        Map<IpFamily, String> defaults = new java.util.EnumMap<>(IpFamily.class);
        pools.forEach(p -> defaults.putIfAbsent(p.family(), p.name()));
        PoolCatalog catalog = new PoolCatalog(testKit.system(), timeouts, Duration.ofMillis(100));
        await(new Pools(testKit.system(), timeouts, catalog).defineConfigured(pools));
        return new ShardedIpam(
                testKit.system(),
                node,
                Map.of(),
                catalog,
                List.copyOf(defaults.values()),
                timeouts,
                Clock.systemUTC());
    }

    private static <T> T await(CompletionStage<T> stage) {
        return TestCluster.await(stage);
    }

    private static IpamException.Reason failureOf(CompletionStage<?> stage) {
        CompletionException e = assertThrows(CompletionException.class, () -> await(stage));
        Throwable cause = e.getCause();
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        assertTrue(cause instanceof IpamException, "expected IpamException, got " + cause);
        return ((IpamException) cause).reason();
    }

    private static AssignRequest request(String container, List<String> pools, List<String> ips) {
        return new AssignRequest(
                "net." + container,
                "eth0",
                "net",
                container,
                "/var/run/netns/" + container,
                "default",
                container,
                pools,
                ips);
    }

    private static PoolEntity.PoolView poolView(String name) {
        return await(
                ClusterSharding.get(testKit.system())
                        .entityRefFor(PoolEntity.ENTITY_TYPE_KEY, name)
                        .ask(PoolEntity.GetPool::new, Duration.ofSeconds(10)));
    }

    private static BlockEntity.BlockView blockView(String cidr) {
        return await(
                ClusterSharding.get(testKit.system())
                        .entityRefFor(BlockEntity.ENTITY_TYPE_KEY, Cidr.parse(cidr).entityId())
                        .ask(BlockEntity.GetBlock::new, Duration.ofSeconds(10)));
    }

    @Test
    void firstAddClaimsABlockAffineToTheNodeAndThe65thClaimsASecond() {
        Setup s = names();
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.1.0/24", 26, false, false)));
        AttachmentRecord first = await(ipam.assign(request(s.prefix + "c0", List.of(), List.of())));
        assertEquals("198.18.1.0", first.addresses().get(0).address());
        assertEquals(
                Map.of(Cidr.parse("198.18.1.0/26"), s.prefix + "-node"), poolView(s.v4).claims());
        assertEquals(s.prefix + "-node", blockView("198.18.1.0/26").affinity());

        for (int i = 1; i < 64; i++) {
            await(ipam.assign(request(s.prefix + "c" + i, List.of(), List.of())));
        }
        assertEquals(1, poolView(s.v4).claims().size());
        AttachmentRecord sixtyFifth =
                await(ipam.assign(request(s.prefix + "c64", List.of(), List.of())));
        assertEquals(Cidr.parse("198.18.1.64/26"), sixtyFifth.addresses().get(0).block());
        assertEquals(2, poolView(s.v4).claims().size());
    }

    @Test
    void aClaimIsHintedToEveryAgentAsThePoolChanged() {
        Setup s = names();
        var probe = testKit.<MeshHints.Hint>createTestProbe();
        MeshHints.get(testKit.system()).subscribe(probe.getRef());
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.21.0/24", 26, false, false)));
        await(ipam.assign(request(s.prefix + "c0", List.of(), List.of())));
        fishForPoolChanged(probe, s.v4);
        await(ipam.assign(request(s.prefix + "c1", List.of(), List.of())));
        probe.expectNoMessage(Duration.ofMillis(300));
    }

    /** Routes to a deleted pool's blocks go at once, not at every agent's next resync. */
    @Test
    void aBlockReleasedByDeletingItsPoolIsHintedAsThePoolChanged() {
        Setup s = names();
        var probe = testKit.<MeshHints.Hint>createTestProbe();
        MeshHints.get(testKit.system()).subscribe(probe.getRef());
        AskTimeouts timeouts = AskTimeouts.single(Duration.ofSeconds(10), Duration.ZERO);
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.22.0/24", 26, false, false)));
        await(ipam.assign(request(s.prefix + "c0", List.of(), List.of())));
        fishForPoolChanged(probe, s.v4); // the claim's
        await(ipam.release("net." + s.prefix + "c0", "eth0"));
        Pools pools =
                new Pools(
                        testKit.system(),
                        timeouts,
                        new PoolCatalog(testKit.system(), timeouts, Duration.ofMillis(100)));

        assertEquals(List.of(Cidr.parse("198.18.22.0/26")), await(pools.delete(s.v4)));
        fishForPoolChanged(probe, s.v4);
    }

    private static void fishForPoolChanged(TestProbe<MeshHints.Hint> probe, String pool) {
        // Other tests claim blocks meanwhile: wait for this pool's hint among theirs.
        probe.fishForMessage(
                Duration.ofSeconds(10),
                hint ->
                        hint.equals(new MeshHints.PoolChanged(pool))
                                ? FishingOutcomes.complete()
                                : FishingOutcomes.continueAndIgnore());
    }

    @Test
    void retriedAddReturnsTheSameAddresses() {
        Setup s = names();
        Ipam ipam =
                ipam(
                        s.prefix + "-node",
                        List.of(
                                v4Pool(s.v4, "198.18.2.0/24", 26, false, false),
                                new PoolSpec(
                                        s.v6,
                                        Cidr.parse("fd00:198:2::/120"),
                                        122,
                                        false,
                                        false,
                                        0)));
        AttachmentRecord first = await(ipam.assign(request("c", List.of(), List.of())));
        AttachmentRecord again = await(ipam.assign(request("c", List.of(), List.of())));
        assertEquals(first, again);
        assertEquals(
                "/var/run/netns/c", first.netnsPath(), "CNI_NETNS is recorded with the attachment");
        assertEquals(2, first.addresses().size());
        assertEquals(
                Set.of(IpFamily.V4, IpFamily.V6),
                Set.of(first.addresses().get(0).family(), first.addresses().get(1).family()));
        assertEquals(1, blockView("198.18.2.0/26").allocations().size());
    }

    @Test
    void dualStackIsAllOrNothing() {
        Setup s = names();
        PoolSpec v4 = v4Pool(s.v4, "198.18.3.0/24", 26, false, false);
        PoolSpec v6 = new PoolSpec(s.v6, Cidr.parse("fd00:198:3::/122"), 122, true, false, 0);
        // Another node takes the only IPv6 block; strict affinity leaves none for ours.
        Ipam other = ipam(s.prefix + "-other", List.of(v4, v6));
        await(other.assign(request("occupant", List.of(s.v6), List.of())));
        Ipam ipam = ipam(s.prefix + "-node", List.of(v4, v6));

        assertEquals(
                IpamException.Reason.POOL_EXHAUSTED,
                failureOf(ipam.assign(request("c", List.of(), List.of()))));
        // The IPv4 address it got on the way was given back.
        assertTrue(blockView("198.18.3.0/26").allocations().isEmpty());
        assertTrue(await(ipam.lookup("net.c", "eth0")).isEmpty());
    }

    @Test
    void strictAffinityRefusesWhenNoBlockIsLeft() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.4.0/26", 26, true, true);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        CompletionException e =
                assertThrows(
                        CompletionException.class,
                        () -> await(b.assign(request("b1", List.of(), List.of()))));
        assertTrue(
                e.getCause().getMessage().contains("strict affinity"), e.getCause().getMessage());
        assertEquals(1, blockView("198.18.4.0/26").allocations().size());
    }

    @Test
    void borrowsFromAnotherNodesBlockWhenAllowedAndNoBlockIsLeft() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.5.0/26", 26, false, true);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        AttachmentRecord borrowed =
                await(
                        ipam(s.prefix + "-b", List.of(pool))
                                .assign(request("b1", List.of(), List.of())));
        assertEquals("198.18.5.1", borrowed.addresses().get(0).address());
        BlockEntity.BlockView block = blockView("198.18.5.0/26");
        assertEquals(s.prefix + "-a", block.affinity());
        assertEquals(s.prefix + "-b", block.allocations().get("198.18.5.1").node());
    }

    @Test
    void withoutBorrowingAnExhaustedPoolRefuses() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.6.0/26", 26, false, false);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        assertEquals(
                IpamException.Reason.POOL_EXHAUSTED,
                failureOf(
                        ipam(s.prefix + "-b", List.of(pool))
                                .assign(request("b1", List.of(), List.of()))));
    }

    @Test
    void specificAddressesAreGrantedOnlyWhenFreeAndInAPool() {
        Setup s = names();
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.7.0/24", 26, false, false)));
        AttachmentRecord granted =
                await(ipam.assign(request("c1", List.of(), List.of("198.18.7.200"))));
        assertEquals("198.18.7.200", granted.addresses().get(0).address());
        assertEquals(Cidr.parse("198.18.7.192/26"), granted.addresses().get(0).block());

        assertEquals(
                IpamException.Reason.ADDRESS_TAKEN,
                failureOf(ipam.assign(request("c2", List.of(), List.of("198.18.7.200")))));
        assertEquals(
                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                failureOf(ipam.assign(request("c3", List.of(), List.of("198.19.200.1")))));
        assertEquals(
                IpamException.Reason.INVALID_REQUEST,
                failureOf(ipam.assign(request("c4", List.of(), List.of("198.18.7")))));
        assertEquals(
                IpamException.Reason.UNKNOWN_POOL,
                failureOf(ipam.assign(request("c5", List.of("nope"), List.of()))));
        // Nothing changed by the refusals.
        assertEquals(Map.of("198.18.7.200", "net.c1"), handlesIn("198.18.7.192/26"));
        assertTrue(await(ipam.lookup("net.c2", "eth0")).isEmpty());
    }

    private static Map<String, String> handlesIn(String block) {
        Map<String, String> handles = new java.util.TreeMap<>();
        blockView(block).allocations().forEach((address, a) -> handles.put(address, a.handle()));
        return handles;
    }

    @Test
    void releaseIsIdempotentAndAReleasedAddressIsNotReusedAtOnce() {
        Setup s = names();
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.8.0/24", 26, false, false)));
        String a =
                await(ipam.assign(request("a", List.of(), List.of()))).addresses().get(0).address();
        await(ipam.assign(request("b", List.of(), List.of())));
        assertEquals(List.of(a), await(ipam.release("net.a", "eth0")));
        assertEquals(List.of(), await(ipam.release("net.a", "eth0")));
        assertEquals(List.of(), await(ipam.release("net.never", "eth0")));
        String c =
                await(ipam.assign(request("c", List.of(), List.of()))).addresses().get(0).address();
        assertNotEquals(a, c);
    }

    /**
     * A crash half-way through DEL (here: the block's journal write fails) must leave an orphan
     * allocation, never a node record pointing at a freed address that a retried ADD would hand
     * back while another pod holds it. A retried DEL then sweeps the orphan.
     */
    @Test
    void aDelInterruptedAfterTheNodeForgotLeavesAnOrphanNotAFreedRecordedAddress() {
        Setup s = names();
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.12.0/24", 26, false, false)));
        String address =
                await(ipam.assign(request("x", List.of(), List.of()))).addresses().get(0).address();
        PersistenceTestKit journal = PersistenceTestKit.create(testKit.system());
        journal.failNextPersisted("Block|" + Cidr.parse("198.18.12.0/26").entityId());

        assertEquals(IpamException.Reason.UNAVAILABLE, failureOf(ipam.release("net.x", "eth0")));
        assertTrue(
                await(ipam.lookup("net.x", "eth0")).isEmpty(),
                "the node forgot the attachment first");
        assertEquals(
                Map.of(address, "net.x"),
                handlesIn("198.18.12.0/26"),
                "the address is still held: an orphan");
        // Nothing can take the orphaned address meanwhile.
        assertNotEquals(
                address,
                await(ipam.assign(request("y", List.of(), List.of())))
                        .addresses()
                        .get(0)
                        .address());

        assertEquals(
                List.of(address),
                await(ipam.release("net.x", "eth0")),
                "a retried DEL sweeps the orphan");
        assertEquals(List.of("net.y"), new ArrayList<>(handlesIn("198.18.12.0/26").values()));
    }

    @Test
    void garbageCollectionReleasesExactlyTheAttachmentsNotKept() {
        Setup s = names();
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.9.0/24", 26, false, false)));
        for (String c : List.of("a", "b", "c")) {
            await(ipam.assign(request(c, List.of(), List.of())));
        }
        List<String> released =
                await(ipam.collectGarbage("net", Set.of(AttachmentRecord.key("net.b", "eth0"))));
        assertEquals(Set.of("net.a/eth0", "net.c/eth0"), new HashSet<>(released));
        assertEquals(List.of("net.b"), new ArrayList<>(handlesIn("198.18.9.0/26").values()));
        assertEquals(1, await(ipam.attachments()).size());
    }

    /**
     * An ADD whose outcome was unknown can leave an allocation that no record holds in a block
     * the node borrowed from; GC must find it there too, not only in the node's own blocks.
     */
    @Test
    void garbageCollectionReleasesOrphansInBorrowedBlocks() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.13.0/26", 26, false, true);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        // The block allocated for node b, then the node's record was never written (a crash).
        io.cadastre.ipam.Allocation orphan =
                new io.cadastre.ipam.Allocation(
                        "net.orphan", "eth0", "default", "orphan", s.prefix + "-b", 1L);
        BlockEntity.AssignOutcome outcome =
                await(
                        ClusterSharding.get(testKit.system())
                                .entityRefFor(
                                        BlockEntity.ENTITY_TYPE_KEY,
                                        Cidr.parse("198.18.13.0/26").entityId())
                                .ask(
                                        r -> new BlockEntity.AutoAssign(orphan, true, null, r),
                                        Duration.ofSeconds(10)));
        assertEquals(BlockEntity.AssignStatus.ASSIGNED, outcome.status());

        assertEquals(List.of("net.orphan/eth0"), await(b.collectGarbage("net", Set.of())));
        assertEquals(List.of("net.a1"), new ArrayList<>(handlesIn("198.18.13.0/26").values()));
    }

    private static NodeEntity.NodeView nodeView(String node) {
        return await(
                ClusterSharding.get(testKit.system())
                        .entityRefFor(NodeEntity.ENTITY_TYPE_KEY, node)
                        .ask(NodeEntity.GetNode::new, Duration.ofSeconds(10)));
    }

    /**
     * A DEL whose second half failed (the node forgot the attachment, the block it borrowed from
     * did not free the address) is retried: the node no longer knows the attachment, and the sweep
     * must reach the borrowed block, not only the node's own (here it has none).
     */
    @Test
    void aRetriedDelSweepsTheBlocksTheNodeBorrowedFrom() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.14.0/26", 26, false, true);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        String address =
                await(b.assign(request("b1", List.of(), List.of()))).addresses().get(0).address();
        assertEquals(
                Map.of(Cidr.parse("198.18.14.0/26"), s.v4),
                nodeView(s.prefix + "-b").borrowedBlocks());

        await(b.forget("net.b1", "eth0"));
        assertEquals(
                Map.of("198.18.14.0", "net.a1", address, "net.b1"),
                handlesIn("198.18.14.0/26"),
                "an orphan");

        assertEquals(
                List.of(address),
                await(b.release("net.b1", "eth0")),
                "the retried DEL sweeps the borrowed block");
        assertTrue(
                blockView("198.18.14.0/26").allocations().values().stream()
                        .noneMatch(a -> a.handle().equals("net.b1")));
        assertEquals(Map.of("198.18.14.0", "net.a1"), handlesIn("198.18.14.0/26"));
    }

    /**
     * The node entity's list of borrowed blocks is persisted: after the entity restarts (a failed
     * journal write stops it; the next message starts it again from the journal) and the agent
     * restarts (a new Ipam, nothing cached), a retried DEL still sweeps the borrowed block.
     */
    @Test
    void theBorrowedBlocksSurviveTheNodeEntitysRestart() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.15.0/26", 26, false, true);
        String nodeB = s.prefix + "-b";
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        String address =
                await(ipam(nodeB, List.of(pool)).assign(request("b1", List.of(), List.of())))
                        .addresses()
                        .get(0)
                        .address();

        // One attempt per second, so the ask that the failed write left unanswered is sent again
        // to the restarted entity.
        Ipam restarted =
                ipam(
                        nodeB,
                        List.of(pool),
                        new AskTimeouts(
                                Duration.ofSeconds(10), Duration.ofSeconds(1), Duration.ZERO));
        PersistenceTestKit.create(testKit.system()).failNextPersisted("Node|" + nodeB);
        // The node forgets the attachment (after its restart); the blocks never free it.
        await(restarted.forget("net.b1", "eth0"));
        assertTrue(await(restarted.lookup("net.b1", "eth0")).isEmpty());
        assertEquals(Map.of(Cidr.parse("198.18.15.0/26"), s.v4), nodeView(nodeB).borrowedBlocks());

        assertEquals(List.of(address), await(restarted.release("net.b1", "eth0")));
        assertEquals(Map.of("198.18.15.0", "net.a1"), handlesIn("198.18.15.0/26"));
    }

    /** When the node cannot list the block, the block is never asked to assign: nothing unlisted is left. */
    @Test
    void aBorrowedAddressIsAssignedOnlyAfterTheNodeListedTheBlock() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.18.0/26", 26, false, true);
        String nodeB = s.prefix + "-b";
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        Ipam b = ipam(nodeB, List.of(pool));
        Ipam impatient =
                ipam(
                        nodeB,
                        List.of(pool),
                        AskTimeouts.single(Duration.ofSeconds(1), Duration.ZERO));
        PersistenceTestKit.create(testKit.system()).failNextPersisted("Node|" + nodeB);

        assertEquals(
                IpamException.Reason.UNAVAILABLE,
                failureOf(impatient.assign(request("b1", List.of(), List.of()))));
        assertEquals(Map.of("198.18.18.0", "net.a1"), handlesIn("198.18.18.0/26"));
        assertEquals(Map.of(), nodeView(nodeB).borrowedBlocks());

        await(b.assign(request("b1", List.of(), List.of())));
        assertEquals(Map.of(Cidr.parse("198.18.18.0/26"), s.v4), nodeView(nodeB).borrowedBlocks());
    }

    /** A specific address granted in another node's block is borrowed too, and swept the same way. */
    @Test
    void aRetriedDelSweepsTheBlockOfASpecificAddressBorrowed() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.16.0/24", 26, false, false);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        await(b.assign(request("b1", List.of(), List.of("198.18.16.10"))));
        assertEquals(
                Map.of(Cidr.parse("198.18.16.0/26"), s.v4),
                nodeView(s.prefix + "-b").borrowedBlocks());

        await(b.forget("net.b1", "eth0"));
        assertEquals(List.of("198.18.16.10"), await(b.release("net.b1", "eth0")));
        assertEquals(Map.of("198.18.16.0", "net.a1"), handlesIn("198.18.16.0/26"));
    }

    @Test
    void garbageCollectionStopsListingABorrowedBlockThatHoldsNothingOfTheNode() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.17.0/26", 26, false, true);
        Map<Cidr, String> listed = Map.of(Cidr.parse("198.18.17.0/26"), s.v4);
        await(ipam(s.prefix + "-a", List.of(pool)).assign(request("a1", List.of(), List.of())));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        await(b.assign(request("b1", List.of(), List.of())));

        assertEquals(List.of(), await(b.collectGarbage("net", Set.of("net.b1/eth0"))));
        assertEquals(listed, nodeView(s.prefix + "-b").borrowedBlocks(), "b1 is still held there");

        await(b.release("net.b1", "eth0"));
        assertEquals(List.of(), await(b.collectGarbage("net", Set.of())));
        assertEquals(Map.of(), nodeView(s.prefix + "-b").borrowedBlocks());

        // Borrowing from it again lists it again (the local cache forgot it too).
        await(b.assign(request("b2", List.of(), List.of())));
        assertEquals(listed, nodeView(s.prefix + "-b").borrowedBlocks());
    }

    @Test
    void concurrentAddsGetDistinctAddressesAndClaimOnlyTheBlocksNeeded() {
        Setup s = names();
        Ipam ipam =
                ipam(s.prefix + "-node", List.of(v4Pool(s.v4, "198.18.10.0/24", 26, false, false)));
        List<CompletableFuture<AttachmentRecord>> all = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            all.add(ipam.assign(request("p" + i, List.of(), List.of())).toCompletableFuture());
        }
        Set<String> addresses = new HashSet<>();
        for (CompletableFuture<AttachmentRecord> f : all) {
            assertTrue(addresses.add(await(f).addresses().get(0).address()), "duplicate address");
        }
        assertEquals(100, addresses.size());
        assertEquals(2, poolView(s.v4).claims().size());
    }

    @Test
    void statusReportsWhetherAnAddCouldSucceed() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.11.0/26", 26, true, false);
        Ipam a = ipam(s.prefix + "-a", List.of(pool));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        assertTrue(await(b.unavailability(List.of())).isEmpty());
        await(a.assign(request("a1", List.of(), List.of())));
        assertTrue(await(b.unavailability(List.of())).isPresent());
        assertTrue(await(a.unavailability(List.of())).isEmpty());
        assertTrue(await(a.unavailability(List.of("unknown"))).isPresent());
    }

    @Test
    void excludedAddressesAreNeverAssigned() {
        Setup s = names();
        PoolSpec pool =
                new PoolSpec(
                        s.v4,
                        Cidr.parse("198.18.41.0/29"),
                        29,
                        true,
                        false,
                        0,
                        "",
                        List.of(Cidr.parse("198.18.41.0/30"), Cidr.parse("198.18.41.6/32")));
        Ipam ipam = ipam(s.prefix + "-a", List.of(pool));
        List<String> assigned = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            assigned.add(
                    await(ipam.assign(request("x" + i, List.of(), List.of())))
                            .addresses()
                            .get(0)
                            .address());
        }
        assertEquals(List.of("198.18.41.4", "198.18.41.5", "198.18.41.7"), assigned);
        assertEquals(
                IpamException.Reason.POOL_EXHAUSTED,
                failureOf(ipam.assign(request("x3", List.of(), List.of()))));
        assertEquals(
                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                failureOf(ipam.assign(request("x4", List.of(), List.of("198.18.41.1")))));
    }

    private static AssignRequest onSubnet(String container, List<String> ips, AddressRules rules) {
        return new AssignRequest(
                "l2." + container,
                "net1",
                "l2",
                container,
                null,
                "default",
                container,
                List.of(),
                ips,
                rules,
                Map.of());
    }

    private static AddressRules subnetWithGateway(
            String subnet, String start, String end, String gateway) {
        return AddressRules.onSubnet(
                List.of(RangeSet.of(new AddressRange(Cidr.parse(subnet), start, end, gateway))));
    }

    /**
     * An L2 subnet shared by two nodes (macvlan pods on both): its blocks are affine to either
     * node, and together they hand out each of the subnet's 253 usable addresses exactly once,
     * never its network address, broadcast address or gateway.
     */
    @Test
    void
            anL2SubnetSharedByTwoNodesGivesEveryUsableAddressOnceAndNeverItsNetworkBroadcastOrGateway() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.19.64.0/24", 26, false, true);
        Ipam a = ipam(s.prefix + "-a", List.of(pool));
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        AddressRules rules = subnetWithGateway("198.19.64.0/24", null, null, "198.19.64.1");
        Set<String> given = new HashSet<>();
        for (int i = 0; ; i++) {
            Ipam ipam = i % 2 == 0 ? a : b;
            CompletionStage<AttachmentRecord> add =
                    ipam.assign(onSubnet("p" + i, List.of(), rules));
            try {
                String address = await(add).addresses().get(0).address();
                assertTrue(given.add(address), "given twice: " + address);
            } catch (CompletionException e) {
                assertEquals(IpamException.Reason.POOL_EXHAUSTED, failureOf(add));
                assertEquals(
                        IpamException.Reason.POOL_EXHAUSTED,
                        failureOf((i % 2 == 0 ? b : a).assign(onSubnet("last", List.of(), rules))),
                        "the other node finds none either");
                break;
            }
        }
        assertEquals(253, given.size());
        for (String never : List.of("198.19.64.0", "198.19.64.1", "198.19.64.255")) {
            assertFalse(given.contains(never), never);
        }
        assertEquals(
                Set.of(s.prefix + "-a", s.prefix + "-b"),
                Set.copyOf(poolView(s.v4).claims().values()));
    }

    @Test
    void rangeStartAndRangeEndAreRespectedPerRequest() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.19.65.0/24", 26, false, false);
        Ipam ipam = ipam(s.prefix + "-a", List.of(pool));
        AddressRules narrow =
                subnetWithGateway(
                        "198.19.65.0/24", "198.19.65.100", "198.19.65.102", "198.19.65.1");
        List<String> inRange = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            inRange.add(
                    await(ipam.assign(onSubnet("n" + i, List.of(), narrow)))
                            .addresses()
                            .get(0)
                            .address());
        }
        assertEquals(List.of("198.19.65.100", "198.19.65.101", "198.19.65.102"), inRange);
        assertEquals(
                Set.of(Cidr.parse("198.19.65.64/26")),
                poolView(s.v4).claims().keySet(),
                "the one block holding the range was claimed, not the pool's first");
        assertEquals(
                IpamException.Reason.POOL_EXHAUSTED,
                failureOf(ipam.assign(onSubnet("n3", List.of(), narrow))));
        // Another request on the same pool and node, without the range, is not held back by it.
        String other =
                await(ipam.assign(onSubnet("w", List.of(), AddressRules.POOL_SUBNET)))
                        .addresses()
                        .get(0)
                        .address();
        assertEquals(
                "198.19.65.64",
                other,
                "the node's block's first free address; not the pool's network address");
        assertEquals(Set.of(Cidr.parse("198.19.65.64/26")), poolView(s.v4).claims().keySet());
    }

    @Test
    void aPoolsOwnCidrIsTheSubnetWhenTheRequestNamesNoRanges() {
        Setup s = names();
        Ipam ipam = ipam(s.prefix + "-a", List.of(v4Pool(s.v4, "198.19.66.0/30", 30, true, false)));
        String first =
                await(ipam.assign(onSubnet("x1", List.of(), AddressRules.POOL_SUBNET)))
                        .addresses()
                        .get(0)
                        .address();
        String second =
                await(ipam.assign(onSubnet("x2", List.of(), AddressRules.POOL_SUBNET)))
                        .addresses()
                        .get(0)
                        .address();
        assertEquals(
                List.of("198.19.66.1", "198.19.66.2"),
                List.of(first, second),
                "not .0 (network) nor .3 (broadcast)");
        assertEquals(
                IpamException.Reason.POOL_EXHAUSTED,
                failureOf(ipam.assign(onSubnet("x3", List.of(), AddressRules.POOL_SUBNET))));
        assertEquals(
                "198.19.66.0",
                await(ipam.assign(request("routed", List.of(), List.of())))
                        .addresses()
                        .get(0)
                        .address(),
                "a routed /32 pod may have it");
    }

    @Test
    void requestedAddressesMustBeAllowedByTheSubnetAndRefusalsChangeNothing() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.19.67.0/24", 26, false, false);
        Ipam ipam = ipam(s.prefix + "-a", List.of(pool));
        AddressRules rules =
                subnetWithGateway("198.19.67.0/24", "198.19.67.10", "198.19.67.20", "198.19.67.1");
        for (String refused :
                List.of(
                        "198.19.67.0",
                        "198.19.67.1",
                        "198.19.67.255",
                        "198.19.67.9",
                        "198.19.67.21")) {
            assertEquals(
                    IpamException.Reason.ADDRESS_NOT_IN_POOL,
                    failureOf(ipam.assign(onSubnet("r", List.of(refused), rules))),
                    refused);
        }
        assertEquals(
                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                failureOf(
                        ipam.assign(
                                onSubnet(
                                        "r", List.of("198.19.67.255"), AddressRules.POOL_SUBNET))));
        assertTrue(poolView(s.v4).claims().isEmpty(), "no block claimed by a refused request");
        assertTrue(await(ipam.lookup("l2.r", "net1")).isEmpty());
        assertEquals(
                "198.19.67.15",
                await(ipam.assign(onSubnet("ok", List.of("198.19.67.15"), rules)))
                        .addresses()
                        .get(0)
                        .address());
    }

    @Test
    void rangesGiveOneAddressPerRangeSetAndMustLieInAPool() {
        Setup s = names();
        PoolSpec v4 = v4Pool(s.v4, "198.19.68.0/24", 26, false, false);
        PoolSpec v6 = new PoolSpec(s.v6, Cidr.parse("fd00:198:68::/120"), 122, false, false, 0);
        Ipam ipam = ipam(s.prefix + "-a", List.of(v4, v6));
        AttachmentRecord v4Only =
                await(
                        ipam.assign(
                                onSubnet(
                                        "one",
                                        List.of(),
                                        subnetWithGateway(
                                                "198.19.68.0/24", null, null, "198.19.68.1"))));
        assertEquals(
                List.of("198.19.68.2"),
                v4Only.addresses().stream().map(HeldAddress::address).toList(),
                "the IPv6 default pool has no range set: no IPv6 address");
        assertEquals(
                IpamException.Reason.INVALID_REQUEST,
                failureOf(
                        ipam.assign(
                                onSubnet(
                                        "none",
                                        List.of(),
                                        subnetWithGateway("198.19.99.0/24", null, null, null)))));
        assertTrue(await(ipam.lookup("l2.none", "net1")).isEmpty());
    }

    /** A block is given back to its pool only when empty; once given back, nobody allocates from it, borrowers included. */
    @Test
    void aBlockIsReleasedOnlyWhenEmpty() {
        Setup s = names();
        PoolSpec pool = v4Pool(s.v4, "198.18.42.0/28", 28, false, true);
        String nodeA = s.prefix + "-a";
        Ipam a = ipam(nodeA, List.of(pool));
        await(a.assign(request("r1", List.of(), List.of())));
        Cidr block = Cidr.parse("198.18.42.0/28");
        BlockReleases releases =
                new BlockReleases(
                        testKit.system(),
                        AskTimeouts.single(Duration.ofSeconds(10), Duration.ZERO));

        assertFalse(await(releases.releaseIfEmpty(s.v4, block, nodeA)));
        assertEquals(Map.of(block, nodeA), poolView(s.v4).claims());
        assertTrue(poolView(s.v4).releasing().isEmpty());
        // Still the node's: it allocates there again.
        await(a.assign(request("r2", List.of(), List.of())));

        await(a.release("net.r1", "eth0"));
        await(a.release("net.r2", "eth0"));
        assertTrue(await(releases.releaseIfEmpty(s.v4, block, nodeA)));
        assertEquals(Map.of(), poolView(s.v4).claims());
        assertNull(blockView("198.18.42.0/28").affinity());
        assertFalse(nodeView(nodeA).affineBlocks().containsKey(block));
        // Released twice is still released.
        assertTrue(await(releases.releaseIfEmpty(s.v4, block, nodeA)));

        // Another node claims it afresh (the address free the longest comes first).
        Ipam b = ipam(s.prefix + "-b", List.of(pool));
        assertEquals(
                "198.18.42.2",
                await(b.assign(request("b1", List.of(), List.of()))).addresses().get(0).address());
        assertEquals(s.prefix + "-b", blockView("198.18.42.0/28").affinity());
    }
}
