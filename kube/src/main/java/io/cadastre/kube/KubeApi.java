package io.cadastre.kube;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This agent's view of the Kubernetes API: one fabric8 client and the informers (list, then watch,
 * kept in a local cache) of what the agent reads on every ADD — its own Node, every Namespace,
 * the pods bound to its node — plus bounded one-off calls.
 *
 * <p>The API server is never on the path of an ADD that the netconf alone can serve: readers look
 * in the caches first, and a call ({@link #pod}, {@link #namespace}, {@link #node}, {@link #pods})
 * gives up after {@code requestTimeout} and fails its stage. Informers that lose the API retry
 * for ever (their caches keep the last state meanwhile); {@link #podsSynced()} tells whether the
 * pod cache may be believed about an absence.
 *
 * <p>Credentials: fabric8's default configuration — the pod's service account token and CA in a
 * pod, else {@code KUBECONFIG} or {@code ~/.kube/config}. What the agent reads is untrusted input
 * (SECURITY.md): readers check every value they use.
 *
 * <p>Threads: informer callbacks run on fabric8's threads; blocking calls run on a small pool of
 * daemon threads owned here. {@link #close()} stops the informers, the pool and the client.
 */
public final class KubeApi implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KubeApi.class);

    private final KubernetesClient client;
    private final String node;
    private final String namespace;
    private final Duration requestTimeout;
    private final ExecutorService calls;
    private final boolean serverSelectsPods;
    private volatile SharedIndexInformer<Node> ownNode;
    private volatile SharedIndexInformer<Namespace> namespaces;
    private volatile SharedIndexInformer<Pod> pods;

    private KubeApi(
            KubernetesClient client,
            String node,
            String namespace,
            Duration requestTimeout,
            boolean serverSelectsPods) {
        this.client = client;
        this.serverSelectsPods = serverSelectsPods;
        this.node = node;
        this.namespace =
                namespace == null || namespace.isEmpty() ? client.getNamespace() : namespace;
        this.requestTimeout = requestTimeout;
        AtomicInteger n = new AtomicInteger();
        this.calls =
                Executors.newCachedThreadPool(
                        r -> {
                            Thread t = new Thread(r, "cadastre-kube-" + n.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
    }

    /**
     * The production client: fabric8's default configuration (service account in a pod, else the
     * kubeconfig), each request bounded by the settings' request timeout.
     */
    public static KubeApi connect(KubeSettings settings) {
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE, settings.requestTimeout().toMillis());
        Config config =
                new ConfigBuilder(Config.autoConfigure(null))
                        .withRequestTimeout(timeoutMs)
                        .withConnectionTimeout(timeoutMs)
                        .build();
        return new KubeApi(
                new KubernetesClientBuilder().withConfig(config).build(),
                settings.nodeName(),
                settings.namespace(),
                settings.requestTimeout(),
                true);
    }

    /**
     * Over a client made elsewhere (tests: the mock API server's); {@link #close()} closes it.
     *
     * @param namespace the agents' namespace; empty for the client's
     * @param serverSelectsPods whether the server can select pods by {@code spec.nodeName} (an API
     *     server can; fabric8's mock server cannot, and then the pod cache holds every pod, which
     *     readers tolerate: they check the pod's node themselves)
     */
    public static KubeApi over(
            KubernetesClient client,
            String node,
            String namespace,
            Duration requestTimeout,
            boolean serverSelectsPods) {
        return new KubeApi(client, node, namespace, requestTimeout, serverSelectsPods);
    }

    /** @return this host's Node name */
    public String nodeName() {
        return node;
    }

    /** @return the agents' namespace */
    public String namespace() {
        return namespace;
    }

    /** @return the most one call may take */
    public Duration requestTimeout() {
        return requestTimeout;
    }

    /**
     * Starts the informers of this node's Node, the Namespaces and the pods bound to this node;
     * returns at once (they list and watch in the background, retrying while the API is away).
     *
     * @param onOwnNode told of this Node whenever it is listed, added or changed (fabric8's thread)
     */
    public synchronized void start(Consumer<Node> onOwnNode) {
        if (ownNode != null) {
            return;
        }
        ownNode =
                started(
                        client.nodes().withName(node).runnableInformer(0),
                        "node " + node,
                        new ResourceEventHandler<>() {
                            @Override
                            public void onAdd(Node obj) {
                                onOwnNode.accept(obj);
                            }

                            @Override
                            public void onUpdate(Node oldObj, Node newObj) {
                                onOwnNode.accept(newObj);
                            }

                            @Override
                            public void onDelete(Node obj, boolean deletedFinalStateUnknown) {
                                // The Node's release is the cluster's (DeletedNodeReleaser); the
                                // labels stay as they were.
                            }
                        });
        namespaces = started(client.namespaces().runnableInformer(0), "namespaces", null);
        // spec.nodeName: the API server sends only this node's pods (the kubelet's own selector).
        pods =
                started(
                        serverSelectsPods
                                ? client.pods()
                                        .inAnyNamespace()
                                        .withField("spec.nodeName", node)
                                        .runnableInformer(0)
                                : client.pods().inAnyNamespace().runnableInformer(0),
                        "pods of node " + node,
                        null);
    }

    /**
     * An informer of every Node (for the cluster's {@link DeletedNodeReleaser}), started; close it
     * when done.
     */
    public SharedIndexInformer<Node> informAllNodes() {
        return started(client.nodes().runnableInformer(0), "all nodes", null);
    }

    /**
     * Informers of what NetworkPolicy enforcement reads ({@link NetworkPolicyEnforcer}): every
     * NetworkPolicy and every pod of every node, started here, and the Namespace informer of {@link
     * #start}, which must have run. {@code onChange} runs on fabric8's thread after each event, and
     * once each new informer has listed; close them when done.
     *
     * @param podChanged whether an update of a pod matters (its old and new versions)
     */
    public PolicyInformers informPolicyInputs(
            Runnable onChange, java.util.function.BiPredicate<Pod, Pod> podChanged) {
        var policies =
                started(
                        client.network()
                                .v1()
                                .networkPolicies()
                                .inAnyNamespace()
                                .runnableInformer(0),
                        "network policies",
                        changes(onChange, (a, b) -> true),
                        onChange);
        var allPods =
                started(
                        client.pods().inAnyNamespace().runnableInformer(0),
                        "all pods",
                        changes(onChange, podChanged),
                        onChange);
        SharedIndexInformer<Namespace> allNamespaces = namespaces;
        if (allNamespaces == null) {
            throw new IllegalStateException("start() opens the Namespace informer first");
        }
        // The one Namespace informer of start(), not a second list and watch of the same objects.
        allNamespaces.addEventHandler(changes(onChange, (a, b) -> true));
        return new PolicyInformers(policies, allPods, allNamespaces);
    }

    /**
     * The caches NetworkPolicy enforcement reads.
     *
     * @param policies every NetworkPolicy
     * @param pods every pod
     * @param namespaces every Namespace
     */
    public record PolicyInformers(
            SharedIndexInformer<NetworkPolicy> policies,
            SharedIndexInformer<Pod> pods,
            SharedIndexInformer<Namespace> namespaces)
            implements AutoCloseable {
        /** @return whether every cache has listed once (and may be believed about an absence) */
        public boolean synced() {
            return policies.hasSynced() && pods.hasSynced() && namespaces.hasSynced();
        }

        /** Stops the informers opened for policy; the Namespace informer is the agent's. */
        @Override
        public void close() {
            policies.stop();
            pods.stop();
        }
    }

    private static <T> ResourceEventHandler<T> changes(
            Runnable onChange, java.util.function.BiPredicate<T, T> changed) {
        return new ResourceEventHandler<>() {
            @Override
            public void onAdd(T obj) {
                onChange.run();
            }

            @Override
            public void onUpdate(T oldObj, T newObj) {
                if (changed.test(oldObj, newObj)) {
                    onChange.run();
                }
            }

            @Override
            public void onDelete(T obj, boolean deletedFinalStateUnknown) {
                onChange.run();
            }
        };
    }

    private <T extends HasMetadata> SharedIndexInformer<T> started(
            SharedIndexInformer<T> informer, String what, ResourceEventHandler<T> handler) {
        return started(informer, what, handler, () -> {});
    }

    private <T extends HasMetadata> SharedIndexInformer<T> started(
            SharedIndexInformer<T> informer,
            String what,
            ResourceEventHandler<T> handler,
            Runnable onSynced) {
        if (handler != null) {
            informer.addEventHandler(handler);
        }
        // Keep trying while the API is away: the cache keeps what it had, and nothing reads an
        // unsynced cache as an absence.
        informer.exceptionHandler(
                (started, failure) -> {
                    LOG.warn(
                            "Kubernetes informer of {} failed ({}); trying again",
                            what,
                            failure.toString());
                    return true;
                });
        informer.start()
                .whenComplete(
                        (v, e) -> {
                            if (e == null) {
                                LOG.info("Kubernetes informer of {} synced", what);
                                onSynced.run();
                            }
                        });
        return informer;
    }

    /** @return the pod as the node's pod cache holds it (it may be stale or missing) */
    public Optional<Pod> cachedPod(String podNamespace, String podName) {
        SharedIndexInformer<Pod> informer = pods;
        return informer == null
                ? Optional.empty()
                : Optional.ofNullable(informer.getStore().getByKey(podNamespace + "/" + podName));
    }

    /** @return the namespace as the cache holds it (it may be stale or missing) */
    public Optional<Namespace> cachedNamespace(String name) {
        SharedIndexInformer<Namespace> informer = namespaces;
        return informer == null
                ? Optional.empty()
                : Optional.ofNullable(informer.getStore().getByKey(name));
    }

    /**
     * @return whether the pod cache has listed once and is watching now: only then may an
     *     absence from it be believed (and then still checked with {@link #pod})
     */
    public boolean podsSynced() {
        SharedIndexInformer<Pod> informer = pods;
        return informer != null && informer.hasSynced() && informer.isWatching();
    }

    /** GET one pod; empty when it does not exist; fails when the API does not answer within the timeout. */
    public CompletionStage<Optional<Pod>> pod(String podNamespace, String podName) {
        return call(
                () ->
                        Optional.ofNullable(
                                client.pods().inNamespace(podNamespace).withName(podName).get()));
    }

    /** GET one namespace; empty when it does not exist; fails as {@link #pod}. */
    public CompletionStage<Optional<Namespace>> namespace(String name) {
        return call(() -> Optional.ofNullable(client.namespaces().withName(name).get()));
    }

    /** GET one Node; empty when it does not exist; fails as {@link #pod}. */
    public CompletionStage<Optional<Node>> node(String name) {
        return call(() -> Optional.ofNullable(client.nodes().withName(name).get()));
    }

    /** LIST the pods of the agents' namespace that match the label selector; fails as {@link #pod}. */
    public CompletionStage<List<Pod>> pods(String labelSelector) {
        return call(
                () ->
                        client.pods()
                                .inNamespace(namespace)
                                .withLabelSelector(labelSelector)
                                .list()
                                .getItems());
    }

    private <T> CompletionStage<T> call(Supplier<T> request) {
        try {
            return CompletableFuture.supplyAsync(request, calls)
                    .orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) { // the pool refuses work once closed
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public synchronized void close() {
        for (SharedIndexInformer<?> informer :
                new SharedIndexInformer<?>[] {ownNode, namespaces, pods}) {
            if (informer != null) {
                informer.stop();
            }
        }
        calls.shutdownNow();
        client.close();
    }
}
