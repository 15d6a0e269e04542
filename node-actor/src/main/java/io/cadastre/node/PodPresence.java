package io.cadastre.node;

/**
 * Tells whether the Kubernetes pod behind an attachment is certainly gone from the API, so that
 * the {@link Reclaimer} releases its addresses after the grace as it does for a vanished netns.
 * Implemented over the API's pod cache (module kube); {@link #NONE} without Kubernetes.
 *
 * <p>Implementations answer {@code true} only when sure — a synced and watching cache lacks the
 * pod, and a GET confirms it is gone or now bound to another node — since a wrong "gone" releases
 * the addresses of a live pod: an API that cannot be reached, or a cache that has not listed, is
 * never an absence. They may block for a bounded time (one GET): call them off the actor's
 * dispatcher.
 */
@FunctionalInterface
public interface PodPresence {

    /**
     * @param namespace the pod's namespace ({@code K8S_POD_NAMESPACE} at ADD)
     * @param name the pod's name ({@code K8S_POD_NAME} at ADD)
     * @return true when the pod no longer exists on this node
     */
    boolean isGone(String namespace, String name);

    /** Outside Kubernetes: never gone. */
    PodPresence NONE = (namespace, name) -> false;
}
