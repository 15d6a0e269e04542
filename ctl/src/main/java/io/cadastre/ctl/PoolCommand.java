package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code cadastrectl pool ...}: the pools' configuration ({@code ipam show} has their use). */
@Command(name = "pool", description = "Pools' configuration.", subcommands = PoolCommand.ListPools.class)
final class PoolCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw Cadastrectl.missingCommand(spec);
    }

    /** {@code GET /v1/pools}. */
    @Command(name = "list", description = "Every pool's CIDR, block size and allocation settings.")
    static final class ListPools implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            Cadastrectl ctl = Cadastrectl.of(spec);
            JsonNode answer = ctl.client().get("/v1/pools");
            ctl.print(ctl.json() ? Json.pretty(answer) + "\n" : Views.poolSettings(answer));
            return Cadastrectl.EXIT_OK;
        }
    }
}
