package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * {@code cadastrectl}: the operator's command line over an agent's admin API (contract v1). It
 * holds the global options, which every subcommand accepts before or after its own, builds the
 * {@link AdminClient} from them, and maps outcomes to exit codes: 0 done, 1 {@code ipam check}
 * found problems, 2 anything that kept the command from giving its answer (usage, the token file,
 * connection, an error status from the agent, an answer not of the contract's shape).
 * Lifecycle: one instance per invocation, built by {@link #commandLine(Map)}.
 */
@Command(
        name = "cadastrectl",
        scope = ScopeType.INHERIT,
        mixinStandardHelpOptions = true,
        version = "cadastrectl 0.1.0",
        description = "Inspects and repairs Cadastre's IPAM through an agent's admin API.",
        subcommands = {IpamCommand.class, NodeCommand.class, PoolCommand.class},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:done",
            "1:ipam check: not clean",
            "2:usage, connection, or an error answered by the agent (message on stderr)"
        })
public final class Cadastrectl extends GroupCommand {
    static final String DEFAULT_SERVER = "http://127.0.0.1:9467";
    static final String ENV_SERVER = "CADASTRE_ADMIN_URL";
    static final String ENV_TOKEN_FILE = "CADASTRE_ADMIN_TOKEN_FILE";

    /** The token an agent with the default data directory generates: root's only (mode 0600 in a 0700 directory). */
    static final Path DEFAULT_TOKEN_FILE = Path.of("/var/lib/cadastre/admin.token");

    static final int EXIT_OK = 0;
    static final int EXIT_NOT_CLEAN = 1;
    static final int EXIT_ERROR = 2;
    static final int DEFAULT_TIMEOUT_SECONDS = 30;
    static final int MAX_CONNECT_TIMEOUT_SECONDS = 5;

    /** Lower case: picocli lists and matches the constants as written. */
    enum Output {
        table,
        json
    }

    // Global options: null when not given, so that the environment and defaults apply in one place.
    @Option(
            names = "--server",
            paramLabel = "URL",
            scope = ScopeType.INHERIT,
            description =
                    "The agent's admin API (default: $"
                            + ENV_SERVER
                            + ", else "
                            + DEFAULT_SERVER
                            + ").")
    String server;

    @Option(
            names = "--token-file",
            paramLabel = "FILE",
            scope = ScopeType.INHERIT,
            description =
                    "A file whose trimmed content is the bearer token (default: $"
                            + ENV_TOKEN_FILE
                            + ", else "
                            + "/var/lib/cadastre/admin.token when it exists: the agent's own, which root can read).")
    Path tokenFile;

    @Option(
            names = {"-o", "--output"},
            paramLabel = "FORMAT",
            scope = ScopeType.INHERIT,
            description = "table (default) or json (the agent's JSON, pretty-printed).")
    Output output;

    @Option(
            names = "--timeout",
            paramLabel = "SECONDS",
            scope = ScopeType.INHERIT,
            description =
                    "Seconds to wait for an answer (default "
                            + DEFAULT_TIMEOUT_SECONDS
                            + "); connecting waits at most "
                            + MAX_CONNECT_TIMEOUT_SECONDS
                            + " of them.")
    Integer timeoutSeconds;

    private final Map<String, String> env;
    private final Path defaultTokenFile;

    /**
     * @param env the environment to read {@code CADASTRE_ADMIN_*} from ({@code System.getenv()})
     * @param defaultTokenFile the token file used when neither option nor environment names one
     *     ({@link #DEFAULT_TOKEN_FILE}; tests pass their own)
     */
    Cadastrectl(Map<String, String> env, Path defaultTokenFile) {
        this.env = Map.copyOf(env);
        this.defaultTokenFile = defaultTokenFile;
    }

    /**
     * @param env the environment ({@code System.getenv()}; tests pass their own)
     * @return the command line, ready for {@code execute(args)}, which returns the exit code; set
     *     its out and err writers first to capture the output
     */
    static CommandLine commandLine(Map<String, String> env) {
        return commandLine(env, DEFAULT_TOKEN_FILE);
    }

    /** As {@link #commandLine(Map)}, with another default token file. */
    static CommandLine commandLine(Map<String, String> env, Path defaultTokenFile) {
        return new CommandLine(new Cadastrectl(env, defaultTokenFile))
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setParameterExceptionHandler(Cadastrectl::usageError)
                .setExecutionExceptionHandler((e, cmd, parsed) -> failure(e, cmd));
    }

    /** Runs cadastrectl and exits with its code (see the class comment). */
    public static void main(String[] args) {
        System.exit(commandLine(System.getenv()).execute(args));
    }

    /**
     * Runs cadastrectl in this process, as {@link #main} would but without exiting: for tests
     * (this module's, and the agent's end-to-end tests against a real agent).
     *
     * @param env the environment to read {@code CADASTRE_ADMIN_*} from
     * @param defaultTokenFile the token file used when neither {@code --token-file} nor the
     *     environment names one, if it exists ({@code /var/lib/cadastre/admin.token} for {@link #main})
     * @param out where the answer goes (stdout)
     * @param err where errors and usage messages go (stderr)
     * @return the exit code (see the class comment)
     */
    public static int execute(
            Map<String, String> env,
            Path defaultTokenFile,
            PrintWriter out,
            PrintWriter err,
            String... args) {
        CommandLine cmd = commandLine(env, defaultTokenFile);
        cmd.setOut(out);
        cmd.setErr(err);
        return cmd.execute(args);
    }

    /** @return the usage error for a command that only groups subcommands and was given none */
    static ParameterException missingCommand(CommandSpec spec) {
        return new ParameterException(
                spec.commandLine(),
                "missing command: one of " + String.join(", ", spec.subcommands().keySet()));
    }

    /** @return the root command (holding the global options) of the command that {@code spec} describes */
    static Cadastrectl of(CommandSpec spec) {
        return (Cadastrectl) spec.root().userObject();
    }

    boolean json() {
        return output == Output.json;
    }

    /** Prints {@code text} as it is (tables end with their own newline). */
    void print(String text) {
        PrintWriter out = spec.commandLine().getOut();
        out.print(text);
        out.flush();
    }

    /** Prints the agent's JSON, pretty-printed, and a newline. */
    void printJson(JsonNode answer) {
        print(Json.pretty(answer) + "\n");
    }

    /** Prints the agent's JSON with {@code -o json}, else {@code table}'s view of it. */
    void printAnswer(JsonNode answer, Function<JsonNode, String> table) {
        if (json()) {
            printJson(answer);
        } else {
            print(table.apply(answer));
        }
    }

    /**
     * @return {@code value}, checked to be more than blanks: an empty name would change the
     *     request's path, or ask the agent about nothing
     * @throws ParameterException when it is blank (a usage error of the command {@code spec} describes)
     */
    static String nonBlank(CommandSpec spec, String what, String value) {
        if (value.isBlank()) {
            throw new ParameterException(spec.commandLine(), what + " must not be empty");
        }
        return value;
    }

    /**
     * @return a client for the server and token that the options or the environment name
     * @throws ParameterException for a malformed server URL or timeout (exit 2)
     * @throws CtlException when the token file cannot be read or holds no usable token (exit 2)
     */
    AdminClient client() {
        int timeout = timeoutSeconds == null ? DEFAULT_TIMEOUT_SECONDS : timeoutSeconds;
        if (timeout < 1) {
            throw new ParameterException(
                    spec.commandLine(), "--timeout must be 1 second or more, not " + timeout);
        }
        URI server = serverUri();
        Credential credential = credential(server);
        return new AdminClient(
                server,
                credential.token(),
                credential.hint(),
                Duration.ofSeconds(Math.min(timeout, MAX_CONNECT_TIMEOUT_SECONDS)),
                Duration.ofSeconds(timeout));
    }

    /**
     * The bearer token, or {@code null} for none, and what a 401 answer should tell the user:
     * what was sent, and how to send the right one.
     */
    private record Credential(String token, String hint) {}

    private URI serverUri() {
        String text = server != null ? server : envOr(ENV_SERVER, DEFAULT_SERVER);
        String source =
                server != null
                        ? "--server"
                        : env(ENV_SERVER) != null ? ENV_SERVER : "the default server";
        try {
            URI uri = new URI(text);
            if (!("http".equalsIgnoreCase(uri.getScheme())
                            || "https".equalsIgnoreCase(uri.getScheme()))
                    || uri.getHost() == null
                    || uri.getRawQuery() != null
                    || uri.getRawFragment() != null
                    || uri.getRawUserInfo() != null) {
                throw new URISyntaxException(text, "not http(s)://host[:port][/path]");
            }
            return uri;
        } catch (URISyntaxException e) {
            throw new ParameterException(
                    spec.commandLine(),
                    source + ": '" + text + "' is not an http(s)://HOST[:PORT] URL");
        }
    }

    /**
     * The token from {@code --token-file}, else {@code $CADASTRE_ADMIN_TOKEN_FILE}, else the
     * default token file when the server is on this host (loopback) and this user can read the
     * file (root, for the agent's own); else none. The local agent's token is never sent to
     * another host: it is of no use there, and would be disclosed to whoever answers.
     *
     * @throws CtlException when a named file, or the default one that is used, cannot be read or
     *     holds no usable token
     */
    private Credential credential(URI server) {
        Path file =
                tokenFile != null
                        ? tokenFile
                        : env(ENV_TOKEN_FILE) != null ? Path.of(env(ENV_TOKEN_FILE)) : null;
        String fix =
                "run cadastrectl as root on the agent's host (it reads "
                        + defaultTokenFile
                        + ") or pass --token-file (or "
                        + ENV_TOKEN_FILE
                        + ") naming the agent's <data-dir>/admin.token";
        if (file == null) {
            // Not there for this user (the agent's 0700 data directory hides it), or no agent here.
            if (!isLoopback(server) || !Files.isReadable(defaultTokenFile)) {
                return new Credential(null, "; the agent wants its token: " + fix);
            }
            file = defaultTokenFile;
        }
        return new Credential(
                read(file), "; the agent refused the token from " + file + ": " + fix);
    }

    private static boolean isLoopback(URI server) {
        String host = server.getHost();
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /** @return the trimmed content of the token file */
    private static String read(Path file) {
        String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (AccessDeniedException e) {
            throw new CtlException(
                    "cannot read the token file "
                            + file
                            + ": permission denied (run as root, or as the file's owner)",
                    e);
        } catch (IOException e) {
            throw new CtlException("cannot read the token file " + file + ": " + e, e);
        }
        if (token.isEmpty()) {
            throw new CtlException("the token file " + file + " is empty");
        }
        // A header value cannot hold line breaks; other blanks would split the bearer credential.
        if (token.chars().anyMatch(c -> c <= ' ' || c == 0x7f)) {
            throw new CtlException(
                    "the token file "
                            + file
                            + " holds more than one word (blanks or line breaks inside the token)");
        }
        return token;
    }

    private String env(String name) {
        String value = env.get(name);
        return value == null || value.isBlank() ? null : value.strip();
    }

    private String envOr(String name, String fallback) {
        String value = env(name);
        return value == null ? fallback : value;
    }

    /** One line on stderr and a hint, instead of picocli's full usage text after every typo. */
    private static int usageError(ParameterException e, String[] args) {
        CommandLine cmd = e.getCommandLine();
        PrintWriter err = cmd.getErr();
        // Some of picocli's messages start with "Error: ", which the prefix already says.
        err.println("cadastrectl: " + Table.clean(e.getMessage().replaceFirst("^Error: ", "")));
        if (!UnmatchedArgumentException.printSuggestions(e, err)) {
            err.println("Run '" + cmd.getCommandSpec().qualifiedName() + " --help' for usage.");
        }
        err.flush();
        return EXIT_ERROR;
    }

    /**
     * Exit 2 for failures too: exit 1 must keep meaning "check found problems" for scripts, even
     * when the cause is a bug here (then with the stack trace).
     */
    private static int failure(Exception e, CommandLine cmd) {
        PrintWriter err = cmd.getErr();
        if (e instanceof CtlException) {
            err.println("cadastrectl: " + Table.clean(e.getMessage()));
        } else {
            err.println("cadastrectl: internal error: " + e);
            e.printStackTrace(err);
        }
        err.flush();
        return EXIT_ERROR;
    }
}
