package io.cadastre.chaos;

import io.cadastre.testsupport.Topology;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The secured cluster that {@link ClusterTest} and {@link ClusterAuthTest} share: four host
 * namespaces, a real Cassandra with its login over TLS, and members on hosts 1 to 3 (mutual TLS);
 * host 4 is left free for what must not be a member (strangers, agents alone). One start instead
 * of one per class saves about half a minute of the run.
 *
 * <p>Register it as a static field ({@code @RegisterExtension}); the first class of the run that
 * does starts the cluster, and JUnit closes it when the run ends (a value of its root store that
 * is {@link AutoCloseable}), also after a failure. A class that takes a member down brings it
 * back before it ends: the other class expects all three up.
 */
final class SharedCluster implements BeforeAllCallback {
    static final String POOLS =
            """
            cadastre.pools = [
              { name = "chaos-ipv4", cidr = "198.18.0.0/20", block-size = 26 }
              { name = "chaos-ipv6", cidr = "fd00:198:2::/112", block-size = 122 }
            ]
            cadastre.default-pools = ["chaos-ipv4", "chaos-ipv6"]
            """;

    /** The host that runs no member. */
    static final int FREE_HOST = 4;

    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(SharedCluster.class);

    private ClusterFixture fixture;

    @Override
    public void beforeAll(ExtensionContext context) {
        fixture =
                context.getRoot()
                        .getStore(NAMESPACE)
                        .getOrComputeIfAbsent(
                                ClusterFixture.class, k -> start(), ClusterFixture.class);
    }

    /** @return the started cluster (after {@link #beforeAll}) */
    ClusterFixture fixture() {
        return fixture;
    }

    private static ClusterFixture start() {
        try {
            return ClusterFixture.start("cad-cluster", FREE_HOST, 3, true, POOLS);
        } catch (Exception e) {
            throw new IllegalStateException("the shared cluster did not start", e);
        }
    }

    /** @return the free host */
    Topology.Host freeHost() {
        return fixture.topology().host(FREE_HOST);
    }
}
