package io.cadastre.shards;

/**
 * What every flow class of a {@link ShardedIpam} starts from: the {@link IpamContext} the flows
 * share, with its client of the entities and its node's name at hand (they are in most asks).
 */
abstract class IpamFlow {
    final IpamContext context;
    final EntityAsks asks;

    /**
     * Where the node's entities live ({@link EntityHomes}): flows publish its blocks as they use
     * them.
     */
    final EntityHomes homes;

    /** This node's name: the {@link NodeEntity}'s id, and the node blocks are claimed for. */
    final String node;

    IpamFlow(IpamContext context) {
        this.context = context;
        this.asks = context.asks;
        this.homes = context.homes;
        this.node = context.node;
    }
}
