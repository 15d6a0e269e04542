package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiFunction;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node, sharded by its name: the node's handle index (attachment → addresses and the blocks
 * they came from), a cache of the blocks affine to it (the pools are the source of truth), and the
 * blocks of other nodes it has borrowed from. ADD answers from here when the attachment is already
 * known, which makes retries idempotent; a DEL of an attachment it does not know sweeps the affine
 * and the borrowed blocks.
 */
public final class NodeEntity
        extends CadastreEntity<NodeEntity.Command, NodeEntity.Event, NodeEntity.State> {

    public static final EntityTypeKey<Command> ENTITY_TYPE_KEY =
            EntityTypeKey.create(Command.class, "Node");
    private static final Logger LOG = LoggerFactory.getLogger(NodeEntity.class);

    /**
     * Registers the entity with cluster sharding, placed on its node's member ({@link
     * EntityHomes}).
     */
    public static void init(ActorSystem<?> system) {
        initSharding(
                system, ENTITY_TYPE_KEY, CadastreMetrics.ENTITY_NODE, NodeEntity::create, true);
    }

    /**
     * @param nodeName the node's name, the entity id
     * @return the node outside sharding ({@link CadastreEntity#unfenced})
     */
    public static Behavior<Command> create(String nodeName) {
        return unfenced(NodeEntity::create, nodeName);
    }

    /**
     * @param nodeName the node's name
     * @return the entity's events, event handler and empty state outside an actor, for tools that
     *     write or fold its events (the benchmarks' journal seeder); it must not run as an actor
     */
    public static NodeEntity eventModel(String nodeName) {
        return new NodeEntity(
                null, nodeName, MemberFence.NEVER_CLOSED, CadastreMetrics.Recovery.NONE);
    }

    /**
     * @param fence closes this entity to commands while its member may have been replaced
     * @param recovery told how long the entity took from its start to {@code RecoveryCompleted}
     */
    public static Behavior<Command> create(
            String nodeName, MemberFence fence, CadastreMetrics.Recovery recovery) {
        return Behaviors.setup(ctx -> new NodeEntity(ctx.getSelf(), nodeName, fence, recovery));
    }

    // ---- commands ----

    public sealed interface Command extends CborSerializable
            permits Register,
                    MarkRemoved,
                    GetAttachment,
                    RecordAttachment,
                    ForgetAttachment,
                    NoteAffineBlock,
                    ForgetAffineBlock,
                    NoteBorrowedBlock,
                    ForgetBorrowedBlock,
                    GetBorrowedBlocks,
                    GetNode,
                    PublishPeer,
                    WritePending {}

    /**
     * Sent by the node's agent at start: records the node's labels (for pools' node selectors)
     * and clears a removal. Idempotent.
     *
     * @param labels label key → value
     */
    public record Register(Map<String, String> labels, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /** Marks the node removed by an operator (its agent has left the cluster); idempotent. */
    public record MarkRemoved(ActorRef<StatusReply<Done>> replyTo) implements Command {}

    public record GetAttachment(String handle, String ifname, ActorRef<AttachmentLookup> replyTo)
            implements Command {}

    /** Records an attachment's addresses; recording the same again is success. */
    public record RecordAttachment(AttachmentRecord attachment, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Forgets an attachment and answers what it was (so that a DEL needs no lookup first); an
     * unknown one is success with a {@code null} attachment.
     *
     * @param releaseFollows the caller then has every block of the record persist its release
     *     ({@code BlockEntity.Release} with {@code afterForget}) before anything outside learns of
     *     the forget: the event is written without a sync of its own ({@link
     *     FollowedBySyncedWrite})
     */
    public record ForgetAttachment(
            String handle,
            String ifname,
            boolean releaseFollows,
            ActorRef<StatusReply<AttachmentLookup>> replyTo)
            implements Command {}

    /** Notes that a block of a pool is affine to this node; idempotent. */
    public record NoteAffineBlock(String pool, Cidr block, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /** Forgets a block the pool no longer gives this node ({@link BlockReleases}); idempotent. */
    public record ForgetAffineBlock(Cidr block, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Notes that this node may hold addresses in a block of a pool affine to another node; sent
     * before the block is asked to assign a borrowed address. Idempotent.
     */
    public record NoteBorrowedBlock(String pool, Cidr block, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /** Stops listing a block as borrowed from (it holds no allocation of this node); an unlisted one is success. */
    public record ForgetBorrowedBlock(Cidr block, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    public record GetBorrowedBlocks(ActorRef<BorrowedBlocks> replyTo) implements Command {}

    public record GetNode(ActorRef<NodeView> replyTo) implements Command {}

    /**
     * Records what other hosts need to reach this node's pods (its agent sends it at start and
     * whenever it changes); the same again persists nothing.
     */
    public record PublishPeer(PeerInfo peer, ActorRef<StatusReply<Done>> replyTo)
            implements Command {}

    /**
     * Sent by the node to itself after the first record or forget it decided since its last write:
     * writes every one decided meanwhile in one atomic write, then answers them.
     */
    record WritePending() implements Command {}

    // ---- replies ----

    /** @param attachment the attachment, or {@code null} when unknown */
    public record AttachmentLookup(AttachmentRecord attachment) implements CborSerializable {}

    /** @param blocks block → pool name, for the blocks of other nodes this node has borrowed from */
    public record BorrowedBlocks(Map<Cidr, String> blocks) implements CborSerializable {}

    /**
     * @param attachments every known attachment
     * @param affineBlocks block → pool name, for the blocks affine to this node
     * @param borrowedBlocks block → pool name, for the blocks of other nodes this node has borrowed from
     * @param labels the labels its agent registered, sorted by key
     * @param removed whether an operator removed the node (and its agent has not started since)
     * @param peer what its agent last published for other hosts to reach its pods, or null
     */
    public record NodeView(
            List<AttachmentRecord> attachments,
            Map<Cidr, String> affineBlocks,
            Map<Cidr, String> borrowedBlocks,
            Map<String, String> labels,
            boolean removed,
            PeerInfo peer)
            implements CborSerializable {}

    // ---- events ----

    public sealed interface Event extends CborSerializable
            permits NodeRegistered,
                    NodeRemoved,
                    AttachmentRecorded,
                    AttachmentForgotten,
                    AffineBlockNoted,
                    AffineBlockForgotten,
                    BorrowedBlockNoted,
                    BorrowedBlockForgotten,
                    PeerPublished {}

    public record NodeRegistered(Map<String, String> labels) implements Event {}

    public record NodeRemoved() implements Event {}

    public record AffineBlockForgotten(Cidr block) implements Event {}

    public record AttachmentRecorded(AttachmentRecord attachment) implements Event {}

    /**
     * @param releaseFollows written by a DEL that has the blocks persist their release next: the
     *     embedded journal writes it without a sync of its own ({@link FollowedBySyncedWrite});
     *     false in events from before the field
     */
    public record AttachmentForgotten(String handle, String ifname, boolean releaseFollows)
            implements Event, FollowedBySyncedWrite {
        @Override
        public boolean followedBySyncedWrite() {
            return releaseFollows;
        }
    }

    public record AffineBlockNoted(String pool, Cidr block) implements Event {}

    public record BorrowedBlockNoted(String pool, Cidr block) implements Event {}

    public record BorrowedBlockForgotten(Cidr block) implements Event {}

    public record PeerPublished(PeerInfo peer) implements Event {}

    // ---- state ----

    /**
     * The maps are mutated only by the event handler.
     *
     * @param attachments {@link AttachmentRecord#key()} → attachment
     * @param affineBlocks block → pool name
     * @param borrowedBlocks block → pool name; {@code null} (a snapshot taken before borrowed blocks
     *     were recorded) becomes empty
     * @param labels label key → value; {@code null} (an older snapshot) becomes empty
     * @param removed whether an operator removed the node
     * @param peer what the node's agent published for other hosts; null before it did (and in
     *     snapshots from before peers existed)
     */
    public record State(
            Map<String, AttachmentRecord> attachments,
            Map<Cidr, String> affineBlocks,
            Map<Cidr, String> borrowedBlocks,
            Map<String, String> labels,
            boolean removed,
            PeerInfo peer)
            implements CborSerializable, MutableState<State> {
        public State {
            if (borrowedBlocks == null) {
                borrowedBlocks = new TreeMap<>();
            }
            if (labels == null) {
                labels = new TreeMap<>();
            }
        }

        /** The copy also turns the maps Jackson restores into the mutable ones the handler needs. */
        @Override
        public State copy() {
            return new State(
                    new LinkedHashMap<>(attachments),
                    new TreeMap<>(affineBlocks),
                    new TreeMap<>(borrowedBlocks),
                    new TreeMap<>(labels),
                    removed,
                    peer);
        }

        State withRegistration(Map<String, String> newLabels, boolean isRemoved) {
            return new State(
                    attachments,
                    affineBlocks,
                    borrowedBlocks,
                    new TreeMap<>(newLabels),
                    isRemoved,
                    peer);
        }

        State withPeer(PeerInfo newPeer) {
            return new State(attachments, affineBlocks, borrowedBlocks, labels, removed, newPeer);
        }
    }

    private final String nodeName;

    /** The records and forgets decided since the last write, by attachment key. */
    private final PendingWrites<Event> pending = new PendingWrites<>();

    private final ActorRef<Command> self;

    private NodeEntity(
            ActorRef<Command> self,
            String nodeName,
            MemberFence fence,
            CadastreMetrics.Recovery recovery) {
        super(ENTITY_TYPE_KEY, nodeName, fence, recovery);
        this.nodeName = nodeName;
        this.self = self;
    }

    /**
     * Logs where and when a node's entity came back: the chaos harness reads this line from each
     * member's log to time failover (kill → the entity recovered on a survivor).
     */
    @Override
    void recovered(State state) {
        LOG.info(
                "recovered node entity {}: {} attachments, {} affine blocks, {} borrowed blocks",
                nodeName,
                state.attachments().size(),
                state.affineBlocks().size(),
                state.borrowedBlocks().size());
    }

    @Override
    public State emptyState() {
        return new State(
                new LinkedHashMap<>(),
                new TreeMap<>(),
                new TreeMap<>(),
                new TreeMap<>(),
                false,
                null);
    }

    /** @return the attachment of the handle and ifname, or a lookup of {@code null} when unknown */
    private static AttachmentLookup lookup(State state, String handle, String ifname) {
        return new AttachmentLookup(state.attachments().get(AttachmentRecord.key(handle, ifname)));
    }

    @Override
    CommandHandlerWithReply<Command, Event, State> handlers() {
        return newCommandHandlerWithReplyBuilder()
                .forAnyState()
                .onCommand(
                        Register.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                !state.removed()
                                                        && state.labels().equals(cmd.labels()),
                                                cmd.replyTo(),
                                                () ->
                                                        new NodeRegistered(
                                                                new TreeMap<>(cmd.labels())))))
                .onCommand(
                        MarkRemoved.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                state.removed(),
                                                cmd.replyTo(),
                                                () -> new NodeRemoved())))
                .onCommand(
                        ForgetAffineBlock.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                !state.affineBlocks().containsKey(cmd.block()),
                                                cmd.replyTo(),
                                                () -> new AffineBlockForgotten(cmd.block()))))
                .onCommand(
                        GetAttachment.class,
                        (state, cmd) ->
                                pending.touches(AttachmentRecord.key(cmd.handle(), cmd.ifname()))
                                        ? Effect().stash()
                                        : Effect()
                                                .reply(
                                                        cmd.replyTo(),
                                                        lookup(state, cmd.handle(), cmd.ifname())))
                .onCommand(RecordAttachment.class, this::onRecordAttachment)
                .onCommand(ForgetAttachment.class, this::onForgetAttachment)
                .onCommand(
                        NoteAffineBlock.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                cmd.pool()
                                                        .equals(
                                                                state.affineBlocks()
                                                                        .get(cmd.block())),
                                                cmd.replyTo(),
                                                () ->
                                                        new AffineBlockNoted(
                                                                cmd.pool(), cmd.block()))))
                .onCommand(
                        NoteBorrowedBlock.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                cmd.pool()
                                                        .equals(
                                                                state.borrowedBlocks()
                                                                        .get(cmd.block())),
                                                cmd.replyTo(),
                                                () ->
                                                        new BorrowedBlockNoted(
                                                                cmd.pool(), cmd.block()))))
                .onCommand(
                        ForgetBorrowedBlock.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                !state.borrowedBlocks().containsKey(cmd.block()),
                                                cmd.replyTo(),
                                                () -> new BorrowedBlockForgotten(cmd.block()))))
                .onCommand(
                        GetBorrowedBlocks.class,
                        (state, cmd) ->
                                Effect()
                                        .reply(
                                                cmd.replyTo(),
                                                new BorrowedBlocks(
                                                        new TreeMap<>(state.borrowedBlocks()))))
                .onCommand(
                        GetNode.class,
                        (state, cmd) ->
                                Effect()
                                        .reply(
                                                cmd.replyTo(),
                                                new NodeView(
                                                        List.copyOf(state.attachments().values()),
                                                        new TreeMap<>(state.affineBlocks()),
                                                        new TreeMap<>(state.borrowedBlocks()),
                                                        new TreeMap<>(state.labels()),
                                                        state.removed(),
                                                        state.peer())))
                .onCommand(
                        PublishPeer.class,
                        afterPending(
                                (state, cmd) ->
                                        ackOrPersist(
                                                cmd.peer().equals(state.peer()),
                                                cmd.replyTo(),
                                                () -> new PeerPublished(cmd.peer()))))
                .onCommand(WritePending.class, (state, cmd) -> writePending(pending))
                .build();
    }

    /**
     * A command other than an attachment's record or forget waits while any is pending (they are
     * rare: registration, blocks noted and forgotten, the peer).
     */
    private <C extends Command> BiFunction<State, C, ReplyEffect<Event, State>> afterPending(
            BiFunction<State, C, ReplyEffect<Event, State>> handler) {
        return (state, cmd) -> pending.isEmpty() ? handler.apply(state, cmd) : Effect().stash();
    }

    /**
     * Records the attachment with the others that meet here before the node's next write ({@link
     * PendingWrites}); the same record again is success at once.
     */
    private ReplyEffect<Event, State> onRecordAttachment(State state, RecordAttachment cmd) {
        String key = cmd.attachment().key();
        if (pending.touches(key)) {
            return Effect().stash();
        }
        if (cmd.attachment().equals(state.attachments().get(key))) {
            return ack(cmd.replyTo());
        }
        return pend(
                new AttachmentRecorded(cmd.attachment()),
                key,
                () -> cmd.replyTo().tell(StatusReply.ack()));
    }

    /** Forgets the attachment with the others that meet here before the node's next write. */
    private ReplyEffect<Event, State> onForgetAttachment(State state, ForgetAttachment cmd) {
        String key = AttachmentRecord.key(cmd.handle(), cmd.ifname());
        if (pending.touches(key)) {
            return Effect().stash();
        }
        AttachmentLookup known = lookup(state, cmd.handle(), cmd.ifname());
        if (known.attachment() == null) {
            return Effect().reply(cmd.replyTo(), StatusReply.success(known));
        }
        return pend(
                new AttachmentForgotten(cmd.handle(), cmd.ifname(), cmd.releaseFollows()),
                key,
                () -> cmd.replyTo().tell(StatusReply.success(known)));
    }

    private ReplyEffect<Event, State> pend(Event event, String key, Runnable reply) {
        if (pending.add(event, key, reply)) {
            self.tell(new WritePending());
        }
        return Effect().noReply();
    }

    @Override
    public EventHandler<State, Event> eventHandler() {
        return newEventHandlerBuilder()
                .forAnyState()
                .onEvent(
                        NodeRegistered.class,
                        (state, e) -> state.withRegistration(e.labels(), false))
                .onEvent(
                        NodeRemoved.class,
                        (state, e) -> state.withRegistration(state.labels(), true))
                .onEvent(
                        AffineBlockForgotten.class,
                        inPlace((state, e) -> state.affineBlocks().remove(e.block())))
                .onEvent(
                        AttachmentRecorded.class,
                        inPlace(
                                (state, e) ->
                                        state.attachments()
                                                .put(e.attachment().key(), e.attachment())))
                .onEvent(
                        AttachmentForgotten.class,
                        inPlace(
                                (state, e) ->
                                        state.attachments()
                                                .remove(
                                                        AttachmentRecord.key(
                                                                e.handle(), e.ifname()))))
                .onEvent(
                        AffineBlockNoted.class,
                        inPlace((state, e) -> state.affineBlocks().put(e.block(), e.pool())))
                .onEvent(
                        BorrowedBlockNoted.class,
                        inPlace((state, e) -> state.borrowedBlocks().put(e.block(), e.pool())))
                .onEvent(PeerPublished.class, (state, e) -> state.withPeer(e.peer()))
                .onEvent(
                        BorrowedBlockForgotten.class,
                        inPlace((state, e) -> state.borrowedBlocks().remove(e.block())))
                .build();
    }
}
