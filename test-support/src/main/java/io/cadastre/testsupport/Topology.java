package io.cadastre.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A multi-host test topology made by {@code scripts/topology.sh}: hosts {@code NAME-h1..NAME-hN}
 * (network namespaces at 198.19.255.(10+i)/24) and a service namespace {@code NAME-db} at
 * 198.19.255.9/24, all on one bridge in {@code NAME-fabric}. {@link #close()} stops every process
 * started with {@link #exec} and removes all of it; a JVM shutdown hook does the same if a test
 * never gets to close it. See chaos-tests/DESIGN.md.
 *
 * <pre>{@code
 * try (Topology topology = Topology.up(Topology.randomName(), 3)) {
 *     Process agent = topology.exec(topology.host(1), "bin/cadastre-agent", ...);
 *     topology.partition(topology.host(3));
 *     ...
 * }
 * }</pre>
 */
public final class Topology implements AutoCloseable {

    /** Something on the fabric that can be cut off it and run commands: a host or the db. */
    public sealed interface Member permits Host, Db {
        /** The script's name for it: {@code h<i>} or {@code db}. */
        String name();

        /** Its network namespace (for {@code ip netns exec}, {@code ip -n}). */
        String netns();

        /** Its IPv4 address on the fabric, without prefix length. */
        String address();
    }

    /**
     * Host {@code index} (1-based), in namespace {@code netns}, at {@code address} and
     * {@code address6} on eth0 (on 198.19.255.0/24, or 198.19.254.0/24 behind the router).
     */
    public record Host(int index, String netns, String address, String address6) implements Member {
        @Override
        public String name() {
            return "h" + index;
        }

        /** @return whether the host is on the second subnet, behind the router */
        public boolean routed() {
            return address.startsWith("198.19.254.");
        }
    }

    /** The service namespace (for Cassandra). */
    public record Db(String netns, String address) implements Member {
        @Override
        public String name() {
            return "db";
        }
    }

    /** System property naming the script; Surefire sets it, else it is found from the working directory. */
    public static final String SCRIPT_PROPERTY = "cadastre.topology.script";

    public static final int PREFIX_LENGTH = 24;

    /** topology.sh up's exit code when the name is taken. */
    static final int EXIT_EXISTS = 3;

    private static final Duration SCRIPT_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_]{0,31}");
    private static final Pattern LINE =
            Pattern.compile("(h(\\d+)|db) (\\S+) (\\d+\\.\\d+\\.\\d+\\.\\d+)( (\\S+))?");

    private final String name;
    private final Path script;
    private final List<Host> hosts;
    private final Db db;
    private final List<Process> processes = new ArrayList<>();
    private final Thread shutdownHook;
    private boolean closed;

    private Topology(String name, Path script, List<Host> hosts, Db db) {
        this.name = name;
        this.script = script;
        this.hosts = List.copyOf(hosts);
        this.db = db;
        this.shutdownHook = new Thread(this::downOnShutdown, "topology-" + name + "-down");
    }

    /**
     * Runs {@code topology.sh up name hosts}. If that fails, whatever it made is removed (by the
     * script, and by a {@code down} from here) and the script's error is thrown.
     */
    public static Topology up(String name, int hosts) {
        return up(name, hosts, 0);
    }

    /**
     * As {@link #up(String, int)}, with {@code routed} more hosts on a second subnet behind a router
     * namespace ({@code NAME-router}): hosts {@code hosts+1 .. hosts+routed} at 198.19.254.(10+i)/24
     * and fd00:19:254::(10+i)/64. Hosts have no default route, only one to the other subnet.
     */
    public static Topology up(String name, int hosts, int routed) {
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "bad topology name '" + name + "': " + NAME.pattern());
        }
        if (hosts < 1 || routed < 0) {
            throw new IllegalArgumentException(
                    "hosts must be at least 1 and routed hosts at least 0, not "
                            + hosts
                            + ", "
                            + routed);
        }
        Path script = script();
        Result up;
        try {
            up = run(script, "up", name, Integer.toString(hosts), Integer.toString(routed));
        } catch (RuntimeException e) {
            run(script, "down", name); // killed half way: its own cleanup did not run
            throw e;
        }
        if (up.exit() == EXIT_EXISTS) {
            // Somebody else's topology: it must stay.
            throw new IllegalStateException("topology " + name + " already exists: " + up);
        }
        if (up.exit() != 0) {
            run(script, "down", name); // the script cleans up after itself; make sure
            throw new IllegalStateException(
                    "topology.sh up " + name + " " + hosts + " failed: " + up);
        }
        List<Host> parsedHosts = new ArrayList<>();
        Db parsedDb = null;
        for (String line : up.stdout().split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            Matcher m = LINE.matcher(line.strip());
            if (!m.matches()) {
                run(script, "down", name);
                throw new IllegalStateException(
                        "topology.sh up printed an unexpected line '" + line + "': " + up);
            }
            if (m.group(2) != null) {
                parsedHosts.add(
                        new Host(Integer.parseInt(m.group(2)), m.group(3), m.group(4), m.group(6)));
            } else {
                parsedDb = new Db(m.group(3), m.group(4));
            }
        }
        if (parsedHosts.size() != hosts + routed || parsedDb == null) {
            run(script, "down", name);
            throw new IllegalStateException(
                    "topology.sh up printed "
                            + parsedHosts.size()
                            + " hosts"
                            + (parsedDb == null ? " and no db" : "")
                            + ", expected "
                            + (hosts + routed)
                            + ": "
                            + up);
        }
        Topology topology = new Topology(name, script, parsedHosts, parsedDb);
        Runtime.getRuntime().addShutdownHook(topology.shutdownHook);
        return topology;
    }

    /** A fresh topology name: {@code cadc} and four random characters. */
    public static String randomName() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        SecureRandom random = new SecureRandom();
        StringBuilder name = new StringBuilder("cadc");
        for (int i = 0; i < 4; i++) {
            name.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return name.toString();
    }

    /** Whether topologies can be made here: root, iproute2 and the script. */
    public static boolean supported() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        try {
            script();
            Process ip =
                    new ProcessBuilder("ip", "-V")
                            .redirectErrorStream(true)
                            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                            .start();
            return ip.waitFor(10, TimeUnit.SECONDS) && ip.exitValue() == 0;
        } catch (IOException | IllegalStateException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The script: {@value #SCRIPT_PROPERTY}, else {@code ../scripts/topology.sh} from the module directory. */
    public static Path script() {
        String property = System.getProperty(SCRIPT_PROPERTY);
        Path cwd = Path.of("").toAbsolutePath();
        List<Path> candidates =
                property != null && !property.isBlank()
                        ? List.of(Path.of(property))
                        : List.of(
                                cwd.resolve("../scripts/topology.sh"),
                                cwd.resolve("scripts/topology.sh"));
        for (Path candidate : candidates) {
            if (Files.isRegularFile(candidate)) {
                return candidate.toAbsolutePath().normalize();
            }
        }
        throw new IllegalStateException(
                "scripts/topology.sh not found (looked at " + candidates + ")");
    }

    public String name() {
        return name;
    }

    public List<Host> hosts() {
        return hosts;
    }

    /** Host {@code index}, 1-based like its name. */
    public Host host(int index) {
        if (index < 1 || index > hosts.size()) {
            throw new IllegalArgumentException(
                    "no host " + index + " (hosts 1.." + hosts.size() + ")");
        }
        return hosts.get(index - 1);
    }

    public Db db() {
        return db;
    }

    /** The fabric namespace (holds the bridge br0 and the fabric ends of the veths). */
    public String fabricNetns() {
        return name + "-fabric";
    }

    /** Cuts each member off the fabric (its eth0 keeps its carrier and address; frames go nowhere). */
    public void partition(Member... members) {
        cut("partition", members);
    }

    /** Puts each member back on the fabric. */
    public void heal(Member... members) {
        cut("heal", members);
    }

    /** Starts {@code command} in the member's namespace, output piped; {@link #close()} stops it. */
    public Process exec(Member member, String... command) {
        return exec(member, List.of(command), builder -> {});
    }

    /**
     * Starts {@code command} in the member's namespace after {@code configure} has set up the
     * builder (environment, directory, redirects; not the command). The process is the command
     * itself (the script and {@code ip netns exec} exec into it), so destroying it stops the command.
     */
    public synchronized Process exec(
            Member member, List<String> command, Consumer<ProcessBuilder> configure) {
        checkOpen();
        checkMember(member);
        if (command.isEmpty()) {
            throw new IllegalArgumentException("empty command");
        }
        List<String> full =
                new ArrayList<>(
                        List.of("bash", script.toString(), "exec", name, member.name(), "--"));
        full.addAll(command);
        ProcessBuilder builder = new ProcessBuilder();
        configure.accept(builder);
        builder.command(full);
        try {
            Process process = builder.start();
            processes.add(process);
            return process;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + command + " in " + member.netns(), e);
        }
    }

    /**
     * Stops every process started with {@link #exec} (TERM, then KILL after a few seconds), then
     * removes the topology. Safe to call twice.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or about to; down is safe twice
        }
        stopProcesses();
        Result down = run(script, "down", name);
        if (down.exit() != 0) {
            throw new IllegalStateException("topology.sh down " + name + " failed: " + down);
        }
    }

    @Override
    public String toString() {
        return "Topology[" + name + ", hosts=" + hosts + ", db=" + db + "]";
    }

    private void cut(String verb, Member... members) {
        checkOpen();
        if (members.length == 0) {
            throw new IllegalArgumentException(verb + " of nothing");
        }
        List<String> args = new ArrayList<>(List.of(verb, name));
        for (Member member : members) {
            checkMember(member);
            args.add(member.name());
        }
        Result result = run(script, args.toArray(String[]::new));
        if (result.exit() != 0) {
            throw new IllegalStateException(
                    "topology.sh " + String.join(" ", args) + " failed: " + result);
        }
    }

    private void checkMember(Member member) {
        Objects.requireNonNull(member, "member");
        if (!member.equals(db) && !hosts.contains(member)) {
            throw new IllegalArgumentException(member + " is not part of " + this);
        }
    }

    private synchronized void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    private void stopProcesses() {
        List<ProcessHandle> handles = new ArrayList<>();
        synchronized (this) {
            for (Process process : processes) {
                ProcessHandle handle = process.toHandle();
                handle.descendants().forEach(handles::add);
                handles.add(handle);
            }
            processes.clear();
        }
        handles.forEach(ProcessHandle::destroy);
        long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
        for (ProcessHandle handle : handles) {
            long left = deadline - System.nanoTime();
            try {
                handle.onExit().get(Math.max(left, 0), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                handle.destroyForcibly();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                handle.destroyForcibly();
            }
        }
    }

    private void downOnShutdown() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        stopProcesses();
        Result down = run(script, "down", name);
        if (down.exit() != 0) {
            System.err.println("topology.sh down " + name + " at shutdown failed: " + down);
        }
    }

    /** Exit code and output of one script run. */
    record Result(int exit, String stdout, String stderr) {
        @Override
        public String toString() {
            return "exit "
                    + exit
                    + (stderr.isBlank() ? "" : ", stderr: " + stderr.strip())
                    + (stdout.isBlank() ? "" : ", stdout: " + stdout.strip());
        }
    }

    static Result run(Path script, String... args) {
        List<String> command = new ArrayList<>(List.of("bash", script.toString()));
        command.addAll(List.of(args));
        Process process;
        try {
            process =
                    new ProcessBuilder(command)
                            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                            .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command, e);
        }
        CompletableFuture<String> stdout = Streams.readAll(process.getInputStream());
        CompletableFuture<String> stderr = Streams.readAll(process.getErrorStream());
        try {
            if (!process.waitFor(SCRIPT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException(
                        command + " did not finish within " + SCRIPT_TIMEOUT);
            }
            return new Result(
                    process.exitValue(),
                    stdout.get(5, TimeUnit.SECONDS),
                    stderr.get(5, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + command, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot read the output of " + command, e);
        }
    }
}
