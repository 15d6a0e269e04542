package io.cadastre.ipam;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BlockTest {
    private static final Cidr CIDR = Cidr.parse("198.18.0.64/26");

    private static Allocation alloc(String handle) {
        return new Allocation(handle, "eth0", "ns", "pod-" + handle, "node-a", 1L);
    }

    @Test
    void allocatesInAddressOrderThenReusesTheLongestFree() {
        Block block = Block.empty(CIDR);
        for (int i = 0; i < 3; i++) {
            block.allocate(block.nextFreeOrdinal().getAsInt(), alloc("h" + i));
        }
        assertEquals("198.18.0.67", block.addressAt(block.nextFreeOrdinal().getAsInt()));
        block.release(1);
        // The just-released .65 goes to the back of the queue: .67 is still next.
        assertEquals(3, block.nextFreeOrdinal().getAsInt());
        assertEquals(62, block.freeCount());
        block.validate();
    }

    @Test
    void releasedAddressIsReusedOnlyAfterEveryOtherFreeOne() {
        Block block = Block.empty(CIDR);
        block.allocate(0, alloc("first"));
        block.release(0);
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            int next = block.nextFreeOrdinal().getAsInt();
            order.add(next);
            block.allocate(next, alloc("h" + i));
        }
        assertEquals(0, order.get(63));
        assertTrue(block.nextFreeOrdinal().isEmpty());
        assertEquals(0, block.freeCount());
    }

    @Test
    void findsTheOrdinalAnAttachmentHolds() {
        Block block = Block.empty(CIDR);
        block.allocate(7, alloc("x"));
        assertEquals(7, block.ordinalHeldBy("x", "eth0").getAsInt());
        assertTrue(block.ordinalHeldBy("x", "eth1").isEmpty());
        assertTrue(block.ordinalHeldBy("y", "eth0").isEmpty());
    }

    @Test
    void refusesDoubleAllocation() {
        Block block = Block.empty(CIDR);
        block.allocate(4, alloc("a"));
        assertThrows(IllegalStateException.class, () -> block.allocate(4, alloc("b")));
        assertEquals("a", block.allocationAt(4).orElseThrow().handle());
    }

    @Test
    void refusesBlocksLargerThan4096Addresses() {
        assertThrows(
                IllegalArgumentException.class, () -> Block.empty(Cidr.parse("198.18.0.0/19")));
        assertEquals(4096, Block.empty(Cidr.parse("198.18.0.0/20")).capacity());
    }

    @Test
    void survivesJsonRoundTrip() throws Exception {
        Block block = Block.empty(Cidr.parse("fd00:198::/122"));
        block.claimAffinity("node-a");
        block.allocate(0, alloc("a"));
        block.allocate(1, alloc("b"));
        block.release(0);
        ObjectMapper mapper = new ObjectMapper();
        Block back = mapper.readValue(mapper.writeValueAsString(block), Block.class);
        assertEquals(block.freeOrder(), back.freeOrder());
        assertEquals(block.allocations(), back.allocations());
        assertEquals("node-a", back.affinity());
    }

    /**
     * Seeded random allocate/release sequences: the invariants hold after every step, no address
     * is ever held twice, and replaying the recorded steps on a fresh block gives the same state.
     */
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 42, 1234, 99_999})
    void randomSequencesKeepTheInvariants(long seed) {
        Random random = new Random(seed);
        Cidr cidr = random.nextBoolean() ? CIDR : Cidr.parse("fd00:198::40/123");
        Block block = Block.empty(cidr);
        Map<String, Integer> held = new HashMap<>();
        List<Object[]> steps = new ArrayList<>();
        for (int step = 0; step < 2_000; step++) {
            boolean allocate =
                    held.isEmpty() || (random.nextInt(100) < 55 && block.freeCount() > 0);
            if (allocate) {
                String handle = "h" + step;
                int ordinal = block.nextFreeOrdinal().getAsInt();
                assertTrue(
                        !held.containsValue(ordinal),
                        "seed " + seed + ": ordinal " + ordinal + " handed out twice");
                block.allocate(ordinal, alloc(handle));
                held.put(handle, ordinal);
                steps.add(new Object[] {"a", ordinal, handle});
            } else {
                String victim = new ArrayList<>(held.keySet()).get(random.nextInt(held.size()));
                int ordinal = held.remove(victim);
                block.release(ordinal);
                steps.add(new Object[] {"r", ordinal, victim});
            }
            block.validate();
            assertEquals(
                    block.capacity() - held.size(),
                    block.freeCount(),
                    "seed " + seed + " step " + step);
        }
        Block replayed = Block.empty(cidr);
        for (Object[] s : steps) {
            if (s[0].equals("a")) {
                replayed.allocate((Integer) s[1], alloc((String) s[2]));
            } else {
                replayed.release((Integer) s[1]);
            }
        }
        assertEquals(block.freeOrder(), replayed.freeOrder(), "seed " + seed);
        assertEquals(block.allocations(), replayed.allocations(), "seed " + seed);
    }

    @Test
    void reservedAddressesAreNeverAllocatedAndSurviveASnapshot() throws Exception {
        Block block = Block.empty(Cidr.parse("198.18.0.0/29"));
        block.reserve(List.of(Cidr.parse("198.18.0.0/30")));
        block.validate();
        assertEquals(4, block.freeCount());
        assertTrue(block.isEmpty());
        assertTrue(block.isReserved(0) && block.isReserved(3) && !block.isReserved(4));
        assertEquals(4, block.nextFreeOrdinal().getAsInt());
        block.allocate(4, alloc("h1"));
        assertEquals(1, block.allocatedCount());

        ObjectMapper json = new ObjectMapper();
        Block restored = json.readValue(json.writeValueAsString(block), Block.class);
        assertEquals(block.reserved(), restored.reserved());
        assertEquals(block.freeOrder(), restored.freeOrder());

        // A new reservation replaces the old: its addresses go back to the free queue's tail.
        block.reserve(List.of(Cidr.parse("198.18.0.7/32")));
        block.validate();
        assertEquals(List.of(5, 6, 0, 1, 2, 3), block.freeOrder());
    }

    @Test
    void theNextAllowedFreeOrdinalKeepsTheReuseOrder() {
        Block block = Block.empty(Cidr.parse("198.19.64.0/29"));
        RangeSet subnet =
                RangeSet.of(
                        new AddressRange(Cidr.parse("198.19.64.0/29"), null, null, "198.19.64.1"));
        java.util.function.IntPredicate allowed = subnet.allowedOrdinals(block.cidr());
        assertEquals(
                2,
                block.nextFreeOrdinal(allowed).getAsInt(),
                "not the network address, not the gateway");
        block.allocate(2, alloc("h1"));
        block.allocate(3, alloc("h2"));
        block.release(2);
        assertEquals(
                4, block.nextFreeOrdinal(allowed).getAsInt(), "the released address goes last");
        for (int ordinal : List.of(4, 5, 6)) {
            block.allocate(ordinal, alloc("h" + ordinal));
        }
        assertEquals(2, block.nextFreeOrdinal(allowed).getAsInt());
        block.allocate(2, alloc("h1"));
        assertTrue(
                block.nextFreeOrdinal(allowed).isEmpty(),
                "only the network, gateway and broadcast are free");
        assertEquals(3, block.freeCount());
        assertEquals(0, block.nextFreeOrdinal().getAsInt(), "a routed pod may take them");
    }
}
