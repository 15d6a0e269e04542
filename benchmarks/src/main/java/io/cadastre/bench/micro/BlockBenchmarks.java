package io.cadastre.bench.micro;

import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Block;
import io.cadastre.ipam.IpFamily;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The block's share of one ADD and one DEL, and of a snapshot: the {@link Block} calls that
 * {@code BlockEntity}'s command and event handlers make, without persistence or messaging (the
 * affinity check, a field comparison, is left out). Each benchmark is parameterised by how many
 * of the block's 64 addresses are held by other attachments; ADD and DEL also by address family,
 * which a copy never looks at.
 *
 * <p>ADD and DEL each undo their change inside the measured operation (one {@link Block#release}
 * or {@link Block#allocate} by ordinal) so that every invocation sees the same fill.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class BlockBenchmarks {
    /** A block with {@code others} addresses held by other attachments, and one attachment that holds none. */
    @State(Scope.Thread)
    public static class Free {
        @Param({"V4", "V6"})
        public IpFamily family;

        @Param({"0", "63"})
        public int others;

        Block block;
        Allocation attachment;

        @Setup
        public void fill() {
            block = Fixtures.blockHolding(family, others);
            attachment = Fixtures.attachment(Fixtures.BLOCK_CAPACITY);
        }
    }

    /** As {@link Free}, and the attachment holds one more address. */
    @State(Scope.Thread)
    public static class Held extends Free {
        int ordinal;

        // Not annotated: JMH calls Free's @Setup, which dispatches here, so the fill comes first.
        @Override
        public void fill() {
            super.fill();
            ordinal = block.nextFreeOrdinal().getAsInt();
            block.allocate(ordinal, attachment);
        }
    }

    /** A block to snapshot: family does not matter to a copy, only the fill does. */
    @State(Scope.Thread)
    public static class Snapshot {
        @Param({"0", "63"})
        public int held;

        Block block;

        @Setup
        public void fill() {
            block = Fixtures.blockHolding(IpFamily.V4, held);
        }
    }

    /** @return the address assigned: ADD's auto-assign (idempotency scan, head of the free queue, event applied) */
    @Benchmark
    public String autoAssign(Free s) {
        Block block = s.block;
        OptionalInt held = block.ordinalHeldBy(s.attachment.handle(), s.attachment.ifname());
        if (held.isPresent()) {
            return block.addressAt(held.getAsInt());
        }
        String address = block.addressAt(block.nextFreeOrdinal().getAsInt());
        // AddressAssigned's handler works from the address the event carries, not the ordinal.
        int ordinal = block.ordinalOf(address);
        block.allocate(ordinal, s.attachment);
        block.release(ordinal);
        return address;
    }

    /** @return the addresses released: DEL's release by handle (scan of the allocations, event applied) */
    @Benchmark
    public List<String> releaseByHandle(Held s) {
        Block block = s.block;
        List<String> addresses = new ArrayList<>();
        block.allocations()
                .forEach(
                        (ordinal, allocation) -> {
                            if (allocation.isFor(s.attachment.handle(), s.attachment.ifname())) {
                                addresses.add(block.addressAt(ordinal));
                            }
                        });
        addresses.forEach(address -> block.release(block.ordinalOf(address)));
        block.allocate(s.ordinal, s.attachment);
        return addresses;
    }

    /** @return an independent copy of the block, as the snapshot adapter takes on every snapshot */
    @Benchmark
    public Block copy(Snapshot s) {
        return s.block.copy();
    }
}
