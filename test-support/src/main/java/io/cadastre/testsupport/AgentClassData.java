package io.cadastre.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * Class data sharing for the agents a test JVM starts, as {@code bin/cadastre-agent} and the image
 * have it: the agent's classes parsed and laid out once, mapped by every later start (about 1 s
 * less per start on an idle 2-core machine, more when several start at once).
 *
 * <p>The JVM archives classes from jars only, and a test's class path holds the module's {@code
 * target/classes} and {@code target/test-classes} (and, outside a reactor build, its siblings'):
 * each directory is packed once into a jar of the same content, in a directory of this JVM's that
 * its shutdown hook removes. Then one agent is started with the embedded journal, as the quick
 * start runs it (no routing, no fixed port, loopback admin API), until its CNI socket opens, and
 * stopped with SIGTERM; it writes the archive as it exits. The archive is kept only when that agent
 * ended by itself: a cut-off archive would crash every start that maps it.
 *
 * <p>When anything of that fails, agents start from the original class path without an archive,
 * as before, and the reason is printed once: slower, never wrong.
 */
final class AgentClassData {
    /** How long the recording agent may take to open its socket, and to exit after SIGTERM. */
    private static final Duration RECORDING_DEADLINE = Duration.ofSeconds(120);

    private static AgentClassData shared;

    private final String classPath;
    private final List<String> flags;

    private AgentClassData(String classPath, List<String> flags) {
        this.classPath = classPath;
        this.flags = List.copyOf(flags);
    }

    /** @return the class path to start agents with: jars only when an archive was written */
    String classPath() {
        return classPath;
    }

    /** @return {@code -XX:SharedArchiveFile=...}, or nothing when there is no archive */
    List<String> flags() {
        return flags;
    }

    /**
     * @return this JVM's archive and the class path it was written for, recorded at the first call
     *     (which takes a few seconds; concurrent callers wait for it)
     */
    static synchronized AgentClassData get() {
        if (shared == null) {
            shared = record(System.getProperty("java.class.path"));
        }
        return shared;
    }

    private static AgentClassData record(String testClassPath) {
        AgentClassData without = new AgentClassData(testClassPath, List.of());
        Path dir;
        try {
            dir = Files.createTempDirectory("cadastre-agent-cds");
        } catch (IOException e) {
            System.err.println("agents start without class data sharing: " + e);
            return without;
        }
        Runtime.getRuntime()
                .addShutdownHook(new Thread(() -> deleteTree(dir), "agent-class-data-cleanup"));
        try {
            String jars = jarsOnly(testClassPath, dir.resolve("classes"));
            Path archive = dir.resolve("cadastre-agent.jsa");
            recordArchive(jars, archive, dir.resolve("recording"));
            return new AgentClassData(jars, List.of("-XX:SharedArchiveFile=" + archive));
        } catch (IOException | IllegalStateException e) {
            System.err.println("agents start without class data sharing: " + e.getMessage());
            return without;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return without;
        }
    }

    /** @return {@code classPath} with each directory in it packed into a jar under {@code into} */
    private static String jarsOnly(String classPath, Path into) throws IOException {
        Files.createDirectories(into);
        List<String> entries = new ArrayList<>();
        int packed = 0;
        for (String entry : classPath.split(File.pathSeparator)) {
            Path path = Path.of(entry);
            if (Files.isDirectory(path)) {
                Path jar = into.resolve(packed++ + "-" + path.getFileName() + ".jar");
                pack(path, jar);
                entries.add(jar.toString());
            } else if (!entry.isEmpty()) {
                entries.add(entry);
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    private static void pack(Path dir, Path jar) throws IOException {
        List<Path> files;
        try (Stream<Path> walk = Files.walk(dir)) {
            files = walk.filter(Files::isRegularFile).sorted().toList();
        }
        try (OutputStream out = Files.newOutputStream(jar);
                JarOutputStream zip = new JarOutputStream(out)) {
            for (Path file : files) {
                zip.putNextEntry(new JarEntry(dir.relativize(file).toString().replace('\\', '/')));
                Files.copy(file, zip);
                zip.closeEntry();
            }
        }
    }

    /**
     * Runs one agent on {@code classPath} until its socket opens, stops it with SIGTERM, and moves
     * the archive it wrote at exit to {@code archive}.
     *
     * @throws IllegalStateException when the agent fails to start, is not stopped by SIGTERM, or
     *     ends otherwise than by itself
     */
    private static void recordArchive(String classPath, Path archive, Path dir)
            throws IOException, InterruptedException {
        Files.createDirectories(dir);
        Path conf = dir.resolve("agent.conf");
        Path socket = dir.resolve("cni.sock");
        Path log = dir.resolve("agent.log");
        Files.writeString(
                conf,
                "cadastre.routing.mode = none\n"
                        + "cadastre.node-name = \"class-data\"\n"
                        + "cadastre.data-dir = \""
                        + dir.resolve("data")
                        + "\"\n"
                        + "cadastre.cni-socket = \""
                        + socket
                        + "\"\n"
                        + "cadastre.cluster.port = 0\n"
                        + "cadastre.admin.bind = \"127.0.0.1:0\"\n");
        Path partial = archive.resolveSibling(archive.getFileName() + ".partial");
        List<String> flags = new ArrayList<>(AgentExec.TEST_FLAGS);
        flags.add("-XX:ArchiveClassesAtExit=" + partial);
        ProcessBuilder builder =
                new ProcessBuilder(
                                AgentExec.commandOn(flags, classPath, "--config", conf.toString()))
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        // The quick start's defaults, whatever the test JVM's environment says.
        builder.environment().keySet().removeIf(name -> name.startsWith("CADASTRE_"));
        Process agent = builder.start();
        try {
            AgentExec.awaitSocket(agent, socket, RECORDING_DEADLINE, "the recording agent", log);
            agent.destroy();
            if (!agent.waitFor(RECORDING_DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        "the recording agent did not exit after SIGTERM:\n" + LogFile.tail(log));
            }
        } finally {
            if (agent.isAlive()) {
                agent.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        int exit = agent.exitValue();
        // 0, or 143 (128 + SIGTERM): the JVM ran its exit, where the archive is written.
        if ((exit != 0 && exit != 143)
                || !Files.isRegularFile(partial)
                || Files.size(partial) == 0) {
            throw new IllegalStateException(
                    "the recording agent exited with "
                            + exit
                            + " and no archive:\n"
                            + LogFile.tail(log));
        }
        Files.move(partial, archive, StandardCopyOption.ATOMIC_MOVE);
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder())
                    .forEach(
                            p -> {
                                try {
                                    Files.deleteIfExists(p);
                                } catch (IOException e) {
                                    throw new UncheckedIOException(e);
                                }
                            });
        } catch (IOException | UncheckedIOException e) {
            System.err.println("could not remove " + dir + ": " + e);
        }
    }
}
