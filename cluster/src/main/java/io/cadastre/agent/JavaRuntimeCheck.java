package io.cadastre.agent;

import java.util.Optional;

/**
 * Java runtimes the agent should not run on for long. Pekko runs every dispatcher of the agent
 * (the actors, Pekko's internals, the Cassandra journal's) on {@link
 * java.util.concurrent.ForkJoinPool}; before the fix of JDK-8351933 ("Inaccurate masking of TC
 * subfield decrement in ForkJoinPool", the cause of JDK-8330017) a pool whose worker retires
 * after its idle keep-alive (60 s) while the pool is at full size takes one from its count of
 * released workers each time, and once that count has wrapped (after 32,768 such retirements) the
 * pool runs no task again: the agent would stop answering without failing. The fix is in 17.0.17,
 * 21.0.8 and 25; the agent needs 17 or later.
 */
public final class JavaRuntimeCheck {
    private JavaRuntimeCheck() {}

    /**
     * @param version the runtime's version ({@link Runtime#version()})
     * @return a warning for the log when {@code version} lacks the fix of JDK-8351933 (17 before
     *     17.0.17, 21 before 21.0.8, and the releases from 18 to 24 other than 21), else empty
     */
    public static Optional<String> forkJoinPoolWarning(Runtime.Version version) {
        int feature = version.feature();
        boolean fixed =
                feature >= 25
                        || (feature == 17 && version.update() >= 17)
                        || (feature == 21 && version.update() >= 8);
        if (fixed) {
            return Optional.empty();
        }
        return Optional.of(
                "Java "
                        + version
                        + " lacks the fix of JDK-8351933: a ForkJoinPool (every Pekko dispatcher)"
                        + " may stop running tasks after weeks of a node's ups and downs, and the"
                        + " agent with it; run it on Java 17.0.17, 21.0.8, 25 or later");
    }
}
