package io.cadastre.kube;

import io.cadastre.cni.CniText;
import io.cadastre.ipam.IpAddresses;
import io.cadastre.shards.CborSerializable;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.LongSupplier;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.AddressFromURIString;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.JoinSeedNodes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Cluster formation from the Kubernetes API, the rule of Pekko Management's Cluster Bootstrap
 * built on fabric8's client (cluster/DESIGN.md says why that library cannot be used here): the
 * agents find each other as the pods of their DaemonSet (the label selector, in the agents'
 * namespace), and ask each found agent over the cluster port whether it is a member of a cluster
 * (the {@link #responder()} every agent runs at {@value #PROBE_NAME}; with TLS on, only members of
 * the cluster's CA can ask). Every {@code probe-interval}:
 * <ol>
 *   <li>list the pods; each Running pod with an IP is a contact point at that IP (as Pekko writes
 *       a host: an IPv6 one in brackets) and its container port named {@code port-name} (else
 *       this member's own port). A change of the set restarts the stability clock; contact points
 *       and answers are matched by IP and port, however the address is written;
 *   <li>ask every contact point but this member;
 *   <li>if any answered that it is a member (Up): join the members that said so
 *       ({@code JoinSeedNodes}: Pekko retries them, and never forms a cluster from there) — so a
 *       restarted lone member joins the running cluster;
 *   <li>else form a new cluster ({@code Join} of itself) only when all of these hold: at least
 *       {@code required-contact-points} contact points, this member among them and the
 *       lowest-addressed (by IP, then port), the set unchanged for {@code stable-margin}, and
 *       every other contact point answered "not a member" since the set last changed (a silent one
 *       blocks forming: it may be a member that cannot be asked right now).
 * </ol>
 * A member whose own pod (the one bound to its node) is listed at another address than the
 * member's own is not a contact point and is reached by no agent: it warns, naming both addresses and
 * the settings to change ({@code cadastre.cluster.hostname}, or bootstrap off for one node). The
 * actor stops once it has sent its join; Pekko takes over from there. Seed nodes
 * ({@code cadastre.cluster.seed-nodes}) stay for clusters without Kubernetes.
 */
public final class ClusterBootstrap {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterBootstrap.class);

    /** The name of the {@link #responder()} under the user guardian: {@code /user/cadastre-bootstrap-probe}. */
    public static final String PROBE_NAME = "cadastre-bootstrap-probe";

    private ClusterBootstrap() {}

    /** The bootstrap's messages: its timer, the pod list, and the probes' answers (remote). */
    public sealed interface Command permits Tick, Listed, ProbeReply {}

    private enum Tick implements Command {
        INSTANCE
    }

    /**
     * @param contactPoints the Running agents' pods as contact points
     * @param ownPod the contact point of the pod bound to this node, if it was among them
     * @param failure why the list failed, or null
     */
    private record Listed(List<Address> contactPoints, Address ownPod, Throwable failure)
            implements Command {}

    /** "Are you a member of a cluster?", sent to another agent's {@link #responder()} over the cluster port. */
    public record Probe(ActorRef<ProbeReply> replyTo) implements CborSerializable {}

    /**
     * The answer.
     *
     * @param address the answering member's address ({@code pekko://name@host:port})
     * @param member whether it is Up (or WeaklyUp) in a cluster
     */
    public record ProbeReply(String address, boolean member) implements Command, CborSerializable {}

    /** @return what every agent runs at {@value #PROBE_NAME}: answers whether this member is in a cluster */
    public static Behavior<Probe> responder() {
        return Behaviors.setup(
                ctx -> {
                    Cluster cluster = Cluster.get(ctx.getSystem());
                    return Behaviors.receiveMessage(
                            probe -> {
                                MemberStatus status = cluster.selfMember().status();
                                probe.replyTo()
                                        .tell(
                                                new ProbeReply(
                                                        cluster.selfMember().address().toString(),
                                                        status == MemberStatus.up()
                                                                || status
                                                                        == MemberStatus
                                                                                .weaklyUp()));
                                return Behaviors.same();
                            });
                });
    }

    /**
     * @param api the API, for the agents' pods
     * @param settings {@code cadastre.kubernetes.bootstrap}
     * @param nanoClock monotonic time in nanoseconds ({@code System::nanoTime})
     * @return the bootstrap: starts at once, stops once it has sent a join
     */
    public static Behavior<Command> create(
            KubeApi api, KubeSettings.Bootstrap settings, LongSupplier nanoClock) {
        return Behaviors.setup(
                ctx ->
                        Behaviors.withTimers(
                                timers -> {
                                    timers.startTimerWithFixedDelay(
                                            Tick.INSTANCE, Duration.ZERO, settings.probeInterval());
                                    return new Round(ctx, api, settings, nanoClock).behavior();
                                }));
    }

    /** The bootstrap's state; the actor's thread only. */
    private static final class Round {
        private final ActorContext<Command> ctx;
        private final KubeApi api;
        private final KubeSettings.Bootstrap settings;
        private final LongSupplier nanoClock;
        private final Address self;
        private Set<Address> contactPoints = Set.of();
        private long changedAt;
        private boolean listing;
        private Address ownPodWarnedAt;

        /**
         * contact point → its last answer and when it came; keyed in {@link #ORDER} (IP as a number,
         * port), as {@link #contactPoints}, so that an answer is the contact point's however either
         * spells the address.
         */
        private final Map<Address, Answer> answers = new TreeMap<>(ORDER);

        /** @param reported the member's address as it wrote it: where a join goes */
        private record Answer(boolean member, long atNanos, Address reported) {}

        Round(
                ActorContext<Command> ctx,
                KubeApi api,
                KubeSettings.Bootstrap settings,
                LongSupplier nanoClock) {
            this.ctx = ctx;
            this.api = api;
            this.settings = settings;
            this.nanoClock = nanoClock;
            this.self = Cluster.get(ctx.getSystem()).selfMember().address();
            this.changedAt = nanoClock.getAsLong();
            LOG.info(
                    "cluster bootstrap: looking for agents (pods '{}' in namespace {}); a new cluster needs {} of them",
                    settings.podLabelSelector(),
                    api.namespace(),
                    settings.requiredContactPoints());
        }

        Behavior<Command> behavior() {
            return Behaviors.receive(Command.class)
                    .onMessage(
                            Tick.class,
                            tick -> {
                                if (!listing) {
                                    listing = true;
                                    ctx.pipeToSelf(
                                            api.pods(settings.podLabelSelector()),
                                            (pods, failure) ->
                                                    failure == null
                                                            ? listed(pods)
                                                            : new Listed(List.of(), null, failure));
                                }
                                return Behaviors.same();
                            })
                    .onMessage(Listed.class, this::onListed)
                    .onMessage(
                            ProbeReply.class,
                            reply -> {
                                try {
                                    Address from = AddressFromURIString.parse(reply.address());
                                    answers.put(
                                            from,
                                            new Answer(
                                                    reply.member(), nanoClock.getAsLong(), from));
                                } catch (RuntimeException e) {
                                    LOG.warn(
                                            "cluster bootstrap: an answer names no address: {}",
                                            CniText.quoted(reply.address()));
                                }
                                return Behaviors.same();
                            })
                    .build();
        }

        private Behavior<Command> onListed(Listed listed) {
            listing = false;
            if (listed.failure() != null) {
                LOG.warn(
                        "cluster bootstrap: the agents' pods cannot be listed ({}); trying again",
                        listed.failure().toString());
                return Behaviors.same();
            }
            warnIfOwnPodIsElsewhere(listed.ownPod());
            long now = nanoClock.getAsLong();
            Set<Address> found = new TreeSet<>(ORDER);
            found.addAll(listed.contactPoints());
            if (!found.equals(contactPoints)) {
                LOG.info("cluster bootstrap: contact points {}", found);
                contactPoints = found;
                changedAt = now;
            }
            answers.keySet().retainAll(found);
            // A member found: join the running cluster, never form another.
            List<Address> members =
                    answers.values().stream()
                            .filter(Answer::member)
                            .map(Answer::reported)
                            .sorted(ORDER)
                            .toList();
            if (!members.isEmpty()) {
                LOG.info("cluster bootstrap: joining the cluster of {}", members);
                Cluster.get(ctx.getSystem()).manager().tell(new JoinSeedNodes(members));
                return Behaviors.stopped();
            }
            if (mayForm(now)) {
                LOG.info(
                        "cluster bootstrap: no agent of {} is in a cluster and this one has the lowest address: forming"
                                + " a new cluster",
                        found);
                Cluster.get(ctx.getSystem()).manager().tell(Join.create(self));
                return Behaviors.stopped();
            }
            ActorRef<ProbeReply> replyTo = ctx.getSelf().narrow();
            for (Address contact : found) {
                if (!same(contact, self)) {
                    Adapter.toClassic(ctx.getSystem())
                            .actorSelection(contact + "/user/" + PROBE_NAME)
                            .tell(new Probe(replyTo), org.apache.pekko.actor.ActorRef.noSender());
                }
            }
            return Behaviors.same();
        }

        private boolean mayForm(long now) {
            if (contactPoints.size() < settings.requiredContactPoints()
                    || !contactPoints.contains(self)
                    || !same(contactPoints.iterator().next(), self)) {
                return false;
            }
            if (now - changedAt < settings.stableMargin().toNanos()) {
                return false;
            }
            return contactPoints.stream()
                    .filter(c -> !same(c, self))
                    .allMatch(
                            c -> {
                                Answer a = answers.get(c);
                                return a != null && !a.member() && a.atNanos() >= changedAt;
                            });
        }

        /**
         * A member whose own pod is listed at another address is reached by no agent (they probe
         * the pod's address) and never forms a cluster (it is not among the contact points): the
         * operator hears why, once for each address the pod is found at.
         */
        private void warnIfOwnPodIsElsewhere(Address ownPod) {
            if (ownPod == null || same(ownPod, self) || ownPod.equals(ownPodWarnedAt)) {
                return;
            }
            ownPodWarnedAt = ownPod;
            LOG.warn(
                    "cluster bootstrap: this node's agent pod is at {}, but this member listens at {}: no agent"
                            + " reaches it and it forms no cluster; set cadastre.cluster.hostname (the"
                            + " DaemonSet passes status.hostIP as CADASTRE_CLUSTER_HOSTNAME) to the pod's"
                            + " IP, or for a cluster of one node turn cadastre.kubernetes.bootstrap.enabled"
                            + " off",
                    ownPod,
                    self);
        }

        /** @return the pods as contact points, and this node's pod among them */
        private Listed listed(List<Pod> pods) {
            Address ownPod = null;
            List<Address> found = new ArrayList<>();
            for (Pod pod : pods) {
                Optional<Address> contact = contactPoint(pod);
                contact.ifPresent(found::add);
                if (contact.isPresent()
                        && pod.getSpec() != null
                        && api.nodeName().equals(pod.getSpec().getNodeName())) {
                    ownPod = contact.get();
                }
            }
            return new Listed(found, ownPod, null);
        }

        /** @return the pod as a contact point: Running, with an IP, at the named port or this member's */
        private Optional<Address> contactPoint(Pod pod) {
            if (pod.getStatus() == null || !"Running".equals(pod.getStatus().getPhase())) {
                return Optional.empty();
            }
            Optional<String> ip =
                    Optional.ofNullable(pod.getStatus().getPodIP())
                            .filter(ClusterBootstrap::isIpLiteral);
            if (ip.isEmpty()) {
                return Optional.empty();
            }
            int port = namedPort(pod, settings.portName()).orElse(self.getPort().orElse(0));
            if (port <= 0 || port > 65535) {
                return Optional.empty();
            }
            return Optional.of(new Address(self.protocol(), self.system(), host(ip.get()), port));
        }
    }

    private static Optional<Integer> namedPort(Pod pod, String name) {
        if (pod.getSpec() == null || pod.getSpec().getContainers() == null) {
            return Optional.empty();
        }
        for (Container c : pod.getSpec().getContainers()) {
            if (c.getPorts() != null) {
                for (ContainerPort p : c.getPorts()) {
                    if (name.equals(p.getName()) && p.getContainerPort() != null) {
                        return Optional.of(p.getContainerPort());
                    }
                }
            }
        }
        return Optional.empty();
    }

    /**
     * @param ip a pod IP, a literal ({@link #isIpLiteral})
     * @return the host of its Pekko address: the canonical form (RFC 5952 for IPv6), an IPv6 one in
     *     brackets as Pekko writes it ({@code pekko://cadastre@[fd00::7]:2552}); without them the
     *     address names no host Pekko can reach, and never equals a member's own
     */
    static String host(String ip) {
        String canonical = IpAddresses.canonical(ip);
        return canonical.contains(":") ? "[" + canonical + "]" : canonical;
    }

    /** @return whether the two addresses are the same contact point: the same IP (however written) and port */
    static boolean same(Address a, Address b) {
        return ORDER.compare(a, b) == 0;
    }

    /** A pod IP from the API: used only when it is a literal address (never a name to resolve). */
    static boolean isIpLiteral(String s) {
        try {
            IpAddresses.canonical(s);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** Contact points by address (IP as a number, IPv4 before IPv6), then port: "lowest-addressed" is the first. */
    static final Comparator<Address> ORDER =
            Comparator.comparing((Address a) -> hostKey(a))
                    .thenComparing(a -> a.getPort().orElse(0));

    /** IPv4 as its number, IPv6 above every IPv4, a name (never resolved) above both. */
    private static BigInteger hostKey(Address a) {
        String host = a.getHost().orElse("");
        String literal =
                host.startsWith("[") && host.endsWith("]")
                        ? host.substring(1, host.length() - 1)
                        : host;
        if (!isIpLiteral(literal)) {
            return BigInteger.ONE.shiftLeft(129);
        }
        try {
            // A literal: InetAddress parses it without a lookup.
            byte[] bytes = InetAddress.getByName(IpAddresses.canonical(literal)).getAddress();
            return new BigInteger(1, bytes)
                    .add(bytes.length == 4 ? BigInteger.ZERO : BigInteger.ONE.shiftLeft(32));
        } catch (UnknownHostException e) {
            return BigInteger.ONE.shiftLeft(129);
        }
    }
}
