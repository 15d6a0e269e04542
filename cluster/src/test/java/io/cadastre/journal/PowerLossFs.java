package io.cadastre.journal;

import io.cadastre.testsupport.Command;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import jnr.ffi.Pointer;
import jnr.ffi.types.mode_t;
import jnr.ffi.types.off_t;
import jnr.ffi.types.size_t;
import ru.serce.jnrfuse.ErrorCodes;
import ru.serce.jnrfuse.FuseFillDir;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.Statvfs;
import ru.serce.jnrfuse.struct.Timespec;

/**
 * A file system (FUSE, through jnr-fuse and libfuse 2) that loses, on {@link #powerLoss}, every
 * byte written to a file since that file's last {@code fsync} or {@code fdatasync}: a disk cache
 * losing its power, for crash-consistency tests. Files live in this JVM's memory; the process
 * using them (an agent) runs apart and is killed before the power loss.
 *
 * <p>The model, and what it leaves out: a file's data and size become durable only by a sync of
 * that file, all at once; names and directories (create, rename, unlink, mkdir) are durable at
 * once, as on a journaling file system that commits metadata before data it orders (ext4's
 * default {@code data=ordered} commits them with the next sync anyway). Torn writes within one
 * write call are not modelled. Mounted with {@code direct_io}, so that the kernel caches no file
 * data that the power loss would not reach, and with no attribute caching.
 *
 * <p>Test support only: root, {@code /dev/fuse} and {@code libfuse.so.2} (Debian's
 * {@code libfuse2}).
 */
public final class PowerLossFs extends FuseStubFS implements AutoCloseable {
    private static final int KEEP_SIZE = 1; // FALLOC_FL_KEEP_SIZE

    private static final class Node {
        final long ino;
        final boolean directory;
        final Map<String, Node> children;
        long mode;
        byte[] data = new byte[0];
        int size;
        byte[] durable = new byte[0];

        Node(long ino, boolean directory, long mode) {
            this.ino = ino;
            this.directory = directory;
            this.children = directory ? new TreeMap<>() : null;
            this.mode = mode & 07777;
        }
    }

    private final Path mountPoint;
    private final Node root;
    private final Map<Long, Node> open = new HashMap<>();
    private long nextIno = 2;
    private long nextHandle = 1;
    private long syncs;
    private long lostBytes;

    /** Guards {@link #syncsHeld} and {@link #syncsWaiting}, apart from the file system's lock. */
    private final Object syncGate = new Object();

    private boolean syncsHeld;
    private int syncsWaiting;

    private PowerLossFs(Path mountPoint) {
        this.mountPoint = mountPoint;
        this.root = new Node(1, true, 0700);
    }

    /**
     * Mounts an empty file system (its root 0700) on {@code mountPoint}, an existing empty
     * directory, and waits until it serves.
     *
     * @throws IOException when the mount does not appear within 10 s
     */
    public static PowerLossFs mountOn(Path mountPoint) throws IOException {
        PowerLossFs fs = new PowerLossFs(mountPoint);
        fs.mount(
                mountPoint,
                false,
                false,
                new String[] {
                    "-o",
                    "direct_io,hard_remove,attr_timeout=0,entry_timeout=0,negative_timeout=0",
                    "-o",
                    "fsname=cadastre-power-loss"
                });
        if (!fs.awaitMounted(true)) {
            fs.close();
            throw new IOException("the power-loss file system did not mount on " + mountPoint);
        }
        return fs;
    }

    /**
     * Loses what no sync covered: every file's data and size go back to what its last sync
     * stored, and every open file handle becomes invalid (a write still in flight from the
     * killed process fails rather than landing after the loss). Call it after the process using
     * the file system has died.
     *
     * @return the bytes lost: in each file, from the first that differs from its durable copy to
     *     the end of the longer
     */
    public long powerLoss() {
        long lost = revert();
        synchronized (syncGate) {
            // Held syncs fail now: their handles are gone.
            syncsHeld = false;
            syncGate.notifyAll();
        }
        return lost;
    }

    /**
     * From now until {@link #powerLoss}, every {@code fsync} and {@code fdatasync} waits and then
     * fails: the process syncing is stuck with what it wrote since its last sync unsynced, the
     * moment to kill it for a loss that is sure to lose something.
     */
    public void holdSyncs() {
        synchronized (syncGate) {
            syncsHeld = true;
        }
    }

    /** @return the syncs waiting because of {@link #holdSyncs} */
    public int syncsWaiting() {
        synchronized (syncGate) {
            return syncsWaiting;
        }
    }

    private synchronized long revert() {
        long lost = 0;
        List<Node> reachable = new ArrayList<>();
        collect(root, reachable);
        Set<Node> files = Collections.newSetFromMap(new IdentityHashMap<>());
        files.addAll(reachable);
        files.addAll(open.values()); // unlinked, still open
        for (Node file : files) {
            if (file.directory) {
                continue;
            }
            int same = Arrays.mismatch(Arrays.copyOf(file.data, file.size), file.durable);
            if (same >= 0) {
                lost += Math.max(file.size, file.durable.length) - same;
            }
            file.data = file.durable.clone();
            file.size = file.durable.length;
        }
        open.clear();
        lostBytes += lost;
        return lost;
    }

    /** @return the fsync and fdatasync calls served so far */
    public synchronized long syncs() {
        return syncs;
    }

    private static void collect(Node dir, List<Node> into) {
        for (Node child : dir.children.values()) {
            into.add(child);
            if (child.directory) {
                collect(child, into);
            }
        }
    }

    /**
     * Lets held syncs go, and unmounts lazily: a process still holding a file or a directory open
     * does not keep the mount. jnr-fuse unmounts through {@code fusermount -u -z}, or, where
     * fusermount is missing (Debian's libfuse2 comes without it), a plain {@code umount}, which a
     * busy mount refuses; so this detaches the mount itself first.
     *
     * @throws IllegalStateException when the mount is still in the mount table after 10 s
     */
    @Override
    public void close() {
        synchronized (syncGate) {
            syncsHeld = false;
            syncGate.notifyAll();
        }
        try {
            Command.run(List.of("umount", "-l", mountPoint.toString()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        umount(); // jnr-fuse's own state; the mount is gone already
        if (!awaitMounted(false)) {
            throw new IllegalStateException(this + ": still mounted after umount -l");
        }
    }

    /** @return whether the mount table came to show the mount point {@code mounted} (or not) within 10 s */
    private boolean awaitMounted(boolean mounted) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                String table = Files.readString(Path.of("/proc/self/mounts"));
                if (table.contains(" " + mountPoint + " ") == mounted) {
                    return true;
                }
            } catch (IOException e) {
                return false;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    @Override
    public String toString() {
        return "PowerLossFs on " + mountPoint + " (" + lostBytes + " bytes lost so far)";
    }

    // ---------------------------------------------------------------- paths

    private Node lookup(String path) {
        Node node = root;
        for (String name : path.split("/")) {
            if (name.isEmpty()) {
                continue;
            }
            if (!node.directory) {
                return null;
            }
            node = node.children.get(name);
            if (node == null) {
                return null;
            }
        }
        return node;
    }

    private Node parentOf(String path) {
        int slash = path.lastIndexOf('/');
        Node parent = lookup(slash <= 0 ? "/" : path.substring(0, slash));
        return parent != null && parent.directory ? parent : null;
    }

    private static String nameOf(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }

    private Node handle(FuseFileInfo fi) {
        return open.get(fi.fh.get());
    }

    private int opened(Node node, FuseFileInfo fi) {
        long handle = nextHandle++;
        open.put(handle, node);
        fi.fh.set(handle);
        return 0;
    }

    // ---------------------------------------------------------------- operations

    private static void fill(Node node, FileStat stat) {
        stat.st_mode.set((node.directory ? FileStat.S_IFDIR : FileStat.S_IFREG) | node.mode);
        stat.st_ino.set(node.ino);
        stat.st_nlink.set(node.directory ? 2 : 1);
        stat.st_size.set(node.directory ? 4096 : node.size);
        stat.st_blksize.set(4096);
        stat.st_blocks.set(node.directory ? 8 : (node.size + 511L) / 512);
        stat.st_uid.set(0);
        stat.st_gid.set(0);
    }

    @Override
    public synchronized int getattr(String path, FileStat stat) {
        Node node = lookup(path);
        if (node == null) {
            return -ErrorCodes.ENOENT();
        }
        fill(node, stat);
        return 0;
    }

    @Override
    public synchronized int fgetattr(String path, FileStat stat, FuseFileInfo fi) {
        Node node = handle(fi);
        if (node == null) {
            return getattr(path, stat);
        }
        fill(node, stat);
        return 0;
    }

    @Override
    public synchronized int mkdir(String path, @mode_t long mode) {
        Node parent = parentOf(path);
        if (parent == null) {
            return -ErrorCodes.ENOENT();
        }
        if (parent.children.containsKey(nameOf(path))) {
            return -ErrorCodes.EEXIST();
        }
        parent.children.put(nameOf(path), new Node(nextIno++, true, mode));
        return 0;
    }

    @Override
    public synchronized int rmdir(String path) {
        Node parent = parentOf(path);
        Node node = lookup(path);
        if (parent == null || node == null) {
            return -ErrorCodes.ENOENT();
        }
        if (!node.directory) {
            return -ErrorCodes.ENOTDIR();
        }
        if (!node.children.isEmpty()) {
            return -ErrorCodes.ENOTEMPTY();
        }
        parent.children.remove(nameOf(path));
        return 0;
    }

    @Override
    public synchronized int create(String path, @mode_t long mode, FuseFileInfo fi) {
        Node parent = parentOf(path);
        if (parent == null) {
            return -ErrorCodes.ENOENT();
        }
        Node node = parent.children.get(nameOf(path));
        if (node == null) {
            node = new Node(nextIno++, false, mode);
            parent.children.put(nameOf(path), node);
        } else if (node.directory) {
            return -ErrorCodes.EISDIR();
        }
        return opened(node, fi);
    }

    @Override
    public synchronized int open(String path, FuseFileInfo fi) {
        Node node = lookup(path);
        if (node == null) {
            return -ErrorCodes.ENOENT();
        }
        if (node.directory) {
            return -ErrorCodes.EISDIR();
        }
        return opened(node, fi);
    }

    @Override
    public synchronized int read(
            String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        Node node = handle(fi);
        if (node == null) {
            return -ErrorCodes.EBADF();
        }
        if (offset >= node.size) {
            return 0;
        }
        int count = (int) Math.min(size, node.size - offset);
        buf.put(0, node.data, (int) offset, count);
        return count;
    }

    @Override
    public synchronized int write(
            String path, Pointer buf, @size_t long size, @off_t long offset, FuseFileInfo fi) {
        Node node = handle(fi);
        if (node == null) {
            return -ErrorCodes.EBADF();
        }
        int end = Math.toIntExact(offset + size);
        resize(node, Math.max(node.size, end));
        buf.get(0, node.data, (int) offset, (int) size);
        return (int) size;
    }

    private static void resize(Node node, int size) {
        if (size > node.data.length) {
            node.data = Arrays.copyOf(node.data, Math.max(size, node.data.length * 2));
        } else if (size < node.size) {
            Arrays.fill(node.data, size, node.size, (byte) 0);
        }
        node.size = size;
    }

    @Override
    public synchronized int truncate(String path, @off_t long size) {
        Node node = lookup(path);
        if (node == null) {
            return -ErrorCodes.ENOENT();
        }
        if (node.directory) {
            return -ErrorCodes.EISDIR();
        }
        resize(node, Math.toIntExact(size));
        return 0;
    }

    @Override
    public synchronized int ftruncate(String path, @off_t long size, FuseFileInfo fi) {
        Node node = handle(fi);
        if (node == null) {
            return -ErrorCodes.EBADF();
        }
        resize(node, Math.toIntExact(size));
        return 0;
    }

    @Override
    public synchronized int fallocate(
            String path, int mode, @off_t long offset, @off_t long length, FuseFileInfo fi) {
        Node node = handle(fi);
        if (node == null) {
            return -ErrorCodes.EBADF();
        }
        // Preallocation that keeps the size changes nothing visible; otherwise it extends.
        if ((mode & KEEP_SIZE) == 0) {
            resize(node, Math.max(node.size, Math.toIntExact(offset + length)));
        }
        return 0;
    }

    @Override
    public int fsync(String path, int isdatasync, FuseFileInfo fi) {
        synchronized (syncGate) {
            // Outside the file system's lock: other operations go on while a sync waits.
            if (syncsHeld) {
                syncsWaiting++;
                try {
                    while (syncsHeld) {
                        syncGate.wait();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return -ErrorCodes.EIO();
                } finally {
                    syncsWaiting--;
                }
            }
        }
        return syncNow(fi);
    }

    private synchronized int syncNow(FuseFileInfo fi) {
        Node node = handle(fi);
        if (node == null) {
            return -ErrorCodes.EBADF();
        }
        node.durable = Arrays.copyOf(node.data, node.size);
        syncs++;
        return 0;
    }

    @Override
    public int fsyncdir(String path, FuseFileInfo fi) {
        return 0; // names are durable at once in this model
    }

    @Override
    public int flush(String path, FuseFileInfo fi) {
        return 0;
    }

    @Override
    public synchronized int release(String path, FuseFileInfo fi) {
        open.remove(fi.fh.get());
        return 0;
    }

    @Override
    public synchronized int unlink(String path) {
        Node parent = parentOf(path);
        Node node = lookup(path);
        if (parent == null || node == null) {
            return -ErrorCodes.ENOENT();
        }
        if (node.directory) {
            return -ErrorCodes.EISDIR();
        }
        parent.children.remove(nameOf(path));
        return 0;
    }

    @Override
    public synchronized int rename(String oldpath, String newpath) {
        Node from = parentOf(oldpath);
        Node to = parentOf(newpath);
        Node node = lookup(oldpath);
        if (from == null || to == null || node == null) {
            return -ErrorCodes.ENOENT();
        }
        Node replaced = to.children.get(nameOf(newpath));
        if (replaced != null && replaced.directory != node.directory) {
            return node.directory ? -ErrorCodes.ENOTDIR() : -ErrorCodes.EISDIR();
        }
        if (replaced != null && replaced.directory && !replaced.children.isEmpty()) {
            return -ErrorCodes.ENOTEMPTY();
        }
        from.children.remove(nameOf(oldpath));
        to.children.put(nameOf(newpath), node);
        return 0;
    }

    @Override
    public synchronized int chmod(String path, @mode_t long mode) {
        Node node = lookup(path);
        if (node == null) {
            return -ErrorCodes.ENOENT();
        }
        node.mode = mode & 07777;
        return 0;
    }

    @Override
    public int chown(String path, long uid, long gid) {
        return 0;
    }

    @Override
    public int utimens(String path, Timespec[] timespec) {
        return 0;
    }

    @Override
    public int access(String path, int mask) {
        return 0;
    }

    @Override
    public synchronized int opendir(String path, FuseFileInfo fi) {
        Node node = lookup(path);
        if (node == null) {
            return -ErrorCodes.ENOENT();
        }
        return node.directory ? 0 : -ErrorCodes.ENOTDIR();
    }

    @Override
    public synchronized int readdir(
            String path, Pointer buf, FuseFillDir filter, @off_t long offset, FuseFileInfo fi) {
        Node node = lookup(path);
        if (node == null) {
            return -ErrorCodes.ENOENT();
        }
        if (!node.directory) {
            return -ErrorCodes.ENOTDIR();
        }
        filter.apply(buf, ".", null, 0);
        filter.apply(buf, "..", null, 0);
        for (String name : node.children.keySet()) {
            filter.apply(buf, name, null, 0);
        }
        return 0;
    }

    @Override
    public int releasedir(String path, FuseFileInfo fi) {
        return 0;
    }

    @Override
    public int statfs(String path, Statvfs stbuf) {
        stbuf.f_bsize.set(4096);
        stbuf.f_frsize.set(4096);
        stbuf.f_blocks.set(1L << 20);
        stbuf.f_bfree.set(1L << 19);
        stbuf.f_bavail.set(1L << 19);
        stbuf.f_files.set(1L << 16);
        stbuf.f_ffree.set(1L << 15);
        stbuf.f_favail.set(1L << 15);
        stbuf.f_namemax.set(255);
        return 0;
    }
}
