package io.cadastre.bench.network;

import io.cadastre.dataplane.HostNetwork.InterfaceAddress;
import io.cadastre.dataplane.HostNetwork.Underlay;
import io.cadastre.dataplane.HostRouting;
import io.cadastre.dataplane.IpPrefix;
import io.cadastre.dataplane.NetlinkHostRouting;
import io.cadastre.ipam.Cidr;
import io.cadastre.routing.MeshPlan;
import io.cadastre.routing.MeshState;
import io.cadastre.routing.RoutingMode;
import io.cadastre.routing.RoutingSettings;
import io.cadastre.routing.Vtep;
import io.cadastre.shards.PeerInfo;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One host's routing state for a cluster of N nodes, as {@link MeshPlan} computes it, reconciled
 * for real by {@link NetlinkHostRouting} in the namespace this JVM runs in (the scenario starts it
 * with {@code ip netns exec} in a scratch namespace whose {@code eth0} is 198.19.4.11/24 and
 * fd00:19:4::11/64): every other node behind a router, so VXLAN to all, with B blocks per family
 * each. Prints one line per N: {@code nodes routes fdb neighbours addMillis idleMillis}, where
 * the first reconcile programs everything and the second finds nothing to do (the periodic
 * resync's cost). Then it removes it all again (an empty desired state).
 *
 * <p>Usage: {@code RoutingScaleProbe BLOCKS_PER_FAMILY N...}
 */
public final class RoutingScaleProbe {
    private RoutingScaleProbe() {}

    public static void main(String[] args) throws Exception {
        int blocks = Integer.parseInt(args[0]);
        Underlay underlay =
                new Underlay(
                        "eth0",
                        1500,
                        new InterfaceAddress(IpPrefix.literal("198.19.4.11"), 24),
                        new InterfaceAddress(IpPrefix.literal("fd00:19:4::11"), 64));
        RoutingSettings settings =
                new RoutingSettings(
                        RoutingMode.CROSS_SUBNET,
                        "eth0",
                        RoutingSettings.DEFAULT_VNI,
                        RoutingSettings.DEFAULT_PORT,
                        Duration.ofSeconds(30),
                        Duration.ZERO,
                        RoutingSettings.NatOutgoing.OFF);
        HostRouting routing = new NetlinkHostRouting();
        for (int a = 1; a < args.length; a++) {
            int nodes = Integer.parseInt(args[a]);
            MeshState state = state(nodes, blocks);
            MeshPlan plan =
                    MeshPlan.compute(
                            new MeshPlan.Self(
                                    "n0",
                                    settings,
                                    underlay,
                                    IpPrefix.literal("198.18.0.1"),
                                    IpPrefix.literal("fd00:198::1")),
                            state);
            long fdb = plan.desired().devices().stream().mapToLong(d -> d.fdb().size()).sum();
            long neighbours =
                    plan.desired().devices().stream().mapToLong(d -> d.neighbours().size()).sum();
            HostRouting.Result added = routing.reconcile(plan.desired());
            HostRouting.Result idle = routing.reconcile(plan.desired());
            if (!added.errors().isEmpty() || idle.changes() != 0) {
                throw new IllegalStateException(
                        nodes + " nodes: " + added.errors() + " / " + idle.summary());
            }
            System.out.printf(
                    Locale.ROOT,
                    "%d %d %d %d %.1f %.1f%n",
                    nodes,
                    plan.routes().size(),
                    fdb,
                    neighbours,
                    added.elapsed().toNanos() / 1e6,
                    idle.elapsed().toNanos() / 1e6);
            routing.reconcile(HostRouting.Desired.empty());
        }
    }

    /**
     * Node i ({@code n<i>}, n0 being this host) holds {@code blocks} consecutive /26 and /122
     * blocks of 198.18.0.0/15 and fd00:198::/48, its tunnel addresses the first block's second
     * addresses, its underlay on another subnet than this host's (198.19.100.0/24 and up).
     */
    static MeshState state(int nodes, int blocks) {
        Map<Cidr, MeshState.Claim> claims = new HashMap<>();
        Map<String, MeshState.NodeFacts> facts = new HashMap<>();
        Cidr pool4 = Cidr.parse("198.18.0.0/15");
        Cidr pool6 = Cidr.parse("fd00:198::/48");
        for (int i = 0; i < nodes; i++) {
            String node = "n" + i;
            Cidr first4 = null;
            Cidr first6 = null;
            for (int b = 0; b < blocks; b++) {
                Cidr v4 = pool4.subnet(26, java.math.BigInteger.valueOf((long) i * blocks + b));
                Cidr v6 = pool6.subnet(122, java.math.BigInteger.valueOf((long) i * blocks + b));
                claims.put(v4, new MeshState.Claim("v4", node));
                claims.put(v6, new MeshState.Claim("v6", node));
                first4 = first4 == null ? v4 : first4;
                first6 = first6 == null ? v6 : first6;
            }
            if (i > 0) {
                PeerInfo peer =
                        new PeerInfo(
                                node,
                                "cross-subnet",
                                "eth0",
                                "198.19." + (100 + i / 250) + "." + (1 + i % 250) + "/24",
                                "fd00:19:"
                                        + Integer.toHexString(100 + i / 250)
                                        + "::"
                                        + Integer.toHexString(1 + i % 250)
                                        + "/64",
                                Vtep.mac(node),
                                first4.addressAt(1),
                                first6.addressAt(1),
                                1500);
                facts.put(node, new MeshState.NodeFacts(peer, false, List.of()));
            }
        }
        return new MeshState(claims, facts);
    }
}
