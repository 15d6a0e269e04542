package io.cadastre.chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The fault schedule, a pure function of the seed: first the mandatory faults in a shuffled
 * order, then, for as long as the run asks, faults drawn at random (kills half of the time). Every
 * parameter (victim, how long, the gap before it) is drawn here too, so a seed names one schedule;
 * what the processes do meanwhile is up to the machine. Faults are injected one at a time.
 */
final class FaultPlan {
    enum Kind {
        KILL,
        PAUSE,
        PARTITION,
        CASSANDRA_RESTART
    }

    /**
     * @param host the victim, 1-based (0 for a Cassandra restart)
     * @param millis KILL: delay before the restart; PAUSE: SIGSTOP to SIGCONT; PARTITION: until the heal
     * @param gapMillis quiet time before the fault, after the previous one has been recovered from
     */
    record Fault(Kind kind, int host, long millis, long gapMillis) {
        String target() {
            return kind == Kind.CASSANDRA_RESTART ? "db" : "h" + host;
        }
    }

    private final Random random;
    private final int hosts;
    private final List<Fault> mandatory = new ArrayList<>();
    private int next;

    FaultPlan(long seed, int hosts, int kills, int pauses, int partitions, int cassandraRestarts) {
        this.random = new Random(seed ^ 0x5DEECE66DL);
        this.hosts = hosts;
        List<Kind> kinds = new ArrayList<>();
        kinds.addAll(Collections.nCopies(kills, Kind.KILL));
        kinds.addAll(Collections.nCopies(pauses, Kind.PAUSE));
        kinds.addAll(Collections.nCopies(partitions, Kind.PARTITION));
        kinds.addAll(Collections.nCopies(cassandraRestarts, Kind.CASSANDRA_RESTART));
        Collections.shuffle(kinds, random);
        kinds.forEach(k -> mandatory.add(draw(k)));
    }

    static FaultPlan of(ChaosSettings s) {
        return new FaultPlan(
                s.seed(), s.hosts(), s.kills(), s.pauses(), s.partitions(), s.cassandraRestarts());
    }

    /** @return how many faults must be injected whatever the time */
    int mandatoryCount() {
        return mandatory.size();
    }

    /** @return the next fault: a mandatory one while any is left, else a random one */
    Fault next() {
        if (next < mandatory.size()) {
            return mandatory.get(next++);
        }
        next++;
        int roll = random.nextInt(10);
        return draw(
                roll < 5
                        ? Kind.KILL
                        : roll < 7
                                ? Kind.PAUSE
                                : roll < 9 ? Kind.PARTITION : Kind.CASSANDRA_RESTART);
    }

    private Fault draw(Kind kind) {
        int host = kind == Kind.CASSANDRA_RESTART ? 0 : 1 + random.nextInt(hosts);
        long millis =
                switch (kind) {
                    case KILL -> 500 + random.nextInt(3_500); // restart after 0.5-4 s
                    case PAUSE ->
                            // 8-12 s: beyond detection (~3.5 s) + stable-after (3 s)
                            8_000 + random.nextInt(4_001);
                    case PARTITION -> 10_000 + random.nextInt(5_001); // 10-15 s
                    case CASSANDRA_RESTART -> 0;
                };
        long gap = 500 + random.nextInt(2_001); // the workload's own jitter does the rest
        return new Fault(kind, host, millis, gap);
    }
}
