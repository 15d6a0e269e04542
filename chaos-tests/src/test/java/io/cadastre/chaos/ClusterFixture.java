package io.cadastre.chaos;

import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Closing;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.Schema;
import io.cadastre.testsupport.TestPki;
import io.cadastre.testsupport.Topology;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * What a multi-member test runs on: a topology of host namespaces, a real Cassandra in its db
 * namespace (schema created ahead, as production does), the run's CA, and members on the first
 * hosts joining through host 1, started together ({@link Member#startTogether}). {@link #close()}
 * stops the members and Cassandra by PID and removes the topology and the directory, also after a
 * start that failed half way.
 */
final class ClusterFixture implements AutoCloseable {
    /** The subject CN of the fixture's CA. */
    static final String CA_NAME = "cadastre-test-ca";

    private final Path dir;
    private final ExecutorService executor = Executors.newFixedThreadPool(6);
    private final List<Member> members = new ArrayList<>();
    private Topology topology;
    private CassandraNode cassandra;
    private TestPki ca;

    private ClusterFixture(Path dir) {
        this.dir = dir;
    }

    /**
     * @param prefix the name of the temporary directory's prefix
     * @param hosts how many host namespaces
     * @param memberCount how many members, on hosts 1 to memberCount
     * @param securedCassandra whether Cassandra requires a login and TLS ({@link CassandraNode#startSecured})
     * @param extraConfig HOCON for every member (pools)
     * @throws IllegalStateException when something does not start; what did is stopped and removed
     */
    static ClusterFixture start(
            String prefix, int hosts, int memberCount, boolean securedCassandra, String extraConfig)
            throws Exception {
        return start(prefix, hosts, 0, memberCount, securedCassandra, extraConfig);
    }

    /**
     * As {@link #start(String, int, int, boolean, String)}, with {@code routed} more hosts behind
     * the topology's router; members run on the first {@code memberCount} of all hosts.
     */
    static ClusterFixture start(
            String prefix,
            int hosts,
            int routed,
            int memberCount,
            boolean securedCassandra,
            String extraConfig)
            throws Exception {
        ClusterFixture fixture = new ClusterFixture(Files.createTempDirectory(prefix));
        try {
            fixture.topology = Topology.up(Topology.randomName(), hosts, routed);
            fixture.ca = TestPki.authority(CA_NAME);
            Path cassandraDir = fixture.dir.resolve("cassandra");
            fixture.cassandra =
                    securedCassandra
                            ? CassandraNode.startSecured(fixture.topology, cassandraDir, fixture.ca)
                            : CassandraNode.start(fixture.topology, cassandraDir);
            Schema.create(fixture.topology, fixture.cassandra);
            List<String> seeds = List.of(Member.address(fixture.topology.host(1)));
            for (int i = 1; i <= memberCount; i++) {
                Topology.Host host = fixture.topology.host(i);
                fixture.members.add(
                        new Member(
                                fixture.topology,
                                host,
                                fixture.dir.resolve(host.name()),
                                fixture.cassandra,
                                fixture.ca,
                                seeds,
                                extraConfig));
            }
            Member.startTogether(fixture.members, fixture.executor);
            return fixture;
        } catch (Exception | Error e) {
            try {
                fixture.close();
            } catch (Exception cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /** @return the directory of everything the run writes (members' directories, Cassandra's), removed by {@link #close()} */
    Path dir() {
        return dir;
    }

    Topology topology() {
        return topology;
    }

    CassandraNode cassandra() {
        return cassandra;
    }

    /** @return the CA that issued the members' certificates */
    TestPki ca() {
        return ca;
    }

    /** @return the members, host 1 first */
    List<Member> members() {
        return members;
    }

    /** @return six threads for the test's concurrent work, stopped by {@link #close()} */
    ExecutorService executor() {
        return executor;
    }

    @Override
    public void close() throws Exception {
        try {
            Closing.together(members);
            if (cassandra != null) {
                cassandra.close();
            }
        } finally {
            executor.shutdownNow();
            if (topology != null) {
                topology.close();
            }
            try (var paths = Files.walk(dir)) {
                paths.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
