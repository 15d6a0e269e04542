package io.cadastre.bench.recovery;

import java.util.List;

/**
 * What one {@link RecoveryProbe} run measured; the probe writes it as JSON, {@link RecoveryScenario}
 * reads it.
 *
 * @param recoveries one per entity kind and event count
 * @param memory one per entity kind
 * @param seeding how long writing the journals took, for the report's notes
 * @param jvm the probe's JVM and heap settings, in words
 */
public record ProbeResult(
        List<Recovery> recoveries, List<Memory> memory, List<Seeding> seeding, String jvm) {

    /**
     * Repeated recoveries of one entity.
     *
     * @param kind {@code block} or {@code node}
     * @param events the events in its journal
     * @param snapshotAt the sequence number of its latest snapshot, 0 when it has none; recovery
     *     loads that snapshot and replays {@code events - snapshotAt} events
     * @param state what the recovered entity held, in words
     * @param warmupMillis the recoveries run before the measured ones and left out of them, in
     *     milliseconds to RecoveryCompleted; the first of the first count is the JVM's cold start
     * @param recoveryMillis per recovery, milliseconds from the entity's start to its
     *     RecoveryCompleted signal (what an agent reports as {@code cadastre_entity_recovery_seconds})
     * @param firstReplyMillis per recovery, milliseconds from asking the guardian to start the
     *     entity to the reply to a read sent right after (stashed during the recovery)
     */
    public record Recovery(
            String kind,
            long events,
            long snapshotAt,
            String state,
            double[] warmupMillis,
            double[] recoveryMillis,
            double[] firstReplyMillis) {}

    /**
     * Heap used (after full collections) before and after starting {@code entities} recovered
     * entities of one kind and keeping them alive.
     *
     * @param heapBeforeBytes heap used before, in bytes
     * @param heapAfterBytes heap used after, in bytes
     * @param state what each entity held, in words
     */
    public record Memory(
            String kind, int entities, long heapBeforeBytes, long heapAfterBytes, String state) {}

    /**
     * @param what which journals ({@code recovery}, {@code memory})
     * @param events the events written, over all {@code entities}
     * @param seconds how long it took
     */
    public record Seeding(String kind, String what, long events, int entities, double seconds) {}
}
