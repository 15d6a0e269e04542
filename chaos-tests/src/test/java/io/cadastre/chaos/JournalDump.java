package io.cadastre.chaos;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.uuid.Uuids;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.cbor.databind.CBORMapper;
import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Topology;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

/**
 * Post-mortem: prints the journal of a few entities straight from Cassandra, decoded (events are
 * Jackson CBOR), with each row's sequence number, time and writer (the incarnation that wrote
 * it). Rows that share a sequence number (two writers of one entity: the journal's key is
 * (sequence number, timestamp), so neither overwrites the other) are marked {@code DUPLICATE}.
 *
 * <p>Runs as its own JVM inside a host namespace ({@link #run}), since the db address is not
 * reachable from the root namespace. Arguments: {@code host:port filter persistenceId...}; only
 * events whose decoded JSON contains {@code filter} are printed (all for {@code -}), plus every
 * duplicate, every {@code AffinityClaimed} (whose node the block serves) and a per-writer summary.
 */
final class JournalDump {
    private static final CBORMapper CBOR = new CBORMapper();

    private JournalDump() {}

    /** Runs the dump in host 1's namespace and returns its output (errors included), bounded in time. */
    static String run(
            Topology topology,
            CassandraNode cassandra,
            String filter,
            List<String> persistenceIds) {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-Xmx128m",
                                "-DCADASTRE_LOG_FORMAT=text",
                                "-DCADASTRE_LOG_LEVEL=WARN",
                                "-cp",
                                System.getProperty("java.class.path"),
                                JournalDump.class.getName(),
                                cassandra.contactPoint(),
                                filter));
        command.addAll(persistenceIds);
        try {
            Process p =
                    topology.exec(
                            topology.host(1),
                            command,
                            pb ->
                                    pb.redirectErrorStream(true)
                                            .environment()
                                            .put("CADASTRE_LOG_LEVEL", "WARN"));
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return out + "\n(journal dump timed out)";
            }
            return out;
        } catch (Exception e) {
            return "(journal dump failed: " + e + ")";
        }
    }

    /**
     * Arguments: {@code host:port filter [--follow=PID,PID...] persistenceId...}. With
     * {@code --follow}, the handles named by the last two printed events that carry one are
     * looked up in the listed journals too (a block's holder in the node entities).
     */
    public static void main(String[] args) throws Exception {
        String[] hostPort = args[0].split(":");
        String filter = args[1];
        if (filter.equals(AUDIT)) {
            try (CqlSession session = session(hostPort)) {
                audit(session);
            }
            return;
        }
        List<String> follow = new ArrayList<>();
        List<String> pids = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            if (args[i].startsWith("--follow=")) {
                follow.addAll(List.of(args[i].substring("--follow=".length()).split(",")));
            } else {
                pids.add(args[i]);
            }
        }
        try (CqlSession session = session(hostPort)) {
            List<String> handles = new ArrayList<>();
            for (String pid : pids) {
                dump(session, pid, filter, handles);
            }
            List<String> last = handles.subList(Math.max(0, handles.size() - 2), handles.size());
            for (String handle : new java.util.LinkedHashSet<>(last)) {
                for (String pid : follow) {
                    dump(session, pid, handle, new ArrayList<>());
                }
            }
        }
    }

    /** The filter argument that makes a journal-wide audit instead of a dump. */
    static final String AUDIT = "--audit";

    /** Prefix of the audit's lines that report a sequence number written more than once. */
    static final String DUPLICATE = "DUPLICATE ";

    private static CqlSession session(String[] hostPort) {
        return CqlSession.builder()
                .addContactPoint(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])))
                .withLocalDatacenter("datacenter1")
                .withConfigLoader(
                        com.datastax.oss.driver.api.core.config.DriverConfigLoader
                                .programmaticBuilder()
                                .withDuration(
                                        com.datastax.oss.driver.api.core.config.DefaultDriverOption
                                                .REQUEST_TIMEOUT,
                                        java.time.Duration.ofSeconds(60))
                                .build())
                .build();
    }

    /**
     * Scans the whole journal for (persistence id, sequence number) written more than once in one
     * journal epoch (the epoch each event is stamped with, {@code FencedCassandraJournal}) — one
     * incarnation writing a number twice, or two incarnations holding one epoch, which the epoch
     * claims make impossible — and prints one {@link #DUPLICATE} line per such row, with the events
     * decoded. Rows of one sequence number from different epochs are a stale incarnation's refused
     * writes, which no replay delivers: counted, not reported.
     */
    private static void audit(CqlSession session) {
        Map<String, Integer> counts = new HashMap<>();
        Set<String> numbers = new HashSet<>();
        long rows = 0;
        for (Row r :
                session.execute(
                        "SELECT persistence_id, partition_nr, sequence_nr, meta_ser_id, meta"
                                + " FROM cadastre.messages")) {
            String number =
                    r.getString("persistence_id")
                            + "\t"
                            + r.getLong("partition_nr")
                            + "\t"
                            + r.getLong("sequence_nr");
            numbers.add(number);
            counts.merge(number + "\t" + epoch(r), 1, Integer::sum);
            rows++;
        }
        int duplicates = 0;
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            if (e.getValue() < 2) {
                continue;
            }
            duplicates++;
            String[] key = e.getKey().split("\t");
            StringBuilder line =
                    new StringBuilder(DUPLICATE)
                            .append(key[0])
                            .append(" seq ")
                            .append(key[2])
                            .append(" epoch ")
                            .append(key[3])
                            .append(':');
            for (Row r :
                    session.execute(
                            "SELECT timestamp, writer_uuid, ser_manifest, event, meta_ser_id, meta"
                                    + " FROM cadastre.messages"
                                    + " WHERE persistence_id = ? AND partition_nr = ? AND sequence_nr = ?",
                            key[0],
                            Long.parseLong(key[1]),
                            Long.parseLong(key[2]))) {
                if (epoch(r) != Long.parseLong(key[3])) {
                    continue;
                }
                line.append(" [written ")
                        .append(Instant.ofEpochMilli(Uuids.unixTimestamp(r.getUuid("timestamp"))))
                        .append(" by writer ")
                        .append(r.getString("writer_uuid"), 0, 8)
                        .append(": ")
                        .append(simpleName(r.getString("ser_manifest")))
                        .append(' ')
                        .append(decode(r.getByteBuffer("event")))
                        .append(']');
            }
            System.out.println(line);
        }
        System.out.println(
                "AUDITED "
                        + rows
                        + " rows of "
                        + numbers.size()
                        + " sequence numbers: "
                        + duplicates
                        + " written more than once in one epoch, "
                        + (counts.size() - numbers.size())
                        + " more rows from stale incarnations (refused, never replayed)");
    }

    /**
     * Pekko's serializer id for {@code java.lang.Long} ({@code primitive-long}), which writes the
     * value in 8 little-endian bytes: how the journal's epoch stamp is stored.
     */
    private static final int LONG_SERIALIZER_ID = 18;

    /** @return the journal epoch a row was stamped with, 0 for a row without one */
    private static long epoch(Row r) {
        ByteBuffer meta = r.getByteBuffer("meta");
        if (r.isNull("meta_ser_id")
                || r.getInt("meta_ser_id") != LONG_SERIALIZER_ID
                || meta == null
                || meta.remaining() != Long.BYTES) {
            return 0;
        }
        return meta.duplicate().order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    private static final java.util.regex.Pattern HANDLE =
            java.util.regex.Pattern.compile("\"handle\":\"([^\"]+)\"");

    private static void dump(CqlSession session, String pid, String filter, List<String> handles)
            throws IOException {
        System.out.println(
                "== journal of "
                        + pid
                        + (filter.equals("-") ? "" : " (events mentioning " + filter + ")"));
        Map<Long, Integer> perSeq = new LinkedHashMap<>();
        List<Row> rows = new ArrayList<>();
        for (long partition = 0; ; partition++) {
            List<Row> part =
                    session.execute(
                                    "SELECT sequence_nr, timestamp, writer_uuid, ser_manifest, event "
                                            + "FROM cadastre.messages WHERE persistence_id = ? AND partition_nr = ?",
                                    pid,
                                    partition)
                            .all();
            if (part.isEmpty()) {
                break;
            }
            rows.addAll(part);
        }
        rows.forEach(r -> perSeq.merge(r.getLong("sequence_nr"), 1, Integer::sum));
        Map<String, long[]> writers = new LinkedHashMap<>();
        for (Row r : rows) {
            long seq = r.getLong("sequence_nr");
            String writer = r.getString("writer_uuid");
            long[] range = writers.computeIfAbsent(writer, w -> new long[] {seq, seq, 0});
            range[1] = seq;
            range[2]++;
            String json = decode(r.getByteBuffer("event"));
            boolean duplicate = perSeq.get(seq) > 1;
            String manifest = simpleName(r.getString("ser_manifest"));
            if (duplicate
                    || filter.equals("-")
                    || json.contains(filter)
                    || manifest.equals("AffinityClaimed")) {
                java.util.regex.Matcher m = HANDLE.matcher(json);
                if (m.find()) {
                    handles.add(m.group(1));
                }
                System.out.println(
                        "  seq "
                                + seq
                                + " at "
                                + Instant.ofEpochMilli(Uuids.unixTimestamp(r.getUuid("timestamp")))
                                + " writer "
                                + writer.substring(0, 8)
                                + (duplicate ? " DUPLICATE" : "")
                                + " "
                                + simpleName(r.getString("ser_manifest"))
                                + " "
                                + json);
            }
        }
        writers.forEach(
                (w, range) ->
                        System.out.println(
                                "  writer "
                                        + w.substring(0, 8)
                                        + ": "
                                        + range[2]
                                        + " events, seq "
                                        + range[0]
                                        + ".."
                                        + range[1]));
        session.execute(
                        "SELECT sequence_nr, timestamp FROM cadastre_snapshot.snapshots WHERE persistence_id = ?",
                        pid)
                .forEach(
                        r ->
                                System.out.println(
                                        "  snapshot at seq "
                                                + r.getLong("sequence_nr")
                                                + ", "
                                                + Instant.ofEpochMilli(r.getLong("timestamp"))));
    }

    private static String decode(ByteBuffer blob) {
        byte[] bytes = new byte[blob.remaining()];
        blob.duplicate().get(bytes);
        try {
            if (bytes.length > 2 && (bytes[0] & 0xff) == 0x1f && (bytes[1] & 0xff) == 0x8b) {
                bytes = new GZIPInputStream(new ByteArrayInputStream(bytes)).readAllBytes();
            }
            JsonNode node = CBOR.readTree(bytes);
            return node.toString();
        } catch (IOException e) {
            return "(" + bytes.length + " bytes, not CBOR: " + e.getMessage() + ")";
        }
    }

    private static String simpleName(String manifest) {
        int dollar = manifest == null ? -1 : manifest.lastIndexOf('$');
        return dollar < 0 ? String.valueOf(manifest) : manifest.substring(dollar + 1);
    }
}
