package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.testsupport.AgentExec;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Where the real agent's JNI libraries come from: with the build's directory on {@code
 * java.library.path}, as {@code bin/cadastre-agent} and the image start it, RocksDB's and netty's
 * epoll transport's are mapped from there and nothing is extracted at start; without it,
 * RocksDB's is extracted into {@code native-library-dir} (0700), never into {@code
 * java.io.tmpdir}.
 */
class NativeLibrariesEndToEndTest {
    private static final String ROCKSDB = "librocksdbjni-linux64.so";
    private static final String NETTY_EPOLL = "libnetty_transport_native_epoll_x86_64.so";

    @Test
    void theBuildsLibrariesAreMappedFromTheLibraryPathAndNothingIsExtracted() throws Exception {
        // The build gives it as .../cluster/../cluster/target/native; the maps name the real path.
        Path nativeDir = Path.of(System.getProperty(AgentExec.NATIVE_DIR_PROPERTY)).toRealPath();
        assertTrue(
                Files.isRegularFile(nativeDir.resolve(ROCKSDB))
                        && Files.isRegularFile(nativeDir.resolve(NETTY_EPOLL)),
                "the build unpacked the libraries into " + nativeDir);
        Path dir = Files.createTempDirectory("cad-native");
        Path tmp = Files.createDirectories(dir.resolve("tmp"));
        try (AgentProcess agent =
                new AgentProcess(dir, "native-node", AgentProcess.TEST_POOLS)
                        .withJvmFlags("-Djava.io.tmpdir=" + tmp)
                        .start()) {
            assertServesAnAdd(agent);
            List<String> mapped = mappedLibraries(agent.pid());
            assertTrue(mapped.contains(nativeDir.resolve(ROCKSDB).toString()), mapped.toString());
            assertTrue(
                    mapped.contains(nativeDir.resolve(NETTY_EPOLL).toString()), mapped.toString());
            assertFalse(
                    Files.exists(agent.dataDir().resolve("native")),
                    "no native-library-dir when the library path has RocksDB's");
            assertEquals(List.of(), files(tmp), "nothing extracted into java.io.tmpdir");
        } finally {
            CniEndToEndTest.deleteTree(dir);
        }
    }

    @Test
    void withoutTheLibraryPathRocksDbsIsExtractedIntoTheNativeLibraryDirOnly() throws Exception {
        Path dir = Files.createTempDirectory("cad-native");
        Path tmp = Files.createDirectories(dir.resolve("tmp"));
        Path emptyLibraryPath = Files.createDirectories(dir.resolve("no-libraries"));
        try (AgentProcess agent =
                new AgentProcess(dir, "native-node", AgentProcess.TEST_POOLS)
                        .withJvmFlags(
                                "-Djava.library.path=" + emptyLibraryPath,
                                "-Djava.io.tmpdir=" + tmp)
                        .start()) {
            assertServesAnAdd(agent);
            Path extracted = agent.dataDir().resolve("native");
            assertEquals(
                    "rwx------",
                    PosixFilePermissions.toString(Files.getPosixFilePermissions(extracted)));
            assertTrue(
                    mappedLibraries(agent.pid()).contains(extracted.resolve(ROCKSDB).toString()),
                    "RocksDB's library from " + extracted);
            assertTrue(
                    files(tmp).stream().noneMatch(f -> f.contains("rocksdb")),
                    "not in java.io.tmpdir: " + files(tmp));
        } finally {
            CniEndToEndTest.deleteTree(dir);
        }
    }

    private static void assertServesAnAdd(AgentProcess agent)
            throws IOException, InterruptedException {
        Result add =
                CniExec.run(
                        CniExec.env("ADD", "native-pod", "/var/run/netns/unused", "eth0"),
                        "{\"cniVersion\":\"1.1.0\",\"name\":\"native\",\"type\":\"bridge\","
                                + "\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\""
                                + agent.socket()
                                + "\",\"pools\":[\"test-ipv4\"]}}");
        assertEquals(0, add.exit(), add.toString());
    }

    /** @return the files the process maps, from {@code /proc/PID/maps}, each once */
    private static List<String> mappedLibraries(long pid) throws IOException {
        return Files.readAllLines(Path.of("/proc", Long.toString(pid), "maps")).stream()
                .map(line -> line.split("\\s+", 6))
                .filter(fields -> fields.length == 6 && fields[5].startsWith("/"))
                .map(fields -> fields[5])
                .distinct()
                .toList();
    }

    private static List<String> files(Path dir) throws IOException {
        try (Stream<Path> walk = Files.walk(dir)) {
            return walk.filter(Files::isRegularFile).map(Path::toString).toList();
        }
    }
}
