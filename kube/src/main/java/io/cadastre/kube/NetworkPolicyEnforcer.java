package io.cadastre.kube;

import io.cadastre.dataplane.DataplaneException;
import io.cadastre.dataplane.HostPolicy;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.PolicyRules;
import java.time.Duration;
import java.util.Optional;
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
 * <p>What it cannot do: a pod's addresses come from its {@code status.podIPs}, which kubelet
 * writes after the sandbox's ADD has answered; until then a new pod's traffic is not filtered, and
 * peers do not yet see its addresses (README, "Network policy").
 */
public final class NetworkPolicyEnforcer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NetworkPolicyEnforcer.class);

    private final NetworkPolicyResolver resolver;
    private final HostPolicy host;
    private final Duration settle;
    private final ScheduledExecutorService thread;
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private volatile KubeApi.PolicyInformers informers;
    private volatile PolicyRules written;

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

    /** @return the rules last written, or empty before the first write */
    public Optional<PolicyRules> written() {
        return Optional.ofNullable(written);
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
            return;
        }
        PolicyRules rules =
                resolver.resolve(
                        caches.policies().getStore().list(),
                        caches.pods().getStore().list(),
                        caches.namespaces().getStore().list());
        try {
            Optional<HostRouting.Change> change = host.reconcile(rules);
            written = rules;
            change.ifPresent(
                    c -> LOG.info("network policy: {} ({} pods isolated)", c, rules.pods().size()));
        } catch (DataplaneException | RuntimeException e) {
            LOG.warn("network policy: the table was not written ({}); trying again", e.toString());
            changed();
        }
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
