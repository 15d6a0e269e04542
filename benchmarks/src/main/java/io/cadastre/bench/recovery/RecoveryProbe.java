package io.cadastre.bench.recovery;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import io.cadastre.agent.Persistence;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * The measuring side of {@link RecoveryScenario}, run as a JVM of its own (inside a host namespace
 * of the fabric, where Cassandra is reachable) so that its heap holds nothing but the probe: a
 * local actor system with the agent's Cassandra journal configuration, the real entities started
 * as plain children of its guardian.
 *
 * <p>It seeds the journals ({@link JournalSeeder}), times repeated recoveries of a block and a
 * node after each event count, checking every recovered state against its history, then starts
 * many recovered entities of each kind and measures the heap they hold. It writes a
 * {@link ProbeResult} as JSON to {@code --out}, logs to stderr, and exits 0, or 1 with the error
 * on stderr.
 *
 * <pre>{@code
 * RecoveryProbe --contact-point 198.19.255.9:9042 --out result.json --counts 10,1000,100000
 *     --repetitions 100 --warmup 3 --memory-entities 2000
 * }</pre>
 */
public final class RecoveryProbe {
    /** Entity indexes of the memory measurement start here; the recovery measurement uses those below. */
    private static final int MEMORY_FIRST_INDEX = 1_000;

    /** Journals written at once while seeding (each a sequence of batches). */
    private static final int SEEDING_THREADS = 16;

    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private final ActorSystem<Nursery.Command> system;
    private int spawned;

    private RecoveryProbe(ActorSystem<Nursery.Command> system) {
        this.system = system;
    }

    /**
     * @param args {@code --contact-point host:port --out FILE}, and optionally {@code --counts}
     *     (comma-separated event counts, default 10,1000,100000), {@code --repetitions} (100),
     *     {@code --warmup} (3) and {@code --memory-entities} (2000)
     */
    public static void main(String[] args) {
        int exit = 1;
        try {
            Map<String, String> options = options(args);
            String contactPoint = required(options, "contact-point");
            Path out = Path.of(required(options, "out"));
            long[] counts =
                    Arrays.stream(options.getOrDefault("counts", "10,1000,100000").split(","))
                            .mapToLong(s -> Long.parseLong(s.trim()))
                            .toArray();
            int repetitions = Integer.parseInt(options.getOrDefault("repetitions", "100"));
            int warmup = Integer.parseInt(options.getOrDefault("warmup", "3"));
            int memoryEntities = Integer.parseInt(options.getOrDefault("memory-entities", "2000"));
            if (counts.length == 0
                    || counts.length >= MEMORY_FIRST_INDEX
                    || repetitions < 1
                    || warmup < 0
                    || memoryEntities < 1) {
                throw new IllegalArgumentException(
                        "need 1.."
                                + (MEMORY_FIRST_INDEX - 1)
                                + " counts, repetitions >= 1,"
                                + " warmup >= 0, memory-entities >= 1");
            }
            ActorSystem<Nursery.Command> system =
                    ActorSystem.create(Nursery.create(), "recovery-probe", config(contactPoint));
            try {
                ProbeResult result =
                        new RecoveryProbe(system).run(counts, repetitions, warmup, memoryEntities);
                new ObjectMapper()
                        .writerWithDefaultPrettyPrinter()
                        .writeValue(out.toFile(), result);
                exit = 0;
            } finally {
                system.terminate();
                system.getWhenTerminated()
                        .toCompletableFuture()
                        .completeOnTimeout(null, 20, TimeUnit.SECONDS)
                        .join();
            }
        } catch (Exception | Error e) {
            // An Error too (OutOfMemoryError): the exit below must happen, or the JVM lingers.
            System.err.println("RecoveryProbe failed:");
            e.printStackTrace();
        }
        // The Cassandra driver's threads would keep a JVM whose actor system did not end in time.
        System.exit(exit);
    }

    /**
     * The agent's configuration for {@code cadastre.persistence = cassandra}, as AgentMain builds
     * it, with two changes: a local actor system (the probe is no cluster member), and the
     * Cassandra plugin's own journal and snapshot store instead of the agent's fenced subclasses,
     * which need the cluster extension. Those subclasses only refuse writes while their member is
     * fenced; rows, serialization and the recovery's reads are the plugin's own either way.
     */
    static Config config(String contactPoint) {
        Config forced =
                ConfigFactory.parseString(
                                """
                cadastre.persistence = cassandra
                pekko.actor.provider = local
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.exit-jvm = off
                pekko.persistence.cassandra.journal.class = "org.apache.pekko.persistence.cassandra.journal.CassandraJournal"
                pekko.persistence.cassandra.snapshot.class = "org.apache.pekko.persistence.cassandra.snapshot.CassandraSnapshotStore"
                """)
                        .withValue(
                                "cadastre.cassandra.contact-points-env",
                                ConfigValueFactory.fromAnyRef(contactPoint));
        Config base = forced.withFallback(ConfigFactory.parseResourcesAnySyntax("application"));
        Config resolved = ConfigFactory.load(base);
        return ConfigFactory.load(Persistence.of(resolved).selection(resolved).withFallback(base));
    }

    private ProbeResult run(long[] counts, int repetitions, int warmup, int memoryEntities)
            throws Exception {
        List<EntityKind<?, ?, ?>> kinds = List.of(EntityKind.BLOCK, EntityKind.NODE);
        List<Journal<?, ?, ?>> timed = new ArrayList<>();
        for (EntityKind<?, ?, ?> kind : kinds) {
            for (int i = 0; i < counts.length; i++) {
                timed.add(Journal.of(kind, i, counts[i]));
            }
            // 99 events after the last snapshot: the most a recovery of such a history replays.
            long last = counts[counts.length - 1];
            if (last % JournalSeeder.SNAPSHOT_EVERY == 0) {
                timed.add(Journal.of(kind, counts.length, last + JournalSeeder.SNAPSHOT_EVERY - 1));
            }
        }
        List<ProbeResult.Seeding> seeding = new ArrayList<>(seed(kinds, "recovery", timed));
        // Round by round over every journal, so that the machine's changing load (2 cores shared
        // with Cassandra and more) and the JIT's progress fall on all measurements alike.
        for (int round = 0; round < warmup + repetitions; round++) {
            for (Journal<?, ?, ?> journal : timed) {
                double[] sample = recoverOnce(journal);
                (round < warmup ? journal.warmup : journal.recovery).add(sample[0]);
                if (round >= warmup) {
                    journal.firstReply.add(sample[1]);
                }
            }
        }
        List<ProbeResult.Recovery> recoveries = timed.stream().map(Journal::result).toList();
        timed.clear();
        List<Journal<?, ?, ?>> kept = new ArrayList<>();
        for (EntityKind<?, ?, ?> kind : kinds) {
            for (int i = 0; i < memoryEntities; i++) {
                kept.add(Journal.of(kind, MEMORY_FIRST_INDEX + i, kind.eventsToFill));
            }
        }
        seeding.addAll(seed(kinds, "memory", kept));
        kept.clear();
        List<ProbeResult.Memory> memory = new ArrayList<>();
        for (EntityKind<?, ?, ?> kind : kinds) {
            memory.add(memory(kind, memoryEntities));
        }
        String jvm =
                "Java "
                        + Runtime.version()
                        + ", max heap "
                        + Runtime.getRuntime().maxMemory() / (1024 * 1024)
                        + " MiB, collectors "
                        + ManagementFactory.getGarbageCollectorMXBeans().stream()
                                .map(GarbageCollectorMXBean::getName)
                                .collect(Collectors.joining(", "));
        return new ProbeResult(recoveries, memory, seeding, jvm);
    }

    /** One entity's journal: its history, how many events to write, and its recoveries' times in ms. */
    private static final class Journal<C, E, V> {
        final EntityKind<C, E, V> kind;
        final History<E, ?, V> history;
        final long events;
        final List<Double> warmup = new ArrayList<>();
        final List<Double> recovery = new ArrayList<>();
        final List<Double> firstReply = new ArrayList<>();

        private Journal(EntityKind<C, E, V> kind, int index, long events) {
            this.kind = kind;
            this.history = kind.history(index);
            this.events = events;
        }

        /** @return the journal of the kind's entity {@code index}, to hold {@code events} events */
        static <C, E, V> Journal<C, E, V> of(EntityKind<C, E, V> kind, int index, long events) {
            return new Journal<>(kind, index, events);
        }

        ProbeResult.Recovery result() {
            return new ProbeResult.Recovery(
                    kind.name,
                    events,
                    events - events % JournalSeeder.SNAPSHOT_EVERY,
                    history.describe(),
                    millis(warmup),
                    millis(recovery),
                    millis(firstReply));
        }

        private static double[] millis(List<Double> values) {
            return values.stream().mapToDouble(Double::doubleValue).toArray();
        }
    }

    /** Writes the journals, several at a time (the batches of one journal are sequential). */
    private List<ProbeResult.Seeding> seed(
            List<EntityKind<?, ?, ?>> kinds, String what, List<Journal<?, ?, ?>> journals)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(SEEDING_THREADS);
        try {
            long started = System.nanoTime();
            Map<EntityKind<?, ?, ?>, List<Future<Long>>> written = new HashMap<>();
            for (Journal<?, ?, ?> journal : journals) {
                written.computeIfAbsent(journal.kind, k -> new ArrayList<>())
                        .add(pool.submit(() -> seedOne(journal)));
            }
            List<ProbeResult.Seeding> seeded = new ArrayList<>();
            for (EntityKind<?, ?, ?> kind : kinds) {
                long events = 0;
                for (Future<Long> f : written.get(kind)) {
                    events += f.get();
                }
                seeded.add(
                        new ProbeResult.Seeding(
                                kind.name,
                                what,
                                events,
                                written.get(kind).size(),
                                (System.nanoTime() - started) / 1e9));
            }
            return seeded;
        } finally {
            pool.shutdownNow();
        }
    }

    private <E> long seedOne(Journal<?, E, ?> journal) {
        return JournalSeeder.append(
                system,
                journal.kind.model(journal.history.entityId()),
                journal.history,
                0,
                journal.events,
                TIMEOUT);
    }

    /**
     * Starts the journal's entity, reads it, checks what it read and stops it.
     *
     * @return milliseconds to RecoveryCompleted and to the first reply
     */
    private <C, V> double[] recoverOnce(Journal<C, ?, V> journal) {
        EntityKind<C, ?, V> kind = journal.kind;
        History<?, ?, V> history = journal.history;
        String id = history.entityId();
        CompletableFuture<Duration> recovered = new CompletableFuture<>();
        long started = System.nanoTime();
        ActorRef<C> entity =
                Nursery.spawn(
                        system,
                        () -> kind.live(id, recovered::complete),
                        kind.name + "-" + spawned++,
                        TIMEOUT);
        try {
            V view =
                    Nursery.await(
                            AskPattern.ask(entity, kind::read, TIMEOUT, system.scheduler()),
                            TIMEOUT,
                            "reading " + id);
            long replied = System.nanoTime();
            Duration took = Nursery.await(recovered, TIMEOUT, "recovering " + id);
            history.verify(view);
            return new double[] {took.toNanos() / 1e6, (replied - started) / 1e6};
        } finally {
            Nursery.stop(system, entity, TIMEOUT);
        }
    }

    /**
     * Starts {@code entities} entities of the kind (seeded with {@link #MEMORY_FIRST_INDEX} on),
     * waits until each has answered a read (recovered), and measures the heap before and after.
     * The entities stay alive until the probe ends.
     */
    private <C, V> ProbeResult.Memory memory(EntityKind<C, ?, V> kind, int entities) {
        long before = heapAfterGc();
        List<ActorRef<C>> live = new ArrayList<>(entities);
        for (int i = 0; i < entities; i++) {
            String id = kind.entityId(MEMORY_FIRST_INDEX + i);
            live.add(
                    Nursery.spawn(
                            system,
                            () -> kind.live(id, took -> {}),
                            kind.name + "-" + spawned++,
                            TIMEOUT));
        }
        List<CompletableFuture<Integer>> held = new ArrayList<>(entities);
        for (ActorRef<C> entity : live) {
            held.add(
                    AskPattern.ask(entity, kind::read, TIMEOUT, system.scheduler())
                            .thenApply(kind::held)
                            .toCompletableFuture());
        }
        for (int i = 0; i < entities; i++) {
            int h =
                    Nursery.await(
                            held.get(i),
                            TIMEOUT,
                            "reading " + kind.entityId(MEMORY_FIRST_INDEX + i));
            if (h != kind.held) {
                throw new IllegalStateException(
                        kind.entityId(MEMORY_FIRST_INDEX + i)
                                + " recovered holding "
                                + h
                                + ", its journal holds "
                                + kind.held);
            }
        }
        held.clear();
        long after = heapAfterGc();
        History<?, ?, V> history = kind.history(MEMORY_FIRST_INDEX);
        for (int i = 0; i < kind.eventsToFill; i++) {
            history.next();
        }
        String state = history.describe();
        return new ProbeResult.Memory(kind.name, entities, before, after, state);
    }

    /** @return bytes of heap in use after full collections, once the heap has stopped shrinking */
    private static long heapAfterGc() {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 10; i++) {
            System.gc();
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            long now = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
            if (i >= 2 && now >= used) {
                return Math.min(now, used);
            }
            used = Math.min(used, now);
        }
        return used;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException(
                        "expected --name value pairs, got " + Arrays.toString(args));
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        return options;
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return value;
    }
}
