package io.cadastre.kube;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * {@code cadastre.kubernetes}: whether and how Kubernetes objects drive the IPAM (the agent's
 * {@code application.conf} documents each key and its environment override). What is released
 * when pods or Nodes are deleted from the API is configured with the other cleanup mechanisms,
 * under {@code cadastre.cleanup}.
 *
 * @param enabled whether the agent talks to the API server at all
 * @param nodeName the Node object of this host; never empty when enabled (the agent's node name)
 * @param namespace the agents' namespace for bootstrap; empty for the client's default (the
 *     service account's)
 * @param requestTimeout the most one call to the API server may take; positive
 * @param labelsWait how long start-up waits for the Node's labels; zero or positive
 * @param bootstrap how the agents find each other
 * @param otherAgentsInterval with the embedded journal, how often the agents' pods are listed
 *     for one on another node ({@link AgentsOnOtherNodes}); positive
 * @param networkPolicy whether the agent enforces the cluster's NetworkPolicies on its pods
 *     ({@link NetworkPolicyEnforcer})
 */
public record KubeSettings(
        boolean enabled,
        String nodeName,
        String namespace,
        Duration requestTimeout,
        Duration labelsWait,
        Bootstrap bootstrap,
        Duration otherAgentsInterval,
        boolean networkPolicy) {

    /**
     * {@code bootstrap}.
     *
     * @param enabled whether the agents find each other from their pods (else seed nodes)
     * @param podLabelSelector the agents' pods, a Kubernetes label selector ({@code k=v,k2=v2})
     * @param portName the container port that carries the cluster port
     * @param requiredContactPoints how many agents must be found before one forms a cluster; 1 or more
     * @param stableMargin how long the set of agents found must not change before a cluster is formed
     * @param probeInterval how often pods are listed and the agents asked; positive
     */
    public record Bootstrap(
            boolean enabled,
            String podLabelSelector,
            String portName,
            int requiredContactPoints,
            Duration stableMargin,
            Duration probeInterval) {}

    /** Kubernetes off: seed nodes, configured labels, the netconf alone. */
    public static final KubeSettings DISABLED =
            new KubeSettings(
                    false,
                    "",
                    "",
                    Duration.ofSeconds(2),
                    Duration.ZERO,
                    new Bootstrap(
                            false, "", "cluster", 1, Duration.ofSeconds(5), Duration.ofSeconds(1)),
                    Duration.ofSeconds(10),
                    false);

    /**
     * @param kubernetes the {@code cadastre.kubernetes} section
     * @param agentNodeName {@code cadastre.node-name} as configured ({@code ""}: not set)
     * @return the settings; the node name is the configured one of either key
     * @throws IllegalArgumentException naming the key: a duration that is not positive, a required
     *     count below 1, an empty label selector with bootstrap on, two different node names
     */
    public static KubeSettings from(Config kubernetes, String agentNodeName) {
        boolean enabled = kubernetes.getBoolean("enabled");
        String node = kubernetes.getString("node-name").trim();
        String agentNode = agentNodeName == null ? "" : agentNodeName.trim();
        if (!node.isEmpty() && !agentNode.isEmpty() && !node.equals(agentNode)) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes.node-name '"
                            + node
                            + "' differs from cadastre.node-name '"
                            + agentNode
                            + "': the IPAM node is the Kubernetes Node, set one of them");
        }
        Config boot = kubernetes.getConfig("bootstrap");
        int required = boot.getInt("required-contact-points");
        if (required < 1) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes.bootstrap.required-contact-points must be 1 or more, not "
                            + required);
        }
        String selector = boot.getString("pod-label-selector").trim();
        if (enabled && boot.getBoolean("enabled") && selector.isEmpty()) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes.bootstrap.pod-label-selector is empty: it would take"
                            + " every pod of the namespace for an agent");
        }
        Duration labelsWait = kubernetes.getDuration("labels-wait");
        if (labelsWait.isNegative()) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes.labels-wait must not be negative, not " + labelsWait);
        }
        return new KubeSettings(
                enabled,
                node.isEmpty() ? agentNode : node,
                kubernetes.getString("namespace").trim(),
                positive(kubernetes, "request-timeout"),
                labelsWait,
                new Bootstrap(
                        boot.getBoolean("enabled"),
                        selector,
                        boot.getString("port-name").trim(),
                        required,
                        nonNegative(kubernetes, "bootstrap.stable-margin"),
                        positive(kubernetes, "bootstrap.probe-interval")),
                positive(kubernetes, "other-agents-check-interval"),
                kubernetes.getBoolean("network-policy"));
    }

    /** @return these settings for this node name (the agent's, once it is decided) */
    public KubeSettings withNodeName(String node) {
        return new KubeSettings(
                enabled,
                node,
                namespace,
                requestTimeout,
                labelsWait,
                bootstrap,
                otherAgentsInterval,
                networkPolicy);
    }

    private static Duration positive(Config c, String key) {
        Duration d = c.getDuration(key);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes." + key + " must be positive, not " + d);
        }
        return d;
    }

    private static Duration nonNegative(Config c, String key) {
        Duration d = c.getDuration(key);
        if (d.isNegative()) {
            throw new IllegalArgumentException(
                    "cadastre.kubernetes." + key + " must not be negative, not " + d);
        }
        return d;
    }
}
