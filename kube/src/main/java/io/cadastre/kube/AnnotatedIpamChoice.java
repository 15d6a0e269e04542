package io.cadastre.kube;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pod's and namespace's IPAM annotations ({@link IpamAnnotations}) as the ADD of a pod finds
 * them: in the informers' caches of {@link KubeApi}, or — for a pod or namespace not yet cached
 * — by one GET bounded by the request timeout. When the API cannot be reached the ADD goes on
 * with what is known (the namespace's cached annotations, else nothing: the netconf decides) and
 * says so in the log: the API being away must not stop pods that the netconf can serve
 * (kube/DESIGN.md, "Kubernetes objects").
 *
 * <p>Precedence, per family, as Calico's: the pod's {@code ipv4pools} / {@code ipv6pools}, else
 * its namespace's, else the request's own choice; {@code ipAddrs} only from the pod.
 */
public final class AnnotatedIpamChoice implements PodIpamChoice {
    private static final Logger LOG = LoggerFactory.getLogger(AnnotatedIpamChoice.class);

    private final KubeApi api;

    public AnnotatedIpamChoice(KubeApi api) {
        this.api = api;
    }

    @Override
    public CompletionStage<Choice> choose(String namespace, String pod) {
        if (namespace == null || pod == null) {
            return CompletableFuture.completedFuture(Choice.NONE);
        }
        String podName = "pod " + namespace + "/" + pod;
        CompletableFuture<Optional<Pod>> podObject =
                lookup(api.cachedPod(namespace, pod), () -> api.pod(namespace, pod), podName)
                        .toCompletableFuture();
        CompletableFuture<Optional<Namespace>> namespaceObject =
                lookup(
                                api.cachedNamespace(namespace),
                                () -> api.namespace(namespace),
                                "namespace " + namespace)
                        .toCompletableFuture();
        return podObject.thenCombine(
                namespaceObject,
                (p, ns) -> {
                    IpamAnnotations ofPod = IpamAnnotations.parse(annotations(p), podName, true);
                    IpamAnnotations ofNamespace =
                            IpamAnnotations.parse(annotations(ns), "namespace " + namespace, false);
                    Choice choice =
                            new Choice(
                                    IpamAnnotations.poolsByFamily(ofPod, ofNamespace),
                                    ofPod.addresses(),
                                    !ofPod.isEmpty()
                                            ? podName
                                            : !ofNamespace.isEmpty()
                                                    ? "namespace " + namespace
                                                    : "");
                    if (!choice.isEmpty()) {
                        LOG.debug(
                                "{}: annotations of {} choose pools {} and addresses {}",
                                podName,
                                choice.source(),
                                choice.poolsByFamily(),
                                choice.addresses());
                    }
                    return choice;
                });
    }

    /** The cached object, else a GET; empty (logged) when the API does not answer in time. */
    private static <T> CompletionStage<Optional<T>> lookup(
            Optional<T> cached, Supplier<CompletionStage<Optional<T>>> get, String what) {
        if (cached.isPresent()) {
            return CompletableFuture.completedFuture(cached);
        }
        return get.get()
                .handle(
                        (found, failure) -> {
                            if (failure != null) {
                                LOG.warn(
                                        "{} is not in the cache and the Kubernetes API did not answer ({}): its annotations are not"
                                                + " applied to this ADD",
                                        what,
                                        failure.toString());
                                return Optional.<T>empty();
                            }
                            return found;
                        });
    }

    private static Map<String, String> annotations(Optional<? extends HasMetadata> object) {
        return object.map(HasMetadata::getMetadata).map(m -> m.getAnnotations()).orElse(Map.of());
    }
}
