package io.cadastre.journal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The power-loss file system keeps what a sync covered and loses the rest. */
class PowerLossFsTest {
    @TempDir Path tmp;

    private static ByteBuffer utf8(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void whatASyncCoveredStaysAndTheRestIsLost() throws IOException {
        Path mount = Files.createDirectory(tmp.resolve("disk"));
        try (PowerLossFs disk = PowerLossFs.mountOn(mount)) {
            Path synced = mount.resolve("synced");
            try (FileChannel file =
                    FileChannel.open(
                            synced, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                file.write(utf8("kept"));
                file.force(false); // fdatasync
                file.write(utf8(", lost"));
            }
            Path unsynced = mount.resolve("unsynced");
            Files.writeString(unsynced, "never synced");
            Files.createDirectory(mount.resolve("dir"));
            Path renamed = mount.resolve("dir").resolve("renamed");
            Files.move(unsynced, renamed, StandardCopyOption.ATOMIC_MOVE);
            assertEquals("kept, lost", Files.readString(synced), "before the loss: all of it");

            assertTrue(disk.powerLoss() > 0);

            assertEquals("kept", Files.readString(synced));
            assertEquals("", Files.readString(renamed), "names are durable at once, data is not");
            try (var listed = Files.list(mount.resolve("dir"))) {
                assertEquals(List.of(renamed), listed.toList());
            }
            assertEquals(1, disk.syncs());
        }
        assertTrue(
                !Files.readString(Path.of("/proc/self/mounts")).contains(" " + mount + " "),
                "unmounted");
    }

    @Test
    void aFileOpenAtThePowerLossCannotBeWrittenAfterIt() throws IOException {
        Path mount = Files.createDirectory(tmp.resolve("disk"));
        try (PowerLossFs disk = PowerLossFs.mountOn(mount);
                FileChannel file =
                        FileChannel.open(
                                mount.resolve("log"),
                                StandardOpenOption.CREATE_NEW,
                                StandardOpenOption.WRITE)) {
            file.write(utf8("before"));
            disk.powerLoss();
            assertThrows(IOException.class, () -> file.write(utf8("after")));
            assertEquals("", Files.readString(mount.resolve("log")));
        }
    }
}
