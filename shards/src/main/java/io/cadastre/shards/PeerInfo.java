package io.cadastre.shards;

/**
 * What other hosts need to reach the pods of one node, as its agent publishes it on the node's
 * entity ({@link NodeEntity.PublishPeer}, persisted): so that every agent can route to the node's
 * blocks and borrowed addresses, also after every member restarted while this node's agent stays
 * down (its pods still run). Withdrawn only when an operator removes the node; a node whose blocks
 * are all released simply has nothing left to route to.
 *
 * @param node the node's name
 * @param mode the routing mode its agent runs ({@code direct}, {@code vxlan}, {@code cross-subnet})
 * @param device the underlay interface, e.g. {@code eth0}; null when the host has none (one host)
 * @param ipv4 the underlay's IPv4 address with its prefix length, e.g. {@code 198.19.255.11/24}; null if none
 * @param ipv6 the underlay's IPv6 address with its prefix length, e.g. {@code fd00:19:255::11/64}; null if none
 * @param vtepMac the node's VTEP MAC (its VXLAN devices' address), lower-case colon notation,
 *     derived from the node name: unicast, locally administered
 * @param tunnelIpv4 the node's IPv4 tunnel address (an address of its own blocks, assigned through
 *     the IPAM to the node's reserved attachment), or null while it has none
 * @param tunnelIpv6 likewise for IPv6
 * @param mtu the underlay's MTU in bytes, 0 if unknown
 */
public record PeerInfo(
        String node,
        String mode,
        String device,
        String ipv4,
        String ipv6,
        String vtepMac,
        String tunnelIpv4,
        String tunnelIpv6,
        int mtu)
        implements CborSerializable {}
