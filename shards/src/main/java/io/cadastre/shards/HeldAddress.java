package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.IpFamily;

/**
 * One address an attachment holds, and where it came from.
 *
 * @param address canonical literal address ({@code 198.18.0.5}, {@code fd00:198::5})
 * @param pool the pool's name
 * @param block the block that allocated it
 */
public record HeldAddress(String address, String pool, Cidr block) implements CborSerializable {
    public IpFamily family() {
        return IpAddresses.familyOf(address);
    }
}
