package io.cadastre.journal;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * The embedded journal's store: an append-only log in segment files of one directory, holding the
 * entities' events, their deletions and their snapshots, with an index of what is live in memory.
 *
 * <p>Durability: every {@link #append} completes only after its frames were written and the
 * segment forced to disk ({@code FileChannel.force(false)}, i.e. {@code fdatasync}). One thread
 * writes: it takes every request queued meanwhile, writes them with one gather write and forces
 * once (group commit), so concurrent writers share one sync.
 *
 * <p>Bounded on disk: once the sealed segments hold more than {@code compactAbove} bytes and less
 * than half of that is live, the live records (each persistence id's highest sequence number, its
 * deletion mark, its undeleted events and snapshots) are copied into a new segment that starts
 * with a base mark, which is forced and renamed into place before the older segments are deleted;
 * recovery deletes the segments older than the newest base, so a crash at any step leaves either
 * the old segments or the new one in force.
 *
 * <p>Frames: {@code int length, int crc32c(body), body}; segments start with an 8-byte header. A
 * frame cut short or with a wrong checksum at the end of the newest segment is a write the crash
 * interrupted (never acknowledged): it is cut off at recovery. Anywhere else it is corruption, and
 * {@link #open} refuses the directory rather than recover less than was acknowledged.
 *
 * <p>Files are created 0600 in a directory created 0700. Thread-safe.
 */
public final class SegmentLog implements AutoCloseable {
    private static final long MAGIC = 0x4341444a524e4c01L; // "CADJRNL" + format 1
    private static final int HEADER = 8;
    private static final int MAX_FRAME = 64 << 20;
    private static final byte EVENTS = 1;
    private static final byte DELETE_TO = 2;
    private static final byte HIGHEST = 3;
    private static final byte SNAPSHOT = 4;
    private static final byte SNAPSHOT_DELETE = 5;
    private static final byte BASE = 6;

    /** One serialized event as stored: the payload's serializer id and manifest, and its bytes. */
    public record Event(long seqNr, String writerUuid, String adapterManifest, long timestamp, int serializerId,
            String serializerManifest, byte[] payload) {}

    /** One serialized snapshot as stored. */
    public record Snapshot(String persistenceId, long seqNr, long timestamp, int serializerId,
            String serializerManifest, byte[] payload) {}

    /**
     * Where a frame is: segment id, offset, length (header included), and the bytes one live item
     * in it counts for (a frame of n events: length / n).
     */
    private record Loc(long segment, long offset, int length, int share) {
        Loc(long segment, long offset, int length) {
            this(segment, offset, length, length);
        }

        Loc perItem(int n) {
            return new Loc(segment, offset, length, Math.max(1, length / Math.max(1, n)));
        }
    }

    private static final class Entity {
        long highest;
        long deletedTo;
        final NavigableMap<Long, Loc> events = new TreeMap<>();
        final NavigableMap<Long, SnapLoc> snapshots = new TreeMap<>();
    }

    private record SnapLoc(long timestamp, Loc loc) {}

    private record Request(List<byte[]> bodies, CompletableFuture<Void> done) {}

    private final Path dir;
    private final long segmentBytes;
    private final long compactAbove;
    private final Map<String, Entity> entities = new HashMap<>();
    private final TreeMap<Long, FileChannel> segments = new TreeMap<>();
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final LinkedBlockingQueue<Request> queue = new LinkedBlockingQueue<>();
    private final Thread writer;
    private long activeSize;
    private long liveBytes;
    private long syncs;
    private volatile IOException failed;
    private volatile boolean closing;

    private SegmentLog(Path dir, long segmentBytes, long compactAbove) {
        this.dir = dir;
        this.segmentBytes = segmentBytes;
        this.compactAbove = compactAbove;
        this.writer = new Thread(this::writeLoop, "cadastre-journal-writer");
        this.writer.setDaemon(true);
    }

    /**
     * Opens (creating it 0700 when absent) the log in {@code dir}, recovers its index, and starts
     * the writer thread.
     *
     * @param segmentBytes a segment is sealed once it holds this many bytes (e.g. 1 MiB)
     * @param compactAbove sealed segments above this many bytes in total are compacted when less
     *     than half of what the log holds is live (e.g. 4 MiB)
     * @throws IOException when the directory cannot be read or created, or a segment is corrupt
     *     anywhere but at the newest segment's end
     */
    public static SegmentLog open(Path dir, long segmentBytes, long compactAbove) throws IOException {
        if (!Files.isDirectory(dir)) {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(EnumSet.of(
                    PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE)));
        }
        SegmentLog log = new SegmentLog(dir, segmentBytes, compactAbove);
        log.recover();
        log.writer.start();
        return log;
    }

    // ---------------------------------------------------------------- writes

    /**
     * Appends the events of one atomic write of one persistence id: all or none of them survive a
     * crash. @return completed once durable, or failed with the I/O error
     */
    public CompletableFuture<Void> appendEvents(String persistenceId, List<Event> events) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(128 + 64 * events.size());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(EVENTS);
            out.writeUTF(persistenceId);
            out.writeInt(events.size());
            for (Event e : events) {
                out.writeLong(e.seqNr());
                out.writeUTF(e.writerUuid());
                out.writeUTF(e.adapterManifest());
                out.writeLong(e.timestamp());
                out.writeInt(e.serializerId());
                out.writeUTF(e.serializerManifest());
                out.writeInt(e.payload().length);
                out.write(e.payload());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return append(List.of(bytes.toByteArray()));
    }

    /** Deletes the events of {@code persistenceId} up to {@code toSeqNr} (inclusive); its highest sequence number stays. */
    public CompletableFuture<Void> deleteEventsTo(String persistenceId, long toSeqNr) {
        return append(List.of(mark(DELETE_TO, persistenceId, toSeqNr)));
    }

    /**
     * Records that {@code persistenceId} has written up to {@code seqNr} (its next event is
     * {@code seqNr + 1} even when no event is kept): for a migration that copies only what
     * recovery reads. @return completed once durable
     */
    public CompletableFuture<Void> markHighest(String persistenceId, long seqNr) {
        return append(List.of(mark(HIGHEST, persistenceId, seqNr)));
    }

    /** Stores a snapshot (replacing one of the same sequence number). @return completed once durable */
    public CompletableFuture<Void> saveSnapshot(Snapshot s) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + s.payload().length);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(SNAPSHOT);
            out.writeUTF(s.persistenceId());
            out.writeLong(s.seqNr());
            out.writeLong(s.timestamp());
            out.writeInt(s.serializerId());
            out.writeUTF(s.serializerManifest());
            out.writeInt(s.payload().length);
            out.write(s.payload());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return append(List.of(bytes.toByteArray()));
    }

    /**
     * Deletes the snapshots of {@code persistenceId} whose sequence number and timestamp lie in
     * the given ranges (inclusive). @return completed once durable
     */
    public CompletableFuture<Void> deleteSnapshots(String persistenceId, long minSeqNr, long maxSeqNr, long minTimestamp,
            long maxTimestamp) {
        List<byte[]> marks = new ArrayList<>();
        lock.readLock().lock();
        try {
            Entity entity = entities.get(persistenceId);
            if (entity != null && minSeqNr <= maxSeqNr) {
                entity.snapshots.subMap(minSeqNr, true, maxSeqNr, true).forEach((seq, snap) -> {
                    if (snap.timestamp() >= minTimestamp && snap.timestamp() <= maxTimestamp) {
                        marks.add(mark(SNAPSHOT_DELETE, persistenceId, seq));
                    }
                });
            }
        } finally {
            lock.readLock().unlock();
        }
        return marks.isEmpty() ? CompletableFuture.completedFuture(null) : append(marks);
    }

    private static byte[] mark(byte type, String persistenceId, long value) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(32 + persistenceId.length());
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(type);
            out.writeUTF(persistenceId);
            out.writeLong(value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    private CompletableFuture<Void> append(List<byte[]> bodies) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        IOException failure = failed;
        if (failure != null || closing) {
            done.completeExceptionally(failure != null ? failure : new IOException("journal closed"));
            return done;
        }
        queue.add(new Request(bodies, done));
        return done;
    }

    private void writeLoop() {
        List<Request> batch = new ArrayList<>();
        while (true) {
            try {
                batch.add(queue.take());
            } catch (InterruptedException e) {
                // close(): fail what is left below.
            }
            queue.drainTo(batch);
            if (failed == null && !batch.isEmpty()) {
                try {
                    writeBatch(batch);
                    batch.forEach(r -> r.done().complete(null));
                } catch (IOException | RuntimeException e) {
                    // After a failed write or fsync the file's state is unknown (the kernel may
                    // have dropped the dirty pages): accept nothing more until a restart recovers.
                    failed = e instanceof IOException io ? io : new IOException(e);
                }
            }
            if (failed != null || closing) {
                IOException cause = failed != null ? failed : new IOException("journal closed");
                batch.forEach(r -> r.done().completeExceptionally(cause));
                queue.forEach(r -> r.done().completeExceptionally(cause));
                queue.clear();
                if (closing) {
                    return;
                }
            }
            batch.clear();
        }
    }

    private void writeBatch(List<Request> batch) throws IOException {
        List<ByteBuffer> buffers = new ArrayList<>();
        List<byte[]> bodies = new ArrayList<>();
        for (Request r : batch) {
            for (byte[] body : r.bodies()) {
                buffers.add(frame(body));
                bodies.add(body);
            }
        }
        long segment = segments.lastKey();
        FileChannel channel = segments.get(segment);
        long start = activeSize;
        ByteBuffer[] array = buffers.toArray(ByteBuffer[]::new);
        long total = 0;
        for (ByteBuffer b : array) {
            total += b.remaining();
        }
        long written = 0;
        channel.position(start);
        while (written < total) {
            written += channel.write(array);
        }
        channel.force(false);
        syncs++;
        lock.writeLock().lock();
        try {
            long offset = start;
            for (byte[] body : bodies) {
                apply(body, new Loc(segment, offset, body.length + 8));
                offset += body.length + 8;
            }
            activeSize = start + total;
            if (activeSize >= segmentBytes) {
                roll();
                long sealed = 0;
                for (long id : segments.headMap(segments.lastKey()).keySet()) {
                    sealed += segments.get(id).size();
                }
                if (sealed > compactAbove && liveBytes * 2 < sealed) {
                    compact();
                }
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    private static ByteBuffer frame(byte[] body) {
        CRC32C crc = new CRC32C();
        crc.update(body);
        ByteBuffer b = ByteBuffer.allocate(8 + body.length);
        b.putInt(body.length).putInt((int) crc.getValue()).put(body).flip();
        return b;
    }

    /** Updates the index with one durable frame. Caller holds the write lock (or recovers). */
    private void apply(byte[] body, Loc loc) throws IOException {
        DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(body));
        byte type = in.readByte();
        if (type == BASE) {
            return;
        }
        String pid = in.readUTF();
        Entity entity = entities.computeIfAbsent(pid, p -> new Entity());
        switch (type) {
            case EVENTS -> {
                int n = in.readInt();
                loc = loc.perItem(n);
                for (int i = 0; i < n; i++) {
                    long seq = in.readLong();
                    in.readUTF();
                    in.readUTF();
                    in.readLong();
                    in.readInt();
                    in.readUTF();
                    in.skipNBytes(in.readInt());
                    entity.highest = Math.max(entity.highest, seq);
                    if (seq > entity.deletedTo && entity.events.put(seq, loc) == null) {
                        liveBytes += loc.share();
                    }
                }
            }
            case DELETE_TO -> {
                long to = in.readLong();
                if (to > entity.deletedTo) {
                    entity.deletedTo = to;
                    NavigableMap<Long, Loc> gone = entity.events.headMap(to, true);
                    gone.values().forEach(l -> liveBytes -= l.share());
                    gone.clear();
                }
            }
            case HIGHEST -> entity.highest = Math.max(entity.highest, in.readLong());
            case SNAPSHOT -> {
                long seq = in.readLong();
                long timestamp = in.readLong();
                SnapLoc old = entity.snapshots.put(seq, new SnapLoc(timestamp, loc));
                liveBytes += loc.length() - (old == null ? 0 : old.loc().length());
            }
            case SNAPSHOT_DELETE -> {
                SnapLoc old = entity.snapshots.remove(in.readLong());
                if (old != null) {
                    liveBytes -= old.loc().length();
                }
            }
            default -> throw new IOException("unknown journal record type " + type + " at " + loc);
        }
    }

    /** Seals the active segment and starts a new, empty one. Caller holds the write lock. */
    private void roll() throws IOException {
        long id = segments.lastKey() + 1;
        Path path = segmentPath(id);
        FileChannel channel = FileChannel.open(path, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(EnumSet.of(
                        PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
        channel.write(ByteBuffer.allocate(HEADER).putLong(MAGIC).flip(), 0);
        channel.force(false);
        syncDirectory();
        segments.put(id, channel);
        activeSize = HEADER;
    }

    /**
     * Copies what is live into a new base segment and deletes the older ones. Caller holds the
     * write lock; the live data is small (events since the last snapshots), so writes wait briefly.
     */
    private void compact() throws IOException {
        long id = segments.lastKey() + 1;
        Path tmp = dir.resolve(String.format("%016x.tmp", id));
        List<ByteBuffer> out = new ArrayList<>();
        out.add(ByteBuffer.allocate(HEADER).putLong(MAGIC).flip());
        out.add(frame(new byte[] {BASE}));
        Map<String, Entity> moved = new HashMap<>();
        long offset = HEADER + 9;
        long newLive = 0;
        for (Map.Entry<String, Entity> e : entities.entrySet()) {
            String pid = e.getKey();
            Entity old = e.getValue();
            Entity copy = new Entity();
            copy.highest = old.highest;
            copy.deletedTo = old.deletedTo;
            moved.put(pid, copy);
            byte[] highest = mark(HIGHEST, pid, old.highest);
            out.add(frame(highest));
            offset += highest.length + 8;
            Map<Loc, Loc> copied = new HashMap<>();
            for (Map.Entry<Long, Loc> ev : old.events.entrySet()) {
                Loc now = copied.get(ev.getValue());
                if (now == null) {
                    byte[] body = readBody(ev.getValue());
                    now = new Loc(id, offset, body.length + 8, ev.getValue().share());
                    out.add(frame(body));
                    offset += body.length + 8;
                    copied.put(ev.getValue(), now);
                }
                newLive += now.share();
                copy.events.put(ev.getKey(), now);
            }
            if (old.deletedTo > 0) {
                // After the copied events: a frame copied whole may hold deleted events too.
                byte[] deleted = mark(DELETE_TO, pid, old.deletedTo);
                out.add(frame(deleted));
                offset += deleted.length + 8;
            }
            for (Map.Entry<Long, SnapLoc> s : old.snapshots.entrySet()) {
                byte[] body = readBody(s.getValue().loc());
                Loc now = new Loc(id, offset, body.length + 8);
                out.add(frame(body));
                offset += body.length + 8;
                copy.snapshots.put(s.getKey(), new SnapLoc(s.getValue().timestamp(), now));
                newLive += now.length();
            }
        }
        try (FileChannel channel = FileChannel.open(tmp, EnumSet.of(StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(EnumSet.of(
                        PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)))) {
            ByteBuffer[] array = out.toArray(ByteBuffer[]::new);
            while (array[array.length - 1].hasRemaining()) {
                channel.write(array);
            }
            channel.force(false);
        }
        Path path = segmentPath(id);
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE);
        syncDirectory();
        // The base segment is in force from here; the older ones are obsolete.
        for (Map.Entry<Long, FileChannel> old : segments.entrySet()) {
            old.getValue().close();
            Files.delete(segmentPath(old.getKey()));
        }
        segments.clear();
        syncDirectory();
        segments.put(id, FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE));
        activeSize = offset;
        entities.clear();
        entities.putAll(moved);
        liveBytes = newLive;
    }

    private void syncDirectory() throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    private Path segmentPath(long id) {
        return dir.resolve(String.format("%016x.seg", id));
    }

    // ---------------------------------------------------------------- recovery

    private void recover() throws IOException {
        List<Long> ids = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                if (name.endsWith(".tmp")) {
                    Files.delete(f); // a compaction the crash interrupted: the old segments are in force
                } else if (name.endsWith(".seg")) {
                    ids.add(Long.parseLong(name.substring(0, name.length() - 4), 16));
                }
            }
        }
        ids.sort(null);
        // A base segment makes every older one obsolete (a crash came before they were deleted).
        for (int i = ids.size() - 1; i > 0; i--) {
            if (startsWithBase(ids.get(i))) {
                for (long old : ids.subList(0, i)) {
                    Files.delete(segmentPath(old));
                }
                ids = new ArrayList<>(ids.subList(i, ids.size()));
                break;
            }
        }
        for (int i = 0; i < ids.size(); i++) {
            long id = ids.get(i);
            FileChannel channel = FileChannel.open(segmentPath(id), StandardOpenOption.READ, StandardOpenOption.WRITE);
            segments.put(id, channel);
            long end = scan(id, channel, i == ids.size() - 1);
            if (i == ids.size() - 1) {
                activeSize = end;
            }
        }
        if (segments.isEmpty()) {
            long id = 0;
            FileChannel channel = FileChannel.open(segmentPath(id), EnumSet.of(StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.READ, StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(EnumSet.of(
                            PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
            channel.write(ByteBuffer.allocate(HEADER).putLong(MAGIC).flip(), 0);
            channel.force(false);
            syncDirectory();
            segments.put(id, channel);
            activeSize = HEADER;
        }
    }

    private boolean startsWithBase(long id) throws IOException {
        try (FileChannel c = FileChannel.open(segmentPath(id), StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(HEADER + 9);
            c.read(b, 0);
            return b.position() == HEADER + 9 && b.getLong(0) == MAGIC && b.getInt(HEADER) == 1 && b.get(HEADER + 8) == BASE;
        }
    }

    /** Indexes one segment's frames. @return where the valid frames end */
    private long scan(long id, FileChannel channel, boolean newest) throws IOException {
        long size = channel.size();
        ByteBuffer header = ByteBuffer.allocate(HEADER);
        channel.read(header, 0);
        if (header.position() < HEADER || header.getLong(0) != MAGIC) {
            if (newest && size < HEADER) {
                // Created but its header not yet durable when the crash came.
                channel.truncate(0);
                channel.write(ByteBuffer.allocate(HEADER).putLong(MAGIC).flip(), 0);
                channel.force(false);
                return HEADER;
            }
            throw new IOException("journal segment " + segmentPath(id) + " is not a Cadastre journal segment");
        }
        long offset = HEADER;
        ByteBuffer head = ByteBuffer.allocate(8);
        while (offset < size) {
            head.clear();
            int read = channel.read(head, offset);
            String problem = null;
            byte[] body = null;
            if (read < 8) {
                problem = "a frame header cut short";
            } else {
                int length = head.getInt(0);
                if (length <= 0 || length > MAX_FRAME || offset + 8 + length > size) {
                    problem = "a frame cut short or of a wrong length";
                } else {
                    ByteBuffer b = ByteBuffer.allocate(length);
                    while (b.hasRemaining() && channel.read(b, offset + 8 + b.position()) > 0) {
                        // read until full
                    }
                    body = b.array();
                    CRC32C crc = new CRC32C();
                    crc.update(body);
                    if ((int) crc.getValue() != head.getInt(4)) {
                        problem = "a frame with a wrong checksum";
                    }
                }
            }
            if (problem != null) {
                if (!newest) {
                    throw new IOException("journal segment " + segmentPath(id) + " has " + problem + " at offset " + offset
                            + ": refusing to recover less than was acknowledged");
                }
                // The write a crash interrupted: never acknowledged (acknowledged only after the force).
                channel.truncate(offset);
                channel.force(false);
                return offset;
            }
            apply(body, new Loc(id, offset, body.length + 8));
            offset += 8 + body.length;
        }
        return offset;
    }

    // ---------------------------------------------------------------- reads

    private byte[] readBody(Loc loc) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(loc.length() - 8);
        FileChannel channel = segments.get(loc.segment());
        long at = loc.offset() + 8;
        while (b.hasRemaining()) {
            if (channel.read(b, at + b.position()) < 0) {
                throw new IOException("journal segment " + loc.segment() + " ends before " + loc);
            }
        }
        return b.array();
    }

    /** @return the highest sequence number ever written for {@code persistenceId} (deleted events included), 0 if none */
    public long highestSeqNr(String persistenceId) {
        lock.readLock().lock();
        try {
            Entity entity = entities.get(persistenceId);
            return entity == null ? 0 : entity.highest;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Hands the undeleted events of {@code persistenceId} with sequence numbers in
     * {@code [from, to]}, in order, at most {@code max} of them, to {@code consumer}.
     *
     * @throws IOException when a segment cannot be read
     */
    public void replay(String persistenceId, long from, long to, long max, Consumer<Event> consumer) throws IOException {
        lock.readLock().lock();
        try {
            Entity entity = entities.get(persistenceId);
            if (entity == null || from > to || max <= 0) {
                return;
            }
            long count = 0;
            Loc cachedLoc = null;
            List<Event> cached = List.of();
            for (Map.Entry<Long, Loc> e : entity.events.subMap(from, true, to, true).entrySet()) {
                if (!e.getValue().equals(cachedLoc)) {
                    cachedLoc = e.getValue();
                    cached = decodeEvents(readBody(cachedLoc));
                }
                for (Event ev : cached) {
                    if (ev.seqNr() == e.getKey()) {
                        consumer.accept(ev);
                    }
                }
                if (++count >= max) {
                    return;
                }
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    private static List<Event> decodeEvents(byte[] body) throws IOException {
        DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(body));
        in.readByte();
        in.readUTF();
        int n = in.readInt();
        List<Event> events = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long seq = in.readLong();
            String writer = in.readUTF();
            String adapter = in.readUTF();
            long timestamp = in.readLong();
            int serializer = in.readInt();
            String manifest = in.readUTF();
            byte[] payload = in.readNBytes(in.readInt());
            events.add(new Event(seq, writer, adapter, timestamp, serializer, manifest, payload));
        }
        return events;
    }

    /**
     * @return the snapshot of {@code persistenceId} with the highest sequence number in
     *     {@code [minSeqNr, maxSeqNr]} and a timestamp in {@code [minTimestamp, maxTimestamp]}
     * @throws IOException when its segment cannot be read
     */
    public Optional<Snapshot> latestSnapshot(String persistenceId, long minSeqNr, long maxSeqNr, long minTimestamp,
            long maxTimestamp) throws IOException {
        lock.readLock().lock();
        try {
            Entity entity = entities.get(persistenceId);
            if (entity == null || minSeqNr > maxSeqNr) {
                return Optional.empty();
            }
            for (Map.Entry<Long, SnapLoc> s : entity.snapshots.subMap(minSeqNr, true, maxSeqNr, true).descendingMap().entrySet()) {
                if (s.getValue().timestamp() >= minTimestamp && s.getValue().timestamp() <= maxTimestamp) {
                    DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(readBody(s.getValue().loc())));
                    in.readByte();
                    String pid = in.readUTF();
                    long seq = in.readLong();
                    long timestamp = in.readLong();
                    int serializer = in.readInt();
                    String manifest = in.readUTF();
                    byte[] payload = in.readNBytes(in.readInt());
                    return Optional.of(new Snapshot(pid, seq, timestamp, serializer, manifest, payload));
                }
            }
            return Optional.empty();
        } finally {
            lock.readLock().unlock();
        }
    }

    /** @return whether {@code persistenceId} has a snapshot with a sequence number above {@code seqNr} */
    public boolean hasSnapshotAfter(String persistenceId, long seqNr) {
        lock.readLock().lock();
        try {
            Entity entity = entities.get(persistenceId);
            return entity != null && entity.snapshots.higherKey(seqNr) != null;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** @return whether the log holds nothing (no persistence id ever written) */
    public boolean isEmpty() {
        lock.readLock().lock();
        try {
            return entities.isEmpty();
        } finally {
            lock.readLock().unlock();
        }
    }

    /** @return the bytes the segment files take (their lengths summed) */
    public long diskBytes() throws IOException {
        lock.readLock().lock();
        try {
            long total = 0;
            for (FileChannel c : segments.values()) {
                total += c.size();
            }
            return total;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** @return how many times the writer forced the log to disk since it opened (one per group commit) */
    public long syncCount() {
        lock.readLock().lock();
        try {
            return syncs;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Stops the writer (queued writes fail) and closes the files. */
    @Override
    public void close() throws IOException {
        closing = true;
        writer.interrupt();
        try {
            writer.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        lock.writeLock().lock();
        try {
            for (FileChannel c : segments.values()) {
                c.close();
            }
        } finally {
            lock.writeLock().unlock();
        }
    }
}
