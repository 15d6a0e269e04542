package io.cadastre.bench;

import io.cadastre.testsupport.CassandraNode;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.PodNamespaces;
import io.cadastre.testsupport.Schema;
import io.cadastre.testsupport.TestPki;
import io.cadastre.testsupport.Topology;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What the scenarios share: where to write, how long to measure, the plugin executables, and a
 * lazily started multi-host fabric ({@link Topology} of host namespaces with a Cassandra in its db
 * namespace) that the cluster scenarios use in turn. {@link #close()} stops the fabric and removes
 * the work directory.
 *
 * @param quick few repetitions: a smoke run (tests, {@code --quick}), not figures to quote
 */
public final class BenchContext implements AutoCloseable {
    /** The host namespaces of the fabric: a 3-member cluster. */
    public static final int HOSTS = 3;

    private final Path outputDir;
    private final Path workDir;
    private final boolean quick;
    private final Path plugin;
    private final Path referencePlugins;

    /** The cluster's pool, IPv4 only (RFC 2544 space): one journal write per allocation. */
    public static final String CLUSTER_POOL = "bench-ipv4";

    /**
     * A pool of /32 blocks, used only when named: every ADD from it claims a new block, whose route
     * the other hosts must learn (the pod network's convergence).
     */
    public static final String CLAIM_POOL = "bench-claims";

    private static final String CLUSTER_POOLS =
            """
            cadastre.pools = [
              { name = "%s", cidr = "198.18.16.0/20", block-size = 26 }
              { name = "%s", cidr = "198.18.200.0/24", block-size = 32 }
            ]
            cadastre.default-pools = ["%s"]
            """
                    .formatted(CLUSTER_POOL, CLAIM_POOL, CLUSTER_POOL);

    private Topology topology;
    private CassandraNode cassandra;
    private List<Member> members;
    private PodNamespaces ipamNamespaces;
    private String ipamNetns;

    public BenchContext(
            Path outputDir, Path workDir, boolean quick, Path plugin, Path referencePlugins) {
        this.outputDir = outputDir;
        this.workDir = workDir;
        this.quick = quick;
        this.plugin = plugin;
        this.referencePlugins = referencePlugins;
    }

    /** @return the report's directory (PNG plots go here too) */
    public Path outputDir() {
        return outputDir;
    }

    /**
     * @return the path ({@code CNI_NETNS}) of a network namespace for the IPAM-only calls, made at
     *     the first call and removed by {@link #close()}: the runtime calling a plugin that
     *     delegates IPAM passes the pod's namespace, which exists, and the agent checks it (a path
     *     that does not exist costs it an exception per call)
     * @throws IOException when {@code ip netns add} fails
     */
    public synchronized String ipamNetns() throws IOException, InterruptedException {
        if (ipamNetns == null) {
            ipamNamespaces = new PodNamespaces("cadbench" + ProcessHandle.current().pid() + "-");
            ipamNetns = PodNamespaces.path(ipamNamespaces.create("ipam"));
        }
        return ipamNetns;
    }

    /** @return a fresh directory under the work directory, removed by {@link #close()} */
    public Path workDir(String name) throws IOException {
        return Files.createDirectories(workDir.resolve(name));
    }

    public boolean quick() {
        return quick;
    }

    /** @param full the repetitions of a real run @return them, or a handful in a quick run */
    public int repetitions(int full) {
        return quick ? Math.min(full, 3) : full;
    }

    /**
     * @return the cadastre plugin executable (by default cni-bridge/target/static/cadastre, the
     *     build the image installs)
     */
    public Path plugin() {
        return plugin;
    }

    /** @return the directory of the reference plugins ({@code /usr/lib/cni}: bridge, ptp, host-local) */
    public Path referencePlugins() {
        return referencePlugins;
    }

    /** @return the fabric's topology, brought up with {@link #HOSTS} hosts and Cassandra on first use */
    public synchronized Topology topology() throws IOException, InterruptedException {
        fabric();
        return topology;
    }

    /** @return the fabric's Cassandra (schema created ahead, as production does), started on first use */
    public synchronized CassandraNode cassandra() throws IOException, InterruptedException {
        fabric();
        return cassandra;
    }

    /**
     * @return the cluster: a cadastre-agent in each host namespace of the fabric, on its Cassandra,
     *     joined through the first host, the members authenticating each other with mutual TLS,
     *     each serving {@link #CLUSTER_POOL}; started on first use (the first member, then the
     *     others at once), stopped by {@link #close()}. A scenario may kill and restart members; it
     *     leaves them all running.
     */
    public synchronized List<Member> members() throws IOException, InterruptedException {
        if (members != null) {
            return members;
        }
        fabric();
        List<String> seeds = List.of(Member.address(topology.host(1)));
        List<Member> started = new ArrayList<>();
        // Mutual TLS between the members, as by default: the figures are the secure
        // configuration's.
        TestPki ca = TestPki.authority("cadastre-bench-ca");
        for (Topology.Host host : topology.hosts()) {
            started.add(
                    new Member(
                            topology,
                            host,
                            workDir("member-" + host.name()),
                            cassandra,
                            ca,
                            seeds,
                            CLUSTER_POOLS));
        }
        members = started;
        Member.startTogether(started, start -> new Thread(start, "member-start").start());
        return members;
    }

    /**
     * Stops every member (SIGTERM: each leaves the cluster) and starts them all again, the cluster
     * port on mutual TLS or, with {@code tls} false, on plain TCP without authentication.
     *
     * @throws IllegalStateException when a member does not start again
     */
    public synchronized void restartMembers(boolean tls) throws IOException, InterruptedException {
        List<Member> all = members();
        for (Member m : all) {
            m.close();
        }
        all.forEach(m -> m.insecurePlaintext(!tls));
        Member.startTogether(all, start -> new Thread(start, "member-start").start());
    }

    private void fabric() throws IOException, InterruptedException {
        if (topology != null) {
            return;
        }
        topology = Topology.up(Topology.randomName(), HOSTS);
        cassandra = CassandraNode.start(topology, workDir("cassandra"));
        try {
            Schema.create(topology, cassandra);
        } catch (Exception e) {
            throw new IOException("cadastre-agent schema --execute failed", e);
        }
    }

    @Override
    public synchronized void close() throws Exception {
        try {
            if (members != null) {
                for (Member m : members) {
                    m.close();
                }
            }
            if (cassandra != null) {
                cassandra.close();
            }
            if (ipamNamespaces != null) {
                ipamNamespaces.close();
            }
        } finally {
            if (topology != null) {
                topology.close();
            }
            if (Boolean.getBoolean("cadastre.bench.keep-work")) {
                System.out.println(
                        "kept the agents' and Cassandra's files in "
                                + workDir
                                + " (-Dcadastre.bench.keep-work)");
            } else {
                Files.walk(workDir)
                        .sorted(java.util.Comparator.reverseOrder())
                        .forEach(p -> p.toFile().delete());
            }
        }
    }
}
