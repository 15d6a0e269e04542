package io.cadastre.kube;

import io.cadastre.dataplane.IpPrefix;
import io.cadastre.dataplane.PolicyRules;
import io.cadastre.dataplane.PolicyRules.Direction;
import io.cadastre.dataplane.PolicyRules.Peer;
import io.cadastre.dataplane.PolicyRules.PodPolicy;
import io.cadastre.dataplane.PolicyRules.Ports;
import io.cadastre.dataplane.PolicyRules.Rule;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodIP;
import io.fabric8.kubernetes.api.model.networking.v1.IPBlock;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicySpec;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Resolves the cluster's NetworkPolicies to what this node's table enforces ({@link PolicyRules}):
 * selectors to pods, pods to addresses, named ports to numbers. A pure function of the three
 * caches, so that the same API state always gives the same rules, in the same order.
 *
 * <p>Semantics, from the Kubernetes API reference (NetworkPolicy v1, networking.k8s.io):
 *
 * <ul>
 *   <li>A policy selects the pods of its own namespace that its {@code podSelector} matches (empty:
 *       all of them). Its {@code policyTypes} say which directions it isolates; when absent,
 *       {@code Ingress}, and {@code Egress} too if it has egress rules.
 *   <li>A pod selected for a direction by some policy is isolated in it; what passes is the union
 *       of those policies' rules in that direction.
 *   <li>A rule's {@code from}/{@code to} absent or empty: any address; else any of its peers. A peer
 *       is an {@code ipBlock} (a CIDR less its {@code except} networks), or pods: {@code
 *       podSelector} alone in the policy's namespace, {@code namespaceSelector} alone in every
 *       namespace it matches, both together for the pods the first matches in the namespaces the
 *       second does. A rule whose peers select nothing lets nothing through (it is left out, not
 *       widened to "any").
 *   <li>A rule's {@code ports} absent or empty: every port and protocol; else any of them: a
 *       protocol (TCP by default, UDP, SCTP), a port number, a range to {@code endPort}, or a
 *       container port's name, which is looked up in the pod at the destination: the selected pod
 *       itself for ingress, each peer pod for egress (an {@code ipBlock} has no named ports).
 * </ul>
 *
 * <p>Which pods count: not {@code hostNetwork} (their addresses are their node's, and the API
 * reference leaves them out of policy), not finished ({@code Succeeded}/{@code Failed}: their
 * addresses may already be another pod's), with addresses in {@code status.podIPs} (or {@code
 * status.podIP}). Every value is untrusted: an address that is no IP literal, a CIDR that does not
 * parse, a port out of range or an unknown protocol is skipped, which only ever narrows what a rule
 * lets through.
 */
public final class NetworkPolicyResolver {
    private static final String INGRESS = "Ingress";

    /** In {@link #views}: a pod that takes no part in policy (host network, finished, malformed). */
    private static final PodView ABSENT = new PodView("", "", null, Map.of(), List.of(), List.of());

    private static final String EGRESS = "Egress";

    private final String nodeName;

    /**
     * What the last resolution read of each pod, by the pod object's identity: an informer's cache
     * keeps a pod's object until the pod changes (an update is a new object), so nearly every pod
     * of the next resolution is one seen before, and reading a pod (its labels, its addresses
     * parsed) was half of a resolution at 10,000 pods. Without the addresses {@code wired} lends a
     * local pod, which change without the object; {@link #ABSENT} for a pod that takes no part.
     */
    private Map<Pod, PodView> views = new IdentityHashMap<>();

    /** @param nodeName this host's Node name: its pods are the ones isolated */
    public NetworkPolicyResolver(String nodeName) {
        this.nodeName = Objects.requireNonNull(nodeName, "nodeName");
    }

    /**
     * @param policies every NetworkPolicy of the cluster
     * @param pods every pod of the cluster
     * @param namespaces every Namespace (for their labels)
     * @return what this node's pods may send and receive; {@link PolicyRules#NONE} when no policy
     *     selects any of them
     */
    public PolicyRules resolve(
            Collection<NetworkPolicy> policies,
            Collection<Pod> pods,
            Collection<Namespace> namespaces) {
        return resolve(policies, pods, namespaces, Map.of());
    }

    /**
     * As {@link #resolve(Collection, Collection, Collection)}, with the addresses this node's ADDs
     * gave pods whose {@code status.podIPs} kubelet has not written yet.
     *
     * @param wired {@code namespace/name} → the addresses its sandbox's ADD gave it; used only for
     *     a pod of this node whose status has no address
     */
    public PolicyRules resolve(
            Collection<NetworkPolicy> policies,
            Collection<Pod> pods,
            Collection<Namespace> namespaces,
            Map<String, List<InetAddress>> wired) {
        return new PolicyRules(resolve(policies, pods, namespaces, wired, null));
    }

    /**
     * One local pod's part of {@link #resolve(Collection, Collection, Collection, Map)}: the same
     * rules, without the other local pods' (for the ADD that waits for its pod's isolation).
     *
     * @param pod {@code namespace/name}
     * @return the pod's rules, or empty when no policy isolates it or it is not this node's
     */
    public Optional<PodPolicy> resolvePod(
            String pod,
            Collection<NetworkPolicy> policies,
            Collection<Pod> pods,
            Collection<Namespace> namespaces,
            Map<String, List<InetAddress>> wired) {
        return resolve(policies, pods, namespaces, wired, pod).stream().findFirst();
    }

    /** @param only the one local pod to resolve ({@code namespace/name}), or null for all */
    private List<PodPolicy> resolve(
            Collection<NetworkPolicy> policies,
            Collection<Pod> pods,
            Collection<Namespace> namespaces,
            Map<String, List<InetAddress>> wired,
            String only) {
        List<PodView> all = new ArrayList<>(views(pods, wired));
        all.sort(Comparator.comparing(PodView::key));
        Map<String, Map<String, String>> namespaceLabels = new HashMap<>();
        for (Namespace n : namespaces) {
            if (n.getMetadata() != null && n.getMetadata().getName() != null) {
                namespaceLabels.put(
                        n.getMetadata().getName(), labelsOf(n.getMetadata().getLabels()));
            }
        }
        List<NetworkPolicy> ordered =
                policies.stream()
                        .filter(p -> p.getMetadata() != null && p.getSpec() != null)
                        .sorted(
                                Comparator.comparing(
                                        (NetworkPolicy p) ->
                                                p.getMetadata().getNamespace()
                                                        + "/"
                                                        + p.getMetadata().getName()))
                        .toList();
        Selection selection = new Selection(all, namespaceLabels);
        // Only a policy of the pod's own namespace can select it.
        Map<String, List<NetworkPolicy>> byNamespace = new HashMap<>();
        ordered.forEach(
                p ->
                        byNamespace
                                .computeIfAbsent(
                                        p.getMetadata().getNamespace(), k -> new ArrayList<>())
                                .add(p));
        List<PodPolicy> result = new ArrayList<>();
        for (PodView pod : all) {
            if (!nodeName.equals(pod.node()) || (only != null && !only.equals(pod.key()))) {
                continue;
            }
            List<NetworkPolicy> own = byNamespace.getOrDefault(pod.namespace(), List.of());
            Direction ingress = direction(pod, own, selection, true);
            Direction egress = direction(pod, own, selection, false);
            if (ingress.isolated() || egress.isolated()) {
                result.add(new PodPolicy(pod.key(), pod.addresses(), ingress, egress));
            }
        }
        return result;
    }

    /**
     * @return the views of the pods that take part in policy, each read once per pod object
     *     ({@link #views}), with the addresses {@code wired} lends a local pod whose status has
     *     none
     */
    private synchronized List<PodView> views(
            Collection<Pod> pods, Map<String, List<InetAddress>> wired) {
        Map<Pod, PodView> next = new IdentityHashMap<>(pods.size() * 2);
        List<PodView> out = new ArrayList<>(pods.size());
        for (Pod pod : pods) {
            PodView view = views.get(pod);
            if (view == null) {
                view = Objects.requireNonNullElse(PodView.of(pod), ABSENT);
            }
            next.put(pod, view);
            if (view == ABSENT) {
                continue;
            }
            List<InetAddress> lent = wired.get(view.key());
            if (view.addresses().isEmpty() && nodeName.equals(view.node()) && lent != null) {
                view = view.withAddresses(distinct(lent));
            }
            out.add(view);
        }
        views = next;
        return out;
    }

    /**
     * @return whether a pod's update changes anything a resolution reads (labels, addresses,
     *     node, phase, host networking, container ports): most updates (conditions, container
     *     states) do not, and need no new resolution
     */
    public static boolean changesPolicy(Pod before, Pod after) {
        return !Objects.equals(PodView.of(before), PodView.of(after));
    }

    /**
     * @return whether some policy of the pod's namespace selects it, for either direction: only
     *     then does its isolation depend on its addresses being in the table
     */
    public static boolean selected(Pod pod, Collection<NetworkPolicy> policies) {
        PodView view = PodView.of(pod);
        return view != null
                && policies.stream()
                        .filter(p -> p.getMetadata() != null && p.getSpec() != null)
                        .anyMatch(
                                p ->
                                        view.namespace().equals(p.getMetadata().getNamespace())
                                                && LabelSelectors.matches(
                                                        selectorOrAll(p.getSpec().getPodSelector()),
                                                        view.labels()));
    }

    private Direction direction(
            PodView pod, List<NetworkPolicy> policies, Selection selection, boolean ingress) {
        boolean isolated = false;
        List<Rule> rules = new ArrayList<>();
        for (NetworkPolicy policy : policies) {
            String namespace = policy.getMetadata().getNamespace();
            NetworkPolicySpec spec = policy.getSpec();
            if (!pod.namespace().equals(namespace)
                    || !LabelSelectors.matches(selectorOrAll(spec.getPodSelector()), pod.labels())
                    || !types(spec).contains(ingress ? INGRESS : EGRESS)) {
                continue;
            }
            isolated = true;
            if (ingress) {
                for (var r : nonNull(spec.getIngress())) {
                    rules.addAll(rules(pod, namespace, r.getFrom(), r.getPorts(), selection, true));
                }
            } else {
                for (var r : nonNull(spec.getEgress())) {
                    rules.addAll(rules(pod, namespace, r.getTo(), r.getPorts(), selection, false));
                }
            }
        }
        return isolated ? new Direction(true, rules) : Direction.OPEN;
    }

    /** policyTypes, or their default: Ingress, and Egress when the policy has egress rules. */
    private static Set<String> types(NetworkPolicySpec spec) {
        List<String> given = spec.getPolicyTypes();
        if (given != null && !given.isEmpty()) {
            return Set.copyOf(given.stream().filter(Objects::nonNull).toList());
        }
        return spec.getEgress() != null && !spec.getEgress().isEmpty()
                ? Set.of(INGRESS, EGRESS)
                : Set.of(INGRESS);
    }

    /** One rule of the API as rules of the table: one for its numbers, one per pod a name resolves on. */
    private static List<Rule> rules(
            PodView pod,
            String namespace,
            List<NetworkPolicyPeer> peerList,
            List<NetworkPolicyPort> portList,
            Selection selection,
            boolean ingress) {
        boolean anyPeer = peerList == null || peerList.isEmpty();
        List<Peer> blocks = new ArrayList<>();
        List<PodView> peerPods = new ArrayList<>();
        List<NetworkPolicyPeer> selectors = new ArrayList<>();
        if (!anyPeer) {
            for (NetworkPolicyPeer p : peerList) {
                if (p == null) {
                    continue;
                }
                if (p.getIpBlock() != null) {
                    Peer block = block(p.getIpBlock());
                    if (block != null) {
                        blocks.add(block);
                    }
                } else if (p.getPodSelector() != null || p.getNamespaceSelector() != null) {
                    peerPods.addAll(selection.pods(namespace, p));
                    selectors.add(p);
                }
            }
        }
        List<Peer> rulePeers;
        if (anyPeer) {
            rulePeers = List.of();
        } else if (blocks.isEmpty() && selectors.size() == 1) {
            // The common case, one selector: its addresses, the same list for every local pod.
            rulePeers = selection.peers(namespace, selectors.get(0));
        } else {
            List<Peer> peers = new ArrayList<>(blocks);
            distinct(peerPods).forEach(p -> p.addresses().forEach(a -> peers.add(Peer.host(a))));
            rulePeers = distinct(peers);
        }
        if (!anyPeer && rulePeers.isEmpty()) {
            return List.of();
        }
        if (portList == null || portList.isEmpty()) {
            return List.of(new Rule(rulePeers, List.of()));
        }
        List<Ports> numbers = new ArrayList<>();
        List<NetworkPolicyPort> named = new ArrayList<>();
        for (NetworkPolicyPort p : portList) {
            if (p == null) {
                continue;
            }
            Integer protocol = protocol(p.getProtocol());
            if (protocol == null) {
                continue;
            }
            IntOrString port = p.getPort();
            if (port == null) {
                numbers.add(Ports.all(protocol));
            } else if (port.getStrVal() != null) {
                if (p.getEndPort() == null) {
                    named.add(p);
                }
            } else if (port.getIntVal() != null) {
                int first = port.getIntVal();
                int last = p.getEndPort() == null ? first : p.getEndPort();
                if (first >= 1 && first <= last && last <= 65535) {
                    numbers.add(new Ports(protocol, first, last));
                }
            }
        }
        List<Rule> rules = new ArrayList<>();
        if (!numbers.isEmpty()) {
            rules.add(new Rule(rulePeers, distinct(numbers)));
        }
        if (named.isEmpty()) {
            return rules;
        }
        if (ingress) {
            List<Ports> resolved = pod.named(named);
            if (!resolved.isEmpty()) {
                rules.add(new Rule(rulePeers, resolved));
            }
            return rules;
        }
        // Egress to a named port: the name is the destination's, so one rule per destination pod
        // (every pod when the rule names no peer); ipBlock peers have no names and get none.
        List<PodView> destinations = anyPeer ? selection.all() : distinct(peerPods);
        for (PodView destination : destinations) {
            List<Ports> resolved = destination.named(named);
            if (!resolved.isEmpty() && !destination.addresses().isEmpty()) {
                rules.add(
                        new Rule(
                                destination.addresses().stream().map(Peer::host).toList(),
                                resolved));
            }
        }
        return rules;
    }

    private static Peer block(IPBlock block) {
        IpPrefix network = prefix(block.getCidr());
        if (network == null) {
            return null;
        }
        List<IpPrefix> except = new ArrayList<>();
        for (String e : nonNull(block.getExcept())) {
            IpPrefix x = prefix(e);
            if (x == null) {
                // An exception we cannot read could have excluded anything: leave the block out.
                return null;
            }
            if (x.v4() == network.v4()) {
                except.add(x);
            }
        }
        return new Peer(network, except);
    }

    /** A CIDR with host bits cleared (the API accepts {@code 10.0.0.1/24}); null when it is none. */
    static IpPrefix prefix(String cidr) {
        if (cidr == null) {
            return null;
        }
        int slash = cidr.indexOf('/');
        if (slash < 0) {
            return null;
        }
        try {
            InetAddress address = IpPrefix.literal(cidr.substring(0, slash));
            int length = Integer.parseInt(cidr.substring(slash + 1));
            byte[] bytes = address.getAddress();
            if (length < 0 || length > bytes.length * 8) {
                return null;
            }
            for (int bit = length; bit < bytes.length * 8; bit++) {
                bytes[bit / 8] &= (byte) ~(0x80 >>> (bit % 8));
            }
            return new IpPrefix(InetAddress.getByAddress(bytes), length);
        } catch (IllegalArgumentException | java.net.UnknownHostException e) {
            return null;
        }
    }

    /** IANA protocol number of a policy port's protocol (TCP when absent); null when unknown. */
    private static Integer protocol(String name) {
        if (name == null) {
            return Ports.TCP;
        }
        return switch (name.toUpperCase(Locale.ROOT)) {
            case "TCP" -> Ports.TCP;
            case "UDP" -> Ports.UDP;
            case "SCTP" -> Ports.SCTP;
            default -> null;
        };
    }

    /** An absent podSelector of a policy selects every pod of the namespace, as an empty one does. */
    private static LabelSelector selectorOrAll(LabelSelector selector) {
        return selector == null ? new LabelSelector() : selector;
    }

    private static Map<String, String> labelsOf(Map<String, String> labels) {
        return labels == null ? Map.of() : labels;
    }

    private static <T> List<T> nonNull(List<T> list) {
        return list == null ? List.of() : list.stream().filter(Objects::nonNull).toList();
    }

    private static <T> List<T> distinct(List<T> list) {
        return List.copyOf(new LinkedHashSet<>(list));
    }

    /**
     * The pods a peer selects, over the sorted pods and the namespaces' labels. A peer's selection
     * does not depend on the local pod it is resolved for, so each distinct peer is selected once
     * per resolution, not once per local pod; peers with a namespace selector are distinct by
     * their selectors alone, so the same peer written in every namespace's policy (the pods of
     * some label anywhere) is selected once, not once per namespace.
     */
    private record Selection(
            List<PodView> pods,
            Map<String, List<PodView>> byNamespace,
            Map<String, Map<String, String>> namespaces,
            Map<PeerKey, List<PodView>> selected,
            Map<PeerKey, List<Peer>> addresses) {
        Selection(List<PodView> pods, Map<String, Map<String, String>> namespaces) {
            this(pods, index(pods), namespaces, new HashMap<>(), new HashMap<>());
        }

        /** @param namespace the policy's namespace; null when the namespace selector decides */
        private record PeerKey(
                String namespace, LabelSelector namespaceSelector, LabelSelector podSelector) {}

        /** Pods by namespace, each list in the pods' order. */
        private static Map<String, List<PodView>> index(List<PodView> pods) {
            Map<String, List<PodView>> index = new java.util.TreeMap<>();
            pods.forEach(p -> index.computeIfAbsent(p.namespace(), k -> new ArrayList<>()).add(p));
            return index;
        }

        List<PodView> all() {
            return pods;
        }

        List<PodView> pods(String policyNamespace, NetworkPolicyPeer peer) {
            return selected.computeIfAbsent(
                    key(policyNamespace, peer), k -> select(policyNamespace, peer));
        }

        /** @return the addresses of the pods the peer selects, as peers, distinct: one list per peer */
        List<Peer> peers(String policyNamespace, NetworkPolicyPeer peer) {
            return addresses.computeIfAbsent(
                    key(policyNamespace, peer),
                    k -> {
                        List<Peer> peers = new ArrayList<>();
                        pods(policyNamespace, peer)
                                .forEach(p -> p.addresses().forEach(a -> peers.add(Peer.host(a))));
                        return distinct(peers);
                    });
        }

        private static PeerKey key(String policyNamespace, NetworkPolicyPeer peer) {
            return new PeerKey(
                    peer.getNamespaceSelector() == null ? policyNamespace : null,
                    peer.getNamespaceSelector(),
                    peer.getPodSelector());
        }

        /** The namespaces first (the policy's own, or those the selector matches), then their pods. */
        private List<PodView> select(String policyNamespace, NetworkPolicyPeer peer) {
            LabelSelector podSelector = peer.getPodSelector();
            LabelSelector namespaceSelector = peer.getNamespaceSelector();
            Stream<List<PodView>> candidates =
                    namespaceSelector == null
                            ? Stream.of(byNamespace.getOrDefault(policyNamespace, List.of()))
                            : byNamespace.entrySet().stream()
                                    .filter(
                                            e ->
                                                    namespaces.containsKey(e.getKey())
                                                            && LabelSelectors.matches(
                                                                    namespaceSelector,
                                                                    namespaces.get(e.getKey())))
                                    .map(Map.Entry::getValue);
            return candidates
                    .flatMap(List::stream)
                    .filter(
                            p ->
                                    podSelector == null
                                            || LabelSelectors.matches(podSelector, p.labels()))
                    .toList();
        }
    }

    /** What the resolver reads of a pod, checked. */
    private record PodView(
            String namespace,
            String name,
            String node,
            Map<String, String> labels,
            List<InetAddress> addresses,
            List<ContainerPort> ports) {
        String key() {
            return namespace + "/" + name;
        }

        PodView withAddresses(List<InetAddress> lent) {
            return new PodView(namespace, name, node, labels, lent, ports);
        }

        /**
         * @return the pod's view, or null when it does not take part in policy; the addresses are
         *     its status's only
         */
        static PodView of(Pod pod) {
            if (pod.getMetadata() == null
                    || pod.getMetadata().getName() == null
                    || pod.getMetadata().getNamespace() == null
                    || pod.getSpec() == null
                    || Boolean.TRUE.equals(pod.getSpec().getHostNetwork())) {
                return null;
            }
            String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
            if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
                return null;
            }
            List<String> ips = new ArrayList<>();
            if (pod.getStatus() != null) {
                nonNull(pod.getStatus().getPodIPs()).stream().map(PodIP::getIp).forEach(ips::add);
                if (ips.isEmpty() && pod.getStatus().getPodIP() != null) {
                    ips.add(pod.getStatus().getPodIP());
                }
            }
            List<InetAddress> addresses = new ArrayList<>();
            for (String ip : ips) {
                try {
                    addresses.add(IpPrefix.literal(ip));
                } catch (IllegalArgumentException | NullPointerException e) {
                    // not an address: the pod takes part with the others it has
                }
            }
            List<ContainerPort> ports =
                    Stream.concat(
                                    nonNull(pod.getSpec().getInitContainers()).stream(),
                                    nonNull(pod.getSpec().getContainers()).stream())
                            .map(Container::getPorts)
                            .flatMap(p -> nonNull(p).stream())
                            .toList();
            return new PodView(
                    pod.getMetadata().getNamespace(),
                    pod.getMetadata().getName(),
                    pod.getSpec().getNodeName(),
                    labelsOf(pod.getMetadata().getLabels()),
                    distinct(addresses),
                    ports);
        }

        /** The numbers this pod's container ports of those names and protocols have. */
        List<Ports> named(List<NetworkPolicyPort> wanted) {
            List<Ports> found = new ArrayList<>();
            for (NetworkPolicyPort w : wanted) {
                Integer protocol = protocol(w.getProtocol());
                for (ContainerPort c : ports) {
                    Integer own = protocol(c.getProtocol());
                    Integer number = c.getContainerPort();
                    if (w.getPort().getStrVal().equals(c.getName())
                            && Objects.equals(own, protocol)
                            && number != null
                            && number >= 1
                            && number <= 65535) {
                        found.add(new Ports(protocol, number, number));
                    }
                }
            }
            return distinct(found);
        }
    }
}
