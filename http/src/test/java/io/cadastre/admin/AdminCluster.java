package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.ipam.Allocation;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AskTimeouts;
import io.cadastre.shards.AssignRequests;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.BlockEntity;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.PoolCatalog;
import io.cadastre.shards.PoolEntity;
import io.cadastre.shards.PoolRegistry;
import io.cadastre.shards.Pools;
import io.cadastre.shards.ShardedIpam;
import io.cadastre.shards.TestCluster;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * For the admin tests: a one-member cluster with the real sharded entities (in-memory journal,
 * every message serialized), and per test its own pools, node, {@link Ipam} and admin server on
 * 127.0.0.1 with a free port and the token {@value #TOKEN}, so that tests do not see each other's
 * blocks and nodes. The member
 * itself carries the node role {@value #MEMBER_NODE} and never holds an allocation.
 *
 * <p>A JUnit extension: a test class registers one ({@code @RegisterExtension static final
 * AdminCluster cluster = new AdminCluster();}), which starts the cluster, named after the class,
 * before its tests and shuts it down after them.
 */
final class AdminCluster implements BeforeAllCallback, AfterAllCallback {
    static final String MEMBER_NODE = "admin-member";
    static final String TOKEN = "s3cret-token";
    private static final ObjectMapper JSON = new ObjectMapper();

    private ActorTestKit testKit;
    private final AtomicInteger counter = new AtomicInteger();
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @Override
    public void beforeAll(ExtensionContext context) {
        testKit =
                TestCluster.start(
                        context.getRequiredTestClass().getSimpleName(),
                        """
                pekko.cluster.roles = ["%s"]
                pekko.loglevel = WARNING
                """
                                .formatted(Members.role(MEMBER_NODE)));
    }

    ActorSystem<?> system() {
        return testKit.system();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (testKit != null) {
            testKit.shutdownTestKit();
        }
    }

    /**
     * One test's world: an IPv4 pool {@code 198.18.<n>.0/24} in /26 blocks and an IPv6 pool
     * {@code fd00:198:0:<n>::/120} in /122 blocks, this agent's node, its IPAM, and the server.
     */
    final class Env implements AutoCloseable {
        final int n;
        final PoolSpec v4;
        final PoolSpec v6;
        final String node;
        final Pools pools;
        final Ipam ipam;
        final Inventory inventory;
        final AdminServer server;
        final URI base;
        final AtomicReference<Optional<String>> unreadiness =
                new AtomicReference<>(Optional.empty());

        /** What {@link #get}, {@link #post} and the tests' own requests send as the bearer token: the server's. */
        final Optional<String> token = Optional.of(TOKEN);

        Env() {
            n = counter.incrementAndGet();
            v4 = new PoolSpec("v4-" + n, Cidr.parse("198.18." + n + ".0/24"), 26, false, true, 0);
            v6 =
                    new PoolSpec(
                            "v6-" + n,
                            Cidr.parse("fd00:198:0:" + n + "::/120"),
                            122,
                            false,
                            true,
                            0);
            node = "t" + n + "-node";
            AskTimeouts timeouts =
                    AskTimeouts.single(Duration.ofSeconds(10), Duration.ofSeconds(2));
            pools =
                    new Pools(
                            system(),
                            timeouts,
                            new PoolCatalog(system(), timeouts, Duration.ofMillis(100)));
            await(pools.defineConfigured(List.of(v4, v6)));
            ipam = ipam(node, List.of(v4.name(), v6.name()));
            inventory = new Inventory(system(), pools, timeouts);
            server =
                    new AdminServer(
                            system(),
                            inventory,
                            ipam,
                            unreadiness::get,
                            new AdminServer.Settings("127.0.0.1", 0, TOKEN));
            InetSocketAddress bound = await(server.start());
            base = URI.create("http://127.0.0.1:" + bound.getPort());
        }

        /** @return an IPAM for another node, allocating from these pools by default */
        Ipam ipam(String nodeName, List<String> defaultPools) {
            AskTimeouts timeouts =
                    AskTimeouts.single(Duration.ofSeconds(10), Duration.ofSeconds(2));
            return new ShardedIpam(
                    system(),
                    nodeName,
                    Map.of(),
                    pools.catalog(),
                    defaultPools,
                    timeouts,
                    Clock.systemUTC());
        }

        /**
         * Makes another node borrow: the v4 pool's four /26 blocks all go to this env's node (the
         * first by an ADD of {@code c1} before, the other three claimed here at the pool), so an ADD
         * of {@code b1} on a second node finds none free and borrows.
         *
         * @return the second node's IPAM; its {@code b1} holds the borrowed address
         */
        Ipam borrowerAfterClaimingEveryV4Block() {
            for (int i = 0; i < 3; i++) {
                await(
                        ref(PoolEntity.ENTITY_TYPE_KEY, v4.name())
                                .askWithStatus(
                                        (ActorRef<StatusReply<PoolEntity.ClaimOutcome>> r) ->
                                                new PoolEntity.ClaimBlock(node, null, r),
                                        Duration.ofSeconds(10)));
            }
            Ipam other = ipam("t" + n + "-other", List.of(v4.name()));
            add(other, "b1");
            return other;
        }

        /** ADD of one attachment (container {@code c}, eth0, network "net") on this env's node, both families. */
        AttachmentRecord add(String container) {
            return add(ipam, container);
        }

        AttachmentRecord add(Ipam on, String container) {
            return await(
                    on.assign(AssignRequests.plain("net", container, "ns", "pod-" + container)));
        }

        Reply get(String path) {
            return send(HttpRequest.newBuilder(base.resolve(path)).GET(), token);
        }

        Reply post(String path, String body) {
            return send(
                    HttpRequest.newBuilder(base.resolve(path))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body)),
                    token);
        }

        Reply delete(String path) {
            return send(HttpRequest.newBuilder(base.resolve(path)).DELETE(), token);
        }

        Reply send(HttpRequest.Builder request, Optional<String> bearer) {
            bearer.ifPresent(t -> request.header("Authorization", "Bearer " + t));
            try {
                HttpResponse<String> response =
                        http.send(
                                request.timeout(Duration.ofSeconds(30)).build(),
                                HttpResponse.BodyHandlers.ofString());
                return new Reply(
                        response.statusCode(),
                        response.body(),
                        response.headers().firstValue("Content-Type").orElse(""),
                        response.headers().firstValue("WWW-Authenticate"));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() {
            try {
                removePools();
            } finally {
                await(server.stop());
            }
        }

        /**
         * The cluster's pools are shared by every env: each test leaves none behind, so the next
         * one sees only its own. Every allocation in the pools' blocks is freed, then the pools are
         * deleted (which checks that nothing is left).
         */
        private void removePools() {
            for (PoolSpec pool : List.of(v4, v6)) {
                TestCluster.removePool(system(), pools, pool.name());
            }
        }
    }

    Env env() {
        return new Env();
    }

    /** One HTTP reply. */
    record Reply(int status, String body, String contentType, Optional<String> wwwAuthenticate) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new AssertionError("not JSON: " + body, e);
            }
        }

        /** @return the error message, asserting the status and that the body is exactly {"error": ...} */
        String error(int expectedStatus) {
            assertEquals(expectedStatus, status, body);
            JsonNode json = json();
            assertEquals(1, json.size(), body);
            assertEquals(true, json.get("error").isTextual(), body);
            return json.get("error").asText();
        }

        JsonNode ok() {
            assertEquals(200, status, body);
            return json();
        }
    }

    /** @return the texts of a JSON array's items, in order */
    static List<String> texts(JsonNode array) {
        List<String> texts = new ArrayList<>();
        array.forEach(item -> texts.add(item.asText()));
        return texts;
    }

    static <T> T await(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new CompletionException(e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A test given an env and the port of a second admin server whose catalogue holds a stuck pool. */
    interface StuckPoolTest {
        void run(Env env, int port);
    }

    /**
     * Registers a pool whose entity cannot recover (its journal reads fail), so it never answers,
     * and runs {@code test} against a second admin server over the cluster's catalogue with ask
     * timeouts of 1 s in all (300 ms per attempt); then stops that server and unregisters the pool.
     *
     * @param cidr a range no other test's pool overlaps
     */
    void withStuckPool(String name, String cidr, StuckPoolTest test) {
        PoolSpec stuck = new PoolSpec(name, Cidr.parse(cidr), 26, false, false, 0);
        PersistenceTestKit.create(system()).failNextNReads("Pool|" + name, 1_000);
        AskTimeouts timeouts =
                new AskTimeouts(
                        Duration.ofSeconds(1), Duration.ofMillis(300), Duration.ofSeconds(2));
        var registry = ref(PoolRegistry.ENTITY_TYPE_KEY, PoolRegistry.ID);
        await(
                registry.askWithStatus(
                        (ActorRef<StatusReply<PoolRegistry.Registration>> r) ->
                                new PoolRegistry.Register(stuck, false, r),
                        Duration.ofSeconds(10)));
        try (Env env = env()) {
            Pools pools =
                    new Pools(
                            system(),
                            timeouts,
                            new PoolCatalog(system(), timeouts, Duration.ofMillis(100)));
            AdminServer server =
                    new AdminServer(
                            system(),
                            new Inventory(system(), pools, timeouts),
                            env.ipam,
                            Optional::empty,
                            new AdminServer.Settings("127.0.0.1", 0, TOKEN));
            try {
                test.run(env, await(server.start()).getPort());
            } finally {
                await(server.stop());
            }
        } finally {
            await(
                    registry.askWithStatus(
                            (ActorRef<StatusReply<Done>> r) -> new PoolRegistry.Unregister(name, r),
                            Duration.ofSeconds(10)));
        }
    }

    // ---- the entities directly, to build states the ADD/DEL flows never leave ----

    <M> org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef<M> ref(
            org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey<M> key, String id) {
        return ClusterSharding.get(system()).entityRefFor(key, id);
    }

    /**
     * Has the block allocate for an attachment (on eth0) of the node that the node does not
     * record: an ADD that crashed between the block and the node.
     *
     * @param borrow whether the node is not the block's affine one (the pool allows borrowing)
     */
    BlockEntity.AssignOutcome assignWithoutRecord(
            Cidr block, String node, String handle, boolean borrow) {
        Allocation allocation =
                new Allocation(handle, "eth0", "ns", "pod", node, System.currentTimeMillis());
        BlockEntity.AssignOutcome outcome =
                await(
                        ref(BlockEntity.ENTITY_TYPE_KEY, block.entityId())
                                .ask(
                                        (ActorRef<BlockEntity.AssignOutcome> r) ->
                                                new BlockEntity.AutoAssign(
                                                        allocation, borrow, null, r),
                                        Duration.ofSeconds(10)));
        assertEquals(BlockEntity.AssignStatus.ASSIGNED, outcome.status(), outcome.toString());
        return outcome;
    }
}
