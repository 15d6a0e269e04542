package io.cadastre.admin;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.ipam.SpecialRanges;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The admin API's pool operations (POST /v1/pools, POST /v1/pools/{name}/disable|enable, DELETE
 * /v1/pools/{name}): validates the request, then delegates to {@link io.cadastre.shards.Pools}
 * and answers with the pool as {@code GET /v1/pools} shows it.
 *
 * <p>The {@code cluster-pool} preset is Cilium's cluster-pool IPAM mode expressed as a pool: each
 * node gets one block — its pod CIDR — and only that: block size /24 (IPv4) or /120 (IPv6) unless
 * given, {@code maxBlocksPerNode} 1, strict affinity, no borrowing. A node whose block is full gets
 * no address, as in Cilium.
 */
final class PoolAdmin {
    /** The name of Cilium's per-node pod CIDR mode as a preset. */
    static final String CLUSTER_POOL = "cluster-pool";

    private final Inventory inventory;

    PoolAdmin(Inventory inventory) {
        this.inventory = inventory;
    }

    /** @param created true when the pool is new, false when an identical pool existed */
    record Created(boolean created, AdminViews.Pool pool) {}

    /** The answer of a deletion. */
    record Deleted(String deleted, List<String> releasedBlocks) {}

    /**
     * @param body the create request (contract: http/DESIGN.md, openapi.yaml)
     * @return the definition it asks for
     * @throws AdminException BAD_REQUEST naming the field that is missing, of the wrong type or
     *     invalid, or a range over special-purpose addresses ({@link SpecialRanges})
     */
    static PoolSpec specOf(JsonNode body) {
        AdminRoutes.onlyFields(
                body,
                "name",
                "cidr",
                "blockSize",
                "nodeSelector",
                "strictAffinity",
                "allowBorrowing",
                "maxBlocksPerNode",
                "excluded",
                "preset");
        String name = AdminRoutes.requiredText(body, "name");
        Cidr cidr = cidr(AdminRoutes.requiredText(body, "cidr"), "cidr");
        String preset = body.has("preset") ? AdminRoutes.requiredText(body, "preset") : null;
        if (preset != null && !preset.equals(CLUSTER_POOL)) {
            throw AdminException.badRequest(
                    "unknown preset " + preset + " (known: " + CLUSTER_POOL + ")");
        }
        boolean clusterPool = preset != null;
        int defaultBlock =
                clusterPool
                        ? (cidr.family() == IpFamily.V4 ? 24 : 120)
                        : PoolSpec.defaultBlockPrefix(cidr.family());
        int blockSize = optionalInt(body, "blockSize", defaultBlock);
        boolean strict = optionalBoolean(body, "strictAffinity", clusterPool);
        boolean borrowing = optionalBoolean(body, "allowBorrowing", !clusterPool);
        int maxBlocks = optionalInt(body, "maxBlocksPerNode", clusterPool ? 1 : 0);
        if (clusterPool && (!strict || borrowing || maxBlocks != 1)) {
            throw AdminException.badRequest(
                    "preset "
                            + CLUSTER_POOL
                            + " means strictAffinity true, allowBorrowing false"
                            + " and maxBlocksPerNode 1: leave them out or give those values");
        }
        String selector = body.has("nodeSelector") ? text(body, "nodeSelector") : "";
        List<Cidr> excluded = new ArrayList<>();
        JsonNode ranges = body.get("excluded");
        if (ranges != null && !ranges.isNull()) {
            if (!ranges.isArray()) {
                throw AdminException.badRequest("\"excluded\" must be an array of CIDRs");
            }
            for (JsonNode range : ranges) {
                if (!range.isTextual()) {
                    throw AdminException.badRequest("\"excluded\" must be an array of CIDRs");
                }
                excluded.add(cidr(range.asText(), "excluded"));
            }
        }
        try {
            SpecialRanges.requireUsable(cidr);
            return new PoolSpec(
                    name, cidr, blockSize, strict, borrowing, maxBlocks, selector, excluded);
        } catch (IllegalArgumentException e) {
            throw AdminException.badRequest(e.getMessage());
        }
    }

    CompletionStage<Created> create(PoolSpec spec) {
        return inventory
                .poolOperations()
                .create(spec)
                .thenCompose(
                        created ->
                                inventory
                                        .pool(spec.name())
                                        .thenApply(pool -> new Created(created, pool)));
    }

    CompletionStage<AdminViews.Pool> setDisabled(String name, boolean disabled) {
        return inventory
                .poolOperations()
                .setDisabled(name, disabled)
                .thenCompose(done -> inventory.pool(name));
    }

    CompletionStage<Deleted> delete(String name) {
        return inventory
                .poolOperations()
                .delete(name)
                .thenApply(released -> new Deleted(name, AdminViews.cidrs(released)));
    }

    private static Cidr cidr(String text, String field) {
        try {
            return Cidr.parse(text);
        } catch (IllegalArgumentException e) {
            throw AdminException.badRequest("\"" + field + "\": " + e.getMessage());
        }
    }

    private static String text(JsonNode body, String field) {
        JsonNode value = body.get(field);
        if (!value.isTextual()) {
            throw AdminException.badRequest("\"" + field + "\" must be a string");
        }
        return value.asText();
    }

    private static int optionalInt(JsonNode body, String field, int otherwise) {
        JsonNode value = body.get(field);
        if (value == null || value.isNull()) {
            return otherwise;
        }
        if (!value.isIntegralNumber() || !value.canConvertToInt()) {
            throw AdminException.badRequest("\"" + field + "\" must be an integer");
        }
        return value.asInt();
    }

    private static boolean optionalBoolean(JsonNode body, String field, boolean otherwise) {
        JsonNode value = body.get(field);
        if (value == null || value.isNull()) {
            return otherwise;
        }
        if (!value.isBoolean()) {
            throw AdminException.badRequest("\"" + field + "\" must be true or false");
        }
        return value.asBoolean();
    }
}
