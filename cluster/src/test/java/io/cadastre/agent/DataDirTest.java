package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.journal.OwnerOnly;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The data directory is its owner's only: created so, or tightened, with what it holds. */
class DataDirTest {
    @TempDir Path tmp;

    private static String mode(Path path) throws Exception {
        return PosixFilePermissions.toString(
                Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void aNewDirectoryIs0700AndTheJournalsFiles0600AndNothingToWarnAbout() throws Exception {
        Path dir = tmp.resolve("var/lib/cadastre");
        assertEquals(List.of(), DataDir.prepare(dir, true));
        assertEquals("rwx------", mode(dir));
        try (io.cadastre.journal.RocksJournalStore store =
                io.cadastre.journal.RocksJournalStore.open(
                        dir.resolve("journal"),
                        io.cadastre.journal.RocksJournalStore.Settings.DEFAULT)) {
            store.deleteEventsTo("p", 1).join();
        }
        assertEquals("rwx------", mode(dir.resolve("journal")));
        try (var files = Files.list(dir.resolve("journal"))) {
            for (Path f : files.toList()) {
                assertEquals("rw-------", mode(f), f.toString());
            }
        }
        assertEquals("rwxr-xr-x", mode(dir.getParent()), "parents as usual");
        assertEquals(List.of(), DataDir.prepare(dir, true), "again: nothing changes");
    }

    @Test
    void withCassandraThereIsNoJournalFile() throws Exception {
        Path dir = tmp.resolve("data");
        DataDir.prepare(dir, false);
        assertEquals(List.of(), List.of(dir.toFile().list()));
    }

    @Test
    void anExistingLooserDirectoryAndItsFilesAreTightenedAndNamed() throws Exception {
        Path dir =
                Files.createDirectory(
                        tmp.resolve("data"),
                        PosixFilePermissions.asFileAttribute(
                                PosixFilePermissions.fromString("rwxr-xr-x")));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path journal = Files.writeString(dir.resolve("journal.mv.db"), "old journal");
        Files.setPosixFilePermissions(journal, PosixFilePermissions.fromString("rw-r--r--"));
        Path trace = Files.writeString(dir.resolve("journal.trace.db"), "");
        Files.setPosixFilePermissions(trace, PosixFilePermissions.fromString("rw-rw-rw-"));
        Path outside = Files.writeString(tmp.resolve("outside"), "");
        Files.setPosixFilePermissions(outside, PosixFilePermissions.fromString("rw-r--r--"));
        Files.createSymbolicLink(dir.resolve("link"), outside);

        List<String> changed = DataDir.prepare(dir, true);

        assertEquals(
                java.util.Set.of(
                        "data directory " + dir + " was rwxr-xr-x, now rwx------",
                        journal + " was rw-r--r--, now rw-------",
                        trace + " was rw-rw-rw-, now rw-------"),
                java.util.Set.copyOf(changed));
        assertEquals("rwx------", mode(dir));
        assertEquals("rw-------", mode(journal));
        assertEquals(
                "old journal", Files.readString(journal), "the journal itself is left as it was");
        assertEquals("rw-------", mode(trace));
        assertEquals("rw-r--r--", mode(outside), "a link's target is not the agent's");
    }

    /**
     * The journal is open when its files are tightened, and a compaction may delete one after the
     * listing: an agent once failed to start on such a file (NoSuchFileException).
     */
    @Test
    void aJournalFileDeletedAfterTheListingIsSkippedAndOneStillThereIsTightened() throws Exception {
        Path looser = Files.writeString(tmp.resolve("000012.sst"), "");
        Files.setPosixFilePermissions(looser, PosixFilePermissions.fromString("rw-r--r--"));
        Path deleted = tmp.resolve("000011.sst");

        assertEquals(Optional.empty(), OwnerOnly.tightenRegularFile(deleted));
        assertEquals(
                Optional.of("was rw-r--r--, now rw-------"), OwnerOnly.tightenRegularFile(looser));
        assertEquals("rw-------", mode(looser));
    }

    @Test
    void aTighterDirectoryIsLeftAlone() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("data"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        assertEquals(List.of(), DataDir.prepare(dir, false));
        assertEquals("rwx------", mode(dir));
    }

    @Test
    void aFileWhereTheDirectoryShouldBeIsRefused() throws Exception {
        Path file = Files.writeString(tmp.resolve("file"), "");
        assertEquals(
                "cadastre.data-dir " + file + " is not a directory",
                assertThrows(IllegalArgumentException.class, () -> DataDir.prepare(file, true))
                        .getMessage());
    }

    @Test
    void classDataArchivesOfOtherBuildsAreRemovedAndTheOneInUseStays() throws Exception {
        Path data = tmp.resolve("data");
        DataDir.prepare(data, true);
        Path current = Files.writeString(data.resolve("cadastre-agent-0.2.0-abc.jsa"), "mapped");
        Path older =
                Files.writeString(data.resolve("cadastre-agent-0.1.0-def.jsa"), "another build");
        Path unrelated = Files.writeString(data.resolve("admin.token"), "token");

        List<Path> removed =
                DataDir.removeStaleClassArchives(
                        data, List.of("-Xmx256m", "-XX:SharedArchiveFile=" + current));

        assertEquals(List.of(older), removed);
        assertTrue(Files.exists(current));
        assertTrue(Files.exists(unrelated));
        // Being written at exit is in use too.
        Path next = Files.writeString(data.resolve("cadastre-agent-0.3.0-0ab.jsa"), "partial");
        assertEquals(
                List.of(current),
                DataDir.removeStaleClassArchives(
                        data, List.of("-XX:ArchiveClassesAtExit=" + next)));
    }
}
