package io.cadastre.agent;

import io.cadastre.admin.AdminViews;
import io.cadastre.admin.HostRoutes;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.ipam.Cidr;
import io.cadastre.routing.MeshPlan;
import io.cadastre.routing.MeshRouter;
import io.cadastre.routing.MeshState;
import io.cadastre.routing.RouteAudit;
import io.cadastre.shards.BlockReleases.Claim;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/** The admin API's view of this agent's {@link MeshRouter}: asks it and shapes its answers as the contract says. */
final class MeshRoutes implements HostRoutes {
    private final ActorRef<MeshRouter.Command> router;
    private final ActorSystem<?> system;
    private final String node;
    private final Duration timeout;

    /** @param timeout how long a view or an audit (which refreshes once) may take */
    MeshRoutes(
            ActorRef<MeshRouter.Command> router,
            ActorSystem<?> system,
            String node,
            Duration timeout) {
        this.router = router;
        this.system = system;
        this.node = node;
        this.timeout = timeout;
    }

    @Override
    public String node() {
        return node;
    }

    @Override
    public CompletionStage<Optional<AdminViews.Routing>> routing(String name) {
        return AskPattern.<MeshRouter.Command, Optional<MeshRouter.Description>>ask(
                        router, r -> new MeshRouter.Describe(name, r), timeout, system.scheduler())
                .thenApply(d -> d.map(MeshRoutes::view));
    }

    @Override
    public CompletionStage<Optional<List<AdminViews.RouteFinding>>> audit(
            Map<Cidr, Claim> claims, Set<String> removed) {
        Map<Cidr, MeshState.Claim> mesh = new HashMap<>();
        claims.forEach(
                (block, claim) -> mesh.put(block, new MeshState.Claim(claim.pool(), claim.node())));
        return AskPattern.<MeshRouter.Command, Optional<List<RouteAudit.Finding>>>ask(
                        router,
                        r -> new MeshRouter.Audit(mesh, Set.copyOf(removed), r),
                        timeout,
                        system.scheduler())
                .thenApply(
                        found ->
                                found.map(
                                        list ->
                                                list.stream()
                                                        .map(
                                                                f ->
                                                                        new AdminViews.RouteFinding(
                                                                                f.block() == null
                                                                                        ? null
                                                                                        : f.block()
                                                                                                .toString(),
                                                                                f.pool(),
                                                                                f.affinity(),
                                                                                f.problem()
                                                                                        .spelling(),
                                                                                f.expected(),
                                                                                f.actual(),
                                                                                f.actualNode()))
                                                        .toList()));
    }

    static AdminViews.Routing view(MeshRouter.Description d) {
        MeshPlan plan = d.plan();
        List<AdminViews.RoutingPeer> peers =
                plan.peers().stream()
                        .map(
                                p ->
                                        new AdminViews.RoutingPeer(
                                                p.node(),
                                                p.ipv4() == null ? null : p.ipv4().toString(),
                                                p.ipv6() == null ? null : p.ipv6().toString(),
                                                joined(p.peer().ipv4(), p.peer().ipv6()),
                                                joined(
                                                        p.peer().tunnelIpv4(),
                                                        p.peer().tunnelIpv6()),
                                                p.peer().vtepMac()))
                        .toList();
        List<AdminViews.RouteView> routes =
                plan.routes().stream()
                        .map(
                                r ->
                                        new AdminViews.RouteView(
                                                r.route().destination().toString(),
                                                r.type().spelling(),
                                                r.node(),
                                                r.route().toString()))
                        .toList();
        AdminViews.Reconcile last = null;
        MeshRouter.Status s = d.status();
        if (s != null && s.lastReconcile() != null) {
            HostRouting.Result r = s.lastResult();
            last =
                    new AdminViews.Reconcile(
                            s.lastReconcile().toEpochMilli(),
                            r == null ? null : r.summary(),
                            r == null
                                    ? List.of()
                                    : r.errors().stream().map(Object::toString).toList(),
                            r == null
                                    ? List.of()
                                    : r.conflicts().stream().map(Object::toString).toList(),
                            s.lastFailure());
        }
        return new AdminViews.Routing(
                d.mode(),
                d.computedOn(),
                d.programmed(),
                peers,
                routes,
                plan.problems(),
                plan.desired().outgoingNat().toString(),
                last);
    }

    private static String joined(String a, String b) {
        List<String> parts = new ArrayList<>(Stream.of(a, b).filter(Objects::nonNull).toList());
        return parts.isEmpty() ? null : String.join(", ", parts);
    }
}
