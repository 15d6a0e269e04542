package io.cadastre.journal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import org.rocksdb.AbstractEventListener;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.LRUCache;
import org.rocksdb.Logger;
import org.rocksdb.MemTableInfo;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.TableFileCreationInfo;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;
import org.slf4j.LoggerFactory;

/**
 * The embedded journal's store: the entities' events, highest sequence numbers and snapshots in a
 * RocksDB database (rocksdbjni) in one directory.
 *
 * <p>Layout. Column family {@code events}: for each persistence id a key of its prefix alone
 * (the id's UTF-8 bytes after their length as 2 bytes) holding its highest sequence number
 * (8 bytes, big-endian), kept when its events are deleted; then its events, keyed by the prefix
 * and the sequence number (8 bytes, big-endian), so that one iterator from the prefix replays
 * them in order. Column family {@code snapshots}: keyed the same way. Events are deleted with one
 * range deletion per call.
 *
 * <p>Durability: a write completes only after RocksDB wrote it to its write-ahead log and synced
 * that ({@code WriteOptions.setSync(true)}: {@code fdatasync} of the log file on Linux). One
 * writer thread takes every request queued meanwhile into one {@code WriteBatch} and writes it
 * with one synced write (group commit): concurrent entities share one sync. RocksDB's recovery
 * (point in time) replays the log up to the last complete record; an acknowledged write was
 * synced, so it is before any torn tail. An append may ask for no sync of its own ({@link
 * #appendEvents(String, List, boolean)}): it completes once in the log, and is durable once any
 * later write is synced, since the log is one sequence and a sync covers everything before it; a
 * batch holding any write that asks for a sync is synced whole. Such an append is written by its
 * caller's own thread when the writer is idle (no hand-off), else queued like the rest. Two logs
 * that are no longer needed are kept and written over ({@code recycle_log_file_num}), so that a
 * sync does not also write the log's size.
 *
 * <p>Fencing (issue 18): the writer refuses, with {@link StaleWriteException}, an atomic write
 * whose first sequence number is not above the highest stored for its persistence id (a writer
 * that is no longer the entity's owner, or a replayed request): no sequence number is written
 * twice. Only {@link #importAll} (a migration, whose sequence numbers were assigned elsewhere)
 * rewrites keys.
 *
 * <p>Bounded on disk: small memtables ({@link Settings#writeBufferBytes}), the write-ahead logs
 * capped ({@link Settings#maxWalBytes}: past it RocksDB flushes the column families that hold the
 * oldest log back), and RocksDB's own level compaction, which drops deleted events once their
 * range deletion reaches the last level; besides, when the table files pass
 * {@link Settings#compactAboveBytes} and twice what the last such compaction left, the store
 * compacts both column families fully on a thread of its own. RocksDB's messages of level WARN
 * and above go to this class's slf4j logger (no LOG file).
 *
 * <p>Files: the directory is created 0700 when absent; RocksDB creates its files with the
 * process's umask, so the store takes group's and others' permissions from them after opening,
 * whenever a memtable is sealed (a new log) and whenever a table file is written (the directory
 * keeps them private in between). Thread-safe.
 */
public final class RocksJournalStore implements AutoCloseable {
    private static final org.slf4j.Logger LOG = LoggerFactory.getLogger(RocksJournalStore.class);
    private static final byte[] EVENTS_FAMILY = "events".getBytes(StandardCharsets.UTF_8);
    private static final byte[] SNAPSHOTS_FAMILY = "snapshots".getBytes(StandardCharsets.UTF_8);

    /** Reads happen at recovery only: a small block cache shared by both column families. */
    private static final long BLOCK_CACHE_BYTES = 1 << 20;

    /** One serialized event as stored: the payload's serializer id and manifest, and its bytes. */
    public record Event(
            long seqNr,
            String writerUuid,
            String adapterManifest,
            long timestamp,
            int serializerId,
            String serializerManifest,
            byte[] payload) {}

    /** One serialized snapshot as stored. */
    public record Snapshot(
            String persistenceId,
            long seqNr,
            long timestamp,
            int serializerId,
            String serializerManifest,
            byte[] payload) {}

    /**
     * What a migration copies of one persistence id: its highest sequence number, its latest
     * snapshot if any, and its events after that snapshot.
     */
    public record Imported(
            String persistenceId,
            long highestSeqNr,
            Optional<Snapshot> snapshot,
            List<Event> events) {}

    /**
     * The store's sizes.
     *
     * @param writeBufferBytes bytes of one column family's memtable before it is flushed to a
     *     table file (e.g. 256 KiB)
     * @param maxWalBytes bytes of write-ahead logs past which RocksDB flushes the column families
     *     holding the oldest log, so it can be deleted (e.g. 1 MiB)
     * @param compactAboveBytes bytes of table files past which the store compacts everything (e.g.
     *     4 MiB)
     */
    public record Settings(long writeBufferBytes, long maxWalBytes, long compactAboveBytes) {
        /** The defaults of {@code application.conf}'s {@code cadastre.embedded-journal}. */
        public static final Settings DEFAULT = new Settings(256 << 10, 1 << 20, 4 << 20);

        /** @throws IllegalArgumentException when a size is below 64 KiB */
        public Settings {
            for (long size : new long[] {writeBufferBytes, maxWalBytes, compactAboveBytes}) {
                if (size < 64 << 10) {
                    throw new IllegalArgumentException(
                            "embedded journal sizes must be at least 64 KiB, not "
                                    + size
                                    + " bytes");
                }
            }
        }
    }

    /**
     * A write refused because its persistence id already has its first sequence number or a
     * higher one: it comes from a writer that is no longer the entity's owner (or repeats one).
     */
    public static final class StaleWriteException extends Exception {
        private static final long serialVersionUID = 1L;

        StaleWriteException(String persistenceId, long firstSeqNr, long highest) {
            super(
                    "refused a write of "
                            + persistenceId
                            + " from sequence number "
                            + firstSeqNr
                            + ": sequence numbers up to "
                            + highest
                            + " are taken (a stale writer)");
        }
    }

    private sealed interface Request
            permits Append, DeleteEvents, PutSnapshot, DeleteSnapshots, Import {
        CompletableFuture<Void> done();

        /** @return whether the request completes only once synced */
        default boolean sync() {
            return true;
        }
    }

    private record Append(
            String persistenceId, List<Event> events, boolean sync, CompletableFuture<Void> done)
            implements Request {}

    private record DeleteEvents(String persistenceId, long toSeqNr, CompletableFuture<Void> done)
            implements Request {}

    private record PutSnapshot(Snapshot snapshot, CompletableFuture<Void> done)
            implements Request {}

    private record DeleteSnapshots(List<byte[]> keys, CompletableFuture<Void> done)
            implements Request {}

    private record Import(List<Imported> copies, CompletableFuture<Void> done) implements Request {}

    private final Path dir;
    private final Settings settings;

    /** Options, the database and its handles, in the order opened: {@link #close} closes them in reverse. */
    private final List<AutoCloseable> resources;

    private final RocksDB db;
    private final ColumnFamilyHandle events;
    private final ColumnFamilyHandle snapshots;
    private final WriteOptions synced;
    private final WriteOptions unsynced;
    private final LinkedBlockingQueue<Request> queue = new LinkedBlockingQueue<>();
    private final Thread writer;
    private final ExecutorService compactor =
            Executors.newSingleThreadExecutor(
                    task -> {
                        Thread t = new Thread(task, "cadastre-journal-compactor");
                        t.setDaemon(true);
                        return t;
                    });

    /**
     * Held by whoever writes a batch: the writer thread, or a caller writing an unsynced append
     * itself ({@link #appendEvents(String, List, boolean)}). Guards {@link #highest} and
     * {@link #writtenSinceSizeCheck}.
     */
    private final ReentrantLock writing = new ReentrantLock();

    /** The highest sequence number per persistence id as stored, for fencing ({@link #writing}). */
    private final Map<String, Long> highest = new HashMap<>();

    private final AtomicLong syncs = new AtomicLong();
    private final AtomicLong compactions = new AtomicLong();
    private final AtomicBoolean compacting = new AtomicBoolean();

    /** Reads and {@link #close} exclude each other: a closed database must not be touched. */
    private final ReentrantReadWriteLock closeLock = new ReentrantReadWriteLock();

    private long writtenSinceSizeCheck;

    /** Bytes of table files right after the last full compaction (read by the writer). */
    private volatile long tablesAfterCompaction;

    private volatile Exception failed;
    private volatile boolean closing;
    private boolean closed;

    /**
     * Opens (creating it 0700 when absent) the store in {@code dir}, recovers it, and starts the
     * writer.
     *
     * @throws IOException when the directory cannot be created or RocksDB cannot open it (another
     *     process holds it, a corrupt file)
     */
    public static RocksJournalStore open(Path dir, Settings settings) throws IOException {
        if (!Files.isDirectory(dir)) {
            OwnerOnly.createDirectory(dir);
        }
        RocksDB.loadLibrary();
        List<AutoCloseable> resources = new ArrayList<>();
        try {
            LRUCache cache = keep(resources, new LRUCache(BLOCK_CACHE_BYTES));
            ColumnFamilyOptions family =
                    keep(
                            resources,
                            new ColumnFamilyOptions()
                                    .setWriteBufferSize(settings.writeBufferBytes())
                                    .setMaxWriteBufferNumber(2)
                                    .setTableFormatConfig(
                                            new BlockBasedTableConfig().setBlockCache(cache)));
            DBOptions options =
                    keep(
                            resources,
                            new DBOptions()
                                    .setCreateIfMissing(true)
                                    .setCreateMissingColumnFamilies(true)
                                    .setLogger(
                                            keep(
                                                    resources,
                                                    new Logger(InfoLogLevel.WARN_LEVEL) {
                                                        @Override
                                                        protected void log(
                                                                InfoLogLevel level,
                                                                String message) {
                                                            // HEADER (the version and options
                                                            // RocksDB writes at open) ranks above
                                                            // FATAL.
                                                            switch (level) {
                                                                case WARN_LEVEL ->
                                                                        LOG.warn(
                                                                                "RocksDB: {}",
                                                                                message);
                                                                case ERROR_LEVEL, FATAL_LEVEL ->
                                                                        LOG.error(
                                                                                "RocksDB: {}",
                                                                                message);
                                                                default ->
                                                                        LOG.debug(
                                                                                "RocksDB: {}",
                                                                                message);
                                                            }
                                                        }
                                                    }))
                                    .setMaxTotalWalSize(settings.maxWalBytes())
                                    // A log that is no longer needed is renamed and written over
                                    // rather than deleted: an fdatasync of a write within the
                                    // file's size syncs the data alone, where one that grows it
                                    // writes the inode too (0.035 against 0.060 ms of CPU per
                                    // sync here). Point-in-time recovery tells a recycled log's
                                    // old records by their log number (RocksDB 9.1+).
                                    .setRecycleLogFileNum(2)
                                    // Each flush and compaction adds a record to the MANIFEST:
                                    // start a new one past
                                    // this, and reserve 64 KiB of disk for it, not RocksDB's 4 MiB.
                                    .setMaxManifestFileSize(1 << 20)
                                    .setManifestPreallocationSize(64 << 10)
                                    .setStatsDumpPeriodSec(0)
                                    // A new write-ahead log comes with a sealed memtable, new table
                                    // files with flushes and compactions. (Not onFlushCompleted:
                                    // rocksdbjni 9.8.4 cannot convert the flush reason "WAL full"
                                    // that max-wal-size causes.)
                                    .setListeners(
                                            List.of(
                                                    keep(
                                                            resources,
                                                            new AbstractEventListener(
                                                                    AbstractEventListener
                                                                            .EnabledEventCallback
                                                                            .ON_MEMTABLE_SEALED,
                                                                    AbstractEventListener
                                                                            .EnabledEventCallback
                                                                            .ON_TABLE_FILE_CREATED) {
                                                                @Override
                                                                public void onMemTableSealed(
                                                                        MemTableInfo info) {
                                                                    tightenFiles(dir);
                                                                }

                                                                @Override
                                                                public void onTableFileCreated(
                                                                        TableFileCreationInfo
                                                                                info) {
                                                                    tightenFiles(dir);
                                                                }
                                                            }))));
            WriteOptions synced = keep(resources, new WriteOptions().setSync(true));
            WriteOptions unsynced = keep(resources, new WriteOptions().setSync(false));
            List<ColumnFamilyHandle> handles = new ArrayList<>();
            RocksDB db =
                    RocksDB.open(
                            options,
                            dir.toString(),
                            List.of(
                                    new ColumnFamilyDescriptor(
                                            RocksDB.DEFAULT_COLUMN_FAMILY, family),
                                    new ColumnFamilyDescriptor(EVENTS_FAMILY, family),
                                    new ColumnFamilyDescriptor(SNAPSHOTS_FAMILY, family)),
                            handles);
            resources.add(db);
            resources.addAll(handles);
            tightenFiles(dir);
            return new RocksJournalStore(
                    dir, settings, resources, db, handles.get(1), handles.get(2), synced, unsynced);
        } catch (RocksDBException e) {
            closeAll(resources);
            throw new IOException(
                    "cannot open the embedded journal in " + dir + ": " + e.getMessage(), e);
        }
    }

    private RocksJournalStore(
            Path dir,
            Settings settings,
            List<AutoCloseable> resources,
            RocksDB db,
            ColumnFamilyHandle events,
            ColumnFamilyHandle snapshots,
            WriteOptions synced,
            WriteOptions unsynced) {
        this.dir = dir;
        this.settings = settings;
        this.resources = resources;
        this.db = db;
        this.events = events;
        this.snapshots = snapshots;
        this.synced = synced;
        this.unsynced = unsynced;
        writer = new Thread(this::writeLoop, "cadastre-journal-writer");
        writer.setDaemon(true);
        writer.start();
    }

    private static <T extends AutoCloseable> T keep(List<AutoCloseable> resources, T resource) {
        resources.add(resource);
        return resource;
    }

    // ---------------------------------------------------------------- keys and values

    private static byte[] prefix(String persistenceId) {
        byte[] id = persistenceId.getBytes(StandardCharsets.UTF_8);
        if (id.length > 0xFFFF) {
            throw new IllegalArgumentException("persistence id longer than 65535 bytes");
        }
        return ByteBuffer.allocate(2 + id.length).putShort((short) id.length).put(id).array();
    }

    private static byte[] key(byte[] prefix, long seqNr) {
        return ByteBuffer.allocate(prefix.length + 8).put(prefix).putLong(seqNr).array();
    }

    private static long seqNrOf(byte[] key) {
        return ByteBuffer.wrap(key, key.length - 8, 8).getLong();
    }

    private static boolean isKeyOf(byte[] prefix, byte[] key) {
        return key.length == prefix.length + 8
                && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
    }

    private static byte[] longBytes(long value) {
        return ByteBuffer.allocate(8).putLong(value).array();
    }

    private static byte[] utf8(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > 0xFFFF) {
            throw new IllegalArgumentException("manifest or writer id longer than 65535 bytes");
        }
        return b;
    }

    private static String readUtf8(ByteBuffer in) {
        byte[] b = new byte[Short.toUnsignedInt(in.getShort())];
        in.get(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Value of an event: writer, adapter manifest, timestamp, serializer id and manifest, payload. */
    private static byte[] encode(Event e) {
        byte[] writerUuid = utf8(e.writerUuid());
        byte[] adapter = utf8(e.adapterManifest());
        byte[] manifest = utf8(e.serializerManifest());
        return ByteBuffer.allocate(
                        6
                                + writerUuid.length
                                + adapter.length
                                + manifest.length
                                + 12
                                + e.payload().length)
                .putShort((short) writerUuid.length)
                .put(writerUuid)
                .putShort((short) adapter.length)
                .put(adapter)
                .putLong(e.timestamp())
                .putInt(e.serializerId())
                .putShort((short) manifest.length)
                .put(manifest)
                .put(e.payload())
                .array();
    }

    private static Event decodeEvent(long seqNr, byte[] value) {
        ByteBuffer in = ByteBuffer.wrap(value);
        String writerUuid = readUtf8(in);
        String adapter = readUtf8(in);
        long timestamp = in.getLong();
        int serializerId = in.getInt();
        String manifest = readUtf8(in);
        byte[] payload = new byte[in.remaining()];
        in.get(payload);
        return new Event(seqNr, writerUuid, adapter, timestamp, serializerId, manifest, payload);
    }

    /** Value of a snapshot: timestamp, serializer id and manifest, payload. */
    private static byte[] encode(Snapshot s) {
        byte[] manifest = utf8(s.serializerManifest());
        return ByteBuffer.allocate(14 + manifest.length + s.payload().length)
                .putLong(s.timestamp())
                .putInt(s.serializerId())
                .putShort((short) manifest.length)
                .put(manifest)
                .put(s.payload())
                .array();
    }

    private static Snapshot decodeSnapshot(String persistenceId, long seqNr, byte[] value) {
        ByteBuffer in = ByteBuffer.wrap(value);
        long timestamp = in.getLong();
        int serializerId = in.getInt();
        String manifest = readUtf8(in);
        byte[] payload = new byte[in.remaining()];
        in.get(payload);
        return new Snapshot(persistenceId, seqNr, timestamp, serializerId, manifest, payload);
    }

    // ---------------------------------------------------------------- writes

    /**
     * Appends the events of one atomic write of one persistence id (ascending sequence numbers):
     * all or none of them survive a crash.
     *
     * @return completed once synced; failed with {@link StaleWriteException} when the first
     *     sequence number is not above the highest stored (nothing written), with an
     *     {@link IOException} when the write failed (and every later one fails: the store must be
     *     reopened)
     */
    public CompletableFuture<Void> appendEvents(String persistenceId, List<Event> events) {
        return appendEvents(persistenceId, events, true);
    }

    /**
     * As {@link #appendEvents(String, List)}; with {@code sync} false the append completes once
     * written to the log (it survives the process's death, not yet a power loss) and becomes
     * durable with the next synced write, which the caller must make before anything outside the
     * process learns of the events (one sync per IPAM call: {@code FollowedBySyncedWrite}).
     *
     * @return completed once synced, or once written when {@code sync} is false; failed as {@link
     *     #appendEvents(String, List)}
     */
    public CompletableFuture<Void> appendEvents(
            String persistenceId, List<Event> events, boolean sync) {
        Append append =
                new Append(persistenceId, List.copyOf(events), sync, new CompletableFuture<>());
        // A write that waits for no sync takes tens of microseconds: when the writer is idle, the
        // caller writes it itself, sparing two thread hand-offs (to the writer and back). One
        // entity has one write in flight, so this cannot overtake an earlier write of its own.
        if (!sync && writing.tryLock()) {
            try {
                closeLock.readLock().lock();
                try {
                    if (failed == null && !closing) {
                        writeBatchLocked(List.of(append));
                        return append.done();
                    }
                } finally {
                    closeLock.readLock().unlock();
                }
            } finally {
                writing.unlock();
            }
        }
        return enqueue(append);
    }

    /**
     * Deletes the events of {@code persistenceId} up to {@code toSeqNr} (inclusive); its highest
     * sequence number stays. @return completed once synced
     */
    public CompletableFuture<Void> deleteEventsTo(String persistenceId, long toSeqNr) {
        return enqueue(new DeleteEvents(persistenceId, toSeqNr, new CompletableFuture<>()));
    }

    /** Stores a snapshot (replacing one of the same sequence number). @return completed once synced */
    public CompletableFuture<Void> saveSnapshot(Snapshot s) {
        return enqueue(new PutSnapshot(s, new CompletableFuture<>()));
    }

    /**
     * Deletes the snapshots of {@code persistenceId} whose sequence number and timestamp lie in
     * the given ranges (inclusive). @return completed once synced
     */
    public CompletableFuture<Void> deleteSnapshots(
            String persistenceId,
            long minSeqNr,
            long maxSeqNr,
            long minTimestamp,
            long maxTimestamp) {
        List<byte[]> keys = new ArrayList<>();
        try {
            read(
                    () -> {
                        byte[] prefix = prefix(persistenceId);
                        try (RocksIterator it = db.newIterator(snapshots)) {
                            for (it.seek(key(prefix, Math.max(0, minSeqNr)));
                                    it.isValid() && isKeyOf(prefix, it.key());
                                    it.next()) {
                                long seqNr = seqNrOf(it.key());
                                if (seqNr > maxSeqNr) {
                                    break;
                                }
                                long timestamp = ByteBuffer.wrap(it.value()).getLong();
                                if (timestamp >= minTimestamp && timestamp <= maxTimestamp) {
                                    keys.add(it.key());
                                }
                            }
                            it.status();
                        }
                        return null;
                    });
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
        return keys.isEmpty()
                ? CompletableFuture.completedFuture(null)
                : enqueue(new DeleteSnapshots(keys, new CompletableFuture<>()));
    }

    /**
     * Writes what a migration copied, all of it in one synced write, without the fencing check:
     * the sequence numbers were assigned by the old journal, and a migration that a crash
     * interrupted repeats it (the same keys with the same bytes; highest sequence numbers only
     * raised). @return completed once synced
     */
    public CompletableFuture<Void> importAll(List<Imported> copies) {
        return enqueue(new Import(List.copyOf(copies), new CompletableFuture<>()));
    }

    private CompletableFuture<Void> enqueue(Request request) {
        // Under the read lock: once close() has set closing, nothing more is queued, and the
        // writer fails whatever is left when it stops.
        closeLock.readLock().lock();
        try {
            Exception failure = failed;
            if (failure != null) {
                request.done()
                        .completeExceptionally(
                                new IOException("the embedded journal failed earlier", failure));
            } else if (closing) {
                request.done()
                        .completeExceptionally(new IOException("the embedded journal is closed"));
            } else {
                queue.add(request);
            }
            return request.done();
        } finally {
            closeLock.readLock().unlock();
        }
    }

    private void writeLoop() {
        List<Request> taken = new ArrayList<>();
        while (!closing) {
            try {
                taken.add(queue.take());
            } catch (InterruptedException e) {
                continue; // close(): fail what is left below
            }
            queue.drainTo(taken);
            if (failed == null) {
                writeBatch(taken);
            } else {
                taken.forEach(
                        r ->
                                r.done()
                                        .completeExceptionally(
                                                new IOException(
                                                        "the embedded journal failed earlier",
                                                        failed)));
            }
            taken.clear();
        }
        IOException closed = new IOException("the embedded journal is closed");
        queue.forEach(r -> r.done().completeExceptionally(closed));
        queue.clear();
    }

    /**
     * Stages every request into one batch (refusing stale writes), writes it, synced when any
     * accepted request asks for a sync, and completes them.
     */
    private void writeBatch(List<Request> requests) {
        writing.lock();
        try {
            writeBatchLocked(requests);
        } finally {
            writing.unlock();
        }
    }

    /** {@link #writeBatch} with {@link #writing} held by the caller. */
    private void writeBatchLocked(List<Request> requests) {
        Map<String, Long> staged = new HashMap<>();
        List<Request> accepted = new ArrayList<>(requests.size());
        try (WriteBatch batch = new WriteBatch()) {
            for (Request request : requests) {
                batch.setSavePoint();
                try {
                    if (stage(request, batch, staged)) {
                        accepted.add(request);
                    }
                } catch (StaleWriteException | IllegalArgumentException e) {
                    // Whatever the request staged before it was refused goes.
                    batch.rollbackToSavePoint();
                    request.done().completeExceptionally(e);
                }
            }
            if (accepted.isEmpty()) {
                return;
            }
            boolean sync = accepted.stream().anyMatch(Request::sync);
            db.write(sync ? synced : unsynced, batch);
            if (sync) {
                syncs.incrementAndGet();
            }
            highest.putAll(staged);
            writtenSinceSizeCheck += batch.getDataSize();
        } catch (RocksDBException | RuntimeException e) {
            // After a failed write or sync the log's state on disk is unknown (RocksDB stops
            // writing too): accept nothing more until a restart recovers.
            failed = e;
            LOG.error(
                    "the embedded journal failed; every later write fails until the agent restarts",
                    e);
            IOException cause = new IOException("the embedded journal's write failed", e);
            // Those refused above are completed already; this completes the rest.
            requests.forEach(r -> r.done().completeExceptionally(cause));
            return;
        }
        accepted.forEach(r -> r.done().complete(null));
        if (writtenSinceSizeCheck >= settings.writeBufferBytes()) {
            writtenSinceSizeCheck = 0;
            compactIfLarge();
        }
    }

    /** @return false when the request needs no write (completed here) */
    private boolean stage(Request request, WriteBatch batch, Map<String, Long> staged)
            throws RocksDBException, StaleWriteException {
        if (request instanceof Append a) {
            if (a.events().isEmpty()) {
                a.done().complete(null);
                return false;
            }
            byte[] prefix = prefix(a.persistenceId());
            long last = highestForWriter(a.persistenceId(), prefix, staged);
            if (a.events().get(0).seqNr() <= last) {
                throw new StaleWriteException(a.persistenceId(), a.events().get(0).seqNr(), last);
            }
            for (Event e : a.events()) {
                if (e.seqNr() <= last) {
                    throw new IllegalArgumentException(
                            "the events of one write of "
                                    + a.persistenceId()
                                    + " must have ascending sequence numbers");
                }
                last = e.seqNr();
            }
            for (Event e : a.events()) {
                batch.put(events, key(prefix, e.seqNr()), encode(e));
            }
            batch.put(events, prefix, longBytes(last));
            staged.put(a.persistenceId(), last);
        } else if (request instanceof DeleteEvents d) {
            if (d.toSeqNr() < 1) {
                d.done().complete(null);
                return false;
            }
            byte[] prefix = prefix(d.persistenceId());
            // The range's end is exclusive; Long.MAX_VALUE (delete all) is never a sequence number.
            batch.deleteRange(
                    events,
                    key(prefix, 0),
                    key(prefix, Math.min(d.toSeqNr(), Long.MAX_VALUE - 1) + 1));
        } else if (request instanceof PutSnapshot p) {
            batch.put(
                    snapshots,
                    key(prefix(p.snapshot().persistenceId()), p.snapshot().seqNr()),
                    encode(p.snapshot()));
        } else if (request instanceof DeleteSnapshots d) {
            for (byte[] key : d.keys()) {
                batch.delete(snapshots, key);
            }
        } else if (request instanceof Import i) {
            Map<String, Long> tops = new HashMap<>();
            for (Imported copy : i.copies()) {
                byte[] prefix = prefix(copy.persistenceId());
                Long before = tops.get(copy.persistenceId());
                long top =
                        Math.max(
                                before != null
                                        ? before
                                        : highestForWriter(copy.persistenceId(), prefix, staged),
                                copy.highestSeqNr());
                for (Event e : copy.events()) {
                    batch.put(events, key(prefix, e.seqNr()), encode(e));
                    top = Math.max(top, e.seqNr());
                }
                if (copy.snapshot().isPresent()) {
                    Snapshot s = copy.snapshot().get();
                    batch.put(snapshots, key(prefix, s.seqNr()), encode(s));
                    top = Math.max(top, s.seqNr());
                }
                batch.put(events, prefix, longBytes(top));
                tops.put(copy.persistenceId(), top);
            }
            staged.putAll(tops);
        }
        return true;
    }

    /** The highest sequence number of a persistence id as the writer knows it: staged in this batch, else stored. */
    private long highestForWriter(String persistenceId, byte[] prefix, Map<String, Long> staged)
            throws RocksDBException {
        Long known = staged.get(persistenceId);
        if (known == null) {
            known = highest.get(persistenceId);
        }
        if (known == null) {
            byte[] stored = db.get(events, prefix);
            known = stored == null ? 0L : ByteBuffer.wrap(stored).getLong();
            highest.put(persistenceId, known);
        }
        return known;
    }

    // ---------------------------------------------------------------- size

    /**
     * When the table files pass {@link Settings#compactAboveBytes} and twice what the last full
     * compaction left (what is live, roughly), compacts both column families fully on the
     * compactor thread, one compaction at a time: deleted events and snapshots are dropped from
     * every level, not only when RocksDB's own compaction reaches them. The factor two keeps a
     * store whose live data alone passes the threshold from compacting at every check.
     */
    private void compactIfLarge() {
        try {
            long tables = db.getAggregatedLongProperty("rocksdb.total-sst-files-size");
            if (tables > Math.max(settings.compactAboveBytes(), 2 * tablesAfterCompaction)
                    && compacting.compareAndSet(false, true)) {
                compactor.execute(this::compactAll);
            }
        } catch (RocksDBException | RejectedExecutionException e) {
            LOG.warn("cannot compact the embedded journal: {}", e.getMessage());
            compacting.set(false);
        }
    }

    private void compactAll() {
        try (CompactRangeOptions all =
                new CompactRangeOptions()
                        .setBottommostLevelCompaction(
                                CompactRangeOptions.BottommostLevelCompaction.kForceOptimized)) {
            db.compactRange(events, null, null, all);
            db.compactRange(snapshots, null, null, all);
            tablesAfterCompaction = db.getAggregatedLongProperty("rocksdb.total-sst-files-size");
            compactions.incrementAndGet();
        } catch (RocksDBException e) {
            if (!closing) {
                LOG.warn("compacting the embedded journal: {}", e.getMessage());
            }
        } finally {
            compacting.set(false);
        }
    }

    /** Takes group's and others' permissions from the store's files (RocksDB creates them with the umask). */
    private static void tightenFiles(Path dir) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path file : files) {
                OwnerOnly.tightenRegularFile(file);
            }
        } catch (IOException e) {
            LOG.warn("cannot tighten the embedded journal's files in {}: {}", dir, e.toString());
        }
    }

    // ---------------------------------------------------------------- reads

    private interface Read<T> {
        T run() throws RocksDBException, IOException;
    }

    private <T> T read(Read<T> read) throws IOException {
        closeLock.readLock().lock();
        try {
            if (closed) {
                throw new IOException("the embedded journal is closed");
            }
            return read.run();
        } catch (RocksDBException e) {
            throw new IOException("reading the embedded journal: " + e.getMessage(), e);
        } finally {
            closeLock.readLock().unlock();
        }
    }

    /**
     * @return the highest sequence number ever written for {@code persistenceId} (deleted events
     *     included), 0 if none
     * @throws IOException when the store cannot be read
     */
    public long highestSeqNr(String persistenceId) throws IOException {
        return read(
                () -> {
                    byte[] stored = db.get(events, prefix(persistenceId));
                    return stored == null ? 0L : ByteBuffer.wrap(stored).getLong();
                });
    }

    /**
     * Hands the undeleted events of {@code persistenceId} with sequence numbers in
     * {@code [from, to]}, in order, at most {@code max} of them, to {@code consumer}.
     *
     * @throws IOException when the store cannot be read
     */
    public void replay(String persistenceId, long from, long to, long max, Consumer<Event> consumer)
            throws IOException {
        if (from > to || max <= 0) {
            return;
        }
        read(
                () -> {
                    byte[] prefix = prefix(persistenceId);
                    try (Slice upper =
                                    new Slice(key(prefix, Math.min(to, Long.MAX_VALUE - 1) + 1));
                            ReadOptions options = new ReadOptions().setIterateUpperBound(upper);
                            RocksIterator it = db.newIterator(events, options)) {
                        long count = 0;
                        for (it.seek(key(prefix, Math.max(0, from)));
                                it.isValid() && count < max;
                                it.next()) {
                            consumer.accept(decodeEvent(seqNrOf(it.key()), it.value()));
                            count++;
                        }
                        it.status();
                    }
                    return null;
                });
    }

    /**
     * @return the snapshot of {@code persistenceId} with the highest sequence number in
     *     {@code [minSeqNr, maxSeqNr]} and a timestamp in {@code [minTimestamp, maxTimestamp]}
     * @throws IOException when the store cannot be read
     */
    public Optional<Snapshot> latestSnapshot(
            String persistenceId,
            long minSeqNr,
            long maxSeqNr,
            long minTimestamp,
            long maxTimestamp)
            throws IOException {
        if (minSeqNr > maxSeqNr) {
            return Optional.empty();
        }
        return read(
                () -> {
                    byte[] prefix = prefix(persistenceId);
                    try (RocksIterator it = db.newIterator(snapshots)) {
                        for (it.seekForPrev(key(prefix, Math.max(0, maxSeqNr)));
                                it.isValid() && isKeyOf(prefix, it.key());
                                it.prev()) {
                            long seqNr = seqNrOf(it.key());
                            if (seqNr < minSeqNr) {
                                break;
                            }
                            Snapshot s = decodeSnapshot(persistenceId, seqNr, it.value());
                            if (s.timestamp() >= minTimestamp && s.timestamp() <= maxTimestamp) {
                                return Optional.of(s);
                            }
                        }
                        it.status();
                    }
                    return Optional.empty();
                });
    }

    /**
     * @return whether {@code persistenceId} has a snapshot with a sequence number above {@code seqNr}
     * @throws IOException when the store cannot be read
     */
    public boolean hasSnapshotAfter(String persistenceId, long seqNr) throws IOException {
        if (seqNr == Long.MAX_VALUE) {
            return false;
        }
        return read(
                () -> {
                    byte[] prefix = prefix(persistenceId);
                    try (RocksIterator it = db.newIterator(snapshots)) {
                        it.seek(key(prefix, Math.max(0, seqNr + 1)));
                        boolean found = it.isValid() && isKeyOf(prefix, it.key());
                        it.status();
                        return found;
                    }
                });
    }

    /**
     * @return whether the store holds nothing (no persistence id ever written)
     * @throws IOException when the store cannot be read
     */
    public boolean isEmpty() throws IOException {
        return read(
                () -> {
                    try (RocksIterator e = db.newIterator(events);
                            RocksIterator s = db.newIterator(snapshots)) {
                        e.seekToFirst();
                        s.seekToFirst();
                        e.status();
                        s.status();
                        return !e.isValid() && !s.isValid();
                    }
                });
    }

    /**
     * @return the bytes the store's files take (their lengths summed, preallocated space of the
     *     write-ahead log not counted)
     * @throws IOException when the directory cannot be listed
     */
    public long diskBytes() throws IOException {
        long total = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path file : files) {
                try {
                    total += Files.size(file);
                } catch (NoSuchFileException e) {
                    // Deleted by RocksDB meanwhile.
                }
            }
        }
        return total;
    }

    /** @return how many synced writes the writer made since the store opened (one per group commit) */
    public long syncCount() {
        return syncs.get();
    }

    /** @return how many full compactions the store ran since it opened (past {@link Settings#compactAboveBytes}) */
    public long compactionCount() {
        return compactions.get();
    }

    /**
     * Stops the writer (queued writes fail with an {@link IOException}), RocksDB's background
     * work and the compactor, and closes the database. When the writer does not stop within 10 s
     * (a sync that hangs), the database is left open, since closing it under the writer would
     * crash the process.
     *
     * @throws IOException when the writer did not stop
     */
    @Override
    public void close() throws IOException {
        closeLock.writeLock().lock();
        try {
            closing = true;
        } finally {
            closeLock.writeLock().unlock();
        }
        writer.interrupt();
        try {
            writer.join(10_000);
            if (writer.isAlive()) {
                throw new IOException(
                        "the embedded journal's writer did not stop within 10 s; left open");
            }
            compactor.shutdown();
            closeLock.writeLock().lock();
            try {
                if (closed) {
                    return;
                }
                // Ends a running manual compaction too.
                db.cancelAllBackgroundWork(true);
                if (!compactor.awaitTermination(10, TimeUnit.SECONDS)) {
                    throw new IOException(
                            "the embedded journal's compactor did not stop within 10 s; left open");
                }
                closed = true;
                closeAll(resources);
            } finally {
                closeLock.writeLock().unlock();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while closing the embedded journal", e);
        }
    }

    /** Closes the column family handles, the database, then the options they used (the reverse of opening). */
    private static void closeAll(List<AutoCloseable> resources) {
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                LOG.warn("closing the embedded journal: {}", e.toString());
            }
        }
    }
}
