package io.cadastre.journal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

/**
 * Directories and files only their owner may use: the agent's data directory and the embedded
 * journal's, and the files in them ({@code io.cadastre.agent.DataDir}, {@link RocksJournalStore}).
 */
public final class OwnerOnly {
    private static final Set<PosixFilePermission> GROUP_OR_OTHERS =
            EnumSet.of(
                    PosixFilePermission.GROUP_READ,
                    PosixFilePermission.GROUP_WRITE,
                    PosixFilePermission.GROUP_EXECUTE,
                    PosixFilePermission.OTHERS_READ,
                    PosixFilePermission.OTHERS_WRITE,
                    PosixFilePermission.OTHERS_EXECUTE);

    private OwnerOnly() {}

    /**
     * Creates the directory {@code rwx------}, with its mode: there is no moment when another user
     * could enter it and hold it open.
     *
     * @throws java.nio.file.FileAlreadyExistsException when something exists there
     * @throws IOException when it cannot be created (its parent is missing, no permission)
     */
    public static void createDirectory(Path dir) throws IOException {
        Files.createDirectory(
                dir,
                PosixFilePermissions.asFileAttribute(
                        EnumSet.of(
                                PosixFilePermission.OWNER_READ,
                                PosixFilePermission.OWNER_WRITE,
                                PosixFilePermission.OWNER_EXECUTE)));
    }

    /**
     * Takes group's and others' permissions from the file or directory.
     *
     * @param permissions its permissions now (read without following a link by the caller, where
     *     that matters)
     * @return what changed ({@code "was rwxr-xr-x, now rwx------"}); empty when it was private
     *     already, and then nothing is written
     * @throws IOException when the permissions cannot be set
     */
    public static Optional<String> tighten(Path path, Set<PosixFilePermission> permissions)
            throws IOException {
        if (permissions.stream().noneMatch(GROUP_OR_OTHERS::contains)) {
            return Optional.empty();
        }
        Set<PosixFilePermission> tightened = EnumSet.noneOf(PosixFilePermission.class);
        tightened.addAll(permissions);
        tightened.removeAll(GROUP_OR_OTHERS);
        Files.setPosixFilePermissions(path, tightened);
        return Optional.of(
                "was "
                        + PosixFilePermissions.toString(permissions)
                        + ", now "
                        + PosixFilePermissions.toString(tightened));
    }

    /**
     * Takes group's and others' permissions from {@code path} when it is a regular file (a link is
     * not followed: what it points to is not the agent's). For the files of an open journal, whose
     * compactions delete some: a file gone between its directory's listing and this call needs
     * nothing.
     *
     * @return what changed, as {@link #tighten}; empty when nothing did, also when the file is gone
     * @throws IOException when its permissions cannot be read or set
     */
    public static Optional<String> tightenRegularFile(Path path) throws IOException {
        try {
            PosixFileAttributes attributes =
                    Files.readAttributes(
                            path, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return attributes.isRegularFile()
                    ? tighten(path, attributes.permissions())
                    : Optional.empty();
        } catch (NoSuchFileException gone) {
            return Optional.empty();
        }
    }
}
