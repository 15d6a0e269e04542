package io.cadastre.dataplane;

import java.util.Optional;

/**
 * The host's share of Kubernetes NetworkPolicy enforcement, declaratively: given every local pod's
 * resolved rules ({@link PolicyRules}), {@link #reconcile} makes the nftables table {@code inet}
 * {@link #TABLE} enforce exactly them, in one transaction, and nothing else of the host changes.
 * The production implementation speaks nfnetlink ({@link NetlinkHostPolicy}); the agent's tests
 * use a fake behind this interface.
 *
 * <p>Where it filters: the {@code forward} hook, where every packet between a pod and anything but
 * its own node passes (pods are routed, not bridged), on this host and on the peer's. A pod's
 * egress is checked on its own node, its ingress on its own node, so a packet between two pods is
 * checked twice, once on each side, as in Calico. Replies of a connection that passed pass
 * ({@code ct state established,related}). Traffic between a pod and its own node (the {@code input}
 * and {@code output} hooks: kubelet's probes) is not filtered.
 */
public interface HostPolicy {
    /** The nftables table, family inet: {@code nft list table inet cadastre-policy}. */
    String TABLE = "cadastre-policy";

    /** Its base chain (filter hook forward, priority filter). */
    String CHAIN = "forward";

    /**
     * Makes the table enforce {@code wanted}: written (created or replaced whole, in one nfnetlink
     * batch) when absent or different from what the kernel holds, removed when no pod is isolated,
     * left alone when equal. A second call with the same rules changes nothing.
     *
     * @return what changed, or empty when nothing did
     * @throws DataplaneException when the kernel refused a read or the transaction (then nothing
     *     changed)
     */
    Optional<HostRouting.Change> reconcile(PolicyRules wanted) throws DataplaneException;

    /**
     * Isolates one more pod at once, in a small transaction that adds its chains and jumps to the
     * table as it is (created for the pod alone when there is none), for an ADD that must not
     * answer before its pod is isolated. The table's comment then no longer matches what it holds,
     * so the next {@link #reconcile} rewrites it whole, with the pod in its place.
     *
     * @param pod the pod as the next reconcile will have it
     * @return what changed, or empty when the pod is isolated in neither direction or has no address
     * @throws DataplaneException when the kernel refused the read or the transaction (then nothing
     *     changed)
     */
    Optional<HostRouting.Change> isolate(PolicyRules.PodPolicy pod) throws DataplaneException;

    /**
     * Packets an isolated pod's chains dropped since this instance was created, by direction: the
     * counters of the table as it is, plus those of every table this instance replaced or removed,
     * read just before (the drops in the instant between that reading and the new table are not
     * counted). Monotonic; a counter for Prometheus.
     *
     * @return packets; zero for an implementation that drops nothing
     * @throws DataplaneException when the kernel refused the read
     */
    default Drops dropped() throws DataplaneException {
        return new Drops(0, 0);
    }

    /**
     * Packets dropped for want of an allowing rule.
     *
     * @param ingress packets to an isolated pod (its ingress chains)
     * @param egress packets from an isolated pod (its egress chains)
     */
    record Drops(long ingress, long egress) {}
}
