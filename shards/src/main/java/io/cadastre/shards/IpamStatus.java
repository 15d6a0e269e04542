package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.Pool;
import io.cadastre.ipam.PoolSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;

/**
 * The node's standing with the entities for one {@link ShardedIpam}: its registration and labels
 * on its {@link NodeEntity}, and, for the CNI STATUS verb (CNI spec 1.1 §STATUS), whether an ADD
 * could get an address of every family now. It reads the pools an ADD would choose
 * ({@link IpamAssignment#choosePools}) and the pools' and blocks' entities; it allocates nothing,
 * so of the root DESIGN.md's invariants it only relies on the entities' (2: the registration is
 * persisted before the reply).
 *
 * <p>All methods return stages that fail with {@link IpamException}.
 */
final class IpamStatus extends IpamFlow {
    private final IpamAssignment assignment;

    IpamStatus(IpamContext context, IpamAssignment assignment) {
        super(context);
        this.assignment = assignment;
    }

    /** {@link Ipam#registerNode}. */
    CompletionStage<Done> registerNode() {
        Map<String, String> now = context.labels();
        return asks.askStatus(
                asks.node(node),
                (ActorRef<StatusReply<Done>> r) -> new NodeEntity.Register(now, r));
    }

    /** {@link Ipam#updateLabels}. */
    CompletionStage<Done> updateLabels(Map<String, String> newLabels) {
        Map<String, String> copy = Map.copyOf(newLabels);
        if (copy.equals(context.labels())) {
            return CompletableFuture.completedFuture(Done.getInstance());
        }
        context.setLabels(copy);
        return registerNode();
    }

    /** {@link Ipam#unavailability}. */
    CompletionStage<Optional<String>> unavailability(List<String> poolNames) {
        return assignment
                .choosePools(poolNames)
                .handle(
                        (byFamily, error) -> {
                            if (error != null) {
                                IpamException e = EntityAsks.asIpam(error);
                                if (e.reason() == IpamException.Reason.UNAVAILABLE) {
                                    throw e;
                                }
                                return CompletableFuture.completedFuture(
                                        Optional.of(e.getMessage()));
                            }
                            return unavailability(byFamily);
                        })
                .thenCompose(stage -> stage);
    }

    private CompletionStage<Optional<String>> unavailability(
            Map<IpFamily, List<PoolSpec>> byFamily) {
        List<CompletableFuture<Optional<String>>> checks = new ArrayList<>();
        byFamily.forEach(
                (family, pools) -> {
                    CompletionStage<Boolean> any = CompletableFuture.completedFuture(false);
                    for (PoolSpec p : pools) {
                        any =
                                any.thenCompose(
                                        ok ->
                                                ok
                                                        ? CompletableFuture.completedFuture(true)
                                                        : poolCanServe(p));
                    }
                    checks.add(
                            any.thenApply(
                                            ok ->
                                                    ok
                                                            ? Optional.<String>empty()
                                                            : Optional.of(
                                                                    "no "
                                                                            + family
                                                                            + " pool can serve node "
                                                                            + node))
                                    .toCompletableFuture());
                });
        return CompletableFuture.allOf(checks.toArray(CompletableFuture[]::new))
                .thenApply(
                        v ->
                                checks.stream()
                                        .map(CompletableFuture::join)
                                        .flatMap(Optional::stream)
                                        .findFirst());
    }

    private CompletionStage<Boolean> poolCanServe(PoolSpec spec) {
        return asks.poolView(spec.name())
                .thenCompose(
                        view -> {
                            if (!view.defined()) {
                                return CompletableFuture.completedFuture(false);
                            }
                            Pool pool = Pool.of(view.spec());
                            view.claims().forEach(pool::claim);
                            if (!view.disabled()
                                    && pool.firstUnclaimedBlock().isPresent()
                                    && pool.refusalToClaim(node).isEmpty()) {
                                return CompletableFuture.completedFuture(true);
                            }
                            List<Cidr> candidates =
                                    spec.borrowingAllowed()
                                            ? List.copyOf(view.claims().keySet())
                                            : view.usableBlocksOf(node);
                            return asks.blockViews(candidates)
                                    .thenApply(views -> views.stream().anyMatch(b -> b.free() > 0));
                        });
    }
}
