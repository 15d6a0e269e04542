package io.cadastre.admin;

import io.cadastre.ipam.Cidr;
import io.cadastre.shards.BlockReleases.Claim;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The answering agent's routing layer, as the admin API shows it: a node's peers, the way to each
 * and its routes ({@code GET /v1/nodes/{name}}), and the consistency check's look at this host's
 * routes ({@code GET /v1/check}). The agent wires its mesh router here; the admin API's tests and
 * an agent that routes nothing (mode none) use {@link #NONE}.
 */
public interface HostRoutes {
    /** Routes nothing: no routing views, no route findings. */
    HostRoutes NONE =
            new HostRoutes() {
                @Override
                public String node() {
                    return null;
                }

                @Override
                public CompletionStage<Optional<AdminViews.Routing>> routing(String node) {
                    return CompletableFuture.completedFuture(Optional.empty());
                }

                @Override
                public CompletionStage<Optional<List<AdminViews.RouteFinding>>> audit(
                        Map<Cidr, Claim> claims, Set<String> removed) {
                    return CompletableFuture.completedFuture(Optional.empty());
                }
            };

    /** @return the node whose host these are (the answering agent's), or null for {@link #NONE} */
    String node();

    /**
     * @return how {@code node} reaches the others as computed on this agent (for this agent's own
     *     node: what it programs), or empty when this agent routes nothing or the node published no peer
     */
    CompletionStage<Optional<AdminViews.Routing>> routing(String node);

    /**
     * @param claims every claimed block as the check read it
     * @param removed the nodes an operator removed (their blocks need no route)
     * @return the blocks whose route on this host is missing, leads to the wrong node, differs or
     *     conflicts with another protocol's, after one refresh; empty when this agent routes nothing
     */
    CompletionStage<Optional<List<AdminViews.RouteFinding>>> audit(
            Map<Cidr, Claim> claims, Set<String> removed);
}
