package io.cadastre.agent;

import io.cadastre.cni.CniBackend;
import io.cadastre.cni.CniBackend.Bandwidth;
import io.cadastre.cni.CniCodes;
import io.cadastre.cni.CniException;
import io.cadastre.dataplane.Dataplane;
import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.PodAddress;
import io.cadastre.dataplane.WiredPod;
import io.cadastre.ipam.AddressRange;
import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import io.cadastre.kube.PodIpamChoice;
import io.cadastre.node.AttachmentId;
import io.cadastre.node.NodeAgent;
import io.cadastre.node.PodRequest;
import io.cadastre.node.Wired;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.IpamException;
import io.cadastre.shards.MemberFence;
import io.cadastre.shards.Replies;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.pattern.StatusReply;

/**
 * The CNI layer's backend over the {@link NodeAgent}: turns validated CNI calls into node agent
 * commands and the outcomes into CNI results or errors.
 *
 * <p>Error mapping (CNI spec 1.1 §Error; Cadastre's own codes in {@link CniCodes}): an IPAM
 * refusal by its reason, in one table ({@link #toCni(IpamException)}); netns missing or no network
 * namespace → 3; a netns that is the host's, or another than the attachment's → 4; any other
 * dataplane failure → 103; the node agent not answering in time → 11; this member refused by its
 * {@link MemberFence} → 11 (STATUS: 50); no address to be handed out (the embedded journal's
 * agent while another node runs one) → ADD and STATUS 50; a malformed IPAM annotation of the pod or its namespace,
 * or a pod's {@code ipAddrs} that differs from the addresses the request asks for → 7, before
 * anything is changed.
 */
public final class NodeAgentCniBackend implements CniBackend {
    private final ActorRef<NodeAgent.Command> nodeAgent;
    private final Scheduler scheduler;
    private final Duration timeout;
    private final Function<String, Optional<PoolSpec>> pools;
    private final MemberFence fence;
    private final Supplier<Optional<String>> addRefusal;
    private final PodIpamChoice annotations;
    private final PodWired podWired;

    /**
     * Told of each pod an ADD wired (the full plugin's, not IPAM-only), before the ADD answers:
     * NetworkPolicy isolates a new pod a policy selects before it starts.
     */
    @FunctionalInterface
    public interface PodWired {
        /** Nothing to tell: no Kubernetes, or no policy enforcement. */
        PodWired NONE = (namespace, name, addresses) -> CompletableFuture.completedFuture(null);

        /**
         * @param namespace {@code K8S_POD_NAMESPACE}, or null
         * @param name {@code K8S_POD_NAME}, or null
         * @param addresses the pod's addresses
         * @return completes when the ADD may answer; never fails
         */
        CompletionStage<Void> wired(
                String namespace, String name, List<java.net.InetAddress> addresses);
    }

    /**
     * @param timeout how long one CNI operation may take end to end (several entity round trips
     *     and the dataplane)
     * @param pools a pool's definition by name, for the prefix lengths of IPAM-only results
     * @param fence says when this member must not serve
     * @param addRefusal why no address may be handed out now (ADD and STATUS then answer code 50,
     *     CNI spec 1.1 §Error: "cannot service ADD requests"), or empty; DEL, CHECK and GC go on
     * @param annotations what the pod's and namespace's annotations choose ({@link PodIpamChoice#NONE}
     *     without Kubernetes); they win over the request's pools per family, and their addresses
     *     over none asked
     * @param podWired told of each wired pod before its ADD answers ({@link PodWired#NONE}: none)
     */
    public NodeAgentCniBackend(
            ActorRef<NodeAgent.Command> nodeAgent,
            Scheduler scheduler,
            Duration timeout,
            Function<String, Optional<PoolSpec>> pools,
            MemberFence fence,
            Supplier<Optional<String>> addRefusal,
            PodIpamChoice annotations,
            PodWired podWired) {
        this.nodeAgent = nodeAgent;
        this.podWired = podWired;
        this.scheduler = scheduler;
        this.timeout = timeout;
        this.pools = pools;
        this.fence = fence;
        this.addRefusal = addRefusal;
        this.annotations = annotations;
    }

    @Override
    public CompletionStage<AddResult> add(AddRequest request) {
        Optional<CniException> refused = addRefused();
        if (refused.isPresent()) {
            return CompletableFuture.failedFuture(refused.get());
        }
        Attachment a = request.attachment();
        AttachmentId id = attachmentId(a);
        AddressRules rules;
        try {
            rules = rules(request);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(
                    new CniException(
                            CniCodes.INVALID_NETWORK_CONFIG,
                            "invalid ipam ranges",
                            e.getMessage()));
        }
        AddressRules addressRules = rules;
        return annotations
                .choose(request.pod().namespace(), request.pod().name())
                .thenCompose(
                        choice -> {
                            AssignRequest ipam =
                                    new AssignRequest(
                                            id.handle(),
                                            id.ifname(),
                                            a.network(),
                                            a.containerId(),
                                            a.netns(),
                                            request.pod().namespace(),
                                            request.pod().name(),
                                            request.pools(),
                                            choice.requestedIps(request.requestedIps()),
                                            addressRules,
                                            choice.poolsByFamily());
                            PodRequest pod =
                                    new PodRequest(
                                            ipam,
                                            a.netns(),
                                            request.ipamOnly(),
                                            request.mtu(),
                                            limits(request.bandwidth()));
                            return this.<Wired>ask(r -> new NodeAgent.Attach(id, pod, r))
                                    .thenCompose(wired -> answer(request, wired));
                        });
    }

    /**
     * @return the dataplane's limits for the netconf's: a burst not given, or given as the
     *     runtimes' placeholder, becomes the dataplane's default ({@link
     *     io.cadastre.dataplane.Bandwidth.Shaping#fromBits})
     */
    static io.cadastre.dataplane.Bandwidth limits(Bandwidth requested) {
        return new io.cadastre.dataplane.Bandwidth(
                requested.ingressRate() > 0
                        ? io.cadastre.dataplane.Bandwidth.Shaping.fromBits(
                                requested.ingressRate(), requested.ingressBurst())
                        : null,
                requested.egressRate() > 0
                        ? io.cadastre.dataplane.Bandwidth.Shaping.fromBits(
                                requested.egressRate(), requested.egressBurst())
                        : null);
    }

    /** The ADD's result, once the pod it wired may start (see {@link PodWired}). */
    private CompletionStage<AddResult> answer(AddRequest request, Wired wired) {
        if (wired.pod() == null) {
            return CompletableFuture.completedFuture(ipamOnlyResult(wired.attachment()));
        }
        List<java.net.InetAddress> addresses =
                wired.pod().addresses().stream().map(PodAddress::address).toList();
        return podWired.wired(request.pod().namespace(), request.pod().name(), addresses)
                .thenApply(ready -> podResult(wired.pod()));
    }

    /**
     * @return which addresses the request may be given: any for the full plugin's routed pods;
     *     for IPAM-only, those the netconf's L2 subnet allows (its ranges, or each pool's own CIDR)
     * @throws IllegalArgumentException for ranges the domain refuses (the CNI layer checked them already)
     */
    static AddressRules rules(AddRequest request) {
        if (!request.ipamOnly()) {
            return AddressRules.ROUTED;
        }
        return AddressRules.onSubnet(
                request.rangeSets().stream()
                        .map(
                                set ->
                                        new RangeSet(
                                                set.stream()
                                                        .map(
                                                                r ->
                                                                        new AddressRange(
                                                                                Cidr.parse(
                                                                                        r.subnet()),
                                                                                r.rangeStart(),
                                                                                r.rangeEnd(),
                                                                                r.gateway()))
                                                        .toList()))
                        .toList());
    }

    /**
     * IPAM-only (CNI spec 1.1 §Delegated plugins): addresses with their pool's prefix, no
     * interfaces (the CNI layer gives an address on a range of the netconf's subnet that subnet's
     * prefix and gateway).
     */
    private AddResult ipamOnlyResult(AttachmentRecord record) {
        List<IpConfig> ips =
                record.addresses().stream()
                        .map(h -> new IpConfig(h.address() + "/" + prefixOf(h), null, null))
                        .toList();
        return new AddResult(List.of(), ips, List.of());
    }

    private int prefixOf(HeldAddress held) {
        return pools.apply(held.pool())
                .map(spec -> spec.cidr().prefixLength())
                .orElse(held.block().prefixLength());
    }

    private static AddResult podResult(WiredPod pod) {
        List<Interface> interfaces =
                List.of(
                        new Interface(pod.hostIfname(), pod.hostMac(), null),
                        new Interface(pod.podIfname(), pod.podMac(), pod.netnsPath()));
        List<IpConfig> ips =
                pod.addresses().stream()
                        .map(
                                address ->
                                        new IpConfig(
                                                address.cidr(),
                                                address.prefixLength() == 32
                                                        ? Dataplane.IPV4_GATEWAY
                                                        : Dataplane.IPV6_GATEWAY,
                                                1))
                        .toList();
        List<Route> routes =
                pod.routes().stream().map(r -> new Route(r.destination(), r.gateway())).toList();
        return new AddResult(interfaces, ips, routes);
    }

    /**
     * The node agent's name for a CNI attachment: the netns dropped, since the handle, the key and
     * the host end follow from (network, container ID, ifname) alone. Built here, on the agent's
     * side, so that the CNI protocol types (cni-bridge) need not know the node agent.
     */
    private static AttachmentId attachmentId(Attachment a) {
        return new AttachmentId(a.network(), a.containerId(), a.ifname());
    }

    @Override
    public CompletionStage<Void> del(Attachment a, boolean ipamOnly) {
        AttachmentId id = attachmentId(a);
        return this.<List<String>>ask(r -> new NodeAgent.Detach(id, ipamOnly, r))
                .thenApply(released -> null);
    }

    @Override
    public CompletionStage<List<String>> check(
            Attachment a, boolean ipamOnly, AddResult prevResult, Bandwidth bandwidth) {
        AttachmentId id = attachmentId(a);
        int mtu = 0;
        return this.<NodeAgent.CheckResult>ask(
                        r ->
                                new NodeAgent.Check(
                                        id, a.netns(), ipamOnly, mtu, limits(bandwidth), r))
                .thenApply(
                        inspection -> {
                            if (inspection.attachment() == null) {
                                throw new CniException(
                                        CniCodes.UNKNOWN_CONTAINER,
                                        "no addresses are allocated for attachment " + id.key());
                            }
                            List<String> differences = new ArrayList<>(inspection.differences());
                            Set<String> held = new TreeSet<>();
                            inspection.attachment().addresses().forEach(h -> held.add(h.address()));
                            Set<String> expected = new TreeSet<>();
                            prevResult
                                    .ips()
                                    .forEach(
                                            ip ->
                                                    expected.add(
                                                            IpAddresses.canonical(
                                                                    ip.address().split("/")[0])));
                            if (!held.equals(expected)) {
                                differences.add(
                                        "IPAM holds "
                                                + held
                                                + " for the attachment, prevResult says "
                                                + expected);
                            }
                            return differences;
                        });
    }

    @Override
    public CompletionStage<Void> gc(String network, Set<AttachmentRef> validAttachments) {
        Set<String> keep =
                validAttachments.stream()
                        .map(v -> new AttachmentId(network, v.containerId(), v.ifname()).key())
                        .collect(Collectors.toSet());
        // Whether the network is IPAM-only is not known to GC; unwiring a link that does not exist
        // is a no-op.
        return this.<List<String>>ask(r -> new NodeAgent.CollectGarbage(network, keep, false, r))
                .thenApply(k -> null);
    }

    @Override
    public CompletionStage<Void> status(List<String> pools) {
        var refusal = fence.refusal();
        if (refusal.isPresent()) {
            return CompletableFuture.failedFuture(
                    new CniException(
                            CniCodes.NOT_AVAILABLE, "this member cannot serve now", refusal.get()));
        }
        Optional<CniException> refused = addRefused();
        if (refused.isPresent()) {
            return CompletableFuture.failedFuture(refused.get());
        }
        return this.<Optional<String>>ask(r -> new NodeAgent.Status(pools, r))
                .thenApply(
                        problem -> {
                            if (problem.isPresent()) {
                                throw new CniException(
                                        CniCodes.NOT_AVAILABLE, "cannot allocate", problem.get());
                            }
                            return null;
                        });
    }

    /** @return code 50 with the reason while no address may be handed out, else empty */
    private Optional<CniException> addRefused() {
        return addRefusal
                .get()
                .map(
                        reason ->
                                new CniException(
                                        CniCodes.NOT_AVAILABLE,
                                        "no address is handed out",
                                        reason));
    }

    private <T> CompletionStage<T> ask(
            Function<ActorRef<StatusReply<T>>, NodeAgent.Command> command) {
        var refusal = fence.refusal();
        if (refusal.isPresent()) {
            return CompletableFuture.failedFuture(
                    new CniException(
                            CniCodes.TRY_AGAIN_LATER,
                            "this member cannot serve now",
                            refusal.get()));
        }
        return Replies.onReplyingThread(
                        AskPattern.<NodeAgent.Command, T>askWithStatus(
                                nodeAgent, command::apply, timeout, scheduler))
                .exceptionally(
                        error -> {
                            if (unwrap(error) instanceof TimeoutException late) {
                                throw new CniException(
                                        CniCodes.TRY_AGAIN_LATER,
                                        "the node agent did not answer in time",
                                        String.valueOf(late.getMessage()));
                            }
                            throw toCni(error);
                        });
    }

    private static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    /**
     * The one mapping of an IPAM refusal's reason to its CNI error code (CNI spec 1.1 §Error
     * codes: 7 invalid network config, 11 try again later; 100+ Cadastre's own, {@link CniCodes});
     * the README's "CNI error codes" lists the same table.
     *
     * <table>
     *   <caption>IpamException.Reason → CNI code</caption>
     *   <tr><th>reason</th><th>code</th><th>why</th></tr>
     *   <tr><td>UNKNOWN_POOL</td><td>7</td><td>the netconf, CNI_ARGS or an annotation names a pool
     *       that is not defined (or none selects the node)</td></tr>
     *   <tr><td>INVALID_REQUEST</td><td>7</td><td>the request is malformed or asks a repeated ADD
     *       for other addresses</td></tr>
     *   <tr><td>POOL_EXHAUSTED</td><td>100</td><td>no pool that may serve the node has an address
     *       left</td></tr>
     *   <tr><td>ADDRESS_TAKEN</td><td>101</td><td>the requested address is held by another
     *       attachment</td></tr>
     *   <tr><td>ADDRESS_NOT_IN_POOL, POOL_DISABLED, NODE_BLOCK_LIMIT</td><td>102</td><td>the requested
     *       address is in no usable pool, in a disabled pool, or in a new block the node may not
     *       claim ({@code maxBlocksPerNode})</td></tr>
     *   <tr><td>AFFINE_TO_OTHER_NODE</td><td>105</td><td>the pool gave the node a block that still
     *       serves another node: retrying does not help until the state is repaired</td></tr>
     *   <tr><td>BLOCK_RELEASING, CONFLICT, UNAVAILABLE</td><td>11</td><td>a release in progress, a
     *       state change in progress, or an entity that did not answer in time (a member fenced or
     *       failing over): the same ADD succeeds later</td></tr>
     * </table>
     *
     * @return the CNI error carrying the refusal's message as details
     */
    static CniException toCni(IpamException refusal) {
        String details = refusal.getMessage();
        return switch (refusal.reason()) {
            case UNKNOWN_POOL ->
                    new CniException(CniCodes.INVALID_NETWORK_CONFIG, "unknown pool", details);
            case INVALID_REQUEST ->
                    new CniException(
                            CniCodes.INVALID_NETWORK_CONFIG, "invalid IPAM request", details);
            case POOL_EXHAUSTED ->
                    new CniException(CniCodes.POOL_EXHAUSTED, "no address left", details);
            case ADDRESS_TAKEN ->
                    new CniException(CniCodes.ADDRESS_TAKEN, "requested address is taken", details);
            case ADDRESS_NOT_IN_POOL, POOL_DISABLED, NODE_BLOCK_LIMIT ->
                    new CniException(
                            CniCodes.ADDRESS_NOT_IN_POOL,
                            "requested address is not available here",
                            details);
            case AFFINE_TO_OTHER_NODE ->
                    new CniException(
                            CniCodes.BLOCK_AFFINITY_CONFLICT,
                            "a block's affinity disagrees between its pool and the block",
                            details);
            case BLOCK_RELEASING, CONFLICT, UNAVAILABLE ->
                    new CniException(CniCodes.TRY_AGAIN_LATER, "IPAM is not available", details);
        };
    }

    /** @return the CNI error for a node agent failure (see the class comment for the mapping) */
    static CniException toCni(Throwable failure) {
        Throwable e = unwrap(failure);
        if (e instanceof CniException cni) {
            return cni;
        }
        if (e instanceof IpamException ipam) {
            return toCni(ipam);
        }
        if (e instanceof DataplaneException dp) {
            return switch (dp.kind()) {
                case NETNS_MISSING ->
                        new CniException(
                                CniCodes.UNKNOWN_CONTAINER,
                                "the network namespace does not exist",
                                dp.getMessage());
                case INVALID_NETNS ->
                        new CniException(
                                CniCodes.INVALID_ENVIRONMENT,
                                "invalid environment variable CNI_NETNS",
                                dp.getMessage());
                case FAILED, WIRED_DIFFERENTLY ->
                        new CniException(
                                CniCodes.DATAPLANE_FAILURE,
                                "configuring the pod's network failed",
                                dp.getMessage());
            };
        }
        if (e instanceof TimeoutException) {
            return new CniException(CniCodes.TRY_AGAIN_LATER, "timed out", e.getMessage());
        }
        return new CniException(
                CniCodes.TRY_AGAIN_LATER, "internal error", String.valueOf(e.getMessage()));
    }
}
