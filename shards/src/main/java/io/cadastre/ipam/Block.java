package io.cadastre.ipam;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.IntPredicate;

/**
 * One CIDR block of a pool: its affinity (the node it serves) and which of its addresses is
 * allocated to which attachment. The block's addresses are numbered by ordinal, 0 being the block's
 * network address; every address is allocatable because pods get /32 and /128 routes.
 *
 * <p>Reuse order: free ordinals form a queue; a released address goes to its tail, and allocation
 * takes the head, so the address free the longest is reused first and a just-released address is
 * not handed straight to the next pod (stale connections, caches).
 *
 * <p>Queries are pure. The mutators ({@link #claimAffinity}, {@link #allocate}, {@link #release})
 * are called only by the entity's event handlers, after the event is persisted (Calico's rule:
 * never mutate the in-memory block before persisting). {@link #validate()} checks the invariants.
 */
@JsonAutoDetect(
        fieldVisibility = Visibility.NONE,
        getterVisibility = Visibility.NONE,
        isGetterVisibility = Visibility.NONE)
public final class Block {
    /** Largest block: 2^12 addresses, as Calico (IPv4 /20, IPv6 /116). */
    public static final int MAX_HOST_BITS = 12;

    private final Cidr cidr;
    private String affinity;
    private final Allocation[] allocations;
    private final LinkedHashSet<Integer> free;

    /** Ordinals in the pool's excluded ranges: neither free nor allocatable. */
    private final TreeSet<Integer> reserved;

    private Block(
            Cidr cidr,
            String affinity,
            Allocation[] allocations,
            LinkedHashSet<Integer> free,
            TreeSet<Integer> reserved) {
        this.cidr = cidr;
        this.affinity = affinity;
        this.allocations = allocations;
        this.free = free;
        this.reserved = reserved;
    }

    /**
     * @return a block with no affinity and every address free, in address order
     * @throws IllegalArgumentException when the block holds more than 2^{@link #MAX_HOST_BITS}
     */
    public static Block empty(Cidr cidr) {
        int capacity = capacityOf(cidr);
        LinkedHashSet<Integer> free = new LinkedHashSet<>();
        for (int i = 0; i < capacity; i++) {
            free.add(i);
        }
        return new Block(cidr, null, new Allocation[capacity], free, new TreeSet<>());
    }

    /** @param reserved {@code null} (a snapshot from before excluded ranges) for none */
    @JsonCreator
    static Block restore(
            @JsonProperty("cidr") Cidr cidr,
            @JsonProperty("affinity") String affinity,
            @JsonProperty("allocations") Map<Integer, Allocation> allocations,
            @JsonProperty("freeOrder") List<Integer> freeOrder,
            @JsonProperty("reserved") List<Integer> reserved) {
        Block block =
                new Block(
                        cidr,
                        affinity,
                        new Allocation[capacityOf(cidr)],
                        new LinkedHashSet<>(freeOrder),
                        reserved == null ? new TreeSet<>() : new TreeSet<>(reserved));
        allocations.forEach((ordinal, allocation) -> block.allocations[ordinal] = allocation);
        block.validate();
        return block;
    }

    /** @return an independent copy, e.g. for a snapshot */
    public Block copy() {
        return new Block(
                cidr,
                affinity,
                allocations.clone(),
                new LinkedHashSet<>(free),
                new TreeSet<>(reserved));
    }

    private static int capacityOf(Cidr cidr) {
        int hostBits = cidr.family().bits() - cidr.prefixLength();
        if (hostBits > MAX_HOST_BITS) {
            throw new IllegalArgumentException(
                    "block " + cidr + " is larger than 2^" + MAX_HOST_BITS + " addresses");
        }
        return 1 << hostBits;
    }

    @JsonProperty("cidr")
    public Cidr cidr() {
        return cidr;
    }

    /** @return the affine node's name, or {@code null} before the block is claimed */
    @JsonProperty("affinity")
    public String affinity() {
        return affinity;
    }

    /** @return allocated ordinals to their allocations, in address order */
    @JsonProperty("allocations")
    public Map<Integer, Allocation> allocations() {
        Map<Integer, Allocation> held = new TreeMap<>();
        for (int i = 0; i < allocations.length; i++) {
            if (allocations[i] != null) {
                held.put(i, allocations[i]);
            }
        }
        return held;
    }

    /** @return the free ordinals, the one to reuse first at the head */
    @JsonProperty("freeOrder")
    public List<Integer> freeOrder() {
        return new ArrayList<>(free);
    }

    /** @return the ordinals in the pool's excluded ranges, in address order */
    @JsonProperty("reserved")
    public List<Integer> reserved() {
        return new ArrayList<>(reserved);
    }

    /** @return whether the ordinal lies in an excluded range of the pool */
    public boolean isReserved(int ordinal) {
        return reserved.contains(ordinal);
    }

    /** @return the number of addresses in the block */
    public int capacity() {
        return allocations.length;
    }

    public int freeCount() {
        return free.size();
    }

    /** @return whether no address is allocated */
    public boolean isEmpty() {
        return free.size() + reserved.size() == allocations.length;
    }

    /** @return how many addresses are allocated */
    public int allocatedCount() {
        return allocations.length - free.size() - reserved.size();
    }

    /** @return the ordinal the attachment already holds, if any (ADD retries are idempotent) */
    public OptionalInt ordinalHeldBy(String handle, String ifname) {
        for (int i = 0; i < allocations.length; i++) {
            if (allocations[i] != null && allocations[i].isFor(handle, ifname)) {
                return OptionalInt.of(i);
            }
        }
        return OptionalInt.empty();
    }

    /** @return the ordinal {@link #allocate} should take next, if any is free */
    public OptionalInt nextFreeOrdinal() {
        Iterator<Integer> head = free.iterator();
        return head.hasNext() ? OptionalInt.of(head.next()) : OptionalInt.empty();
    }

    /**
     * @param allowed which ordinals the caller may be given ({@link RangeSet#allowedOrdinals})
     * @return the allowed free ordinal {@link #allocate} should take next (the one free the longest
     *     among the allowed), if any
     */
    public OptionalInt nextFreeOrdinal(IntPredicate allowed) {
        for (int ordinal : free) {
            if (allowed.test(ordinal)) {
                return OptionalInt.of(ordinal);
            }
        }
        return OptionalInt.empty();
    }

    /** @return the allocation at the ordinal, if allocated */
    public Optional<Allocation> allocationAt(int ordinal) {
        return Optional.ofNullable(allocations[ordinal]);
    }

    /** @return the canonical address of the ordinal */
    public String addressAt(int ordinal) {
        return cidr.addressAt(ordinal);
    }

    /**
     * @return the ordinal of a literal address
     * @throws IllegalArgumentException when it is malformed or outside the block
     */
    public int ordinalOf(String address) {
        return (int) cidr.offsetOf(address);
    }

    /** Records the affinity (event handler only); {@code null} releases it. */
    public void claimAffinity(String node) {
        affinity = node;
    }

    /**
     * Makes the addresses of the ranges (inside this block) unallocatable, replacing the previous
     * reservation, whose addresses go to the free queue's tail (event handler only). An address
     * already allocated stays allocated.
     */
    public void reserve(List<Cidr> ranges) {
        free.addAll(reserved);
        reserved.clear();
        for (int ordinal : ordinalsIn(ranges)) {
            if (allocations[ordinal] == null) {
                free.remove(ordinal);
                reserved.add(ordinal);
            }
        }
    }

    /** @return the ordinals of the ranges (inside this block), in address order */
    public List<Integer> ordinalsIn(List<Cidr> ranges) {
        TreeSet<Integer> ordinals = new TreeSet<>();
        for (Cidr range : ranges) {
            int first = ordinalOf(range.networkAddress());
            int count = range.size().intValueExact();
            for (int ordinal = first; ordinal < first + count; ordinal++) {
                ordinals.add(ordinal);
            }
        }
        return new ArrayList<>(ordinals);
    }

    /**
     * Allocates a free ordinal (event handler only).
     *
     * @throws IllegalStateException when the ordinal is already allocated
     */
    public void allocate(int ordinal, Allocation allocation) {
        if (!free.remove(ordinal)) {
            throw new IllegalStateException(
                    addressAt(ordinal) + " in " + cidr + " is already allocated");
        }
        allocations[ordinal] = allocation;
    }

    /** Frees an ordinal, to be reused last (event handler only); freeing a free one is a no-op. */
    public void release(int ordinal) {
        if (allocations[ordinal] != null) {
            allocations[ordinal] = null;
            free.add(ordinal);
        }
    }

    /**
     * Checks the invariants: every ordinal is exactly one of free, allocated and reserved.
     *
     * @throws IllegalStateException naming the first broken ordinal
     */
    public void validate() {
        int allocated = 0;
        for (int i = 0; i < allocations.length; i++) {
            int states =
                    (free.contains(i) ? 1 : 0)
                            + (allocations[i] != null ? 1 : 0)
                            + (reserved.contains(i) ? 1 : 0);
            if (states != 1) {
                throw new IllegalStateException(
                        "ordinal "
                                + i
                                + " of "
                                + cidr
                                + " is "
                                + (states == 0
                                        ? "neither free, allocated nor reserved"
                                        : "in two of free, allocated and reserved"));
            }
            if (allocations[i] != null) {
                allocated++;
            }
        }
        if (allocated + free.size() + reserved.size() != allocations.length) {
            throw new IllegalStateException(
                    "free list of " + cidr + " holds ordinals outside the block");
        }
    }
}
