package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.AddressRange;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.RangeSet;
import io.cadastre.shards.PoolEntity.ClaimOutcome;
import io.cadastre.shards.PoolEntity.ClaimStatus;
import java.util.List;
import java.util.Set;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A claim of a new block sent again, as a retried ask sends it after its member crashed with the
 * reply: the pool answers the block the first attempt claimed, whatever happened to the pool's
 * quota meanwhile, and claims no second one. The test kit serializes every command, event and
 * state (Pekko's CBOR with the real configuration), so the claim's {@code known} crosses members.
 */
class PoolEntityTest {
    @RegisterExtension static final EntityKits entities = new EntityKits();

    private static final Cidr FIRST = Cidr.parse("198.18.200.0/26");
    private static final Cidr SECOND = Cidr.parse("198.18.200.64/26");
    private static final Cidr THIRD = Cidr.parse("198.18.200.128/26");

    private static EventSourcedBehaviorTestKit<
                    PoolEntity.Command, PoolEntity.Event, PoolEntity.State>
            pool(int maxBlocksPerNode) {
        EventSourcedBehaviorTestKit<PoolEntity.Command, PoolEntity.Event, PoolEntity.State> kit =
                entities.kit(PoolEntity.create("retried"));
        PoolSpec spec =
                new PoolSpec(
                        "retried",
                        Cidr.parse("198.18.200.0/24"),
                        26,
                        false,
                        true,
                        maxBlocksPerNode,
                        "",
                        List.of());
        StatusReply<Done> defined =
                kit.<StatusReply<Done>>runCommand(r -> new PoolEntity.DefinePool(spec, r)).reply();
        assertTrue(defined.isSuccess(), defined::toString);
        return kit;
    }

    private static CommandResultWithReply<
                    PoolEntity.Command,
                    PoolEntity.Event,
                    PoolEntity.State,
                    StatusReply<ClaimOutcome>>
            claim(
                    EventSourcedBehaviorTestKit<
                                    PoolEntity.Command, PoolEntity.Event, PoolEntity.State>
                            kit,
                    RangeSet within,
                    Set<Cidr> known) {
        return kit.runCommand(
                (ActorRef<StatusReply<ClaimOutcome>> r) ->
                        new PoolEntity.ClaimBlock("node-a", within, known, r));
    }

    private static Cidr claimed(
            CommandResultWithReply<
                            PoolEntity.Command,
                            PoolEntity.Event,
                            PoolEntity.State,
                            StatusReply<ClaimOutcome>>
                    result) {
        assertTrue(result.reply().isSuccess(), result.reply()::toString);
        ClaimOutcome outcome = result.reply().getValue();
        assertEquals(ClaimStatus.CLAIMED, outcome.status(), outcome::toString);
        return outcome.block();
    }

    @Test
    void aClaimSentAgainGetsTheBlockItsFirstAttemptClaimedEvenAtTheQuota() {
        var kit = pool(1);
        var first = claim(kit, null, Set.of());
        assertEquals(FIRST, claimed(first));
        assertEquals(1, first.events().size());

        var again = claim(kit, null, Set.of());
        assertEquals(FIRST, claimed(again), "the first attempt's block");
        assertTrue(again.events().isEmpty(), "nothing claimed anew: " + again.events());

        var next = claim(kit, null, Set.of(FIRST));
        assertEquals(ClaimStatus.LIMIT_REACHED, next.reply().getValue().status());
        assertTrue(next.events().isEmpty());
    }

    @Test
    void aBlockTheRequesterKnowsOrThatIsBeingReleasedIsNotAnsweredAgain() {
        var kit = pool(0);
        assertEquals(FIRST, claimed(claim(kit, null, Set.of())));
        assertEquals(SECOND, claimed(claim(kit, null, Set.of(FIRST))));
        StatusReply<Done> releasing =
                kit.<StatusReply<Done>>runCommand(
                                r -> new PoolEntity.BeginBlockRelease(SECOND, "node-a", r))
                        .reply();
        assertTrue(releasing.isSuccess(), releasing::toString);

        var third = claim(kit, null, Set.of(FIRST));
        assertEquals(THIRD, claimed(third), "the block being released is not the node's to use");
        assertEquals(1, third.events().size());
    }

    @Test
    void aBlockOutsideTheClaimsRangesIsNotAnsweredForIt() {
        var kit = pool(0);
        assertEquals(FIRST, claimed(claim(kit, null, Set.of())));
        RangeSet upperHalf = RangeSet.of(AddressRange.of(Cidr.parse("198.18.200.128/25")));

        var inRange = claim(kit, upperHalf, Set.of());
        assertEquals(THIRD, claimed(inRange), "the lowest unclaimed block of the range");
        assertEquals(1, inRange.events().size());
        assertEquals(THIRD, claimed(claim(kit, upperHalf, Set.of(FIRST))), "sent again");
    }

    @Test
    void aClaimWithoutKnownBlocksClaimsAnewEachTime() {
        var kit = pool(0);
        for (Cidr expected : List.of(FIRST, SECOND)) {
            StatusReply<ClaimOutcome> reply =
                    kit.<StatusReply<ClaimOutcome>>runCommand(
                                    r -> new PoolEntity.ClaimBlock("node-a", null, r))
                            .reply();
            assertEquals(expected, reply.getValue().block());
        }
    }
}
