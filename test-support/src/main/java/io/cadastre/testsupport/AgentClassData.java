package io.cadastre.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * Class data sharing for the agents the tests start, as {@code bin/cadastre-agent} and the image
 * have it: the agent's classes parsed and laid out once, mapped by every later start (about 1 s
 * less per start on an idle 2-core machine, more when several start at once).
 *
 * <p>The JVM archives classes from jars only, and a class path of the build holds directories
 * ({@code target/classes}): each directory is packed once into a jar of the same content. Then one
 * agent is started on those jars with the embedded journal, as the quick start runs it (no
 * routing, no fixed port, loopback admin API), until its CNI socket opens, and stopped with
 * SIGTERM; it writes the archive as it exits. The archive is kept only when that agent ended by
 * itself: a cut-off archive would crash every start that maps it.
 *
 * <p>Where the build names the agent's own class path (the system properties {@value
 * #CLASSES_PROPERTY}, module cluster's {@code target/classes}, and {@value #CLASS_PATH_PROPERTY},
 * the listing of its runtime jars), the agents start on that class path, as the launcher's do, and
 * the jars and the archive are kept in {@code agent-class-data} beside those classes: every test
 * JVM of the build (modules cluster, chaos-tests, benchmarks) maps the one archive, recorded by the
 * first, instead of recording its own (about 12 s each). A digest of the class path's files (paths,
 * sizes, modification times), the JVM and the flags names the archive; a rebuilt class or another
 * JVM records it again. A file lock keeps two JVMs from recording at once. Without those
 * properties (a module built before cluster), the archive is this JVM's own, over its own class
 * path, in a directory its shutdown hook removes.
 *
 * <p>When anything of that fails, agents start from the test JVM's class path without an archive,
 * and the reason is printed once: slower, never wrong.
 */
final class AgentClassData {
    /** How long the recording agent may take to open its socket, and to exit after SIGTERM. */
    private static final Duration RECORDING_DEADLINE = Duration.ofSeconds(120);

    /** The system property naming the agent's classes directory (module cluster's). */
    static final String CLASSES_PROPERTY = "cadastre.agent.classes";

    /**
     * The system property naming the file that lists the agent's runtime class path (module
     * cluster's {@code target/agent.classpath}, entries separated by the path separator).
     */
    static final String CLASS_PATH_PROPERTY = "cadastre.agent.class-path-file";

    private static final String ARCHIVE = "cadastre-agent.jsa";

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
     * @return the archive this JVM's agents map and the class path it was written for, found or
     *     recorded at the first call (recording takes about 12 s; concurrent callers wait for it)
     */
    static synchronized AgentClassData get() {
        if (shared == null) {
            String testClassPath = System.getProperty("java.class.path");
            Optional<List<String>> agentClassPath = agentClassPath();
            AgentClassData without = new AgentClassData(testClassPath, List.of());
            try {
                shared =
                        agentClassPath.isPresent()
                                ? sharedByTheBuild(agentClassPath.get())
                                : ownedByThisJvm(testClassPath);
            } catch (IOException | IllegalStateException e) {
                System.err.println("agents start without class data sharing: " + e.getMessage());
                shared = without;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                shared = without;
            }
        }
        return shared;
    }

    /**
     * @return the agent's class path as the build names it (its classes directory first), empty
     *     when the properties are unset or name nothing yet
     */
    private static Optional<List<String>> agentClassPath() {
        String classes = System.getProperty(CLASSES_PROPERTY, "");
        String listing = System.getProperty(CLASS_PATH_PROPERTY, "");
        if (classes.isEmpty()
                || listing.isEmpty()
                || !Files.isDirectory(Path.of(classes))
                || !Files.isRegularFile(Path.of(listing))) {
            return Optional.empty();
        }
        try {
            // Normalized: each module names cluster's directory from its own
            // ("chaos-tests/../cluster"), and the digest and the archive go by the path's text.
            List<String> entries = new ArrayList<>(List.of(normalized(classes)));
            for (String entry :
                    Files.readString(Path.of(listing)).strip().split(File.pathSeparator)) {
                if (!entry.isEmpty()) {
                    entries.add(normalized(entry));
                }
            }
            return Optional.of(entries);
        } catch (IOException e) {
            System.err.println("agents start on the test class path: " + e);
            return Optional.empty();
        }
    }

    private static String normalized(String path) {
        return Path.of(path).toAbsolutePath().normalize().toString();
    }

    /**
     * The archive in {@code agent-class-data} beside the agent's classes: mapped when its digest
     * matches, recorded anew otherwise, under a file lock.
     */
    private static AgentClassData sharedByTheBuild(List<String> agentClassPath)
            throws IOException, InterruptedException {
        Path dir =
                Path.of(agentClassPath.get(0))
                        .toAbsolutePath()
                        .getParent()
                        .resolve("agent-class-data");
        Files.createDirectories(dir);
        try (FileChannel lockFile =
                        FileChannel.open(
                                dir.resolve("lock"),
                                StandardOpenOption.CREATE,
                                StandardOpenOption.WRITE);
                FileLock lock = lockFile.lock()) {
            Path digestFile = dir.resolve("digest");
            Path archive = dir.resolve(ARCHIVE);
            Path jarsDir = dir.resolve("classes");
            String digest = digest(agentClassPath);
            String jars = jarsOnly(agentClassPath, jarsDir, false);
            if (Files.isRegularFile(archive)
                    && Files.isRegularFile(digestFile)
                    && Files.readString(digestFile).equals(digest)) {
                return new AgentClassData(jars, List.of("-XX:SharedArchiveFile=" + archive));
            }
            Files.deleteIfExists(digestFile);
            Files.deleteIfExists(archive);
            deleteTree(jarsDir);
            jarsOnly(agentClassPath, jarsDir, true);
            Path recording = Files.createTempDirectory("cadastre-agent-cds");
            try {
                recordArchive(jars, archive, recording);
            } finally {
                deleteTree(recording);
            }
            Files.writeString(digestFile, digest);
            return new AgentClassData(jars, List.of("-XX:SharedArchiveFile=" + archive));
        }
    }

    /**
     * @return a digest of what the archive depends on: this JVM, the recording's flags, and every
     *     file of the class path by path, size and modification time
     */
    private static String digest(List<String> classPath) throws IOException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        StringBuilder text =
                new StringBuilder(System.getProperty("java.home"))
                        .append('\n')
                        .append(System.getProperty("java.vm.version"))
                        .append('\n')
                        .append(AgentExec.TEST_FLAGS)
                        .append('\n');
        for (String entry : classPath) {
            Path path = Path.of(entry);
            List<Path> files;
            if (Files.isDirectory(path)) {
                try (Stream<Path> walk = Files.walk(path)) {
                    files = walk.filter(Files::isRegularFile).sorted().toList();
                }
            } else {
                files = List.of(path);
            }
            for (Path file : files) {
                text.append(file)
                        .append(' ')
                        .append(Files.size(file))
                        .append(' ')
                        .append(Files.getLastModifiedTime(file).toMillis())
                        .append('\n');
            }
        }
        return HexFormat.of()
                .formatHex(sha.digest(text.toString().getBytes(StandardCharsets.UTF_8)));
    }

    /** This JVM's own archive over its class path, in a directory its shutdown hook removes. */
    private static AgentClassData ownedByThisJvm(String testClassPath)
            throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("cadastre-agent-cds");
        Runtime.getRuntime()
                .addShutdownHook(new Thread(() -> deleteTree(dir), "agent-class-data-cleanup"));
        String jars =
                jarsOnly(
                        List.of(testClassPath.split(File.pathSeparator)),
                        dir.resolve("classes"),
                        true);
        Path archive = dir.resolve(ARCHIVE);
        recordArchive(jars, archive, dir.resolve("recording"));
        return new AgentClassData(jars, List.of("-XX:SharedArchiveFile=" + archive));
    }

    /**
     * @param pack whether to write the jars, or only name them
     * @return {@code classPath} joined, with each directory in it replaced by a jar of the same
     *     content under {@code into}
     */
    private static String jarsOnly(List<String> classPath, Path into, boolean pack)
            throws IOException {
        if (pack) {
            Files.createDirectories(into);
        }
        List<String> entries = new ArrayList<>();
        int packed = 0;
        for (String entry : classPath) {
            Path path = Path.of(entry);
            if (Files.isDirectory(path)) {
                Path jar = into.resolve(packed++ + "-" + path.getFileName() + ".jar");
                if (pack) {
                    pack(path, jar);
                }
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
        if (!Files.exists(dir)) {
            return;
        }
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
