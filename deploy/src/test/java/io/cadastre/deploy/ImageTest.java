package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.agent.AgentJvm;
import io.cadastre.agent.JavaRuntimeCheck;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The image archive the build made, unpacked layer by layer as a runtime would: its runtime has
 * every JDK module the class path uses (what {@code jdeps} finds), every executable and native
 * library in it, and in its jars, finds the C libraries it links to inside the image (no host
 * libc is assumed), the plugin that the install step copies onto hosts links none at all (a host's
 * libc may be another), and the entrypoint and launchers are where the DaemonSet expects them.
 */
class ImageTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path ARCHIVE = Path.of(System.getProperty("cadastre.image.tar"));

    /**
     * Where the image's dynamic linker looks (Debian's multiarch directory), where the JDK keeps
     * its own libraries, and the linker's own place (libc names it as a needed library; the loaded
     * interpreter answers for it).
     */
    private static final List<String> LIBRARY_DIRS =
            List.of("lib/x86_64-linux-gnu", "opt/java/lib", "opt/java/lib/server", "lib64");

    private static Path rootfs;
    private static JsonNode config;

    /** File modes by path (no leading slash), as the layers give them. */
    private static final Map<String, Integer> MODES = new HashMap<>();

    @BeforeAll
    static void unpack() throws IOException {
        Path dir = Files.createTempDirectory("cad-image");
        Path layout = dir.resolve("layout");
        rootfs = dir.resolve("rootfs");
        untar(Files.newInputStream(ARCHIVE), layout, null);
        JsonNode index = JSON.readTree(layout.resolve("index.json").toFile());
        assertEquals(1, index.path("manifests").size(), index.toString());
        JsonNode entry = index.path("manifests").path(0);
        assertEquals(
                System.getProperty("cadastre.image.name"),
                entry.path("annotations").path("org.opencontainers.image.ref.name").asText(),
                "the name ctr import gives it is the one the DaemonSet runs");
        JsonNode manifest = JSON.readTree(blob(layout, entry.path("digest").asText()).toFile());
        config =
                JSON.readTree(
                        blob(layout, manifest.path("config").path("digest").asText()).toFile());
        for (JsonNode layer : manifest.path("layers")) {
            assertTrue(layer.path("mediaType").asText().endsWith("tar+gzip"), layer.toString());
            try (InputStream in =
                    new GZIPInputStream(
                            Files.newInputStream(blob(layout, layer.path("digest").asText())))) {
                untar(in, rootfs, MODES);
            }
        }
    }

    @AfterAll
    static void remove() throws IOException {
        if (rootfs != null) {
            try (Stream<Path> paths = Files.walk(rootfs.getParent())) {
                for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Test
    void theEntrypointRunsTheAgentOnTheImagesOwnJava() {
        List<String> entrypoint = new ArrayList<>();
        config.path("config").path("Entrypoint").forEach(e -> entrypoint.add(e.asText()));
        assertEquals(List.of("/usr/local/bin/cadastre-agent"), entrypoint);
        String agentLauncher = read("usr/local/bin/cadastre-agent");
        assertTrue(
                agentLauncher.contains("exec /opt/java/bin/java @/opt/cadastre/agent.jvm.options "),
                "java as PID 1: " + agentLauncher);
        assertEquals(
                agentLauncher.split("/opt/java/bin/java ", -1).length,
                agentLauncher.split("/opt/java/bin/java @/opt/cadastre/agent.jvm.options ", -1)
                        .length,
                "every java the launcher starts has the agent's JVM defaults first");
        assertEquals(
                agentLauncher.split("/opt/java/bin/java ", -1).length,
                agentLauncher.split(
                                "/opt/java/bin/java @/opt/cadastre/agent.jvm.options"
                                        + " -Djava.library.path=/opt/cadastre/native ",
                                -1)
                        .length,
                "every java the launcher starts loads the JNI libraries from the image's directory");
        assertEquals(
                agentLauncher.split("/opt/java/bin/java ", -1).length,
                agentLauncher.split("-Dcadastre.plugin=/opt/cadastre/bin/cadastre ", -1).length,
                "install's --plugin default");
        assertTrue(
                agentLauncher.contains("-XX:ArchiveClassesAtExit=\"$archive.partial\"")
                        && agentLauncher.contains("mv -f \"$archive.partial\" \"$archive\""),
                "the class data archive is moved into place once written whole");
        assertEquals(
                AgentJvm.defaultOptions(),
                Arrays.stream(read("opt/cadastre/agent.jvm.options").split("\n"))
                        .map(line -> line.replaceFirst("#.*", "").strip())
                        .filter(line -> !line.isEmpty())
                        .toList(),
                "the image's JVM defaults are the agent's");
        assertExecutable("opt/java/bin/java");
        assertExecutable("opt/cadastre/bin/cadastre");
        for (String launcher :
                List.of("usr/local/bin/cadastrectl", "usr/local/bin/cadastre-agent")) {
            assertExecutable(launcher);
            assertTrue(read(launcher).startsWith("#!/bin/sh\n"), launcher);
        }
        assertExecutable("bin/sh");
        assertTrue(Files.isDirectory(rootfs.resolve("tmp")), "java.io.tmpdir");
        String path = "";
        for (JsonNode e : config.path("config").path("Env")) {
            if (e.asText().startsWith("PATH=")) {
                path = e.asText().substring(5);
            }
        }
        assertTrue(
                Arrays.asList(path.split(":")).contains("/usr/local/bin"),
                "kubectl exec ... -- cadastrectl: " + path);
    }

    /**
     * Every jar of the agent's run-time class path (module cluster's, as its build lists it) is on
     * the image's: a dependency narrowed to test scope in this module once left the Kubernetes
     * client's model out of the image, and the agent could not start with Kubernetes on.
     */
    @Test
    void theImageHoldsEveryJarOfTheAgentsClassPath() throws IOException {
        Set<String> image = new TreeSet<>();
        for (String entry : read("app/jib-classpath-file").strip().split(":")) {
            image.add(Path.of(entry).getFileName().toString());
        }
        Set<String> missing = new TreeSet<>();
        Path listing = Path.of(System.getProperty("cadastre.agent.classpath"));
        for (String entry : Files.readString(listing).strip().split(":")) {
            String jar = Path.of(entry).getFileName().toString();
            if (!image.contains(jar)) {
                missing.add(jar);
            }
        }
        assertTrue(image.size() > 50, "the image's class path: " + image);
        assertEquals(
                Set.of(),
                missing,
                "jars of the agent's class path (" + listing + ") not in the image");
    }

    /** jdeps over the image's own class path: the jlink'd runtime must hold every module it names. */
    /**
     * The image's runtime is the build's JDK, jlinked: one without the fix of JDK-8351933 would
     * ship an agent whose dispatchers may stop for good after weeks ({@link JavaRuntimeCheck}).
     */
    @Test
    void theRuntimeHasTheForkJoinPoolFix() {
        String version =
                read("opt/java/release")
                        .lines()
                        .filter(l -> l.startsWith("JAVA_VERSION="))
                        .map(l -> l.substring(l.indexOf('=') + 1).replace("\"", ""))
                        .findFirst()
                        .orElseThrow();
        assertEquals(
                Optional.empty(),
                JavaRuntimeCheck.forkJoinPoolWarning(Runtime.Version.parse(version)),
                "build the image with a JDK that has the fix (scripts/test.sh upgrades Debian's)");
    }

    @Test
    void theRuntimeHoldsEveryModuleTheClassPathUses() throws IOException {
        List<String> jars;
        try (Stream<Path> files = Files.list(rootfs.resolve("app/libs"))) {
            jars = files.map(Path::toString).sorted().toList();
        }
        assertTrue(
                jars.stream().anyMatch(j -> j.contains("cadastre-cluster-"))
                        && jars.stream().anyMatch(j -> j.contains("cadastre-ctl-")),
                "the agent and cadastrectl: " + jars);
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "--ignore-missing-deps",
                                "--print-module-deps",
                                "--multi-release",
                                "17",
                                "--class-path",
                                String.join(":", jars)));
        args.addAll(jars);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code =
                ToolProvider.findFirst("jdeps")
                        .orElseThrow()
                        .run(
                                new PrintStream(out, true, StandardCharsets.UTF_8),
                                new PrintStream(err, true, StandardCharsets.UTF_8),
                                args.toArray(String[]::new));
        assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
        String[] lines = out.toString(StandardCharsets.UTF_8).trim().split("\n");
        Set<String> needed =
                new TreeSet<>(Arrays.asList(lines[lines.length - 1].trim().split(",")));
        Matcher modules =
                Pattern.compile("(?m)^MODULES=\"([^\"]*)\"").matcher(read("opt/java/release"));
        assertTrue(modules.find());
        Set<String> present = new TreeSet<>(Arrays.asList(modules.group(1).split(" ")));
        Set<String> missing = new TreeSet<>(needed);
        missing.removeAll(present);
        assertEquals(
                Set.of(),
                missing,
                "modules the class path uses that the runtime lacks (jdeps: " + needed + ")");
        assertTrue(present.contains("jdk.crypto.ec"), "ECDHE for TLS, which no class names");
    }

    /**
     * Every ELF file of the image and every Linux x86-64 native library in its jars: the program
     * interpreter and each needed library are in the image ({@code readelf}).
     */
    @Test
    void everyNativeFileFindsItsCLibrariesInTheImage() throws Exception {
        List<Path> elves = new ArrayList<>();
        try (Stream<Path> files = Files.walk(rootfs)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                if (isElf(f)) {
                    elves.add(f);
                }
            }
        }
        Path extracted = rootfs.getParent().resolve("jar-natives");
        try (Stream<Path> jars = Files.list(rootfs.resolve("app/libs"))) {
            for (Path jar : jars.toList()) {
                try (ZipFile zip = new ZipFile(jar.toFile())) {
                    for (ZipEntry e :
                            zip.stream().filter(e -> e.getName().endsWith(".so")).toList()) {
                        String name = e.getName().toLowerCase(java.util.Locale.ROOT);
                        if (name.contains("linux")
                                && (name.contains("x86_64") || name.contains("amd64"))) {
                            Path target = extracted.resolve(jar.getFileName() + "/" + e.getName());
                            Files.createDirectories(target.getParent());
                            try (InputStream in = zip.getInputStream(e)) {
                                Files.copy(in, target);
                            }
                            elves.add(target);
                        }
                    }
                }
            }
        }
        assertTrue(
                elves.size() > 20,
                "found the JVM's, the image's and the jars' native files: " + elves.size());
        List<String> unmet = new ArrayList<>();
        for (Path elf : elves) {
            String dynamic = readelf(elf);
            Matcher interpreter =
                    Pattern.compile("Requesting program interpreter: ([^\\]]+)]").matcher(dynamic);
            if (interpreter.find()
                    && !Files.exists(rootfs.resolve(interpreter.group(1).substring(1)))) {
                unmet.add(rootfs.relativize(elf) + " -> interpreter " + interpreter.group(1));
            }
            Matcher needed =
                    Pattern.compile("\\(NEEDED\\)\\s+Shared library: \\[([^\\]]+)]")
                            .matcher(dynamic);
            while (needed.find()) {
                String soname = needed.group(1);
                if (LIBRARY_DIRS.stream()
                        .noneMatch(d -> Files.exists(rootfs.resolve(d).resolve(soname)))) {
                    unmet.add(elf.getFileName() + " -> " + soname);
                }
            }
        }
        assertEquals(List.of(), unmet);
    }

    /**
     * The launcher's {@code java.library.path}: RocksDB's, netty's epoll and jffi's JNI libraries,
     * each the same bytes as the copy in the image's jar that loads it (another version's would
     * fail to link, or worse), so that no start extracts them.
     */
    @Test
    void theJarsJniLibrariesAreUnpackedWhereTheLauncherLooks() throws IOException {
        Map<String, String> entries =
                Map.of(
                        "librocksdbjni-linux64.so", "librocksdbjni-linux64.so",
                        "libnetty_transport_native_epoll_x86_64.so",
                                "META-INF/native/libnetty_transport_native_epoll_x86_64.so",
                        "libjffi-1.2.so", "jni/x86_64-Linux/libjffi-1.2.so");
        Map<String, byte[]> inJars = new HashMap<>();
        try (Stream<Path> jars = Files.list(rootfs.resolve("app/libs"))) {
            for (Path jar : jars.toList()) {
                try (ZipFile zip = new ZipFile(jar.toFile())) {
                    for (Map.Entry<String, String> e : entries.entrySet()) {
                        ZipEntry entry = zip.getEntry(e.getValue());
                        if (entry != null) {
                            try (InputStream in = zip.getInputStream(entry)) {
                                inJars.put(e.getKey(), in.readAllBytes());
                            }
                        }
                    }
                }
            }
        }
        assertEquals(entries.keySet(), inJars.keySet(), "the jars that carry them");
        Set<String> unpacked;
        try (Stream<Path> files = Files.list(rootfs.resolve("opt/cadastre/native"))) {
            unpacked = new TreeSet<>(files.map(f -> f.getFileName().toString()).toList());
        }
        assertEquals(new TreeSet<>(entries.keySet()), unpacked);
        for (String library : unpacked) {
            assertTrue(
                    Arrays.equals(
                            inJars.get(library),
                            Files.readAllBytes(rootfs.resolve("opt/cadastre/native/" + library))),
                    library + " differs from its jar's copy");
        }
    }

    /** The plugin runs on the host, whatever C library the host has (or none): it links none. */
    @Test
    void thePluginAndTheShellAreStatic() throws Exception {
        for (String file : List.of("opt/cadastre/bin/cadastre", "bin/sh")) {
            String dynamic = readelf(rootfs.resolve(file));
            assertFalse(dynamic.contains("program interpreter"), file + ":\n" + dynamic);
            assertFalse(dynamic.contains("(NEEDED)"), file + ":\n" + dynamic);
        }
    }

    private static void assertExecutable(String path) {
        assertTrue(Files.isRegularFile(rootfs.resolve(path)), path);
        assertEquals(0755, MODES.get(path) & 0777, path + "'s mode in the image");
    }

    private static String read(String path) {
        try {
            return Files.readString(rootfs.resolve(path));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static boolean isElf(Path f) throws IOException {
        try (InputStream in = Files.newInputStream(f)) {
            byte[] magic = in.readNBytes(4);
            return magic.length == 4
                    && magic[0] == 0x7f
                    && magic[1] == 'E'
                    && magic[2] == 'L'
                    && magic[3] == 'F';
        }
    }

    /** {@code readelf -l -d -W}: the program headers (interpreter) and the dynamic section (needed libraries). */
    private static String readelf(Path elf) throws Exception {
        Process p =
                new ProcessBuilder("readelf", "-l", "-d", "-W", elf.toString())
                        .redirectErrorStream(true)
                        .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "readelf " + elf);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    private static Path blob(Path layout, String digest) {
        return layout.resolve("blobs").resolve(digest.replace(':', '/'));
    }

    /** Unpacks a tar stream into {@code dir}, regular files and directories only, recording modes when asked. */
    private static void untar(InputStream in, Path dir, Map<String, Integer> modes)
            throws IOException {
        try (TarArchiveInputStream tar = new TarArchiveInputStream(in)) {
            TarArchiveEntry e;
            while ((e = tar.getNextEntry()) != null) {
                String name =
                        e.getName()
                                .replaceFirst("^\\./", "")
                                .replaceFirst("^/", "")
                                .replaceFirst("/$", "");
                Path target = dir.resolve(name).normalize();
                assertTrue(target.startsWith(dir), e.getName());
                if (modes != null) {
                    modes.put(name, e.getMode());
                }
                if (e.isDirectory()) {
                    Files.createDirectories(target);
                } else if (e.isFile()) {
                    Files.createDirectories(target.getParent());
                    Files.copy(tar, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                } else {
                    throw new AssertionError(
                            "unexpected entry "
                                    + e.getName()
                                    + ": the image holds no links or devices");
                }
            }
        }
    }
}
