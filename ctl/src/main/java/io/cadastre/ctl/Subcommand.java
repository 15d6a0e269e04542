package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * A subcommand that sends requests to the agent and prints the answers, with the root command's
 * global options ({@link Cadastrectl}). picocli fills the inherited {@link #spec}.
 */
abstract class Subcommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    /** @return the root command: its options, client and output */
    Cadastrectl ctl() {
        return Cadastrectl.of(spec);
    }

    /** @return a client for the agent the global options name ({@link Cadastrectl#client}) */
    AdminClient client() {
        return ctl().client();
    }

    /**
     * Prints the agent's JSON with {@code -o json}, else {@code table}'s view of it.
     *
     * @return {@link Cadastrectl#EXIT_OK}
     */
    int print(JsonNode answer, Function<JsonNode, String> table) {
        ctl().printAnswer(answer, table);
        return Cadastrectl.EXIT_OK;
    }

    /**
     * @return {@code value}, checked to be more than blanks
     * @throws ParameterException when it is blank: a usage error of this command ({@link
     *     Cadastrectl#nonBlank})
     */
    String nonBlank(String what, String value) {
        return Cadastrectl.nonBlank(spec, what, value);
    }
}
