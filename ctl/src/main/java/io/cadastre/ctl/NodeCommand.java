package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code cadastrectl node ...}: the nodes the IPAM knows (cluster members, block owners, holders of
 * allocations) and one node's blocks and attachments.
 */
@Command(name = "node", description = "Nodes: membership, blocks, attachments.",
        subcommands = {NodeCommand.ListNodes.class, NodeCommand.Show.class})
final class NodeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw Cadastrectl.missingCommand(spec);
    }

    /** {@code GET /v1/nodes}. */
    @Command(name = "list", description = "Every node with its membership, block counts and attachment count.")
    static final class ListNodes implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            Cadastrectl ctl = Cadastrectl.of(spec);
            JsonNode answer = ctl.client().get("/v1/nodes");
            ctl.print(ctl.json() ? Json.pretty(answer) + "\n" : Views.nodes(answer));
            return Cadastrectl.EXIT_OK;
        }
    }

    /** {@code GET /v1/nodes/{name}}. */
    @Command(name = "show", description = "One node: its summary, its blocks, its attachments.")
    static final class Show implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "NAME", description = "The node's name.")
        String name;

        @Override
        public Integer call() {
            Cadastrectl ctl = Cadastrectl.of(spec);
            JsonNode answer = ctl.client().get("/v1/nodes/" + AdminClient.segment(name));
            ctl.print(ctl.json() ? Json.pretty(answer) + "\n" : Views.node(answer));
            return Cadastrectl.EXIT_OK;
        }
    }
}
