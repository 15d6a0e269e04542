package io.cadastre.ctl;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code cadastrectl node ...}: the nodes the IPAM knows (cluster members, block owners, holders of
 * allocations) with their labels, one node's blocks and attachments, and removing a node that has
 * left the cluster.
 */
@Command(
        name = "node",
        description =
                "Nodes: membership, labels, blocks, attachments; removing a node gone for good.",
        subcommands = {
            NodeCommand.ListNodes.class,
            NodeCommand.Show.class,
            NodeCommand.Remove.class
        })
final class NodeCommand extends GroupCommand {

    /** {@code GET /v1/nodes}. */
    @Command(
            name = "list",
            description =
                    "Every node with its membership, block counts, attachment count and labels.")
    static final class ListNodes extends Subcommand {
        @Override
        public Integer call() {
            return print(client().get("/v1/nodes"), Views::nodes);
        }
    }

    /** {@code GET /v1/nodes/{name}}. */
    @Command(name = "show", description = "One node: its summary, its blocks, its attachments.")
    static final class Show extends Subcommand {
        @Parameters(paramLabel = "NAME", description = "The node's name.")
        String name;

        @Override
        public Integer call() {
            return print(
                    client().get("/v1/nodes/" + AdminClient.segment(nonBlank("NAME", name))),
                    Views::node);
        }
    }

    /** {@code DELETE /v1/nodes/{name}[?releaseAddresses=true]}. */
    @Command(
            name = "remove",
            description = {
                "Removes a node that has left the cluster: marks it removed and releases",
                "its empty blocks. A member is refused (409): stop its agent first. Its",
                "agent starting again under the name un-removes the node."
            })
    static final class Remove extends Subcommand {
        @Parameters(paramLabel = "NAME", description = "The node's name.")
        String name;

        @Option(
                names = "--release-addresses",
                description =
                        "First release every address held for the node (its"
                                + " attachments, its allocations in its blocks and in those it borrowed from), as DEL would;"
                                + " then the blocks that became empty.")
        boolean releaseAddresses;

        @Override
        public Integer call() {
            String path =
                    "/v1/nodes/"
                            + AdminClient.segment(nonBlank("NAME", name))
                            + (releaseAddresses ? "?releaseAddresses=true" : "");
            return print(client().delete(path), Views::nodeRemoved);
        }
    }
}
