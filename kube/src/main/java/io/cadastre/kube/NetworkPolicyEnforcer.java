package io.cadastre.kube;

import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.HostPolicy;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.PolicyRules;
import io.fabric8.kubernetes.api.model.Pod;
import java.net.InetAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Enforces the cluster's NetworkPolicies on this node: informers of every NetworkPolicy, pod and
 * Namespace; after a change, one resolution ({@link NetworkPolicyResolver}) and one write of the
 * host's table ({@link HostPolicy}), on a thread of its own.
 *
 * <p>Timing: a burst of events (a Deployment's pods starting, a namespace relabelled) is one pass,
 * {@code settle} after the first of them; a pass also runs every {@code resync}, which puts back a
 * table someone changed by hand. A pass that fails to write is tried again after {@code settle}.
 * Nothing is written until every informer has listed once: a half-listed cluster would isolate
 * pods without their rules' peers, so until then the table stays as it was (at start: none, or
 * what the previous run left, which the first pass replaces).
 *
 * <p>New pods: a pod's addresses reach the API ({@code status.podIPs}) only after its sandbox's
 * ADD has answered, but the API reference asks that a new pod a policy selects be isolated before
 * it starts. So the ADD tells {@link #podWired} the addresses it gave; for a pod some policy
 * selects, the ADD's answer waits until the pod's own chains are in the table ({@link
 * HostPolicy#isolate}: the pod's resolution and a small transaction, on this thread, not a
 * rewrite of every pod's rules). A pod no policy selects costs its ADD nothing. Either way the
 * pass that puts the pod's addresses into other pods' rules (as a peer) and rewrites the table
 * whole follows after {@code settle}. A pod whose object the cache does not hold yet at its ADD
 * (the watch behind) is isolated once it arrives.
 */
public final class NetworkPolicyEnforcer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NetworkPolicyEnforcer.class);

    private final NetworkPolicyResolver resolver;
    private final HostPolicy host;
    private final Duration settle;
    private final ScheduledExecutorService thread;
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private volatile KubeApi.PolicyInformers informers;

    /** {@code namespace/name} → the addresses its ADD gave, until kubelet has reported them. */
    private final Map<String, Wired> wired = new ConcurrentHashMap<>();

    private record Wired(List<InetAddress> addresses, long atNanos) {}

    /** How long an ADD's addresses stand in for a pod the API never shows with addresses. */
    private static final long WIRED_KEPT_NANOS = TimeUnit.MINUTES.toNanos(10);

    private NetworkPolicyEnforcer(String nodeName, HostPolicy host, Duration settle) {
        this.resolver = new NetworkPolicyResolver(nodeName);
        this.host = host;
        this.settle = settle;
        this.thread =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "cadastre-network-policy");
                            t.setDaemon(true);
                            return t;
                        });
    }

    /**
     * Starts the informers and the passes.
     *
     * @param api this agent's view of the API (its informers are closed with the enforcer)
     * @param host the table's writer
     * @param settle how long after a change the pass runs, and after a failed one the next
     * @param resync how often a pass runs without a change
     */
    public static NetworkPolicyEnforcer start(
            KubeApi api, HostPolicy host, Duration settle, Duration resync) {
        NetworkPolicyEnforcer enforcer = new NetworkPolicyEnforcer(api.nodeName(), host, settle);
        enforcer.informers =
                api.informPolicyInputs(enforcer::changed, NetworkPolicyResolver::changesPolicy);
        enforcer.thread.scheduleWithFixedDelay(
                enforcer::changed, resync.toMillis(), resync.toMillis(), TimeUnit.MILLISECONDS);
        return enforcer;
    }

    /**
     * Removes what an earlier run enforced: for an agent that enforces nothing (no API, or
     * enforcement off), at start.
     *
     * @return the change, or empty when there was no table
     * @throws DataplaneException when the kernel refused
     */
    public static Optional<HostRouting.Change> enforceNothing(HostPolicy host)
            throws DataplaneException {
        return host.reconcile(PolicyRules.NONE);
    }

    /**
     * Told by an ADD that wired a pod, before it answers.
     *
     * @param namespace the pod's namespace ({@code K8S_POD_NAMESPACE}), or null outside Kubernetes
     * @param name the pod's name ({@code K8S_POD_NAME}), or null
     * @param addresses the addresses the ADD gave it
     * @return completes once the table isolates the pod, when some policy selects it; at once
     *     otherwise (also when the caches have not listed yet, or a write failed: it is retried)
     */
    public CompletionStage<Void> podWired(
            String namespace, String name, List<InetAddress> addresses) {
        if (namespace == null || name == null || addresses.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        String key = namespace + "/" + name;
        wired.put(key, new Wired(List.copyOf(addresses), System.nanoTime()));
        KubeApi.PolicyInformers caches = informers;
        Pod pod = caches == null ? null : caches.pods().getStore().getByKey(key);
        if (pod == null
                || !caches.synced()
                || !NetworkPolicyResolver.selected(pod, caches.policies().getStore().list())) {
            changed();
            return CompletableFuture.completedFuture(null);
        }
        try {
            return CompletableFuture.runAsync(() -> isolate(key), thread);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return CompletableFuture.completedFuture(null); // closed
        }
    }

    /**
     * The pod's own chains, added to the table as it is; then a pass, {@code settle} later,
     * rewrites the table with everything (the pod's addresses as other pods' peers too).
     */
    private void isolate(String key) {
        KubeApi.PolicyInformers caches = informers;
        try {
            Optional<PolicyRules.PodPolicy> pod =
                    resolver.resolvePod(
                            key,
                            caches.policies().getStore().list(),
                            caches.pods().getStore().list(),
                            caches.namespaces().getStore().list(),
                            unreported());
            if (pod.isPresent()) {
                host.isolate(pod.get()).ifPresent(c -> LOG.info("network policy: {}", c));
            }
        } catch (DataplaneException | RuntimeException e) {
            LOG.warn(
                    "network policy: {} not isolated at its ADD ({}); the next pass does it",
                    key,
                    e.toString());
        }
        changed();
    }

    /** @return the addresses of wired pods whose status does not have them yet, by pod key */
    private Map<String, List<InetAddress>> unreported() {
        Map<String, List<InetAddress>> unreported = new HashMap<>();
        wired.forEach((k, v) -> unreported.put(k, v.addresses()));
        return unreported;
    }

    private void changed() {
        if (scheduled.compareAndSet(false, true)) {
            try {
                thread.schedule(this::pass, settle.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // closed
            }
        }
    }

    private void pass() {
        scheduled.set(false);
        KubeApi.PolicyInformers caches = informers;
        if (caches == null || !caches.synced()) {
            changed(); // again after settle: no event need follow the last cache's listing
            return;
        }
        List<Pod> pods = caches.pods().getStore().list();
        forgetReported(pods);
        PolicyRules rules =
                resolver.resolve(
                        caches.policies().getStore().list(),
                        pods,
                        caches.namespaces().getStore().list(),
                        unreported());
        try {
            Optional<HostRouting.Change> change = host.reconcile(rules);
            change.ifPresent(
                    c -> LOG.info("network policy: {} ({} pods isolated)", c, rules.pods().size()));
        } catch (DataplaneException | RuntimeException e) {
            LOG.warn("network policy: the table was not written ({}); trying again", e.toString());
            changed();
        }
    }

    /** Drops the ADDs' addresses of pods whose status has addresses now, and very old ones. */
    private void forgetReported(List<Pod> pods) {
        if (wired.isEmpty()) {
            return;
        }
        for (Pod p : pods) {
            if (p.getStatus() != null
                    && p.getStatus().getPodIPs() != null
                    && !p.getStatus().getPodIPs().isEmpty()
                    && p.getMetadata() != null) {
                wired.remove(p.getMetadata().getNamespace() + "/" + p.getMetadata().getName());
            }
        }
        long now = System.nanoTime();
        wired.values().removeIf(w -> now - w.atNanos() > WIRED_KEPT_NANOS);
    }

    @Override
    public void close() {
        thread.shutdownNow();
        KubeApi.PolicyInformers caches = informers;
        if (caches != null) {
            caches.close();
        }
    }
}
