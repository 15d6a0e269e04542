package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardCoordinator;
import org.apache.pekko.cluster.sharding.external.ExternalShardAllocation;
import org.apache.pekko.cluster.sharding.external.ExternalShardAllocationStrategy;
import org.apache.pekko.cluster.sharding.external.javadsl.ExternalShardAllocationClient;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.typed.Cluster;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.immutable.IndexedSeq;
import scala.concurrent.Future;

/**
 * A node's entities on its own member: its {@link NodeEntity} and the {@link BlockEntity} of each
 * block affine to it run on the member whose agent serves the node's IPAM ({@link ShardedIpam}),
 * so that an ADD or DEL asks entities in its own JVM and crosses no member.
 *
 * <p>Pekko sharding places shards by count (its least-shards strategy), not by who asks them:
 * with three members, two of a node's three entities lived on another member on average, and an
 * ADD+DEL then cost the members 1.5-1.8× the CPU (benchmarks/DESIGN.md, ipam-throughput). Here:
 *
 * <ul>
 *   <li>each node's and each block's entity has a shard of its own, named by its entity id (the
 *       node's name; the block's {@link Cidr#entityId()});
 *   <li>those shards are placed by Pekko's {@link ExternalShardAllocationStrategy}: a shard with a
 *       published home is started on that member and moved back to it (at the coordinator's
 *       rebalance, every 10 s, while every member is reachable and none is joining: {@link
 *       #timeToRebalance}) when it runs elsewhere; a shard without one, or whose home is not a
 *       member now, starts on the member that first asks for it;
 *   <li>homes are published by the member that serves the node ({@link #node}, {@link #blocks},
 *       {@link #claimed}): the node's at the agent's start, a block's when the agent first uses
 *       it as its own (it claimed it, or read it among its affine blocks). A block released and
 *       claimed by another node gets that node's member as its home from the claimer: the last
 *       write wins (a distributed-data LWW-map, replicated to every member, so a new coordinator
 *       has it too).
 * </ul>
 *
 * <p>When a member crashes, its node's entities restart on a survivor as any shard does, the
 * first time something asks for them, and come home once the member is back. The pools' and the
 * registry's entities are asked from every node and keep Pekko's placement by count.
 *
 * <p>Shard ids are part of the cluster's routing: members placing by node and members of a
 * version before must not run side by side (an entity could run in two shards at once; the
 * journal's epoch fence keeps the writes safe, not the calls). Moving to this placement needs a
 * full restart of the cluster, not a rolling one.
 */
final class EntityHomes {
    private static final Logger LOG = LoggerFactory.getLogger(EntityHomes.class);

    /** How long the coordinator waits for its copy of the homes before placing by requester. */
    private static final Duration STATE_TIMEOUT = Duration.ofSeconds(5);

    private final Address self;
    private final ExternalShardAllocationClient nodeHomes;
    private final ExternalShardAllocationClient blockHomes;

    /** Entity ids this member has published as its own (published once per incarnation). */
    private final Set<String> published = ConcurrentHashMap.newKeySet();

    EntityHomes(ActorSystem<?> system) {
        this.self = Cluster.get(system).selfMember().address();
        ExternalShardAllocation homes = ExternalShardAllocation.get(system);
        this.nodeHomes = homes.getClient(NodeEntity.ENTITY_TYPE_KEY.name());
        this.blockHomes = homes.getClient(BlockEntity.ENTITY_TYPE_KEY.name());
    }

    /**
     * @return {@code entity} with a shard per entity, placed at its published home ({@link
     *     ExternalShardAllocationStrategy}, keyed by the entity type's name)
     */
    static <C> Entity<C, ShardingEnvelope<C>> homed(
            ActorSystem<?> system, Entity<C, ShardingEnvelope<C>> entity) {
        return entity.withMessageExtractor(EntityHomes.<C>shardPerEntity())
                .withAllocationStrategy(strategy(system, entity.typeKey().name()));
    }

    /**
     * @param typeName the entity type's name, which keys its homes
     * @return Pekko's {@link ExternalShardAllocationStrategy} for the type, started at most once
     *     ({@link StartedOnce})
     */
    static ShardCoordinator.StartableAllocationStrategy strategy(
            ActorSystem<?> system, String typeName) {
        Cluster cluster = Cluster.get(system);
        return strategy(
                system,
                typeName,
                () -> {
                    ClusterEvent.CurrentClusterState state = cluster.state();
                    return timeToRebalance(state.getMembers(), state.getUnreachable());
                });
    }

    /**
     * As {@link #strategy(ActorSystem, String)}, rebalancing only while {@code timeToRebalance}
     * says so.
     */
    static ShardCoordinator.StartableAllocationStrategy strategy(
            ActorSystem<?> system, String typeName, BooleanSupplier timeToRebalance) {
        return new StartedOnce(
                ExternalShardAllocationStrategy.create(system, typeName, STATE_TIMEOUT),
                timeToRebalance);
    }

    /**
     * Whether shards may be moved now: no member unreachable, none joining. A move waits for every
     * shard region to acknowledge the hand-off, an unreachable member's too, until {@code
     * pekko.cluster.sharding.handoff-timeout}; the shards being moved answer nothing meanwhile.
     * Pekko's least-shards strategy keeps this rule ({@code
     * AbstractLeastShardAllocationStrategy.isAGoodTimeToRebalance}); its external one, used here,
     * does not. Seen in a chaos run: a node's entities being moved home as another member
     * crashed waited the whole 5 s hand-off timeout.
     *
     * @param members the cluster's members
     * @param unreachable those of them some member cannot reach
     */
    static boolean timeToRebalance(Iterable<Member> members, Set<Member> unreachable) {
        if (!unreachable.isEmpty()) {
            return false;
        }
        for (Member member : members) {
            MemberStatus status = member.status();
            if (status == MemberStatus.joining() || status == MemberStatus.weaklyUp()) {
                return false;
            }
        }
        return true;
    }

    /**
     * A strategy whose {@code start} runs once per member. Pekko starts a strategy each time a
     * shard coordinator starts with it, and {@code ShardCoordinatorSupervisor} starts a coordinator
     * that stopped (a failed state write, say) again after a back-off, on the same member, with
     * the same strategy; Pekko's external strategy would then create its state actor a second
     * time under the same name, which fails, and so would every restart of the coordinator. The
     * first state actor, a system actor, lives on and serves.
     */
    private static final class StartedOnce implements ShardCoordinator.StartableAllocationStrategy {
        private final ExternalShardAllocationStrategy strategy;
        private final BooleanSupplier timeToRebalance;
        private final AtomicBoolean started = new AtomicBoolean();

        StartedOnce(ExternalShardAllocationStrategy strategy, BooleanSupplier timeToRebalance) {
            this.strategy = strategy;
            this.timeToRebalance = timeToRebalance;
        }

        @Override
        public void start() {
            if (started.compareAndSet(false, true)) {
                strategy.start();
            }
        }

        @Override
        public Future<ActorRef> allocateShard(
                ActorRef requester,
                String shardId,
                scala.collection.immutable.Map<ActorRef, IndexedSeq<String>> current) {
            return strategy.allocateShard(requester, shardId, current);
        }

        @Override
        public Future<scala.collection.immutable.Set<String>> rebalance(
                scala.collection.immutable.Map<ActorRef, IndexedSeq<String>> current,
                scala.collection.immutable.Set<String> inProgress) {
            if (!timeToRebalance.getAsBoolean()) {
                return Future.successful(scala.collection.immutable.Set$.MODULE$.empty());
            }
            return strategy.rebalance(current, inProgress);
        }
    }

    /** Publishes this member as the home of the node's entity (once per incarnation). */
    void node(String node) {
        publish(nodeHomes, NodeEntity.ENTITY_TYPE_KEY.name(), node, false);
    }

    /**
     * Publishes this member as the home of blocks affine to its node, each once per incarnation.
     */
    void blocks(Collection<Cidr> affine) {
        for (Cidr block : affine) {
            publish(blockHomes, BlockEntity.ENTITY_TYPE_KEY.name(), block.entityId(), false);
        }
    }

    /**
     * Publishes this member as the home of a block its node has just claimed, even if it did so
     * before: another node may have claimed the block, and published its own member, since.
     */
    void claimed(Cidr block) {
        publish(blockHomes, BlockEntity.ENTITY_TYPE_KEY.name(), block.entityId(), true);
    }

    private void publish(
            ExternalShardAllocationClient client, String type, String entityId, boolean again) {
        String key = type + "/" + entityId;
        if (!published.add(key) && !again) {
            return;
        }
        client.setShardLocation(entityId, self)
                .whenComplete(
                        (done, failure) -> {
                            if (failure != null) {
                                // Only placement is lost: the next use publishes it again.
                                published.remove(key);
                                LOG.debug("home of {} not published: {}", key, failure.toString());
                            }
                        });
    }

    /** One shard per entity: the shard id is the entity id. */
    private static <M> ShardingMessageExtractor<ShardingEnvelope<M>, M> shardPerEntity() {
        return new ShardingMessageExtractor<>() {
            @Override
            public String entityId(ShardingEnvelope<M> envelope) {
                return envelope.entityId();
            }

            @Override
            public String shardId(String entityId) {
                return entityId;
            }

            @Override
            public M unwrapMessage(ShardingEnvelope<M> envelope) {
                return envelope.message();
            }
        };
    }
}
