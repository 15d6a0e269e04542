package io.cadastre.routing;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity.BlockView;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.MeshHints;
import io.cadastre.shards.MeshReads;
import io.cadastre.shards.NodeEntity.NodeView;
import io.cadastre.shards.PeerInfo;
import io.cadastre.shards.PoolEntity.PoolView;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;

/** The {@link MeshSource} of a running agent: the sharded entities, the agent's IPAM and the cluster's hints. */
public final class ClusterMeshSource implements MeshSource {
    private final MeshReads reads;
    private final Ipam ipam;
    private final MeshHints hints;

    public ClusterMeshSource(MeshReads reads, Ipam ipam, MeshHints hints) {
        this.reads = reads;
        this.ipam = ipam;
        this.hints = hints;
    }

    @Override
    public CompletionStage<List<String>> poolNames() {
        return reads.poolNames();
    }

    @Override
    public CompletionStage<PoolView> pool(String name) {
        return reads.pool(name);
    }

    @Override
    public CompletionStage<NodeView> node(String name) {
        return reads.node(name);
    }

    @Override
    public CompletionStage<BlockView> block(Cidr block) {
        return reads.block(block);
    }

    @Override
    public Set<String> members() {
        return reads.members().keySet();
    }

    @Override
    public CompletionStage<Done> publishPeer(PeerInfo peer) {
        return reads.publishPeer(peer);
    }

    @Override
    public CompletionStage<AttachmentRecord> assignTunnel() {
        return ipam.assign(TunnelAttachment.request(ipam.node()));
    }

    @Override
    public void nodeChanged(String node) {
        hints.nodeChanged(node);
    }

    @Override
    public void subscribe(ActorRef<MeshHints.Hint> subscriber) {
        hints.subscribe(subscriber);
    }
}
