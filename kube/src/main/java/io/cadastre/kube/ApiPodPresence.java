package io.cadastre.kube;

import io.cadastre.node.PodPresence;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link PodPresence} over the Kubernetes API: a pod is gone only when the node's pod cache has
 * listed and is watching ({@link KubeApi#podsSynced()}), does not hold it bound to this node, and a
 * GET then finds no such pod or one bound to another node (a StatefulSet's pod recreated
 * elsewhere under the same name is another pod). An unsynced cache, a lost watch, or a GET that
 * fails or times out is "not gone": nothing is released on what the API did not say.
 */
public final class ApiPodPresence implements PodPresence {
    private static final Logger LOG = LoggerFactory.getLogger(ApiPodPresence.class);

    private final KubeApi api;

    public ApiPodPresence(KubeApi api) {
        this.api = api;
    }

    /** Blocks for at most the API's request timeout (one GET, only for a pod the cache lacks). */
    @Override
    public boolean isGone(String namespace, String name) {
        if (!api.podsSynced()) {
            return false;
        }
        if (api.cachedPod(namespace, name).filter(this::onThisNode).isPresent()) {
            return false;
        }
        Optional<Pod> live;
        try {
            live =
                    api.pod(namespace, name)
                            .toCompletableFuture()
                            .get(api.requestTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (Exception e) {
            LOG.info(
                    "pod {}/{} is not in the cache and the API did not answer ({}): not taken as gone",
                    namespace,
                    name,
                    e.toString());
            return false;
        }
        return live.filter(this::onThisNode).isEmpty();
    }

    private boolean onThisNode(Pod pod) {
        return pod.getSpec() != null && api.nodeName().equals(pod.getSpec().getNodeName());
    }
}
