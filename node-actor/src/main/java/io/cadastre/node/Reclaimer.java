package io.cadastre.node;

import io.cadastre.shards.AttachmentRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reconciliation inside the agent (issue 4, "leak-free by design"): the addresses of an attachment
 * whose network namespace no longer exists on this host, and that no DEL released, are released
 * after a grace period, exactly as a DEL would release them.
 *
 * <p>The {@link NodeAgent} owns the work: every {@link #interval()} it lists the node's
 * attachments, has {@link #probe} look at their netns paths (off the actor), and hands the result
 * to {@link #observe}, which keeps, per attachment, since when its netns has been seen gone and
 * answers the attachments gone for at least {@link #grace()}. The node agent then releases each of
 * those in the attachment's own slot of its per-attachment queue, after checking once more that
 * the record and the absence still hold, so a reclaim never overlaps an ADD, DEL or CHECK of the
 * same attachment.
 *
 * <p>With Kubernetes, an attachment whose pod is gone from the API ({@link PodPresence}: a synced
 * cache lacks it and a GET confirms) counts as gone too, with the same grace and the same release
 * ({@link Cause#POD_GONE}): the kubelet that should have sent DEL may be gone with its node's
 * state, and the namespace file may outlive it. An attachment without a pod (outside Kubernetes,
 * the mesh's tunnel addresses) is never reclaimed by this rule.
 *
 * <p>Why a grace period: the runtime may remove the namespace and still be about to send DEL (or
 * retrying one), and Kubernetes' own GC follows; the reclaim is for the cases where neither comes
 * (a runtime crash, a node reboot without the runtime's state, a bug). A vanished netns does not
 * come back, but a path can: such an attachment leaves the missing set and its clock starts over.
 *
 * <p>Rules: an attachment without a recorded netns path (recorded before paths were, or whose
 * path the agent could not see at ADD) is never reclaimed by this rule; CNI GC still applies. An
 * attachment with an operation in flight is skipped in that round (and keeps its clock). One that
 * disappeared from the listing (a DEL or GC released it) leaves the missing set.
 *
 * <p>Lifecycle and threads: created with the agent and handed to the node agent. The missing set
 * is touched only from the node agent's actor ({@link #observe}, {@link #forget}); {@link #probe} runs on a dataplane thread; the counters may be read from
 * any thread. Time comes from an injected monotonic clock, so tests drive it.
 */
public final class Reclaimer {
    private static final Logger LOG = LoggerFactory.getLogger(Reclaimer.class);

    private final Duration interval;
    private final Duration grace;
    private final NetnsPresence presence;
    private final PodPresence pods;
    private final LongSupplier nanoClock;

    /** Attachment key → its netns path and since when it has been seen gone; node agent's actor only. */
    private final Map<String, Missing> missing = new HashMap<>();

    private final AtomicLong reclaimed = new AtomicLong();
    private volatile int candidates;

    private record Missing(String netnsPath, long sinceNanos) {}

    /** What is gone. */
    public enum Cause {
        /** The attachment's netns path no longer exists ({@link NetnsPresence}). */
        NETNS_GONE,
        /** The attachment's pod no longer exists in the Kubernetes API ({@link PodPresence}). */
        POD_GONE
    }

    /**
     * One attachment and what the probe saw.
     *
     * @param attachment as listed by the node, with a netns path or a pod
     * @param gone whether its netns path is gone ({@link NetnsPresence#isGone}) or its pod
     *     ({@link PodPresence#isGone})
     * @param cause which of the two, when gone
     */
    public record Observation(AttachmentRecord attachment, boolean gone, Cause cause) {
        /** An observation of the netns. */
        public Observation(AttachmentRecord attachment, boolean gone) {
            this(attachment, gone, Cause.NETNS_GONE);
        }
    }

    /**
     * An attachment to release.
     *
     * @param attachment as listed when it became due
     * @param goneFor how long its netns or pod has been seen gone, at least the grace
     * @param cause what is gone at the last look
     */
    public record Due(AttachmentRecord attachment, Duration goneFor, Cause cause) {
        /** A netns gone. */
        public Due(AttachmentRecord attachment, Duration goneFor) {
            this(attachment, goneFor, Cause.NETNS_GONE);
        }
    }

    /**
     * @param interval how often the node's attachments are looked at; positive
     * @param grace how long a netns must have been gone before its attachment is released; positive
     * @param presence tells whether a netns path is gone
     * @param nanoClock monotonic time in nanoseconds ({@code System::nanoTime} in production)
     * @throws IllegalArgumentException if a duration is not positive
     */
    public Reclaimer(
            Duration interval, Duration grace, NetnsPresence presence, LongSupplier nanoClock) {
        this(interval, grace, presence, PodPresence.NONE, nanoClock);
    }

    /**
     * As {@link #Reclaimer(Duration, Duration, NetnsPresence, LongSupplier)}, with the pods of the
     * Kubernetes API.
     *
     * @param pods tells whether an attachment's pod is gone from the API
     */
    public Reclaimer(
            Duration interval,
            Duration grace,
            NetnsPresence presence,
            PodPresence pods,
            LongSupplier nanoClock) {
        if (interval.isNegative() || interval.isZero() || grace.isNegative() || grace.isZero()) {
            throw new IllegalArgumentException(
                    "reclaim interval and grace must be positive: " + interval + ", " + grace);
        }
        this.interval = interval;
        this.grace = grace;
        this.presence = presence;
        this.pods = pods;
        this.nanoClock = nanoClock;
    }

    /** @return a reclaimer on the real file system and clock */
    public static Reclaimer onThisHost(Duration interval, Duration grace) {
        return onThisHost(interval, grace, PodPresence.NONE);
    }

    /** @return a reclaimer on the real file system and clock, and these pods */
    public static Reclaimer onThisHost(Duration interval, Duration grace, PodPresence pods) {
        return new Reclaimer(interval, grace, NetnsPresence.FILES, pods, System::nanoTime);
    }

    /** @return how often the node's attachments are looked at */
    public Duration interval() {
        return interval;
    }

    /** @return how long a netns must have been gone before its attachment is released */
    public Duration grace() {
        return grace;
    }

    /**
     * The node agent counts the same releases in {@code cadastre_ipam_allocations_gc_reclamations_total{reason="netns-gone"}}.
     *
     * @return how many attachments have been released because their netns or pod was gone, since start
     */
    public long reclaimed() {
        return reclaimed.get();
    }

    /**
     * Exposed as {@code cadastre_ipam_allocations_gc_candidates} (the node agent registers it).
     *
     * @return how many attachments had a gone netns at the last look and wait for the grace to
     *     pass or for their release
     */
    public int candidates() {
        return candidates;
    }

    /**
     * Looks at the netns path of every attachment that has one, and at the pod of those whose
     * netns is there or unknown. Blocks on the file system and, for a pod missing from the API's
     * cache, on one bounded GET: call it on a dataplane thread.
     *
     * @param attachments the node's attachments
     * @return one observation per attachment with a netns path or a pod, in the same order
     */
    List<Observation> probe(Collection<AttachmentRecord> attachments) {
        List<Observation> seen = new ArrayList<>();
        for (AttachmentRecord a : attachments) {
            if (a.netnsPath() == null && !hasPod(a)) {
                continue;
            }
            Cause cause = goneCause(a);
            seen.add(new Observation(a, cause != null, cause == null ? Cause.NETNS_GONE : cause));
        }
        return seen;
    }

    /** @return what of the attachment is gone now, or null when neither its netns nor its pod is; blocks */
    Cause goneCause(AttachmentRecord a) {
        if (a.netnsPath() != null && isGone(a.netnsPath())) {
            return Cause.NETNS_GONE;
        }
        return hasPod(a) && pods.isGone(a.podNamespace(), a.podName()) ? Cause.POD_GONE : null;
    }

    private static boolean hasPod(AttachmentRecord a) {
        return a.podNamespace() != null && a.podName() != null;
    }

    /** @return whether the netns path is gone now; blocks on the file system */
    boolean isGone(String netnsPath) {
        return presence.isGone(netnsPath);
    }

    /**
     * Takes in one look at the node's attachments and answers those to release now. Node agent's
     * actor only.
     *
     * @param observations the result of {@link #probe} over every attachment the node lists
     * @param busy keys of attachments with an operation in flight or queued: skipped this time,
     *     their clocks kept
     * @return the attachments whose netns has been gone for at least the grace, in observation order
     */
    List<Due> observe(List<Observation> observations, Set<String> busy) {
        long now = nanoClock.getAsLong();
        Set<String> listed = new HashSet<>();
        List<Due> due = new ArrayList<>();
        for (Observation o : observations) {
            AttachmentRecord a = o.attachment();
            String key = a.key();
            listed.add(key);
            if (busy.contains(key)) {
                continue;
            }
            Missing m = missing.get(key);
            if (!o.gone()) {
                if (m != null) {
                    LOG.info(
                            "netns {} and pod {} of attachment {} are back: not reclaimed",
                            a.netnsPath(),
                            pod(a),
                            key);
                    missing.remove(key);
                }
                continue;
            }
            if (m == null || !Objects.equals(m.netnsPath(), a.netnsPath())) {
                LOG.info(
                        "{} of attachment {} is gone without a DEL: its addresses {} are released after {}"
                                + " unless a DEL comes first",
                        o.cause() == Cause.POD_GONE ? "pod " + pod(a) : "netns " + a.netnsPath(),
                        key,
                        addresses(a),
                        grace);
                missing.put(key, new Missing(a.netnsPath(), now));
                continue;
            }
            Duration goneFor = Duration.ofNanos(now - m.sinceNanos());
            if (goneFor.compareTo(grace) >= 0) {
                due.add(new Due(a, goneFor, o.cause()));
            }
        }
        missing.keySet().retainAll(listed);
        candidates = missing.size();
        return due;
    }

    /**
     * The attachment leaves the missing set: it was released, or the runtime is working on it again
     * (an ADD or DEL arrived), and its clock starts over. Node agent's actor only.
     */
    void forget(String key) {
        if (missing.remove(key) != null) {
            candidates = missing.size();
        }
    }

    /** Counts and logs one release. Any thread (the counter is atomic). */
    void countReclaim(Due due, List<String> released) {
        reclaimed.incrementAndGet();
        AttachmentRecord a = due.attachment();
        LOG.info(
                "reclaimed attachment {} (handle {}, ifname {}): {} gone for {} ms without a DEL; released {}",
                a.key(),
                a.handle(),
                a.ifname(),
                due.cause() == Cause.POD_GONE ? "pod " + pod(a) : "netns " + a.netnsPath(),
                due.goneFor().toMillis(),
                released);
    }

    private static String pod(AttachmentRecord a) {
        return a.podNamespace() + "/" + a.podName();
    }

    private static List<String> addresses(AttachmentRecord a) {
        return a.addresses().stream().map(h -> h.address()).toList();
    }
}
