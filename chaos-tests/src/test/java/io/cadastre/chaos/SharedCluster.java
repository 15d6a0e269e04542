package io.cadastre.chaos;

import io.cadastre.testsupport.Topology;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The secured cluster that {@link ClusterTest} and {@link ClusterAuthTest} share: four host
 * namespaces, a real Cassandra with its login over TLS, and members on hosts 1 to 3 (mutual TLS);
 * host 4 is left free for what must not be a member (strangers, agents alone). One start instead
 * of one per class saves about half a minute of the run.
 *
 * <p>Register it as a static field ({@code @RegisterExtension}); the first class of the run that
 * does starts the cluster. It is closed once every class of {@link #USERS} has ended (the module's
 * {@code junit-platform.properties} runs them first, by their {@code @Order}, so the tests after
 * them do not share the machine with four idle JVMs), or else when the run ends (a value of its
 * root store that is {@link AutoCloseable}), also after a failure. A class that takes a member
 * down brings it back before it ends: the other class expects all three up.
 */
final class SharedCluster implements BeforeAllCallback, AfterAllCallback {
    /** Every class that registers this extension. */
    static final Set<Class<?>> USERS = Set.of(ClusterAuthTest.class, ClusterTest.class);

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

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        ExtensionContext.Store root = context.getRoot().getStore(NAMESPACE);
        @SuppressWarnings("unchecked")
        Set<Class<?>> ended =
                root.getOrComputeIfAbsent("ended", k -> ConcurrentHashMap.newKeySet(), Set.class);
        ended.add(context.getRequiredTestClass());
        if (ended.containsAll(USERS)) {
            ClusterFixture started = root.remove(ClusterFixture.class, ClusterFixture.class);
            if (started != null) {
                started.close();
            }
        }
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
