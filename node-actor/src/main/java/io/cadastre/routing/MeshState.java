package io.cadastre.routing;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.PeerInfo;
import java.util.List;
import java.util.Map;

/**
 * What the cluster's entities say about where pods live, as one agent last read it: the pools'
 * claims (the truth for affinity) and, per node, its peer, whether an operator removed it, and the
 * addresses its attachments hold (with the blocks they came from, which tells borrowed ones).
 *
 * @param claims block → its pool and the node the pool gave it to
 * @param nodes node name → its facts
 * @param pools pool name → its CIDR, every defined pool (enabled or not: a disabled pool's pods
 *     keep their addresses)
 */
public record MeshState(
        Map<Cidr, Claim> claims, Map<String, NodeFacts> nodes, Map<String, Cidr> pools) {
    public MeshState {
        claims = Map.copyOf(claims);
        nodes = Map.copyOf(nodes);
        pools = Map.copyOf(pools);
    }

    /** Claims and nodes, no pool known (no outgoing NAT). */
    public MeshState(Map<Cidr, Claim> claims, Map<String, NodeFacts> nodes) {
        this(claims, nodes, Map.of());
    }

    public static final MeshState EMPTY = new MeshState(Map.of(), Map.of());

    /** One claimed block: its pool and the node it is affine to. */
    public record Claim(String pool, String node) {}

    /**
     * @param peer what the node's agent published, or null (never published, or runs mode none)
     * @param removed whether an operator removed the node (its peer is withdrawn)
     * @param addresses every address the node's attachments hold
     */
    public record NodeFacts(PeerInfo peer, boolean removed, List<HeldAddress> addresses) {
        public NodeFacts {
            addresses = List.copyOf(addresses);
        }
    }
}
