package io.cadastre.chaos;

import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
import io.cadastre.testsupport.PodNamespaces;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One workload client on one host, as a container runtime: it ADDs new attachments (mostly
 * IPAM-only, a share with the full plugin and a real pod netns), DELs its own, and now and then
 * repeats the ADD of a live one. It never leaves an attachment in doubt: after an ADD with an
 * unknown outcome it either repeats the ADD until the answer is definite or DELs the attachment
 * (a coin toss, as runtimes do one or the other), and after a failed ADD, or to remove one, it
 * DELs until the DEL succeeds. Its choices come from its own seeded {@link Random}.
 *
 * <p>Lifecycle: {@link #run} until {@link #stop}; after the stop it still finishes the attachment
 * in hand (bounded by the stop's deadline). {@link #live()} and {@link #unresolved()} are read
 * after the thread ended.
 */
final class Client implements Runnable {
    /** An attachment this client holds, as it was acknowledged. */
    record Live(Attachment attachment, boolean full, List<String> addresses) {}

    private final Calls calls;
    private final PodNamespaces pods;
    private final String host;
    private final int index;
    private final Random random;
    private final ChaosSettings settings;
    private final List<Live> live = new ArrayList<>();
    private final List<Live> unresolved = new ArrayList<>();
    private volatile boolean stopped;
    private volatile long resolveDeadline = Long.MAX_VALUE;
    private int created;
    private int target;

    Client(
            Calls calls,
            PodNamespaces pods,
            String host,
            int index,
            long seed,
            ChaosSettings settings) {
        this.calls = calls;
        this.pods = pods;
        this.host = host;
        this.index = index;
        this.random = new Random(seed);
        this.settings = settings;
        this.target = drawTarget();
    }

    String name() {
        return host + "-c" + index;
    }

    /** Stops issuing new operations; the attachment in hand is settled until {@code deadlineNanos} (System.nanoTime). */
    void stop(long deadlineNanos) {
        resolveDeadline = deadlineNanos;
        stopped = true;
    }

    /** @return the attachments held at the end (read after the thread ended) */
    List<Live> live() {
        return List.copyOf(live);
    }

    /** @return attachments left in doubt because the deadline passed (read after the thread ended) */
    List<Live> unresolved() {
        return List.copyOf(unresolved);
    }

    @Override
    public void run() {
        while (!stopped && !Thread.currentThread().isInterrupted()) {
            step();
            pause(ThreadLocalRandom.current().nextInt(settings.thinkMillis() + 1));
        }
    }

    private void step() {
        if (random.nextInt(100) == 0) {
            target = drawTarget();
        }
        double p = random.nextDouble();
        if (live.isEmpty()) {
            addNew();
        } else if (p < settings.retryShare()) {
            retry(live.get(random.nextInt(live.size())));
        } else if (live.size() < target ? p < 0.8 : p < 0.2) {
            addNew();
        } else {
            delete(live.remove(random.nextInt(live.size())));
        }
    }

    /** Each client aims at a share of the IPv4 pool that wanders; together they sometimes exhaust it. */
    private int drawTarget() {
        int fair = settings.ipv4PoolSize() / (settings.hosts() * settings.clientsPerHost());
        return (int) Math.round(fair * (0.5 + random.nextDouble() * 0.75));
    }

    private void addNew() {
        Attachment a = new Attachment(host, String.format("%sc%dn%05d", host, index, created++));
        boolean full = random.nextDouble() < settings.fullShare();
        if (full && !createNetns(a)) {
            return;
        }
        Operation op = calls.add(Phase.WORKLOAD, Purpose.NEW, index, a, full);
        switch (op.status()) {
            case OK -> live.add(new Live(a, full, op.addresses()));
            case FAIL -> release(a, full);
            case UNKNOWN -> {
                if (random.nextBoolean()) {
                    resolve(a, full);
                } else {
                    release(a, full);
                }
            }
        }
    }

    private void retry(Live l) {
        Operation op = calls.add(Phase.WORKLOAD, Purpose.RETRY, index, l.attachment(), l.full());
        if (!op.ok()) {
            // A runtime whose ADD failed DELs the attachment (a failed full ADD has rolled back).
            live.remove(l);
            release(l.attachment(), l.full());
        }
    }

    private void delete(Live l) {
        release(l.attachment(), l.full());
    }

    /** Repeats the ADD until its answer is definite; a failure is then DELed. */
    private void resolve(Attachment a, boolean full) {
        while (true) {
            backoff();
            if (System.nanoTime() > resolveDeadline) {
                unresolved.add(new Live(a, full, List.of()));
                return;
            }
            Operation op = calls.add(Phase.WORKLOAD, Purpose.RESOLVE, index, a, full);
            if (op.ok()) {
                live.add(new Live(a, full, op.addresses()));
                return;
            }
            if (op.status() == Status.FAIL) {
                release(a, full);
                return;
            }
        }
    }

    /** DELs until the DEL succeeds, then removes the pod netns. */
    private void release(Attachment a, boolean full) {
        while (true) {
            Operation op = calls.del(Phase.WORKLOAD, Purpose.RELEASE, index, a, full);
            if (op.ok()) {
                if (full) {
                    removeNetns(a);
                }
                return;
            }
            if (System.nanoTime() > resolveDeadline) {
                unresolved.add(new Live(a, full, List.of()));
                return;
            }
            backoff();
        }
    }

    private boolean createNetns(Attachment a) {
        try {
            pods.create(a.containerId());
            return true;
        } catch (Exception e) {
            calls.history()
                    .event(
                            "netns-failed",
                            host,
                            "ip netns add " + pods.name(a.containerId()) + ": " + e.getMessage());
            return false;
        }
    }

    private void removeNetns(Attachment a) {
        try {
            pods.remove(pods.name(a.containerId()));
        } catch (Exception e) {
            calls.history()
                    .event(
                            "netns-failed",
                            host,
                            "ip netns del " + pods.name(a.containerId()) + ": " + e.getMessage());
        }
    }

    /** After a failure: 100-500 ms, as a runtime backs off (and not to spin on a dead agent). */
    private static void backoff() {
        pause(100 + ThreadLocalRandom.current().nextInt(400));
    }

    private static void pause(long millis) {
        if (millis > 0) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(millis));
        }
    }
}
