package io.cadastre.node;

import io.cadastre.shards.AttachmentRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
    private final LongSupplier nanoClock;

    /** Attachment key → its netns path and since when it has been seen gone; node agent's actor only. */
    private final Map<String, Missing> missing = new HashMap<>();
    private final AtomicLong reclaimed = new AtomicLong();
    private volatile int candidates;

    private record Missing(String netnsPath, long sinceNanos) {}

    /**
     * One attachment and what the probe saw.
     *
     * @param attachment as listed by the node, with a netns path
     * @param gone whether its netns path is gone ({@link NetnsPresence#isGone})
     */
    public record Observation(AttachmentRecord attachment, boolean gone) {}

    /**
     * An attachment to release.
     *
     * @param attachment as listed when it became due
     * @param goneFor how long its netns has been seen gone, at least the grace
     */
    public record Due(AttachmentRecord attachment, Duration goneFor) {}

    /**
     * @param interval how often the node's attachments are looked at; positive
     * @param grace how long a netns must have been gone before its attachment is released; positive
     * @param presence tells whether a netns path is gone
     * @param nanoClock monotonic time in nanoseconds ({@code System::nanoTime} in production)
     * @throws IllegalArgumentException if a duration is not positive
     */
    public Reclaimer(Duration interval, Duration grace, NetnsPresence presence, LongSupplier nanoClock) {
        if (interval.isNegative() || interval.isZero() || grace.isNegative() || grace.isZero()) {
            throw new IllegalArgumentException("reclaim interval and grace must be positive: " + interval + ", " + grace);
        }
        this.interval = interval;
        this.grace = grace;
        this.presence = presence;
        this.nanoClock = nanoClock;
    }

    /** @return a reclaimer on the real file system and clock */
    public static Reclaimer onThisHost(Duration interval, Duration grace) {
        return new Reclaimer(interval, grace, NetnsPresence.FILES, System::nanoTime);
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
     * @return how many attachments have been released because their netns was gone, since start
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
     * Looks at the netns path of every attachment that has one. Blocks on the file system: call
     * it on a dataplane thread.
     *
     * @param attachments the node's attachments
     * @return one observation per attachment with a netns path, in the same order
     */
    List<Observation> probe(Collection<AttachmentRecord> attachments) {
        List<Observation> seen = new ArrayList<>();
        for (AttachmentRecord a : attachments) {
            if (a.netnsPath() != null) {
                seen.add(new Observation(a, isGone(a.netnsPath())));
            }
        }
        return seen;
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
                    LOG.info("netns {} of attachment {} is back: not reclaimed", a.netnsPath(), key);
                    missing.remove(key);
                }
                continue;
            }
            if (m == null || !m.netnsPath().equals(a.netnsPath())) {
                LOG.info("netns {} of attachment {} is gone without a DEL: its addresses {} are released after {}"
                        + " unless a DEL comes first", a.netnsPath(), key, addresses(a), grace);
                missing.put(key, new Missing(a.netnsPath(), now));
                continue;
            }
            Duration goneFor = Duration.ofNanos(now - m.sinceNanos());
            if (goneFor.compareTo(grace) >= 0) {
                due.add(new Due(a, goneFor));
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
        LOG.info("reclaimed attachment {} (handle {}, ifname {}): netns {} gone for {} ms without a DEL; released {}",
                a.key(), a.handle(), a.ifname(), a.netnsPath(), due.goneFor().toMillis(), released);
    }

    private static List<String> addresses(AttachmentRecord a) {
        return a.addresses().stream().map(h -> h.address()).toList();
    }
}
