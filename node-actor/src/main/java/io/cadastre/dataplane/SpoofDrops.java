package io.cadastre.dataplane;

import io.cadastre.dataplane.Rtnetlink.Link;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * A monotonic count of the packets the pods' source filters dropped, although each filter's count
 * lives in its host end's clsact qdisc and goes with it: the count of a host end about to be
 * deleted is folded in ({@link #retire}), and one found gone (or replaced under its ifindex) since
 * the last reading is folded in with the count last read. A host end that is unplugged (down,
 * its deletion pending) is folded in at once and not read again. Thread-safe.
 */
final class SpoofDrops {
    /** Drops of host ends no longer there. */
    private long retired;

    /** ifindex → the drops last read there. */
    private final Map<Integer, Long> last = new HashMap<>();

    /** ifindexes of host ends folded in by {@link #retire} that may still exist until deleted. */
    private final Set<Integer> folded = new HashSet<>();

    /** @return every drop counted so far, the host ends present now and those gone */
    synchronized long total(Rtnetlink host) throws SyscallException {
        Map<Integer, Long> now = new HashMap<>();
        Map<Integer, Long> drops = host.clsactDrops();
        Set<Integer> present = new HashSet<>();
        for (Link l : host.links()) {
            present.add(l.index());
            Long d = drops.get(l.index());
            if (d != null
                    && !folded.contains(l.index())
                    && "veth".equals(l.kind())
                    && Dataplane.HOST_MAC.equals(l.mac())) {
                now.put(l.index(), d);
            }
        }
        last.forEach(
                (index, seen) -> {
                    Long current = now.get(index);
                    if (current == null || current < seen) {
                        retired += seen; // gone, or another link under the same ifindex
                    }
                });
        last.clear();
        last.putAll(now);
        folded.retainAll(present);
        return retired + now.values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * Folds in the drops of the host end {@code index}, which is about to be deleted or was just
     * set down (no more drops); once per host end, so a host end unplugged first and deleted later
     * is counted once. Best effort.
     */
    synchronized void retire(Rtnetlink host, int index) {
        if (!folded.add(index)) {
            return;
        }
        try {
            Long drops = host.clsactDrops().get(index);
            Long seen = last.remove(index);
            if (drops != null) {
                retired += drops;
            } else if (seen != null) {
                retired += seen;
            }
        } catch (SyscallException e) {
            // Not worth failing a DEL over: the next reading counts what it last saw.
        }
    }
}
