package io.cadastre.routing;

import io.cadastre.dataplane.HostRouting.Installed;
import io.cadastre.dataplane.HostRouting.Route;
import io.cadastre.dataplane.IpPrefix;
import io.cadastre.ipam.Cidr;
import io.cadastre.routing.MeshPlan.PlannedRoute;
import io.cadastre.routing.MeshState.Claim;
import io.cadastre.shards.PeerInfo;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The consistency check's view of one host's routes: for every claimed block, whether the kernel
 * holds the route the claim calls for (a blackhole for this node's own blocks, a route to the
 * affine node for the others'), compared with the table as it is. Pure; the router feeds it.
 */
public final class RouteAudit {
    private RouteAudit() {}

    /** What is wrong with one block's route. */
    public enum Problem {
        /** No route to the block. */
        MISSING,
        /** The route leads to another node than the block's. */
        WRONG_NODE,
        /** The route leads to the right node another way (another gateway or device). */
        DIFFERS,
        /** Another protocol's route holds the destination; Cadastre leaves it alone. */
        CONFLICT,
        /** The block cannot be routed from here (its node published no peer, no underlay, ...). */
        UNROUTABLE;

        public String spelling() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /**
     * @param block the block
     * @param pool its pool
     * @param affinity the node the pool gave it to
     * @param expected the route the claim calls for, or why there is none
     * @param actual the route the kernel holds, or null
     * @param actualNode the node the actual route leads to, or null when unknown
     */
    public record Finding(
            Cidr block,
            String pool,
            String affinity,
            Problem problem,
            String expected,
            String actual,
            String actualNode) {}

    /**
     * @param plan the host's plan computed from the same claims
     * @param claims block → claim, the truth the check read
     * @param removed nodes an operator removed: their blocks need no route
     * @param peers node → its peer, to name the node an actual gateway belongs to
     * @param installed the main table as it is
     * @return one finding per block whose route is not as the claim calls for, in block order
     */
    public static List<Finding> findings(
            String self,
            MeshPlan plan,
            Map<Cidr, Claim> claims,
            Set<String> removed,
            Map<String, PeerInfo> peers,
            List<Installed> installed) {
        Map<IpPrefix, PlannedRoute> wanted = new HashMap<>();
        plan.routes().forEach(r -> wanted.put(r.route().destination(), r));
        Map<IpPrefix, Installed> ours = new HashMap<>();
        Map<IpPrefix, Installed> foreign = new HashMap<>();
        for (Installed i : installed) {
            (i.ours() ? ours : foreign).putIfAbsent(i.destination(), i);
        }
        Map<InetAddress, String> owners = new HashMap<>();
        peers.forEach(
                (node, p) -> {
                    for (MeshPlan.Family f : MeshPlan.Family.values()) {
                        var a = MeshPlan.address(p, f);
                        if (a != null) {
                            owners.put(a.address(), node);
                        }
                        InetAddress t = MeshPlan.tunnel(p, f);
                        if (t != null) {
                            owners.put(t, node);
                        }
                    }
                });
        List<Finding> out = new ArrayList<>();
        claims.entrySet().stream()
                .sorted(Map.Entry.comparingByKey())
                .forEach(
                        e -> {
                            Claim claim = e.getValue();
                            if (removed.contains(claim.node())) {
                                return;
                            }
                            IpPrefix block = IpPrefix.parse(e.getKey().toString());
                            PlannedRoute want = wanted.get(block);
                            Installed foreignRoute = foreign.get(block);
                            Installed have = ours.get(block);
                            if (foreignRoute != null) {
                                out.add(
                                        new Finding(
                                                e.getKey(),
                                                claim.pool(),
                                                claim.node(),
                                                Problem.CONFLICT,
                                                want == null
                                                        ? "a route to " + claim.node()
                                                        : want.route().toString(),
                                                foreignRoute.text(),
                                                null));
                                return;
                            }
                            if (want == null) {
                                String why =
                                        plan.problems().stream()
                                                .filter(p -> p.contains(block.toString()))
                                                .findFirst()
                                                .orElse("no route is computed for it");
                                out.add(
                                        new Finding(
                                                e.getKey(),
                                                claim.pool(),
                                                claim.node(),
                                                Problem.UNROUTABLE,
                                                why,
                                                have == null ? null : have.text(),
                                                have == null ? null : nodeOf(self, have, owners)));
                                return;
                            }
                            if (have == null) {
                                out.add(
                                        new Finding(
                                                e.getKey(),
                                                claim.pool(),
                                                claim.node(),
                                                Problem.MISSING,
                                                want.route().toString(),
                                                null,
                                                null));
                                return;
                            }
                            if (!matches(want.route(), have)) {
                                String node = nodeOf(self, have, owners);
                                out.add(
                                        new Finding(
                                                e.getKey(),
                                                claim.pool(),
                                                claim.node(),
                                                Objects.equals(node, claim.node())
                                                        ? Problem.DIFFERS
                                                        : Problem.WRONG_NODE,
                                                want.route().toString(),
                                                have.text(),
                                                node));
                            }
                        });
        return out;
    }

    private static boolean matches(Route want, Installed have) {
        if (want.blackhole() || have.blackhole()) {
            return want.blackhole() && have.blackhole();
        }
        return Objects.equals(want.gateway(), have.gateway())
                && Objects.equals(want.device(), have.device());
    }

    /** @return the node a route leads to: this node for a blackhole, else the owner of its gateway */
    private static String nodeOf(String self, Installed route, Map<InetAddress, String> owners) {
        if (route.blackhole()) {
            return self;
        }
        return route.gateway() == null ? null : owners.get(route.gateway());
    }
}
