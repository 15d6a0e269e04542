package io.cadastre.dataplane;

import io.cadastre.ipam.IpAddresses;
import java.net.InetAddress;

/**
 * An address on an interface with its prefix length (32 or 128 for the pod addresses Cadastre
 * configures).
 */
public record PodAddress(InetAddress address, int prefixLength) {
    /** @return CIDR notation, e.g. {@code 198.18.0.5/32} or {@code fd00:198::5/128} */
    public String cidr() {
        return IpAddresses.canonical(address.getHostAddress()) + "/" + prefixLength;
    }
}
