package io.cadastre.bench.micro;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.Pool;
import io.cadastre.ipam.PoolSpec;
import java.util.Optional;
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
 * The CIDR arithmetic on the request path, per address family: naming a block's entity (every ask
 * to a block), parsing that name back (every block entity start), and finding the block of a
 * pool that holds an address (an ADD that asks for a specific address).
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class CidrBenchmarks {
    /** A default-sized pool and block of the family, and an address inside the block. */
    @State(Scope.Thread)
    public static class Family {
        @Param({"V4", "V6"})
        public IpFamily family;

        Cidr block;
        String entityId;
        Pool pool;
        String address;

        @Setup
        public void define() {
            block = Fixtures.blockCidr(family);
            entityId = block.entityId();
            pool =
                    Pool.of(
                            new PoolSpec(
                                    "bench",
                                    Fixtures.poolCidr(family),
                                    PoolSpec.defaultBlockPrefix(family),
                                    false,
                                    true,
                                    0));
            address = block.addressAt(13);
        }
    }

    /** @return the block's entity id ({@code 10.244.3.64-26}) */
    @Benchmark
    public String entityId(Family s) {
        return s.block.entityId();
    }

    /** @return the block parsed from its entity id */
    @Benchmark
    public Cidr fromEntityId(Family s) {
        return Cidr.fromEntityId(s.entityId);
    }

    /** @return the pool's block that holds the address ({@link Cidr#contains} then {@link Cidr#subnetContaining}) */
    @Benchmark
    public Optional<Cidr> blockContaining(Family s) {
        return s.pool.blockContaining(s.address);
    }
}
