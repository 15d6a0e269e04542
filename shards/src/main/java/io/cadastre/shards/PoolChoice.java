package io.cadastre.shards;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.PoolRegistry.Catalog;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Which pools an ADD on a node allocates from, given the cluster's catalogue: the named ones in
 * their order, or — none named — every enabled pool whose node selector matches the node's
 * labels, by name. A disabled pool, or one whose selector does not match the node, serves
 * nothing new to it, even when named (Calico's rule for a pool's node selector).
 *
 * <p>A pod's or namespace's annotation may choose the pools of a family
 * ({@link AssignRequest#poolsByFamily}): those replace, for that family, the pools chosen as above;
 * the families stay those the request covers without them (Calico: the annotations choose pools,
 * not whether a family is assigned). An annotation names a pool by name or by its CIDR.
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
    static Map<IpFamily, List<PoolSpec>> choose(
            Catalog pools, String node, Map<String, String> labels, List<String> names) {
        return names.isEmpty() ? selecting(pools, node, labels) : named(pools, node, labels, names);
    }

    /**
     * As {@link #choose(Catalog, String, Map, List)}, with the annotations' choice per family.
     *
     * @param byFamily family → pool names or CIDRs, in order; replaces that family's pools
     * @throws IpamException as {@link #choose(Catalog, String, Map, List)}; also UNKNOWN_POOL for
     *     an annotation's pool that is not defined, INVALID_REQUEST for one of the other family
     */
    static Map<IpFamily, List<PoolSpec>> choose(
            Catalog pools,
            String node,
            Map<String, String> labels,
            List<String> names,
            Map<IpFamily, List<String>> byFamily) {
        if (byFamily.isEmpty()) {
            return choose(pools, node, labels, names);
        }
        Map<IpFamily, List<PoolSpec>> selected =
                names.isEmpty() ? selecting(pools, node, labels) : Map.of();
        Set<IpFamily> families = EnumSet.noneOf(IpFamily.class);
        families.addAll(selected.keySet());
        names.forEach(n -> families.add(resolve(pools, n).family()));
        Map<IpFamily, List<PoolSpec>> chosen = new EnumMap<>(IpFamily.class);
        for (IpFamily family : families) {
            List<String> annotated = byFamily.get(family);
            if (annotated != null) {
                chosen.putAll(named(pools, node, labels, annotated, family));
            } else if (names.isEmpty()) {
                chosen.put(family, selected.get(family));
            } else {
                chosen.putAll(
                        named(
                                pools,
                                node,
                                labels,
                                names.stream()
                                        .filter(n -> resolve(pools, n).family() == family)
                                        .toList(),
                                null));
            }
        }
        return chosen;
    }

    /**
     * @param ref a pool's name, or its CIDR (an annotation may name a pool either way)
     * @return the pool
     * @throws IpamException UNKNOWN_POOL when no pool has that name or CIDR
     */
    static PoolSpec resolve(Catalog pools, String ref) {
        Optional<PoolSpec> byName = pools.spec(ref);
        if (byName.isPresent()) {
            return byName.get();
        }
        if (ref.contains("/")) {
            try {
                Cidr cidr = Cidr.parse(ref);
                Optional<PoolSpec> byCidr =
                        pools.pools().values().stream()
                                .filter(p -> p.cidr().equals(cidr))
                                .findFirst();
                if (byCidr.isPresent()) {
                    return byCidr.get();
                }
            } catch (IllegalArgumentException e) {
                // not a CIDR either: unknown below
            }
        }
        throw new IpamException(
                IpamException.Reason.UNKNOWN_POOL,
                "unknown pool "
                        + ref
                        + " (known: "
                        + String.join(", ", pools.pools().keySet())
                        + ")");
    }

    /**
     * @param poolNames the pools a requested address may lie in, in order; empty: every pool of the
     *     catalogue
     * @return the first of them the catalogue defines whose CIDR holds the address (an IP literal)
     */
    static Optional<PoolSpec> holding(Catalog pools, List<String> poolNames, String address) {
        List<String> candidates =
                poolNames.isEmpty() ? List.copyOf(pools.pools().keySet()) : poolNames;
        return candidates.stream()
                .map(n -> pools.spec(n).orElse(null))
                .filter(p -> p != null && p.cidr().contains(address))
                .findFirst();
    }

    /** @return whether {@link #resolve} finds the pool */
    static boolean resolvable(Catalog pools, String ref) {
        try {
            resolve(pools, ref);
            return true;
        } catch (IpamException e) {
            return false;
        }
    }

    private static Map<IpFamily, List<PoolSpec>> selecting(
            Catalog pools, String node, Map<String, String> labels) {
        Map<IpFamily, List<PoolSpec>> byFamily = new EnumMap<>(IpFamily.class);
        pools.pools().values().stream()
                .filter(p -> !pools.isDisabled(p.name()) && p.selects(labels))
                .forEach(p -> byFamily.computeIfAbsent(p.family(), f -> new ArrayList<>()).add(p));
        if (byFamily.isEmpty()) {
            throw new IpamException(
                    IpamException.Reason.UNKNOWN_POOL,
                    "no enabled pool selects node "
                            + node
                            + " (labels "
                            + new TreeMap<>(labels)
                            + "; pools: "
                            + String.join(", ", pools.pools().keySet())
                            + ")");
        }
        return byFamily;
    }

    private static Map<IpFamily, List<PoolSpec>> named(
            Catalog pools, String node, Map<String, String> labels, List<String> names) {
        return named(pools, node, labels, names, null);
    }

    /** @param required the family every pool must be of (an annotation's), or null for any */
    private static Map<IpFamily, List<PoolSpec>> named(
            Catalog pools,
            String node,
            Map<String, String> labels,
            List<String> names,
            IpFamily required) {
        Map<IpFamily, List<PoolSpec>> byFamily = new EnumMap<>(IpFamily.class);
        Map<IpFamily, List<String>> refused = new EnumMap<>(IpFamily.class);
        for (String name : names) {
            PoolSpec spec = resolve(pools, name);
            if (required != null && spec.family() != required) {
                throw new IpamException(
                        IpamException.Reason.INVALID_REQUEST,
                        "pool "
                                + spec.name()
                                + " ("
                                + spec.cidr()
                                + ") is an IPv"
                                + spec.family().cniVersionField()
                                + " pool, chosen for IPv"
                                + required.cniVersionField());
            }
            Optional<String> refusal = refusal(pools, spec, node, labels);
            if (refusal.isPresent()) {
                refused.computeIfAbsent(spec.family(), f -> new ArrayList<>()).add(refusal.get());
            } else {
                byFamily.computeIfAbsent(spec.family(), f -> new ArrayList<>()).add(spec);
            }
        }
        refused.forEach(
                (family, reasons) -> {
                    if (!byFamily.containsKey(family)) {
                        throw new IpamException(
                                IpamException.Reason.POOL_EXHAUSTED,
                                "no "
                                        + family
                                        + " pool may serve node "
                                        + node
                                        + ": "
                                        + String.join("; ", reasons));
                    }
                });
        return byFamily;
    }

    /** @return why the pool serves nothing new to this node: disabled, or its selector does not match */
    static Optional<String> refusal(
            Catalog pools, PoolSpec spec, String node, Map<String, String> labels) {
        if (pools.isDisabled(spec.name())) {
            return Optional.of("pool " + spec.name() + " is disabled");
        }
        if (!spec.selects(labels)) {
            return Optional.of(
                    "pool "
                            + spec.name()
                            + " selects nodes '"
                            + spec.nodeSelector()
                            + "', not node "
                            + node
                            + " (labels "
                            + new TreeMap<>(labels)
                            + ")");
        }
        return Optional.empty();
    }
}
