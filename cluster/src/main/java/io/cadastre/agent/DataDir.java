package io.cadastre.agent;

import io.cadastre.journal.OwnerOnly;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The agent's data directory ({@code cadastre.data-dir}): the embedded journal (every pod's name,
 * namespace, container ID and address history) and the admin API's token. Only its owner may
 * enter it: created 0700, an existing one that lets group or others in is tightened, and so is
 * every file in it that group or others may read or write. The directory is the barrier; the
 * files' own modes keep them private if it is ever opened up, or moved.
 *
 * <p>The embedded journal lives in the subdirectory {@value #JOURNAL_DIR}, which it creates 0700
 * and whose files it keeps 0600 ({@code io.cadastre.journal.RocksJournalStore}); an existing one
 * is tightened here like the data directory. An H2 journal of an older agent ({@code journal.mv.db}) is tightened
 * like any file, then migrated and renamed ({@code io.cadastre.journal.H2Migration}).
 */
final class DataDir {
    /** The embedded journal's directory, as {@code application.conf}'s {@code cadastre.embedded-journal.dir} names it. */
    static final String JOURNAL_DIR = "journal";

    private DataDir() {}

    /**
     * Creates the directory 0700 (its missing parents with the usual permissions), or tightens an
     * existing one and the files in it, and the embedded journal's directory and files when it
     * exists (the journal creates them with those modes).
     *
     * @param dir the data directory; a link to a directory is followed
     * @param embeddedJournal whether the entities' journal is the embedded one
     * @return what was tightened, one sentence each ("X was rwxr-xr-x, now rwx------"), for a
     *     warning: empty for a directory created here or already private
     * @throws IllegalArgumentException when the path exists and is not a directory
     * @throws IOException when the directory cannot be created, read or changed
     */
    static List<String> prepare(Path dir, boolean embeddedJournal) throws IOException {
        List<String> changed = new ArrayList<>();
        if (!Files.exists(dir)) {
            Path parent = dir.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            try {
                OwnerOnly.createDirectory(dir);
            } catch (FileAlreadyExistsException e) {
                // Created meanwhile: tightened below like any existing one.
            }
        }
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("cadastre.data-dir " + dir + " is not a directory");
        }
        tighten(dir, Files.getPosixFilePermissions(dir), "data directory " + dir, changed);
        changed.addAll(tightenFiles(dir));
        Path journal = dir.resolve(JOURNAL_DIR);
        if (embeddedJournal && Files.isDirectory(journal, LinkOption.NOFOLLOW_LINKS)) {
            tighten(
                    journal,
                    Files.getPosixFilePermissions(journal),
                    "journal directory " + journal,
                    changed);
            changed.addAll(tightenFiles(journal));
        }
        return changed;
    }

    /**
     * Removes the class data sharing archives ({@code cadastre-agent-<build>.jsa}) that the image's
     * launcher wrote for other builds of the agent: each is tens of MiB, and an upgraded node would
     * keep one per version. The archive this JVM maps or writes at exit stays.
     *
     * @param jvmArguments this JVM's arguments (the runtime MXBean's), naming its archive in
     *     {@code -XX:SharedArchiveFile=} or {@code -XX:ArchiveClassesAtExit=}
     * @return the files removed
     * @throws IOException when the directory cannot be listed or a file removed
     */
    static List<Path> removeStaleClassArchives(Path dir, List<String> jvmArguments)
            throws IOException {
        Set<Path> inUse = new HashSet<>();
        for (String argument : jvmArguments) {
            for (String flag : List.of("-XX:SharedArchiveFile=", "-XX:ArchiveClassesAtExit=")) {
                if (argument.startsWith(flag)) {
                    inUse.add(
                            Path.of(argument.substring(flag.length()))
                                    .toAbsolutePath()
                                    .normalize());
                }
            }
        }
        List<Path> removed = new ArrayList<>();
        try (DirectoryStream<Path> archives =
                Files.newDirectoryStream(dir, "cadastre-agent-*.jsa")) {
            for (Path archive : archives) {
                if (!inUse.contains(archive.toAbsolutePath().normalize())
                        && Files.isRegularFile(archive, LinkOption.NOFOLLOW_LINKS)) {
                    Files.delete(archive);
                    removed.add(archive);
                }
            }
        }
        return removed;
    }

    /**
     * Takes group's and others' permissions from every regular file directly in {@code dir}
     * ({@link OwnerOnly#tightenRegularFile}: links are not followed, and a file the open journal's
     * compaction deleted after the listing is skipped).
     *
     * @return what was tightened, one sentence each
     * @throws IOException when the directory cannot be listed or a file changed
     */
    static List<String> tightenFiles(Path dir) throws IOException {
        List<String> changed = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                OwnerOnly.tightenRegularFile(entry)
                        .ifPresent(how -> changed.add(entry + " " + how));
            }
        }
        return changed;
    }

    private static void tighten(
            Path path, Set<PosixFilePermission> permissions, String what, List<String> changed)
            throws IOException {
        OwnerOnly.tighten(path, permissions).ifPresent(how -> changed.add(what + " " + how));
    }
}
