package io.cadastre.kube;

import io.fabric8.kubernetes.api.model.Pod;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.concurrent.ExecutionContext;

/**
 * The agents' pods (the DaemonSet's, by label selector, in the agents' namespace) bound to nodes
 * other than this one, listed from the API every {@code interval}. For an agent whose journal is
 * its own (the embedded one: a cluster of one node), any such pod is another node handing out
 * addresses of the same pools from a journal of its own: the same address twice. While one is
 * listed, {@link #refusal()} says so, and the agent refuses ADDs and says it is not ready; DELs
 * still release what this node holds.
 *
 * <p>What counts: a pod bound to another node ({@code spec.nodeName}) that is not being deleted
 * and has not ended ({@code Succeeded}, {@code Failed}): a Pending agent is about to allocate. A
 * list that fails changes nothing (the API may be away; the last answer stands), and until the
 * first list has answered nothing is refused: without the API the agent serves from what it is
 * configured with, as it does for labels and annotations.
 */
public final class AgentsOnOtherNodes implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AgentsOnOtherNodes.class);

    private final KubeApi api;
    private final String podLabelSelector;
    private final AtomicBoolean listing = new AtomicBoolean();
    private final AtomicLong answered = new AtomicLong();
    private volatile Set<String> otherNodes = Set.of();
    private volatile Cancellable rounds;

    AgentsOnOtherNodes(KubeApi api, String podLabelSelector) {
        this.api = api;
        this.podLabelSelector = podLabelSelector;
    }

    /**
     * Starts listing at once, then every {@code interval}.
     *
     * @param api the API, for the agents' pods and this node's name
     * @param podLabelSelector the agents' pods ({@code cadastre.kubernetes.bootstrap.pod-label-selector});
     *     not empty
     * @param interval between two lists; positive
     * @param scheduler the actor system's
     * @param executor where a round starts (it only sends the list request)
     * @throws IllegalArgumentException for an empty selector
     */
    public static AgentsOnOtherNodes start(
            KubeApi api,
            String podLabelSelector,
            Duration interval,
            Scheduler scheduler,
            ExecutionContext executor) {
        if (podLabelSelector.isBlank()) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes.bootstrap.pod-label-selector is empty: the agents' pods"
                            + " cannot be told from the namespace's others");
        }
        AgentsOnOtherNodes check = new AgentsOnOtherNodes(api, podLabelSelector);
        check.rounds =
                scheduler.scheduleWithFixedDelay(Duration.ZERO, interval, check::round, executor);
        return check;
    }

    /**
     * @return why no address may be handed out now: the nodes the other agents run on and what to
     *     do; empty while no other node runs one (or none was listed yet)
     */
    public Optional<String> refusal() {
        Set<String> others = otherNodes;
        if (others.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(
                "the embedded journal serves one node, but the agents also run on "
                        + (others.size() == 1 ? "node " : "nodes ")
                        + String.join(", ", others)
                        + ": each would hand out the same addresses from its own journal; no"
                        + " address is handed out until only this node runs an agent, or every"
                        + " agent shares Cassandra (deploy/kubernetes/20-config.yaml)");
    }

    /** One list, unless one is still under way. */
    void round() {
        if (!listing.compareAndSet(false, true)) {
            return;
        }
        api.pods(podLabelSelector)
                .whenComplete(
                        (pods, failure) -> {
                            try {
                                if (failure == null) {
                                    update(otherNodes(pods, api.nodeName()));
                                } else {
                                    LOG.debug(
                                            "the agents' pods cannot be listed: {}",
                                            failure.toString());
                                }
                            } finally {
                                listing.set(false);
                                answered.incrementAndGet();
                            }
                        });
    }

    /** @return how many lists have been answered, with pods or with a failure */
    long answered() {
        return answered.get();
    }

    private void update(Set<String> others) {
        Set<String> before = otherNodes;
        if (others.equals(before)) {
            return;
        }
        otherNodes = others;
        if (others.isEmpty()) {
            LOG.info("no agent runs on another node any more: addresses are handed out again");
        } else {
            LOG.error("{}", refusal().orElseThrow());
        }
    }

    /**
     * @param pods the agents' pods
     * @param thisNode this agent's node
     * @return the other nodes with a live agent pod, sorted (names as the API server validated them)
     */
    static Set<String> otherNodes(List<Pod> pods, String thisNode) {
        Set<String> others = new TreeSet<>();
        for (Pod pod : pods) {
            String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
            if (node == null || node.isEmpty() || node.equals(thisNode)) {
                continue;
            }
            if (pod.getMetadata() != null && pod.getMetadata().getDeletionTimestamp() != null) {
                continue;
            }
            String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
            if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
                continue;
            }
            others.add(node);
        }
        return Collections.unmodifiableSet(others);
    }

    /** Stops listing. */
    @Override
    public void close() {
        Cancellable r = rounds;
        if (r != null) {
            r.cancel();
        }
    }
}
