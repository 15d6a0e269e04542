package io.cadastre.shards;

import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.PoolRegistry.Catalog;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Which pools an ADD on a node allocates from, given the cluster's catalogue: the named ones in
 * their order, or — none named — every enabled pool whose node selector matches the node's
 * labels, by name. A disabled pool, or one whose selector does not match the node, serves
 * nothing new to it, even when named (Calico's rule for a pool's node selector).
 */
final class PoolChoice {
    private PoolChoice() {}

    /**
     * @param names the pools named by the request (or the agent's defaults), in order; empty to select by labels
     * @return the pools grouped by family, order kept
     * @throws IpamException UNKNOWN_POOL for a name the catalogue does not hold or when no pool
     *     selects the node; POOL_EXHAUSTED when every named pool of a family is disabled or does
     *     not select the node
     */
    static Map<IpFamily, List<PoolSpec>> choose(Catalog pools, String node, Map<String, String> labels, List<String> names) {
        return names.isEmpty() ? selecting(pools, node, labels) : named(pools, node, labels, names);
    }

    private static Map<IpFamily, List<PoolSpec>> selecting(Catalog pools, String node, Map<String, String> labels) {
        Map<IpFamily, List<PoolSpec>> byFamily = new EnumMap<>(IpFamily.class);
        pools.pools().values().stream().filter(p -> !pools.isDisabled(p.name()) && p.selects(labels))
                .forEach(p -> byFamily.computeIfAbsent(p.family(), f -> new ArrayList<>()).add(p));
        if (byFamily.isEmpty()) {
            throw new IpamException(IpamException.Reason.UNKNOWN_POOL, "no enabled pool selects node " + node
                    + " (labels " + new TreeMap<>(labels) + "; pools: " + String.join(", ", pools.pools().keySet()) + ")");
        }
        return byFamily;
    }

    private static Map<IpFamily, List<PoolSpec>> named(Catalog pools, String node, Map<String, String> labels, List<String> names) {
        Map<IpFamily, List<PoolSpec>> byFamily = new EnumMap<>(IpFamily.class);
        Map<IpFamily, List<String>> refused = new EnumMap<>(IpFamily.class);
        for (String name : names) {
            PoolSpec spec = pools.spec(name).orElseThrow(() -> new IpamException(IpamException.Reason.UNKNOWN_POOL,
                    "unknown pool " + name + " (known: " + String.join(", ", pools.pools().keySet()) + ")"));
            Optional<String> refusal = refusal(pools, spec, node, labels);
            if (refusal.isPresent()) {
                refused.computeIfAbsent(spec.family(), f -> new ArrayList<>()).add(refusal.get());
            } else {
                byFamily.computeIfAbsent(spec.family(), f -> new ArrayList<>()).add(spec);
            }
        }
        refused.forEach((family, reasons) -> {
            if (!byFamily.containsKey(family)) {
                throw new IpamException(IpamException.Reason.POOL_EXHAUSTED, "no " + family + " pool may serve node "
                        + node + ": " + String.join("; ", reasons));
            }
        });
        return byFamily;
    }

    /** @return why the pool serves nothing new to this node: disabled, or its selector does not match */
    static Optional<String> refusal(Catalog pools, PoolSpec spec, String node, Map<String, String> labels) {
        if (pools.isDisabled(spec.name())) {
            return Optional.of("pool " + spec.name() + " is disabled");
        }
        if (!spec.selects(labels)) {
            return Optional.of("pool " + spec.name() + " selects nodes '" + spec.nodeSelector() + "', not node " + node
                    + " (labels " + new TreeMap<>(labels) + ")");
        }
        return Optional.empty();
    }
}
