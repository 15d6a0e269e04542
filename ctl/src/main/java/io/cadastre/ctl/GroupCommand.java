package io.cadastre.ctl;

import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * A command that only groups subcommands ({@code cadastrectl}, {@code ipam}, {@code node},
 * {@code pool}): given none, it is a usage error naming them (exit 2). picocli fills the inherited
 * {@link #spec}.
 */
abstract class GroupCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Override
    public Integer call() {
        throw Cadastrectl.missingCommand(spec);
    }
}
