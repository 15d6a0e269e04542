package io.cadastre.dataplane;

import java.util.List;
import java.util.OptionalInt;

/**
 * The only way Cadastre touches a host's network: wires a pod's network namespace to the host
 * and unwires it again. The production implementation speaks rtnetlink ({@link NetlinkDataplane});
 * IPAM tests use a fake behind this same interface.
 *
 * <p>Wiring (node-actor/DESIGN.md): a veth pair whose host end is named
 * {@link PodAttachment#hostIfname()} and carries the fixed MAC {@link #HOST_MAC}; the pod end is
 * created inside the netns under the CNI ifname; each pod address is configured as a host
 * address (/32 or /128); in the pod, IPv4 gets a link-scope route to {@link #IPV4_GATEWAY} and a
 * default route via it, IPv6 a default route via {@link #IPV6_GATEWAY} (the host end's link-local
 * address, derived from {@link #HOST_MAC}); on the host, proxy ARP on the host end, a neighbour
 * entry per pod address with the pod end's MAC (STALE, so the kernel confirms it later), and a
 * /32 or /128 route per pod address through the host end; for a pod with bandwidth limits
 * ({@link PodAttachment#bandwidth()}), a token bucket filter on the host end and on an IFB device
 * that what the pod sends is redirected to ({@link Bandwidth}).
 *
 * <p>Implementations are thread-safe: the node agent may wire several pods at once.
 */
public interface Dataplane {

    /** The MAC of every host-side veth end, so that the pod's IPv6 gateway is always the same. */
    String HOST_MAC = "ee:ee:ee:ee:ee:ee";

    /** The pod's IPv4 next hop: link-local, answered by proxy ARP on the host end. */
    String IPV4_GATEWAY = "169.254.1.1";

    /** The pod's IPv6 next hop: the EUI-64 link-local address of {@link #HOST_MAC}. */
    String IPV6_GATEWAY = "fe80::ecee:eeff:feee:eeee";

    /**
     * Checks, changing nothing, that a path names a network namespace a pod may be wired into:
     * it exists, is a network namespace, and is not the host's own. Called before any address is
     * assigned, so that such a request changes nothing at all.
     *
     * @param netnsPath CNI_NETNS, an absolute path
     * @throws DataplaneException {@link DataplaneException.Kind#NETNS_MISSING} when it does not
     *     exist or is no network namespace, {@link DataplaneException.Kind#INVALID_NETNS} when
     *     it is the host's or no file can have it (a loop of symbolic links, a name past
     *     NAME_MAX); a message shows at most 64 characters of the path
     */
    void checkPodNetns(String netnsPath) throws DataplaneException;

    /**
     * Creates and configures the pod's interface. When the pod is wired already exactly as asked
     * (an ADD retried by the runtime), changes nothing and returns that wiring.
     *
     * @return what was configured, for the CNI result
     * @throws DataplaneException if any step fails; everything this call created has been removed
     *     again by then (no partial state), and {@link DataplaneException#kind()} tells whether
     *     the netns did not exist, was the host's, or the host end exists but is wired
     *     differently ({@link DataplaneException.Kind#WIRED_DIFFERENTLY}: nothing was changed)
     */
    WiredPod attach(PodAttachment attachment) throws DataplaneException;

    /**
     * The half of a fresh ADD's wiring that needs no addresses, so that it runs while IPAM assigns
     * them: creates the veth pair, both ends down, when neither {@code hostIfname} on the host nor
     * {@code podIfname} in the netns exists. Nothing routes to a prepared pair; {@link
     * #attach(PodAttachment, OptionalInt)} configures it, or {@link #deleteUnplugged} deletes it
     * when the ADD fails before that. A dataplane may prepare nothing (the default).
     *
     * @param netnsPath CNI_NETNS, checked as {@link #checkPodNetns} does
     * @param mtu bytes; 0 for the kernel's default
     * @return the host end's ifindex when this call created the pair; empty when it created
     *     nothing (either name taken: {@link #attach} decides as without this step)
     * @throws DataplaneException as {@link #attach} for the netns, the names and the MTU
     */
    default OptionalInt prepare(String netnsPath, String hostIfname, String podIfname, int mtu)
            throws DataplaneException {
        return OptionalInt.empty();
    }

    /**
     * As {@link #attach(PodAttachment)}, configuring the pair {@link #prepare} created (the host
     * end of that name, still down, with index {@code prepared}) instead of creating one.
     *
     * @param prepared what {@link #prepare} returned, or empty
     */
    default WiredPod attach(PodAttachment attachment, OptionalInt prepared)
            throws DataplaneException {
        return attach(attachment);
    }

    /**
     * Removes the pod's veth pair (deleting the host end removes the pod end too) and with it the
     * host routes. Idempotent: a missing link or netns is success (CNI spec 1.1 §DEL).
     *
     * @param hostIfname the host end's name, as {@link HostInterfaceName#of} gives it
     * @throws DataplaneException only when the kernel refuses for another reason
     */
    void detach(String hostIfname) throws DataplaneException;

    /**
     * Takes a pod off the network at once and leaves the deletion of its veth pair for later
     * ({@link #deleteUnplugged}): sets the host end down, whereupon the kernel drops every route
     * through it, so that the pod's addresses may be freed before the pair is gone. DEL's reply
     * waits for this, not for a delete: deleting a veth waits for RCU grace periods in the kernel
     * (30-40 ms measured on the benchmark machine), setting it down does not. The pod end keeps its
     * addresses until the pair is deleted, but nothing on the host routes to it. Idempotent.
     *
     * @param hostIfname the host end's name, as {@link HostInterfaceName#of} gives it
     * @return the host end's ifindex when it exists (down now), empty when there is none
     * @throws DataplaneException when the link is not a pod's host end, or the kernel refuses
     */
    OptionalInt unplug(String hostIfname) throws DataplaneException;

    /**
     * Deletes a veth pair that {@link #unplug} set down, if it is still that pair: the host end of
     * that name still has {@code hostIndex} and is still down. Nothing to do (false) when the pair
     * went with its netns (the runtime removes it after DEL), or when the name now belongs to
     * another pair (an ADD of the same attachment deleted the old one and wired anew).
     *
     * @param hostIndex the ifindex {@link #unplug} returned
     * @return whether this call deleted the pair
     * @throws DataplaneException when the kernel refuses for another reason than the link's absence
     */
    boolean deleteUnplugged(String hostIfname, int hostIndex) throws DataplaneException;

    /**
     * Compares the netns and the host with what {@link #attach} would have configured
     * (CNI spec 1.1 §CHECK).
     *
     * @return one human-readable line per difference; empty when all is as expected
     * @throws DataplaneException if the state cannot be read (e.g. the netns is gone:
     *     {@link DataplaneException#netnsMissing()})
     */
    List<String> check(PodAttachment attachment) throws DataplaneException;

    /**
     * Deletes the IFB devices that shape the egress of pods whose host end is gone ({@link
     * Bandwidth}): left when a pod's netns went while the agent was down, or between a DEL and the
     * deletion of its pair. Only devices named for a host end ({@link HostInterfaceName#ifbOf})
     * and of kind {@code ifb}.
     *
     * @return the names of the devices deleted
     * @throws DataplaneException when the links cannot be read or one cannot be deleted
     */
    default List<String> deleteOrphanedShapingDevices() throws DataplaneException {
        return List.of();
    }

    /**
     * Packets dropped at the host ends because their source was none of the pod's addresses
     * ({@link PodSourceFilter}), since the agent started: for
     * {@code cadastre_pod_spoofed_packets_dropped_total}.
     *
     * @return packets; 0 for a dataplane that does not filter
     * @throws DataplaneException when the counts cannot be read
     */
    default long spoofedPacketsDropped() throws DataplaneException {
        return 0;
    }
}
