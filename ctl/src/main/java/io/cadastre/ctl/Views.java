package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * The table views of the admin API's answers (pure: JSON tree in, text out). Shapes are those of
 * the admin contract v1. A missing or null field prints as {@code -} so that a server slightly
 * ahead of or behind this tool still shows what it has; a missing top-level list is an error,
 * since then the answer is not the one asked for.
 */
final class Views {
    private Views() {}

    /**
     * {@code ipam show}: one row per pool from {@code GET /v1/pools}, with utilisation.
     *
     * @throws CtlException when the answer has no {@code pools} array
     */
    static String poolUsage(JsonNode answer) {
        Table table =
                new Table(
                        "POOL",
                        "CIDR",
                        "BLOCK-SIZE",
                        "BLOCKS(claimed/total)",
                        "ALLOCATED",
                        "SIZE",
                        "UTIL%",
                        "FLAGS");
        for (JsonNode pool : list(answer, "pools")) {
            JsonNode blocks = pool.path("blocks");
            table.row(
                    text(pool, "name"),
                    text(pool, "cidr"),
                    prefix(pool.path("blockSize")),
                    text(blocks, "claimed") + "/" + quantity(blocks.path("total")),
                    text(pool, "allocated"),
                    quantity(pool.path("size")),
                    percent(pool.path("allocated"), pool.path("size")),
                    flags(pool));
        }
        return table.render();
    }

    /**
     * {@code pool list}: one row per pool from {@code GET /v1/pools}, its configuration; then,
     * when any pool has excluded ranges, one row per range.
     *
     * @throws CtlException when the answer has no {@code pools} array
     */
    static String poolSettings(JsonNode answer) {
        return poolSettings(list(answer, "pools"));
    }

    /**
     * {@code pool create|disable|enable}: the pool the agent answered with, as {@code pool list}
     * prints it.
     */
    static String pool(JsonNode pool) {
        return poolSettings(List.of(pool));
    }

    /**
     * The node selector as the last column (it may be long; the others keep their places), and
     * the excluded ranges in a table of their own, since a pool may have many.
     */
    private static String poolSettings(List<JsonNode> pools) {
        Table table =
                new Table(
                        "NAME",
                        "CIDR",
                        "BLOCK-SIZE",
                        "STRICT-AFFINITY",
                        "ALLOW-BORROWING",
                        "MAX-BLOCKS-PER-NODE",
                        "DISABLED",
                        "NODE-SELECTOR");
        Table excluded = new Table("POOL", "EXCLUDED");
        for (JsonNode pool : pools) {
            JsonNode max = pool.path("maxBlocksPerNode");
            table.row(
                    text(pool, "name"),
                    text(pool, "cidr"),
                    prefix(pool.path("blockSize")),
                    text(pool, "strictAffinity"),
                    text(pool, "allowBorrowing"),
                    isZero(max) ? "no limit" : text(max),
                    text(pool, "disabled"),
                    selector(pool.path("nodeSelector")));
            pool.path("excluded").forEach(range -> excluded.row(text(pool, "name"), text(range)));
        }
        return table.render() + (excluded.isEmpty() ? "" : "\n" + excluded.render());
    }

    /** {@code pool delete}: one line saying so, from {@code DELETE /v1/pools/{name}}. */
    static String poolDeleted(JsonNode answer) {
        return "deleted pool "
                + Table.clean(text(answer, "deleted"))
                + " (released "
                + counted(count(answer.path("releasedBlocks")), "block")
                + ")\n";
    }

    /**
     * {@code node remove}: what was released and what remains, from {@code DELETE /v1/nodes/{name}};
     * the blocks one per row, and how to release allocations left behind.
     */
    static String nodeRemoved(JsonNode answer) {
        JsonNode remaining = answer.path("remainingAllocations");
        StringBuilder out =
                new StringBuilder()
                        .append("removed node ")
                        .append(Table.clean(text(answer, "node")))
                        .append(": released ")
                        .append(counted(count(answer.path("releasedBlocks")), "block"))
                        .append(" and ")
                        .append(counted(count(answer.path("releasedAddresses")), "address"))
                        .append("; remaining ")
                        .append(counted(count(answer.path("remainingBlocks")), "block"))
                        .append(" and ")
                        .append(counted(text(remaining), "allocation"))
                        .append('\n');
        Table blocks = new Table("BLOCK", "STATE");
        answer.path("releasedBlocks").forEach(b -> blocks.row(text(b), "released"));
        answer.path("remainingBlocks").forEach(b -> blocks.row(text(b), "remaining"));
        if (!blocks.isEmpty()) {
            out.append(blocks.render());
        }
        if (remaining.asLong(0) > 0) {
            out.append(
                    "\nThe remaining allocations show in 'cadastrectl ipam check';"
                            + " free them with 'cadastrectl ipam release --address IP'.\n");
        }
        return out.toString();
    }

    /**
     * {@code ipam show --show-blocks}: one row per claimed block from {@code GET /v1/blocks}.
     *
     * @throws CtlException when the answer has no {@code blocks} array
     */
    static String blocks(JsonNode answer) {
        Table table = new Table("BLOCK", "POOL", "AFFINITY", "ALLOCATED", "FREE", "BORROWED-BY");
        for (JsonNode block : list(answer, "blocks")) {
            table.row(
                    text(block, "cidr"),
                    text(block, "pool"),
                    text(block, "affinity"),
                    text(block, "allocated"),
                    text(block, "free"),
                    joined(block.path("borrowedBy")));
        }
        return table.render();
    }

    /**
     * {@code node list}: one row per node from {@code GET /v1/nodes}, block lists as counts.
     *
     * @throws CtlException when the answer has no {@code nodes} array
     */
    static String nodes(JsonNode answer) {
        Table table = nodeTable();
        for (JsonNode node : list(answer, "nodes")) {
            nodeRow(table, node);
        }
        return table.render();
    }

    /**
     * {@code node show}: the node's summary row, its blocks (affine, borrowed), its attachments,
     * then what it published for other hosts (its peer) and its routing as the answering agent
     * computes it: the peers and the way to each per family, the routes, what cannot be routed,
     * and (for the answering agent's own node) the last reconcile; from {@code GET /v1/nodes/{name}}.
     */
    static String node(JsonNode node) {
        Table blocks = new Table("BLOCK", "ROLE");
        node.path("affineBlocks").forEach(b -> blocks.row(b.asText(), "affine"));
        node.path("borrowedBlocks").forEach(b -> blocks.row(b.asText(), "borrowed"));
        Table attachments =
                new Table(
                        "HANDLE", "IFNAME", "NETWORK", "CONTAINER", "POD", "ADDRESSES", "CREATED");
        for (JsonNode a : node.path("attachmentList")) {
            attachments.row(
                    text(a, "handle"),
                    text(a, "ifname"),
                    text(a, "network"),
                    shortId(text(a, "containerId")),
                    pod(a),
                    joined(a.path("addresses")),
                    time(a.path("createdAtMillis")));
        }
        return nodeRow(nodeTable(), node).render()
                + "\n"
                + blocks.render()
                + "\n"
                + attachments.render()
                + peer(node.path("peer"))
                + routing(text(node, "name"), node.path("routing"));
    }

    /** The node's published peer, one table row; a line saying so when there is none. */
    private static String peer(JsonNode peer) {
        if (!peer.isObject()) {
            return "\nPeer: none published (its agent has not started since, or runs routing mode none)\n";
        }
        return "\nPeer (what other hosts use to reach its pods):\n"
                + new Table(
                                "MODE",
                                "INTERFACE",
                                "IPV4",
                                "IPV6",
                                "VTEP-MAC",
                                "TUNNEL-IPV4",
                                "TUNNEL-IPV6",
                                "MTU")
                        .row(
                                text(peer, "mode"),
                                text(peer, "underlayInterface"),
                                text(peer, "ipv4"),
                                text(peer, "ipv6"),
                                text(peer, "vtepMac"),
                                text(peer, "tunnelIpv4"),
                                text(peer, "tunnelIpv6"),
                                text(peer, "mtu"))
                        .render();
    }

    /** The routing section: peers, routes, problems, last reconcile; a line when the agent computed none. */
    private static String routing(String name, JsonNode routing) {
        if (!routing.isObject()) {
            return "\nRouting: not computed by this agent (it routes nothing, or the node published no peer)\n";
        }
        StringBuilder out =
                new StringBuilder(
                        "\nRouting of "
                                + name
                                + " (mode "
                                + text(routing, "mode")
                                + "), "
                                + (routing.path("programmed").asBoolean()
                                        ? "programmed on this host"
                                        : "as computed on "
                                                + text(routing, "computedOn")
                                                + " (ask "
                                                + name
                                                + "'s own agent for its kernel's routes)")
                                + ":\n");
        Table peers = new Table("PEER", "IPV4", "IPV6", "UNDERLAY", "TUNNEL", "VTEP-MAC");
        for (JsonNode p : routing.path("peers")) {
            peers.row(
                    text(p, "node"),
                    text(p, "ipv4"),
                    text(p, "ipv6"),
                    text(p, "underlay"),
                    text(p, "tunnel"),
                    text(p, "vtepMac"));
        }
        Table routes = new Table("DESTINATION", "TYPE", "NODE", "ROUTE");
        for (JsonNode r : routing.path("routes")) {
            routes.row(text(r, "destination"), text(r, "type"), text(r, "node"), text(r, "route"));
        }
        out.append(peers.render()).append('\n').append(routes.render());
        // An agent from before outgoing NAT sends no such field.
        if (routing.path("outgoingNat").isTextual()) {
            out.append("\nOutgoing NAT: ").append(text(routing, "outgoingNat")).append('\n');
        }
        List<JsonNode> problems = listOrEmpty(routing, "problems");
        if (!problems.isEmpty()) {
            out.append("\nNot routed:\n");
            problems.forEach(p -> out.append("  ").append(Table.clean(p.asText())).append('\n'));
        }
        JsonNode last = routing.path("lastReconcile");
        if (last.isObject()) {
            out.append("\nLast reconcile ")
                    .append(time(last.path("atMillis")))
                    .append(": ")
                    .append(
                            last.path("failure").isTextual()
                                    ? "FAILED: " + text(last, "failure")
                                    : text(last, "summary"))
                    .append('\n');
            last.path("errors")
                    .forEach(
                            e ->
                                    out.append("  error: ")
                                            .append(Table.clean(e.asText()))
                                            .append('\n'));
            last.path("conflicts")
                    .forEach(
                            c ->
                                    out.append("  conflict: ")
                                            .append(Table.clean(c.asText()))
                                            .append('\n'));
        }
        return out.toString();
    }

    /** {@code ipam address}: where the address lies and who holds it, from {@code GET /v1/addresses/{ip}}. */
    static String address(JsonNode answer) {
        JsonNode a = answer.path("allocation");
        boolean held = a.isObject();
        return new Table(
                        "ADDRESS",
                        "POOL",
                        "BLOCK",
                        "STATE",
                        "NODE",
                        "HANDLE",
                        "IFNAME",
                        "POD",
                        "ALLOCATED")
                .row(
                        text(answer, "address"),
                        text(answer, "pool"),
                        text(answer, "block"),
                        held ? "allocated" : "free",
                        text(a, "node"),
                        text(a, "handle"),
                        text(a, "ifname"),
                        held ? pod(a) : null,
                        time(a.path("allocatedAtMillis")))
                .render();
    }

    /**
     * {@code ipam release}: one line per released address, or a line saying nothing was held.
     *
     * @throws CtlException when the answer has no {@code released} array
     */
    static String released(JsonNode answer) {
        List<JsonNode> released = list(answer, "released");
        if (released.isEmpty()) {
            return "nothing released: no allocation held\n";
        }
        StringBuilder out = new StringBuilder();
        released.forEach(r -> out.append("released ").append(Table.clean(r.asText())).append('\n'));
        return out.toString();
    }

    /**
     * {@code ipam check}: a verdict line, the four counts, then a table per kind of finding that
     * has any, and a reminder that in-flight ADDs look like leaks for a moment.
     *
     * @throws CtlException when the report has no boolean {@code clean}
     */
    static String check(JsonNode report) {
        boolean clean = clean(report);
        // The verdict is 'clean'; a list left out (rather than empty) is shown as empty.
        List<JsonNode> allocations = listOrEmpty(report, "allocationsWithoutAttachment");
        List<JsonNode> attachments = listOrEmpty(report, "attachmentsWithoutAllocation");
        List<JsonNode> blocks = listOrEmpty(report, "blocksAffineToUnknownNodes");
        List<JsonNode> ofRemoved = listOrEmpty(report, "allocationsOfRemovedNodes");
        List<JsonNode> routes = listOrEmpty(report, "routeFindings");
        StringBuilder out = new StringBuilder();
        out.append(clean ? "clean" : "NOT CLEAN")
                .append(": checked ")
                .append(text(report, "checkedAllocations"))
                .append(" allocations and ")
                .append(text(report, "checkedAttachments"))
                .append(" attachments in ")
                .append(text(report, "tookMillis"))
                .append(" ms\n");
        out.append(
                new Table("FINDING", "COUNT")
                        .row("allocations without attachment", allocations.size())
                        .row("attachments without allocation", attachments.size())
                        .row("blocks affine to unknown nodes", blocks.size())
                        .row("allocations of removed nodes", ofRemoved.size())
                        .row(
                                "blocks without their route"
                                        + (report.path("routesCheckedOn").isTextual()
                                                ? " on " + text(report, "routesCheckedOn")
                                                : " (routes not checked)"),
                                routes.size())
                        .render());
        if (!allocations.isEmpty()) {
            out.append(
                            "\nAllocations without attachment (an address held for an interface its node does not know):\n")
                    .append(allocationTable(allocations).render());
        }
        if (!attachments.isEmpty()) {
            Table table = new Table("NODE", "HANDLE", "IFNAME", "POD", "CONTAINER", "MISSING");
            for (JsonNode f : attachments) {
                JsonNode a = f.path("attachment");
                table.row(
                        text(f, "node"),
                        text(a, "handle"),
                        text(a, "ifname"),
                        pod(a),
                        shortId(text(a, "containerId")),
                        joined(f.path("missing")));
            }
            out.append(
                            "\nAttachments without allocation (an interface whose addresses no block holds for it):\n")
                    .append(table.render());
        }
        if (!blocks.isEmpty()) {
            Table table = new Table("BLOCK", "POOL", "AFFINITY");
            for (JsonNode f : blocks) {
                table.row(text(f, "block"), text(f, "pool"), text(f, "affinity"));
            }
            out.append(
                            "\nBlocks affine to unknown nodes (neither a member nor holding an attachment, or removed):\n")
                    .append(table.render());
        }
        if (!ofRemoved.isEmpty()) {
            out.append(
                            "\nAllocations of removed nodes (release them with 'cadastrectl ipam release --address IP'):\n")
                    .append(allocationTable(ofRemoved).render());
        }
        if (!routes.isEmpty()) {
            Table table =
                    new Table(
                            "BLOCK",
                            "POOL",
                            "AFFINITY",
                            "PROBLEM",
                            "EXPECTED",
                            "ACTUAL",
                            "ACTUAL-NODE");
            for (JsonNode f : routes) {
                table.row(
                        text(f, "block"),
                        text(f, "pool"),
                        text(f, "affinity"),
                        text(f, "problem"),
                        text(f, "expected"),
                        text(f, "actual"),
                        text(f, "actualNode"));
            }
            out.append(
                            "\nBlocks whose route on "
                                    + text(report, "routesCheckedOn")
                                    + " is not what the claim calls for"
                                    + " (its agent's log says why):\n")
                    .append(table.render());
        }
        if (!allocations.isEmpty()) {
            out.append(
                    "\nAn ADD in flight shows as an allocation without attachment for a moment:"
                            + " run the check again before releasing.\n");
        }
        return out.toString();
    }

    /** One row per held allocation of a check finding: address, block, and who holds it. */
    private static Table allocationTable(List<JsonNode> findings) {
        Table table = new Table("ADDRESS", "BLOCK", "NODE", "HANDLE", "IFNAME", "POD", "ALLOCATED");
        for (JsonNode f : findings) {
            JsonNode a = f.path("allocation");
            table.row(
                    text(f, "address"),
                    text(f, "block"),
                    text(a, "node"),
                    text(a, "handle"),
                    text(a, "ifname"),
                    pod(a),
                    time(a.path("allocatedAtMillis")));
        }
        return table;
    }

    /**
     * @return the report's verdict
     * @throws CtlException when {@code clean} is missing or not a boolean (exit 1 must mean "not clean")
     */
    static boolean clean(JsonNode report) {
        JsonNode clean = report.path("clean");
        if (!clean.isBoolean()) {
            throw new CtlException("unexpected answer: the check report has no boolean 'clean'");
        }
        return clean.booleanValue();
    }

    /** Labels last: they may be long, and the other columns keep their places. */
    private static Table nodeTable() {
        return new Table(
                "NAME",
                "MEMBER",
                "AFFINE-BLOCKS",
                "BORROWED-BLOCKS",
                "ATTACHMENTS",
                "REMOVED",
                "LABELS");
    }

    private static Table nodeRow(Table table, JsonNode node) {
        return table.row(
                text(node, "name"),
                text(node, "member"),
                count(node.path("affineBlocks")),
                count(node.path("borrowedBlocks")),
                text(node, "attachments"),
                text(node, "removed"),
                labels(node.path("labels")));
    }

    /** @return {@code key=value} pairs in the agent's order, comma-separated (as {@code kubectl --show-labels}) */
    private static String labels(JsonNode labels) {
        List<String> pairs = new ArrayList<>();
        labels.properties().forEach(e -> pairs.add(e.getKey() + "=" + text(e.getValue())));
        return pairs.isEmpty() ? "-" : String.join(",", pairs);
    }

    /**
     * @return the selector as the agent wrote it; the empty one, which selects every node, as
     *     {@code all()} (the same in the selector syntax); {@code -} when missing
     */
    private static String selector(JsonNode selector) {
        return selector.isTextual() && selector.asText().isBlank() ? "all()" : text(selector);
    }

    /** @return "1 thing", "N things" ("addresses"), "- things" when the count is missing */
    private static String counted(String n, String thing) {
        return n + " " + ("1".equals(n) ? thing : thing + (thing.endsWith("s") ? "es" : "s"));
    }

    /** @throws CtlException when {@code answer.field} is not an array */
    private static List<JsonNode> list(JsonNode answer, String field) {
        JsonNode array = answer.path(field);
        if (!array.isArray()) {
            throw new CtlException("unexpected answer: no '" + field + "' list");
        }
        List<JsonNode> items = new ArrayList<>(array.size());
        array.forEach(items::add);
        return items;
    }

    private static List<JsonNode> listOrEmpty(JsonNode answer, String field) {
        return answer.path(field).isArray() ? list(answer, field) : List.of();
    }

    private static String text(JsonNode parent, String field) {
        return text(parent.path(field));
    }

    /** Numbers print as the server wrote them (integers of any size), null and missing as {@code -}. */
    private static String text(JsonNode value) {
        if (value.isMissingNode() || value.isNull() || value.isContainerNode()) {
            return "-";
        }
        if (value.isBigDecimal()) {
            return value.decimalValue().toPlainString();
        }
        return value.asText();
    }

    /**
     * A count that may be a power of two beyond 2^32 (an IPv6 pool's addresses or blocks) prints
     * as {@code 2^N}: 25 digits say less to a reader and widen the table. Others as {@link #text}.
     */
    static String quantity(JsonNode value) {
        BigInteger n = integer(value);
        if (n != null && n.bitLength() > 33 && n.bitCount() == 1) {
            return "2^" + (n.bitLength() - 1);
        }
        return text(value);
    }

    private static String prefix(JsonNode blockSize) {
        return blockSize.isIntegralNumber() ? "/" + blockSize.asText() : text(blockSize);
    }

    private static String count(JsonNode array) {
        return array.isArray() ? Integer.toString(array.size()) : "-";
    }

    private static String joined(JsonNode array) {
        List<String> items = new ArrayList<>();
        array.forEach(item -> items.add(item.asText()));
        return items.isEmpty() ? "-" : String.join(",", items);
    }

    private static String pod(JsonNode holder) {
        String ns = holder.path("podNamespace").asText("");
        String name = holder.path("podName").asText("");
        if (ns.isEmpty() && name.isEmpty()) {
            return "-";
        }
        return ns.isEmpty() ? name : ns + "/" + name;
    }

    /** Container ids are 64 hex digits; 12 identify them as docker and crictl print them ({@code -o json} has all). */
    private static String shortId(String id) {
        return id.length() > 12 ? id.substring(0, 12) : id;
    }

    /** @return UTC time to the second; {@code -} for a missing or non-positive value (unknown) */
    private static String time(JsonNode millis) {
        if (!millis.canConvertToLong() || !millis.isIntegralNumber() || millis.longValue() <= 0) {
            return "-";
        }
        return Instant.ofEpochMilli(millis.longValue()).truncatedTo(ChronoUnit.SECONDS).toString();
    }

    /**
     * @return {@code 100 * part / whole} to one decimal, {@code <0.1} when positive but smaller (an
     *     IPv6 pool of 2^80 addresses), {@code -} when either is not an integer or whole is 0
     */
    static String percent(JsonNode part, JsonNode whole) {
        BigInteger p = integer(part);
        BigInteger w = integer(whole);
        if (p == null || w == null || w.signum() == 0) {
            return "-";
        }
        BigDecimal pct =
                new BigDecimal(p.multiply(BigInteger.valueOf(100)))
                        .divide(new BigDecimal(w), 1, RoundingMode.HALF_UP);
        if (pct.signum() == 0 && p.signum() > 0) {
            return "<0.1";
        }
        return pct.toPlainString();
    }

    private static BigInteger integer(JsonNode n) {
        if (n.isIntegralNumber()) {
            return n.bigIntegerValue();
        }
        if (n.isTextual() && n.asText().matches("[0-9]{1,60}")) {
            return new BigInteger(n.asText());
        }
        return null;
    }

    private static boolean isZero(JsonNode n) {
        BigInteger i = integer(n);
        return i != null && i.signum() == 0;
    }

    /** Deviations from a pool's defaults (affinity not strict, borrowing allowed, no block limit, enabled). */
    private static String flags(JsonNode pool) {
        List<String> flags = new ArrayList<>();
        if (pool.path("disabled").asBoolean(false)) {
            flags.add("disabled");
        }
        if (pool.path("strictAffinity").asBoolean(false)) {
            flags.add("strict-affinity");
        }
        if (!pool.path("allowBorrowing").asBoolean(true)) {
            flags.add("no-borrowing");
        }
        BigInteger max = integer(pool.path("maxBlocksPerNode"));
        if (max != null && max.signum() > 0) {
            flags.add("max-blocks-per-node=" + max);
        }
        return flags.isEmpty() ? "-" : String.join(",", flags);
    }
}
