package io.cadastre.ctl;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code cadastrectl pool ...}: the pools' configuration ({@code ipam show} has their use), and
 * defining, disabling, enabling and deleting pools at run time. Each subcommand sends one request
 * and prints the answer; none retries.
 */
@Command(
        name = "pool",
        description = "Pools' configuration; create, disable, enable, delete.",
        subcommands = {
            PoolCommand.ListPools.class,
            PoolCommand.Create.class,
            PoolCommand.Disable.class,
            PoolCommand.Enable.class,
            PoolCommand.Delete.class
        })
final class PoolCommand extends GroupCommand {

    /** {@code GET /v1/pools}. */
    @Command(
            name = "list",
            description =
                    "Every pool's CIDR, block size, allocation settings, node selector and excluded ranges.")
    static final class ListPools extends Subcommand {
        @Override
        public Integer call() {
            return print(client().get("/v1/pools"), Views::poolSettings);
        }
    }

    /**
     * {@code POST /v1/pools}. The body holds only what the operator gave, so that the agent's
     * defaults and the preset's rules apply to the rest (and the agent, not this tool, says when
     * a preset and an explicit setting disagree).
     */
    @Command(
            name = "create",
            description = {
                "Defines a pool at run time; settings not given take the agent's defaults",
                "(or the preset's). Idempotent: the same definition again succeeds; another",
                "under the same name, or a CIDR overlapping a pool, is refused (409)."
            })
    static final class Create extends Subcommand {
        @Parameters(paramLabel = "NAME", description = "The pool's name.")
        String name;

        @Option(
                names = "--cidr",
                paramLabel = "CIDR",
                required = true,
                converter = IpLiteral.CidrConverter.class,
                description = "The pool's range (198.18.0.0/16, fd00:198::/48).")
        String cidr;

        @Option(
                names = "--block-size",
                paramLabel = "N",
                converter = NonNegative.class,
                description =
                        "The blocks' prefix length (agent's default: 26 for IPv4, 122 for IPv6;"
                                + " with --preset cluster-pool 24 and 120).")
        Integer blockSize;

        @Option(
                names = "--node-selector",
                paramLabel = "SEL",
                description =
                        "Nodes that may use the pool, as a Kubernetes label selector (k=v, k!=v, k in (a,b),"
                                + " k, !k; comma = and; all()). Default: every node.")
        String nodeSelector;

        @Option(
                names = "--strict-affinity",
                description = "A node takes addresses only from its own blocks.")
        boolean strictAffinity;

        @Option(
                names = "--no-borrowing",
                description = "A node whose blocks are full does not borrow from others'.")
        boolean noBorrowing;

        @Option(
                names = "--max-blocks-per-node",
                paramLabel = "N",
                converter = NonNegative.class,
                description = "At most N blocks per node (agent's default: 0, no limit).")
        Integer maxBlocksPerNode;

        @Option(
                names = "--exclude",
                paramLabel = "CIDR",
                converter = IpLiteral.CidrConverter.class,
                description = "A range inside the pool never to assign; repeat for more.")
        List<String> excluded;

        @Option(
                names = "--preset",
                paramLabel = "PRESET",
                description =
                        "cluster-pool: one block per node, strict affinity, no borrowing (Cilium's"
                                + " cluster-pool); the agent refuses a setting given here that contradicts it.")
        String preset;

        @Override
        public Integer call() {
            Cadastrectl ctl = ctl();
            ObjectNode body =
                    Json.MAPPER
                            .createObjectNode()
                            .put("name", nonBlank("NAME", name))
                            .put("cidr", cidr);
            if (blockSize != null) {
                body.put("blockSize", blockSize);
            }
            if (nodeSelector != null) {
                body.put("nodeSelector", nodeSelector);
            }
            if (strictAffinity) {
                body.put("strictAffinity", true);
            }
            if (noBorrowing) {
                body.put("allowBorrowing", false);
            }
            if (maxBlocksPerNode != null) {
                body.put("maxBlocksPerNode", maxBlocksPerNode);
            }
            if (excluded != null) {
                ArrayNode ranges = body.putArray("excluded");
                excluded.forEach(ranges::add);
            }
            if (preset != null) {
                body.put("preset", preset);
            }
            AdminClient.Answer answer = ctl.client().postForStatus("/v1/pools", body);
            // 201: created; 200: this very definition was there already (the agent changed
            // nothing).
            String verdict =
                    answer.status() == 201
                            ? "created pool " + Table.clean(name)
                            : "pool "
                                    + Table.clean(name)
                                    + " already exists with this definition; nothing changed";
            return print(answer.body(), pool -> verdict + "\n" + Views.pool(pool));
        }
    }

    /** {@code POST /v1/pools/{name}/disable}. */
    @Command(
            name = "disable",
            description = {
                "Stops a pool from giving out blocks and addresses; what it gave out",
                "stays, and can be released. Idempotent."
            })
    static final class Disable extends OnePool {
        @Override
        public Integer call() {
            return act("disable", "disabled pool ");
        }
    }

    /** {@code POST /v1/pools/{name}/enable}. */
    @Command(
            name = "enable",
            description = "Lets a disabled pool give out blocks and addresses again. Idempotent.")
    static final class Enable extends OnePool {
        @Override
        public Integer call() {
            return act("enable", "enabled pool ");
        }
    }

    /** {@code DELETE /v1/pools/{name}}. */
    @Command(
            name = "delete",
            description = {
                "Deletes a pool that holds no allocation, releasing its blocks; the name",
                "and range can be reused. A pool still holding allocations is refused",
                "(409) and left disabled: release them first."
            })
    static final class Delete extends OnePool {
        @Override
        public Integer call() {
            return print(client().delete(path()), Views::poolDeleted);
        }
    }

    /** A command on one existing pool, named by its one parameter (picocli reads inherited fields). */
    abstract static class OnePool extends Subcommand {
        @Parameters(paramLabel = "NAME", description = "The pool's name.")
        String name;

        /** @return {@code /v1/pools/{name}}, the name encoded; a usage error when it is blank */
        String path() {
            return "/v1/pools/" + AdminClient.segment(nonBlank("NAME", name));
        }

        /** {@code POST /v1/pools/{name}/{action}} without a body; prints a line and the pool the agent answers. */
        int act(String action, String done) {
            String path = path() + "/" + action;
            return print(
                    client().post(path),
                    pool -> done + Table.clean(name) + "\n" + Views.pool(pool));
        }
    }

    /**
     * picocli converter: a decimal integer of 0 or more, else a usage error. Whether it suits the
     * pool (a block size for the CIDR's family and length) is the agent's to say.
     */
    static final class NonNegative implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            if (!value.matches("[0-9]{1,9}")) {
                throw new TypeConversionException("'" + value + "' is not a non-negative integer");
            }
            return Integer.valueOf(value);
        }
    }
}
