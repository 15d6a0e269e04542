package io.cadastre.testcri;

import io.cadastre.testcri.v1.PodSandbox;
import io.cadastre.testcri.v1.RuntimeCondition;
import io.cadastre.testsupport.LogFile;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * A private containerd (Debian 12's 1.6.20) with its CRI plugin, for tests and benchmarks that
 * need kubelet's path to a CNI plugin: root, state, gRPC socket, opt directory and CNI
 * directories all under one directory of the caller's, so that it shares nothing with a
 * containerd of the host or of another test. Started as a child process and stopped by its PID.
 *
 * <p>Settings it needs on these machines (issue 14): {@code restrict_oom_score_adj} (no
 * CAP_SYS_RESOURCE here: runc fails without it), {@code netns_mounts_under_state_dir} (the pods'
 * network namespaces are bind-mounted under the private state directory, not {@code /var/run/netns}),
 * the {@code overlayfs} snapshotter, and {@code sandbox_image} naming {@link PauseImage}, which
 * {@link #start} imports ({@code ctr -n k8s.io images import}; there is no registry). The CNI
 * plugins are looked up in {@code cniBinDir} and the network configurations read from
 * {@code cniConfDir}, at most {@code maxConfNum} of them in name order (containerd's
 * {@code max_conf_num}: more than one gives a pod one interface per configuration, eth0, eth1, ...).
 *
 * <p>{@link #close()} leaves nothing behind, also after a failure or a {@link #kill()}: it stops and
 * removes the sandboxes still known to a live containerd (through CRI, so CNI DEL runs: close
 * this before the CNI plugin's backend), stops containerd, kills by PID the container processes
 * and shims still running under its state directory, unmounts whatever is mounted under its
 * directory (root file systems, {@code /dev/shm} mounts, network namespaces) and removes the
 * directory.
 */
public final class Containerd implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final Path dir;
    private final Path config;

    /** The network namespace (a name under /var/run/netns) containerd runs in; null: the test's own. */
    private final String netns;

    private Process process;
    private CriClient cri;

    private Containerd(Path dir, String netns) {
        this.dir = dir;
        this.config = dir.resolve("config.toml");
        this.netns = netns;
    }

    /**
     * Writes the configuration, starts containerd, imports {@link PauseImage} and waits until the
     * runtime reports {@link CriClient#RUNTIME_READY} (not {@link CriClient#NETWORK_READY}: that
     * needs a network configuration, see {@link #awaitNetworkReady}). On failure everything
     * started is removed again before the exception is thrown.
     *
     * @param dir an empty directory of the caller's (an absolute path of at most ~60 bytes: the
     *     gRPC socket's path must fit in sun_path)
     * @param cniBinDir the CNI plugins containerd may exec (loopback among them: it runs it for lo)
     * @param cniConfDir the network configurations
     * @param maxConfNum how many configurations give each pod an interface (1 for eth0 only)
     * @throws IOException when containerd does not start or the image cannot be imported (with
     *     the tail of containerd's log)
     */
    public static Containerd start(Path dir, Path cniBinDir, Path cniConfDir, int maxConfNum)
            throws IOException {
        return start(dir, cniBinDir, cniConfDir, maxConfNum, Map.of());
    }

    /**
     * As {@link #start(Path, Path, Path, int)}, with further runtime handlers (runc, as the
     * default one) that each take their pods' network from a conf dir of their own (containerd's
     * per-runtime {@code cni_conf_dir}, one configuration): a sandbox run with
     * {@code runtime_handler} NAME (a Kubernetes RuntimeClass) gets NAME's network. Their
     * configurations must be in place before the start: containerd loads them then.
     *
     * @param handlerConfDirs handler name (lower-case letters, digits, '-') to its CNI conf dir
     */
    public static Containerd start(
            Path dir,
            Path cniBinDir,
            Path cniConfDir,
            int maxConfNum,
            Map<String, Path> handlerConfDirs)
            throws IOException {
        return start(dir, cniBinDir, cniConfDir, maxConfNum, handlerConfDirs, null);
    }

    /**
     * As {@link #start(Path, Path, Path, int)}, with containerd in the network namespace
     * {@code netns} (a name under {@code /var/run/netns}: a test host's, Topology), so that the
     * host-network pods it runs are in that host's network as a node's are in the node's, and
     * their ports and routes are the host's, not the machine's. Only the network namespace
     * changes ({@code nsenter --net}): containerd keeps the machine's mounts.
     */
    public static Containerd startIn(
            String netns, Path dir, Path cniBinDir, Path cniConfDir, int maxConfNum)
            throws IOException {
        if (!netns.matches("[A-Za-z0-9][A-Za-z0-9_.-]*")) {
            throw new IllegalArgumentException("netns name " + netns);
        }
        return start(dir, cniBinDir, cniConfDir, maxConfNum, Map.of(), netns);
    }

    private static Containerd start(
            Path dir,
            Path cniBinDir,
            Path cniConfDir,
            int maxConfNum,
            Map<String, Path> handlerConfDirs,
            String netns)
            throws IOException {
        Containerd containerd = new Containerd(dir.toAbsolutePath(), netns);
        try {
            Files.createDirectories(containerd.dir);
            StringBuilder toml =
                    new StringBuilder(
                            containerd.configToml(
                                    cniBinDir.toAbsolutePath(),
                                    cniConfDir.toAbsolutePath(),
                                    maxConfNum));
            for (Map.Entry<String, Path> h : new TreeMap<>(handlerConfDirs).entrySet()) {
                if (!h.getKey().matches("[a-z0-9][a-z0-9-]*")) {
                    throw new IllegalArgumentException("runtime handler name " + h.getKey());
                }
                toml.append(
                        "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes."
                                + h.getKey()
                                + "]\n"
                                + "    runtime_type = \"io.containerd.runc.v2\"\n"
                                + "    cni_conf_dir = \""
                                + h.getValue().toAbsolutePath()
                                + "\"\n"
                                + "    cni_max_conf_num = 1\n");
            }
            Files.writeString(containerd.config, toml);
            containerd.launch();
            Path archive = containerd.dir.resolve("pause.tar");
            PauseImage.write(PauseImage.BUSYBOX, archive);
            containerd.importImage(archive);
            return containerd;
        } catch (IOException | RuntimeException e) {
            try {
                containerd.close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    private String configToml(Path cniBinDir, Path cniConfDir, int maxConfNum) {
        return """
                version = 2
                root = "%1$s/root"
                state = "%1$s/state"
                disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
                [grpc]
                  address = "%1$s/containerd.sock"
                [ttrpc]
                  address = "%1$s/containerd.sock.ttrpc"
                [plugins."io.containerd.internal.v1.opt"]
                  path = "%1$s/opt"
                [plugins."io.containerd.grpc.v1.cri"]
                  sandbox_image = "%2$s"
                  restrict_oom_score_adj = true
                  netns_mounts_under_state_dir = true
                  [plugins."io.containerd.grpc.v1.cri".cni]
                    bin_dir = "%3$s"
                    conf_dir = "%4$s"
                    max_conf_num = %5$d
                  [plugins."io.containerd.grpc.v1.cri".containerd]
                    snapshotter = "overlayfs"
                  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
                    runtime_type = "io.containerd.runc.v2"
                """
                .formatted(dir, PauseImage.NAME, cniBinDir, cniConfDir, maxConfNum);
    }

    /** @return containerd's gRPC socket (the CRI endpoint kubelet is given) */
    public Path socket() {
        return dir.resolve("containerd.sock");
    }

    /** @return containerd's state directory (the pods' network namespaces are under it) */
    public Path stateDir() {
        return dir.resolve("state");
    }

    /**
     * @return where this containerd bind-mounts the pods' network namespaces (the {@code CNI_NETNS}
     *     paths; a node's {@code /var/run/netns}): its CRI plugin's state directory's {@code netns}
     *     ({@code netns_mounts_under_state_dir})
     */
    public Path netnsDir() {
        return stateDir().resolve("io.containerd.grpc.v1.cri").resolve("netns");
    }

    /**
     * Imports an image archive into the CRI plugin's namespace ({@code ctr -n k8s.io images import}),
     * as an operator loads an image onto a node without a registry.
     *
     * @param archive an OCI image layout or Docker archive (tar)
     * @throws IOException with ctr's output when the import fails
     */
    public void importImage(Path archive) throws IOException {
        run(
                List.of(
                        "ctr",
                        "--address",
                        socket().toString(),
                        "-n",
                        "k8s.io",
                        "images",
                        "import",
                        archive.toString()),
                Duration.ofSeconds(120));
    }

    /** @return containerd's log, appended to across restarts */
    public Path log() {
        return dir.resolve("containerd.log");
    }

    /** @return the running containerd's PID */
    public long pid() {
        return process.pid();
    }

    /** @return whether the containerd process runs */
    public boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** @return a CRI client of this containerd (one per start; closed by {@link #kill}, {@link #stop}, {@link #close}) */
    public CriClient cri() {
        return cri;
    }

    private void launch() throws IOException {
        Files.deleteIfExists(socket());
        List<String> command = new ArrayList<>();
        if (netns != null) {
            // nsenter execs containerd: the PID stays the one this stops and kills.
            command.addAll(List.of("nsenter", "--net=/var/run/netns/" + netns));
        }
        command.addAll(List.of("containerd", "--config", config.toString()));
        process =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()))
                        .start();
        cri = new CriClient(socket(), Duration.ofSeconds(120));
        awaitCondition(CriClient.RUNTIME_READY, START_TIMEOUT);
    }

    /**
     * Waits, polling {@code Status} every 100 ms, until the runtime reports
     * {@link CriClient#NETWORK_READY} true: its CNI configuration loaded (kubelet's readiness gate
     * for pods on the pod network).
     *
     * @throws IOException with the last condition and the log's tail when it does not within the timeout
     */
    public void awaitNetworkReady(Duration timeout) throws IOException {
        awaitCondition(CriClient.NETWORK_READY, timeout);
    }

    private void awaitCondition(String type, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no answer";
        while (true) {
            if (!process.isAlive()) {
                throw new IOException(
                        "containerd exited with " + process.exitValue() + ":\n" + tail());
            }
            if (Files.exists(socket())) {
                try {
                    Optional<RuntimeCondition> c = cri.condition(type);
                    if (c.isPresent() && c.get().getStatus()) {
                        return;
                    }
                    last =
                            c.map(x -> x.getReason() + ": " + x.getMessage())
                                    .orElse(type + " not reported");
                } catch (StatusRuntimeException e) {
                    last = e.getStatus().toString();
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IOException(
                        "containerd did not report "
                                + type
                                + " within "
                                + timeout
                                + " ("
                                + last
                                + "):\n"
                                + tail());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
    }

    /**
     * SIGKILL to containerd's PID, as a crash: its shims and the pods' processes keep running (as
     * they do when containerd dies on a node), and so do the pods' networks.
     */
    public void kill() throws InterruptedException {
        closeClient();
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException(
                    "containerd " + process.pid() + " did not die on SIGKILL within 30 s");
        }
    }

    /**
     * Starts containerd again on the same configuration and directories (after {@link #kill} or
     * {@link #stop}), and waits until it reports {@link CriClient#RUNTIME_READY}: it recovers its
     * sandboxes and reconnects to their shims.
     */
    public void restart() throws IOException {
        if (isAlive()) {
            throw new IllegalStateException("containerd " + process.pid() + " still runs");
        }
        launch();
    }

    /** SIGTERM to containerd's PID, and waits up to 30 s for it to exit (SIGKILL after that). */
    public void stop() throws InterruptedException {
        closeClient();
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private void closeClient() throws InterruptedException {
        if (cri != null) {
            cri.close();
            cri = null;
        }
    }

    /** @return the last 40 lines of containerd's log */
    public String tail() {
        return LogFile.tail(log());
    }

    /**
     * Stops and removes every sandbox a live containerd still knows (best effort: failures are
     * collected), then stops containerd and removes everything it left: see the class comment.
     *
     * @throws IOException when something could not be removed (after trying everything); the
     *     first failure, with the others suppressed
     */
    @Override
    public void close() throws IOException, InterruptedException {
        List<Exception> failures = new ArrayList<>();
        if (isAlive() && cri != null) {
            try {
                for (PodSandbox sandbox : cri.listPodSandboxes()) {
                    try {
                        cri.stopPodSandbox(sandbox.getId());
                        cri.removePodSandbox(sandbox.getId());
                    } catch (RuntimeException e) {
                        failures.add(e);
                    }
                }
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
        stop();
        killLeftovers();
        try {
            unmountAll();
        } catch (IOException e) {
            failures.add(e);
        }
        try {
            deleteTree(dir);
        } catch (IOException e) {
            failures.add(e);
        }
        if (!failures.isEmpty()) {
            IOException e =
                    new IOException(
                            "cleaning up containerd in " + dir + " failed", failures.get(0));
            failures.stream().skip(1).forEach(e::addSuppressed);
            throw e;
        }
    }

    /**
     * Kills, by PID, what containerd started and left running: the containers' init processes
     * (SIGKILL to a PID namespace's init ends the namespace's other processes too), then the shims
     * ({@code init.pid} and {@code shim.pid} in the tasks' bundle directories under the state
     * directory), and any process whose command line names this containerd's socket (a shim
     * whose bundle is gone).
     */
    private void killLeftovers() throws IOException {
        List<Long> pids = new ArrayList<>();
        Path tasks = stateDir().resolve("io.containerd.runtime.v2.task");
        if (Files.isDirectory(tasks)) {
            try (Stream<Path> files = Files.walk(tasks, 3)) {
                List<Path> pidFiles =
                        files.filter(p -> p.getFileName().toString().equals("init.pid")).toList();
                pids.addAll(readPids(pidFiles));
            }
            try (Stream<Path> files = Files.walk(tasks, 3)) {
                pids.addAll(
                        readPids(
                                files.filter(p -> p.getFileName().toString().equals("shim.pid"))
                                        .toList()));
            }
        }
        String mine = socket().toString();
        commandLines()
                .forEach(
                        (pid, cmdline) -> {
                            if (cmdline.contains(mine + " ")) {
                                pids.add(pid);
                            }
                        });
        for (long pid : pids) {
            ProcessHandle.of(pid)
                    .ifPresent(
                            h -> {
                                h.destroyForcibly();
                                h.onExit()
                                        .orTimeout(10, TimeUnit.SECONDS)
                                        .exceptionally(t -> null)
                                        .join();
                            });
        }
    }

    /**
     * @return every process's command line by PID, its arguments joined by spaces (a process that
     *     ends while they are read is left out)
     */
    static Map<Long, String> commandLines() throws IOException {
        Map<Long, String> lines = new TreeMap<>();
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p :
                    procs.filter(
                                    p ->
                                            p.getFileName()
                                                    .toString()
                                                    .chars()
                                                    .allMatch(Character::isDigit))
                            .toList()) {
                try {
                    lines.put(
                            Long.parseLong(p.getFileName().toString()),
                            new String(
                                            Files.readAllBytes(p.resolve("cmdline")),
                                            StandardCharsets.UTF_8)
                                    .replace('\0', ' '));
                } catch (IOException gone) {
                    // the process ended while we looked
                }
            }
        }
        return lines;
    }

    private static List<Long> readPids(List<Path> files) {
        List<Long> pids = new ArrayList<>();
        for (Path f : files) {
            try {
                pids.add(Long.parseLong(Files.readString(f).trim()));
            } catch (IOException | NumberFormatException e) {
                // a half-written or vanished file: its process, if any, is found by its command
                // line
            }
        }
        return pids;
    }

    /** Unmounts (lazily, deepest first) every mount point under this containerd's directory. */
    private void unmountAll() throws IOException {
        List<String> mounts = new ArrayList<>();
        String prefix = dir + "/";
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String mountPoint = unescape(line.split(" ")[4]);
            if (mountPoint.startsWith(prefix)) {
                mounts.add(mountPoint);
            }
        }
        mounts.sort(Comparator.comparingInt(String::length).reversed());
        for (String m : mounts) {
            run(List.of("umount", "-l", m), Duration.ofSeconds(30));
        }
    }

    /** mountinfo escapes space, tab, newline and backslash as octal {@code \ooo}. */
    private static String unescape(String field) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length()) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** Runs a command to its end. @throws IOException with its output when it fails or times out */
    static String run(List<String> command, Duration timeout) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish in " + timeout);
            }
            if (p.exitValue() != 0) {
                throw new IOException(
                        String.join(" ", command) + " exited with " + p.exitValue() + ": " + out);
            }
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted: " + String.join(" ", command), e);
        }
    }
}
