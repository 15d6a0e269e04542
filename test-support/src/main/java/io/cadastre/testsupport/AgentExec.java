package io.cadastre.testsupport;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The real cadastre-agent as a child process, started the way both the single-host tests
 * (cluster's {@code AgentProcess}) and the fabric's {@link Member} start it: the agent's main on
 * the agent's own class path as the build names it, the one the launcher uses ({@link
 * AgentClassData}; the caller's class path when the build names none), a small heap, text logs;
 * ready when its CNI socket appears. Stopped by PID only.
 */
public final class AgentExec {
    /** The agent's main class, named: this module does not depend on the agent's. */
    public static final String MAIN = "io.cadastre.agent.AgentMain";

    /**
     * The system property naming the directory of the agent's JNI libraries (module cluster's
     * {@code target/native}), which {@code bin/cadastre-agent} puts on {@code java.library.path}.
     */
    public static final String NATIVE_DIR_PROPERTY = "cadastre.agent.native-dir";

    /** How often a wait looks again, in ms. */
    private static final long POLL_MILLIS = 50;

    private AgentExec() {}

    /**
     * The tests' JVM flags: a small heap, the serial collector, C1 only and one compiler thread,
     * so that several agents start fast side by side on a small machine.
     */
    public static final List<String> TEST_FLAGS =
            List.of(
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-XX:CICompilerCount=1");

    /**
     * @param args the agent's arguments, e.g. {@code --config FILE} or {@code schema --execute}
     * @return {@code java <TEST_FLAGS> -cp <the agent's class path> AgentMain args...} with the
     *     agent's text log lines ({@code CADASTRE_LOG_FORMAT=text}, which {@link AgentLogs} reads),
     *     mapping the class data the build's agents share ({@link AgentClassData}: the first call
     *     of a build records it, about 12 s), in which case the class path's directories are jars
     *     of the same content
     */
    public static List<String> command(String... args) {
        return commandWith(List.of(), args);
    }

    /**
     * As {@link #command(String...)} with more JVM flags after the tests' own, which they override
     * (e.g. {@code -Djava.library.path=...} or {@code -Djava.io.tmpdir=...}).
     */
    public static List<String> commandWith(List<String> moreJvmFlags, String... args) {
        AgentClassData classData = AgentClassData.get();
        List<String> flags = new ArrayList<>(TEST_FLAGS);
        flags.addAll(classData.flags());
        flags.addAll(moreJvmFlags);
        return commandOn(flags, classData.classPath(), args);
    }

    /**
     * As {@link #command(String...)} with other JVM flags, e.g. the agent's defaults that the
     * launcher uses (the benchmarks measure what users run, and bring their own class data
     * archive), on this JVM's class path as it is.
     */
    public static List<String> command(List<String> jvmFlags, String... args) {
        return commandOn(jvmFlags, System.getProperty("java.class.path"), args);
    }

    /**
     * As {@link #command(List, String...)} on {@code classPath}; with the build's JNI libraries on
     * {@code java.library.path} as the launchers have them, when the system property {@value
     * #NATIVE_DIR_PROPERTY} names a directory (the build sets it for every module's tests), before
     * {@code jvmFlags} so that a flag there wins.
     */
    static List<String> commandOn(List<String> jvmFlags, String classPath, String... args) {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java")
                                        .toString()));
        String nativeDir = System.getProperty(NATIVE_DIR_PROPERTY, "");
        if (!nativeDir.isEmpty() && Files.isDirectory(Path.of(nativeDir))) {
            command.add("-Djava.library.path=" + nativeDir);
        }
        command.addAll(jvmFlags);
        command.addAll(List.of("-DCADASTRE_LOG_FORMAT=text", "-cp", classPath, MAIN));
        command.addAll(List.of(args));
        return command;
    }

    /**
     * Waits until {@code socket} exists: the agent opens its CNI socket once it has joined and
     * defined its pools. A killed agent leaves its socket file behind: delete it before the start.
     *
     * @param who the agent's name in the messages
     * @param log the agent's log, whose tail the messages carry
     * @throws IllegalStateException when the process exits first, or at the deadline (the process
     *     keeps running: its owner stops it)
     */
    public static void awaitSocket(
            Process process, Path socket, Duration deadline, String who, Path log) {
        awaitCondition(process, () -> Files.exists(socket), deadline, who, "open its socket", log);
    }

    /**
     * Waits until {@code done} holds, polling every 50 ms.
     *
     * @param what what the agent did not do, for the message ("open its socket")
     * @throws IllegalStateException when the process exits first (with its exit code and log's
     *     tail), or at the deadline
     */
    public static void awaitCondition(
            Process process,
            BooleanSupplier done,
            Duration deadline,
            String who,
            String what,
            Path log) {
        long end = System.nanoTime() + deadline.toNanos();
        while (!done.getAsBoolean()) {
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        who + " exited with " + process.exitValue() + ":\n" + LogFile.tail(log));
            }
            if (System.nanoTime() > end) {
                throw new IllegalStateException(
                        who
                                + " did not "
                                + what
                                + " in "
                                + deadline.toSeconds()
                                + " s:\n"
                                + LogFile.tail(log));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS));
        }
    }

    /** SIGKILL, as a crash (no shutdown hook runs), and waits up to 30 s for the process to be gone. */
    public static void kill(Process process) throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /**
     * SIGTERM, and waits for the clean exit; SIGKILL after {@code grace}.
     *
     * @return whether it exited within {@code grace}
     */
    public static boolean terminate(Process process, Duration grace) throws InterruptedException {
        process.destroy();
        if (process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
            return true;
        }
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        return false;
    }
}
