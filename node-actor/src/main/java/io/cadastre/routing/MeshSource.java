package io.cadastre.routing;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.MeshHints;
import io.cadastre.shards.NodeEntity.NodeView;
import io.cadastre.shards.PeerInfo;
import io.cadastre.shards.PoolEntity.PoolView;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Everything the {@link MeshRouter} reads from and tells the cluster: the entities' facts, this
 * node's peer and tunnel attachment, and the hints. The agent's implementation is
 * {@link ClusterMeshSource}; the router's tests use a fake. Every stage may fail (an entity that
 * does not answer); the router keeps what it knew.
 */
public interface MeshSource {
    /** @return the names of the cluster's pools */
    CompletionStage<List<String>> poolNames();

    CompletionStage<PoolView> pool(String name);

    CompletionStage<NodeView> node(String name);

    CompletionStage<BlockView> block(Cidr block);

    /** @return the nodes with an agent in the cluster now (reachable or not, until downed) */
    Set<String> members();

    /** Persists this node's peer on its entity. */
    CompletionStage<Done> publishPeer(PeerInfo peer);

    /**
     * Assigns (or finds) this node's tunnel addresses: the reserved attachment
     * {@link TunnelAttachment}, one address per family of the node's default pools, through the
     * IPAM, so that no pod can ever be given one.
     */
    CompletionStage<AttachmentRecord> assignTunnel();

    /** Tells every agent that this node's routing facts changed. */
    void nodeChanged(String node);

    /** Subscribes to every agent's hints. */
    void subscribe(ActorRef<MeshHints.Hint> subscriber);
}
