package io.cadastre.node;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.IpamException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;

/**
 * {@link Ipam} in memory for the node agent's tests, so that they need no cluster: one node, one
 * IPv4 pool of one /24 block handed out in order, every stage completed at once. A requested
 * address outside the block is refused as {@code ADDRESS_NOT_IN_POOL}; GC releases the records of
 * the network not kept, as {@code ShardedIpam} does for a node without orphans.
 */
final class FakeIpam implements Ipam {
    private final String node;
    private final Cidr block;
    private final String pool;
    private final AtomicInteger next = new AtomicInteger(1);
    private final Map<String, AttachmentRecord> records = new ConcurrentHashMap<>();

    /** key → the addresses {@link #forget} took from a record, for {@link #free} to answer. */
    private final Map<String, List<String>> released = new ConcurrentHashMap<>();

    /** @param block a /24 in CIDR notation, e.g. {@code 198.18.7.0/24} */
    FakeIpam(String node, String pool, String block) {
        this.node = node;
        this.pool = pool;
        this.block = Cidr.parse(block);
    }

    @Override
    public String node() {
        return node;
    }

    @Override
    public Map<String, String> labels() {
        return Map.of();
    }

    @Override
    public Optional<PoolSpec> poolSpec(String name) {
        return Optional.empty();
    }

    @Override
    public CompletionStage<Done> registerNode() {
        return CompletableFuture.completedFuture(Done.getInstance());
    }

    @Override
    public CompletionStage<Done> updateLabels(Map<String, String> newLabels) {
        return CompletableFuture.completedFuture(Done.getInstance());
    }

    @Override
    public CompletionStage<AttachmentRecord> assign(AssignRequest request) {
        return assignOrFind(request).thenApply(Assignment::record);
    }

    @Override
    public CompletionStage<Assignment> assignOrFind(AssignRequest request) {
        String key = AttachmentRecord.key(request.handle(), request.ifname());
        AttachmentRecord known = records.get(key);
        if (known != null) {
            return CompletableFuture.completedFuture(new Assignment(known, false));
        }
        String address;
        if (request.requestedIps().isEmpty()) {
            address = block.addressAt(next.getAndIncrement());
        } else {
            address = request.requestedIps().get(0);
            if (!block.contains(address)) {
                return CompletableFuture.failedFuture(
                        new IpamException(
                                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                                address + " is in no pool this node may use"));
            }
        }
        AttachmentRecord record =
                new AttachmentRecord(
                        request.handle(),
                        request.ifname(),
                        request.network(),
                        request.containerId(),
                        request.netnsPath(),
                        request.podNamespace(),
                        request.podName(),
                        List.of(new HeldAddress(address, pool, block)),
                        System.currentTimeMillis());
        records.put(key, record);
        return CompletableFuture.completedFuture(new Assignment(record, true));
    }

    @Override
    public CompletionStage<Optional<AttachmentRecord>> lookup(String handle, String ifname) {
        return CompletableFuture.completedFuture(
                Optional.ofNullable(records.get(AttachmentRecord.key(handle, ifname))));
    }

    @Override
    public CompletionStage<List<String>> release(String handle, String ifname) {
        return forget(handle, ifname).thenCompose(forgotten -> free(handle, ifname, forgotten));
    }

    /** Forgets the record; the fake's addresses are never handed out again, so free has nothing to do. */
    @Override
    public CompletionStage<Forgotten> forget(String handle, String ifname) {
        AttachmentRecord gone = records.remove(AttachmentRecord.key(handle, ifname));
        released.put(
                AttachmentRecord.key(handle, ifname),
                gone == null
                        ? List.of()
                        : gone.addresses().stream().map(HeldAddress::address).toList());
        return CompletableFuture.completedFuture(
                gone == null
                        ? new Forgotten(List.of(), false)
                        : new Forgotten(List.of(block), true));
    }

    @Override
    public CompletionStage<List<String>> free(String handle, String ifname, Forgotten forgotten) {
        List<String> addresses = released.remove(AttachmentRecord.key(handle, ifname));
        return CompletableFuture.completedFuture(addresses == null ? List.of() : addresses);
    }

    @Override
    public CompletionStage<List<AttachmentRecord>> attachments() {
        return CompletableFuture.completedFuture(List.copyOf(records.values()));
    }

    @Override
    public CompletionStage<List<String>> collectGarbage(String network, Set<String> keep) {
        List<String> releasedKeys = new ArrayList<>();
        for (AttachmentRecord r : List.copyOf(records.values())) {
            if (r.network().equals(network) && !keep.contains(r.key())) {
                records.remove(r.key());
                releasedKeys.add(r.key());
            }
        }
        return CompletableFuture.completedFuture(releasedKeys);
    }

    @Override
    public CompletionStage<Optional<String>> unavailability(List<String> poolNames) {
        return CompletableFuture.completedFuture(Optional.empty());
    }
}
