package io.cadastre.kube;

import io.cadastre.cni.CniText;
import io.cadastre.ipam.NodeSelector;
import io.cadastre.shards.Ipam;
import io.fabric8.kubernetes.api.model.Node;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node's labels, live from its Node object, for the pools' node selectors: every version of
 * the Node the informer of {@link KubeApi} sees replaces the labels of the node's {@link Ipam}
 * ({@link Ipam#updateLabels}), which records them on the node's entity. Without Kubernetes the
 * labels come from {@code cadastre.node-labels} and never change.
 *
 * <p>Labels come from the API: a key or value that is not a Kubernetes label key or value
 * ({@link NodeSelector#isLabelKey}, {@link NodeSelector#isLabelValue}) is left out, with a warning.
 * Updates are applied in the order seen, one at a time; a recording that fails (the cluster not
 * up yet) is logged, and the agent records its labels again when it registers at start.
 */
public final class NodeLabels {
    private static final Logger LOG = LoggerFactory.getLogger(NodeLabels.class);

    private final Ipam ipam;
    private final CompletableFuture<Map<String, String>> first = new CompletableFuture<>();
    private CompletableFuture<?> tail = CompletableFuture.completedFuture(null);

    public NodeLabels(Ipam ipam) {
        this.ipam = ipam;
    }

    /** Takes in one version of this node's Node object (the informer's thread). */
    public synchronized void onNode(Node node) {
        Map<String, String> labels =
                checked(
                        node.getMetadata() == null ? null : node.getMetadata().getLabels(),
                        node.getMetadata() == null ? "?" : node.getMetadata().getName());
        if (!labels.equals(ipam.labels())) {
            LOG.info("node labels from the Node object: {}", labels);
        }
        tail =
                tail.handle((v, e) -> null)
                        .thenCompose(v -> ipam.updateLabels(labels))
                        .whenComplete(
                                (done, failure) -> {
                                    if (failure != null) {
                                        LOG.info(
                                                "node labels {} not recorded on the node yet ({}); the agent's registration records them",
                                                labels,
                                                failure.toString());
                                    }
                                })
                        .toCompletableFuture();
        first.complete(labels);
    }

    /**
     * @return completes when the Node's labels have been taken in once, or after {@code wait}
     *     (the API away: the configured labels stand), whichever is first; never fails
     */
    public CompletionStage<Void> firstTakenIn(Duration wait) {
        return first.thenApply(labels -> (Void) null)
                .completeOnTimeout(null, wait.toMillis(), TimeUnit.MILLISECONDS)
                .whenComplete(
                        (v, e) -> {
                            if (!first.isDone()) {
                                LOG.warn(
                                        "the Node's labels were not read within {}: serving with the configured labels {} until"
                                                + " they are",
                                        wait,
                                        ipam.labels());
                            }
                        });
    }

    /** @return the labels that are label keys and values; the others are logged and left out */
    static Map<String, String> checked(Map<String, String> labels, String nodeName) {
        Map<String, String> kept = new TreeMap<>();
        if (labels == null) {
            return Map.of();
        }
        List<String> dropped = new ArrayList<>();
        labels.forEach(
                (key, value) -> {
                    if (key != null
                            && value != null
                            && NodeSelector.isLabelKey(key)
                            && NodeSelector.isLabelValue(value)) {
                        kept.put(key, value);
                    } else {
                        dropped.add(String.valueOf(key));
                    }
                });
        if (!dropped.isEmpty()) {
            LOG.warn(
                    "Node {}: labels {} are not Kubernetes label keys and values: left out",
                    nodeName,
                    dropped.stream().map(CniText::quoted).toList());
        }
        return Map.copyOf(kept);
    }
}
