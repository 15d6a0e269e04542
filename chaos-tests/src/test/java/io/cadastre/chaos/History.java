package io.cadastre.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The run's history: every CNI call (invocation, then completion) and every fault and member
 * event, in memory for the checker and, one JSON object per line, in a file for post-mortems.
 * Thread-safe. All times come from one monotonic clock ({@link #now()}, nanoseconds since the
 * history was made); each line also carries the wall clock, to line it up with the agents' logs.
 */
final class History implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final long origin = System.nanoTime();
    private final long originEpochMillis = System.currentTimeMillis();
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, Operation> operations = new ConcurrentHashMap<>();
    private final Map<Long, FaultRecord> faults = new ConcurrentHashMap<>();
    private final Map<String, Long> lastOk = new ConcurrentHashMap<>();
    private final Path file;
    private final BufferedWriter out;

    History(Path file) throws IOException {
        this.file = file;
        this.out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
    }

    Path file() {
        return file;
    }

    /**
     * @return the wall-clock time of the origin, in milliseconds since the epoch: a wall-clock
     *     time {@code w} (ms) is history time {@code (w - originEpochMillis()) * 1_000_000} (ns)
     */
    long originEpochMillis() {
        return originEpochMillis;
    }

    /** @return nanoseconds since the history's origin */
    long now() {
        return System.nanoTime() - origin;
    }

    /** Records the invocation of a call and returns it, pending. */
    Operation invoke(
            Operation.Phase phase,
            Operation.Kind kind,
            Operation.Purpose purpose,
            String host,
            int client,
            Attachment attachment,
            boolean full) {
        long id = ids.incrementAndGet();
        Operation op =
                new Operation(
                        id,
                        phase,
                        kind,
                        purpose,
                        host,
                        client,
                        attachment,
                        full,
                        now(),
                        Operation.PENDING,
                        Operation.Status.UNKNOWN,
                        List.of(),
                        -1,
                        null);
        operations.put(id, op);
        ObjectNode line = line("invoke", op.invokedNanos());
        line.put("id", id)
                .put("phase", phase.name())
                .put("op", kind.name())
                .put("purpose", purpose.name())
                .put("host", host)
                .put("client", client);
        if (attachment != null) {
            line.put("container", attachment.containerId()).put("ifname", Attachment.IFNAME);
        }
        line.put("full", full);
        write(line);
        return op;
    }

    /** Records the completion of an invoked call. */
    Operation complete(
            Operation invoked,
            Operation.Status status,
            List<String> addresses,
            int code,
            String detail) {
        Operation done = invoked.completed(now(), status, addresses, code, detail);
        operations.put(done.id(), done);
        if (status == Operation.Status.OK) {
            lastOk.merge(done.host(), done.completedNanos(), Math::max);
        }
        ObjectNode line = line("complete", done.completedNanos());
        line.put("id", done.id()).put("status", status.name()).put("code", code);
        addresses.forEach(line.putArray("addresses")::add);
        if (detail != null) {
            line.put("detail", detail);
        }
        write(line);
        return done;
    }

    /** @return when the last call on the host succeeded (completion), or -1 */
    long lastOk(String host) {
        return lastOk.getOrDefault(host, -1L);
    }

    /** Records the start of an injected fault; {@link #faultEnded} records its end. */
    long faultStarted(String kind, String target, String detail) {
        long id = ids.incrementAndGet();
        long at = now();
        faults.put(id, new FaultRecord(id, true, kind, target, at, Operation.PENDING, detail));
        write(
                line("fault-start", at)
                        .put("id", id)
                        .put("kind", kind)
                        .put("target", target)
                        .put("detail", detail));
        return id;
    }

    void faultEnded(long id, String detail) {
        long at = now();
        FaultRecord f = faults.get(id);
        String all =
                detail == null
                        ? f.detail()
                        : (f.detail() == null ? detail : f.detail() + "; " + detail);
        faults.put(id, new FaultRecord(id, true, f.kind(), f.target(), f.startNanos(), at, all));
        write(
                line("fault-end", at)
                        .put("id", id)
                        .put("kind", f.kind())
                        .put("target", f.target())
                        .put("detail", detail));
    }

    /** Records something observed about a member or the run (not injected). */
    void event(String kind, String target, String detail) {
        long id = ids.incrementAndGet();
        long at = now();
        faults.put(id, new FaultRecord(id, false, kind, target, at, at, detail));
        write(
                line("event", at)
                        .put("id", id)
                        .put("kind", kind)
                        .put("target", target)
                        .put("detail", detail));
    }

    /** @return every call so far, in invocation order (pending ones included) */
    List<Operation> operations() {
        List<Operation> all = new ArrayList<>(operations.values());
        all.sort(Comparator.comparingLong(Operation::id));
        return all;
    }

    /** @return every fault and event so far, in start order */
    List<FaultRecord> faults() {
        List<FaultRecord> all = new ArrayList<>(faults.values());
        all.sort(
                Comparator.comparingLong(FaultRecord::startNanos)
                        .thenComparingLong(FaultRecord::id));
        return all;
    }

    private ObjectNode line(String type, long atNanos) {
        ObjectNode line = JSON.createObjectNode();
        line.put("type", type)
                .put("t", atNanos / 1e9)
                .put(
                        "wall",
                        Instant.ofEpochMilli(originEpochMillis + atNanos / 1_000_000).toString());
        return line;
    }

    private synchronized void write(ObjectNode line) {
        try {
            out.write(JSON.writeValueAsString(line));
            out.write('\n');
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the history to " + file, e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
