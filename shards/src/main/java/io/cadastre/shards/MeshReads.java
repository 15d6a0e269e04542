package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.pattern.StatusReply;

/**
 * The reads (and the one write) the routing layer makes on the entities: the pools' claims, a
 * node's peer and attachments, a block's allocations, and this node's peer. Each read asks the
 * entity afresh (with the agent's ask timeouts, sent again while an entity moves after a crash)
 * and fails with {@link IpamException} UNAVAILABLE when it does not answer. Thread-safe.
 */
public final class MeshReads {
    private final ActorSystem<?> system;
    private final EntityAsks asks;
    private final PoolCatalog catalog;

    public MeshReads(ActorSystem<?> system, AskTimeouts timeouts, PoolCatalog catalog) {
        this.system = system;
        this.asks = new EntityAsks(system, timeouts);
        this.catalog = catalog;
    }

    /** @return the names of the cluster's pools (the catalogue, at most its max age old) */
    public CompletionStage<List<String>> poolNames() {
        return catalog.current().thenApply(c -> List.copyOf(c.pools().keySet()));
    }

    /** @return the pool's claims and releases */
    public CompletionStage<PoolEntity.PoolView> pool(String name) {
        return asks.poolView(name);
    }

    /** @return the node's peer, attachments and removal */
    public CompletionStage<NodeEntity.NodeView> node(String name) {
        return asks.nodeView(name);
    }

    /** @return the block's allocations */
    public CompletionStage<BlockEntity.BlockView> block(Cidr block) {
        return asks.blockView(block);
    }

    /** Persists the peer on its node's entity (nothing when unchanged). */
    public CompletionStage<Done> publishPeer(PeerInfo peer) {
        return asks.askStatus(
                asks.node(peer.node()),
                (ActorRef<StatusReply<Done>> r) -> new NodeEntity.PublishPeer(peer, r));
    }

    /** @return the nodes that have an agent in the cluster now ({@link NodeRoles}), unreachable ones included */
    public Map<String, List<MemberStatus>> members() {
        return NodeRoles.members(system);
    }
}
