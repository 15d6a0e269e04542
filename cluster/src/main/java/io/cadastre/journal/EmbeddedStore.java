package io.cadastre.journal;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.pekko.actor.AbstractExtensionId;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Extension;
import org.apache.pekko.actor.ExtensionIdProvider;
import org.rocksdb.NativeLibraryLoader;
import org.rocksdb.util.Environment;

/**
 * The one {@link RocksJournalStore} of an actor system, shared by {@link EmbeddedJournal} and
 * {@link EmbeddedSnapshotStore}, opened on first use from {@code cadastre.embedded-journal}
 * ({@code dir}, {@code write-buffer-size}, {@code max-wal-size}, {@code compact-above},
 * {@code native-library-dir}) and closed when the system terminates.
 *
 * <p>RocksDB's native library is loaded from {@code java.library.path} when it is there, as the
 * launchers have it (the build unpacks it once; no copy at each start). Otherwise it is extracted
 * from its jar into {@code native-library-dir} (created 0700) rather than into {@code
 * java.io.tmpdir}: the extracted copy is deleted only when the JVM exits normally, and one left by
 * a killed agent is replaced at the next start instead of piling up (about 15 MB each); a temporary
 * directory mounted {@code noexec} cannot load it at all.
 */
public final class EmbeddedStore implements Extension {
    /** The extension's id: {@code EmbeddedStore.ID.get(system)}. */
    public static final Id ID = new Id();

    private final RocksJournalStore store;

    private EmbeddedStore(ExtendedActorSystem system) {
        Config c = system.settings().config().getConfig("cadastre.embedded-journal");
        try {
            // rocksdbjni looks on java.library.path first, under this name, and extracts only
            // when it finds nothing there.
            if (!onLibraryPath(System.mapLibraryName(Environment.getJniLibraryName("rocksdb")))) {
                Path nativeDir = Path.of(c.getString("native-library-dir"));
                if (!Files.isDirectory(nativeDir)) {
                    Files.createDirectories(
                            nativeDir,
                            PosixFilePermissions.asFileAttribute(
                                    PosixFilePermissions.fromString("rwx------")));
                }
                NativeLibraryLoader.getInstance().loadLibrary(nativeDir.toString());
            }
            store =
                    RocksJournalStore.open(
                            Path.of(c.getString("dir")), settings(system.settings().config()));
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot open the embedded journal in "
                            + c.getString("dir")
                            + ": "
                            + e.getMessage(),
                    e);
        }
        system.registerOnTermination(
                () -> {
                    try {
                        store.close();
                    } catch (IOException e) {
                        system.log().warning("closing the embedded journal: {}", e.getMessage());
                    }
                });
    }

    /**
     * Reads the store's sizes; the agent calls it before its actor system starts, so that a bad
     * value is a configuration error (exit 2) rather than a failed start.
     *
     * @param root the whole configuration
     * @return {@code cadastre.embedded-journal}'s {@code write-buffer-size}, {@code max-wal-size}
     *     and {@code compact-above} (bytes)
     * @throws IllegalArgumentException naming the section when a size is below 64 KiB or not a size
     */
    public static RocksJournalStore.Settings settings(Config root) {
        Config c = root.getConfig("cadastre.embedded-journal");
        try {
            return new RocksJournalStore.Settings(
                    c.getBytes("write-buffer-size"),
                    c.getBytes("max-wal-size"),
                    c.getBytes("compact-above"));
        } catch (IllegalArgumentException | ConfigException e) {
            throw new IllegalArgumentException("cadastre.embedded-journal: " + e.getMessage(), e);
        }
    }

    /**
     * @param fileName a library's file name, e.g. {@code librocksdbjni-linux64.so}
     * @return whether a directory of {@code java.library.path} holds it, where {@link
     *     System#loadLibrary} finds it
     */
    static boolean onLibraryPath(String fileName) {
        String path = System.getProperty("java.library.path", "");
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isRegularFile(Path.of(dir, fileName))) {
                return true;
            }
        }
        return false;
    }

    /** @return the store */
    public RocksJournalStore store() {
        return store;
    }

    /** The extension's id. */
    public static final class Id extends AbstractExtensionId<EmbeddedStore>
            implements ExtensionIdProvider {
        @Override
        public EmbeddedStore createExtension(ExtendedActorSystem system) {
            return new EmbeddedStore(system);
        }

        @Override
        public Id lookup() {
            return ID;
        }
    }
}
