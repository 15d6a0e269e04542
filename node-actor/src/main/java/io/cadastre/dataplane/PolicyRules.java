package io.cadastre.dataplane;

import java.net.InetAddress;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * What Kubernetes NetworkPolicy lets into and out of this node's pods, resolved to addresses and
 * ports: the input of the host's policy table ({@link HostPolicy}). Selectors, namespaces and named
 * ports are gone by now (the kube module resolves them); what is left is, per local pod, its
 * addresses and, per direction, whether it is isolated and which rules let traffic through.
 *
 * <p>Semantics (Kubernetes API reference, NetworkPolicy v1): a pod no policy selects for a
 * direction is not isolated in it, and all its traffic in that direction passes. An isolated pod's
 * traffic passes when any rule of that direction lets it; replies of a connection that passed
 * always pass (connection tracking). Traffic between a pod and its own node is never filtered
 * (the API reference: "traffic to and from the node where a Pod is running is always allowed").
 *
 * @param pods the node's pods that any policy isolates in at least one direction, each once, in
 *     the order of their names
 */
public record PolicyRules(List<PodPolicy> pods) {
    /** No pod isolated: the table holds nothing. */
    public static final PolicyRules NONE = new PolicyRules(List.of());

    public PolicyRules {
        pods = pods.stream().sorted(Comparator.comparing(PodPolicy::pod)).toList();
        for (int i = 1; i < pods.size(); i++) {
            if (pods.get(i).pod().equals(pods.get(i - 1).pod())) {
                throw new IllegalArgumentException("pod " + pods.get(i).pod() + " twice");
            }
        }
    }

    /** @return whether some pod is isolated in some direction */
    public boolean enforced() {
        return pods.stream().anyMatch(p -> p.ingress().isolated() || p.egress().isolated());
    }

    /**
     * One local pod.
     *
     * @param pod its {@code namespace/name}, for names and comments only
     * @param addresses its addresses (IPv4 and IPv6 hosts)
     * @param ingress what may reach it
     * @param egress what it may reach
     */
    public record PodPolicy(
            String pod, List<InetAddress> addresses, Direction ingress, Direction egress) {
        public PodPolicy {
            Objects.requireNonNull(pod, "pod");
            addresses = List.copyOf(addresses);
            Objects.requireNonNull(ingress, "ingress");
            Objects.requireNonNull(egress, "egress");
        }
    }

    /**
     * One direction of one pod.
     *
     * @param isolated whether some policy selects the pod for this direction; when not, {@code
     *     rules} is empty and everything passes
     * @param rules what passes when isolated; none: nothing passes but replies
     */
    public record Direction(boolean isolated, List<Rule> rules) {
        /** Not isolated: everything passes. */
        public static final Direction OPEN = new Direction(false, List.of());

        /** Isolated, no rule: only replies pass. */
        public static final Direction DENY_ALL = new Direction(true, List.of());

        public Direction {
            rules = List.copyOf(rules);
            if (!isolated && !rules.isEmpty()) {
                throw new IllegalArgumentException("rules for a direction that is not isolated");
            }
        }
    }

    /**
     * One rule: traffic from (ingress) or to (egress) one of the peers, on one of the ports.
     *
     * @param peers the other end's networks; empty: any address (the rule's {@code from} or {@code
     *     to} is empty or absent)
     * @param ports the destination ports; empty: any port of any protocol
     */
    public record Rule(List<Peer> peers, List<Ports> ports) {
        public Rule {
            peers = List.copyOf(peers);
            ports = List.copyOf(ports);
        }
    }

    /**
     * The addresses of {@code network} not in any of {@code except}: an {@code ipBlock}, or a
     * selected pod's address as a host prefix with no exceptions.
     *
     * @param network a network in CIDR notation
     * @param except networks inside {@code network}, of its family
     */
    public record Peer(IpPrefix network, List<IpPrefix> except) {
        public Peer {
            Objects.requireNonNull(network, "network");
            except = List.copyOf(except);
            for (IpPrefix e : except) {
                if (e.v4() != network.v4()) {
                    throw new IllegalArgumentException(
                            "exception " + e + " is not of the family of " + network);
                }
            }
        }

        /** A selected pod's address. */
        public static Peer host(InetAddress address) {
            return new Peer(IpPrefix.host(address), List.of());
        }
    }

    /**
     * Destination ports {@code first} to {@code last} (inclusive) of one protocol.
     *
     * @param protocol the IP protocol number: {@link #TCP}, {@link #UDP} or {@link #SCTP}
     * @param first 1 to 65535; 0 with {@code last} 65535 means every port of the protocol
     * @param last {@code first} to 65535
     */
    public record Ports(int protocol, int first, int last) {
        public static final int TCP = 6;
        public static final int UDP = 17;
        public static final int SCTP = 132;

        public Ports {
            if (protocol != TCP && protocol != UDP && protocol != SCTP) {
                throw new IllegalArgumentException(
                        "protocol " + protocol + " is not TCP, UDP or SCTP");
            }
            if (first < 0 || first > last || last > 65535 || (first == 0 && last != 65535)) {
                throw new IllegalArgumentException("ports " + first + "-" + last + " out of range");
            }
        }

        /** Every port of {@code protocol}. */
        public static Ports all(int protocol) {
            return new Ports(protocol, 0, 65535);
        }

        /** @return whether this is every port of its protocol */
        public boolean everyPort() {
            return first == 0;
        }
    }
}
