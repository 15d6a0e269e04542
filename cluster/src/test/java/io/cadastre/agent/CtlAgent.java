package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlOutput.Run;
import io.cadastre.ctl.Cadastrectl;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.TestNetns;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A real agent for cadastrectl's end-to-end tests, and the pods made on it: the agent a child
 * process on the embedded journal in a directory of its own; cadastrectl run in-process (its own
 * entry point and picocli command line, output captured) against the agent's admin API; pods
 * ADDed and DELeted through the real plugin in real network namespaces (root), as a runtime does
 * for pod {@code e2e/NAME} on network {@link #network}.
 *
 * <p>{@link #close()} DELs every pod an ADD was tried for and not DELeted yet (a runtime DELs
 * after a failed ADD too), removes every namespace, stops the agent and removes its directory,
 * each step also when one before failed.
 */
final class CtlAgent implements AutoCloseable {
    /** A live pod: its netns, container ID, network, and the addresses its ADD was given. */
    record Pod(
            TestNetns ns, String container, String name, String network, List<String> addresses) {
        String handle() {
            return network + "." + container;
        }

        String v4() {
            return family(false);
        }

        String v6() {
            return family(true);
        }

        private String family(boolean v6) {
            return addresses.stream()
                    .filter(a -> a.contains(":") == v6)
                    .findFirst()
                    .orElseThrow(
                            () ->
                                    new AssertionError(
                                            "pod "
                                                    + name
                                                    + " has no IPv"
                                                    + (v6 ? 6 : 4)
                                                    + " address: "
                                                    + addresses));
        }
    }

    final String node;
    final String network;

    /** The admin API's base URL; a {@link #restart()} binds another port. */
    volatile String adminUrl;

    private final Path dir;
    private final AgentProcess agent;
    private final List<TestNetns> namespaces = new ArrayList<>();

    /** ADDs tried and not DELeted yet, as pods (no addresses when the ADD failed). */
    private final List<Pod> added = new ArrayList<>();

    private CtlAgent(Path dir, AgentProcess agent, String node, String network, String adminUrl) {
        this.dir = dir;
        this.agent = agent;
        this.node = node;
        this.network = network;
        this.adminUrl = adminUrl;
    }

    /** What a test does to the agent's directory before the agent starts in it. */
    interface Setup {
        void prepare(Path dir) throws Exception;
    }

    /**
     * Starts an agent with the configuration and waits for its admin API; when it does not start,
     * kills it and removes its directory before throwing.
     */
    static CtlAgent start(String node, String network, String config) throws Exception {
        return start(node, network, config, dir -> {});
    }

    /**
     * As {@link #start(String, String, String)}, after {@code setup} has prepared the agent's
     * directory (its data directory will be {@code dir/data}).
     */
    static CtlAgent start(String node, String network, String config, Setup setup)
            throws Exception {
        Path dir = Files.createTempDirectory("cad-ctl");
        AgentProcess agent = new AgentProcess(dir, node, config);
        try {
            setup.prepare(dir);
            agent.start();
            return new CtlAgent(dir, agent, node, network, agent.adminUrl());
        } catch (Exception | AssertionError e) {
            try {
                agent.close();
            } finally {
                CniEndToEndTest.deleteTree(dir);
            }
            throw e;
        }
    }

    /** @return the agent's CNI socket */
    Path socket() {
        return agent.socket();
    }

    /** @return the agent's PID */
    long pid() {
        return agent.pid();
    }

    /** SIGKILL to the agent's PID, as a crash: no shutdown hook runs, its socket file stays. */
    void kill() throws InterruptedException {
        agent.kill();
    }

    /** Starts the agent again on the same data directory and waits for its socket and admin API (a new port). */
    void restart() throws IOException {
        agent.start();
        adminUrl = agent.adminUrl();
    }

    /** @return the admin API's token file, which the agent generated in its data directory */
    Path adminTokenFile() {
        return agent.adminTokenFile();
    }

    /** @return the agent's data directory */
    Path dataDir() {
        return agent.dataDir();
    }

    /** @return the agent's log */
    Path log() {
        return agent.log();
    }

    /**
     * Runs cadastrectl against the agent's admin API, in this process, with its token file as
     * the agent's own ({@code /var/lib/cadastre/admin.token} for a real cadastrectl run as root)
     * and otherwise an empty environment.
     */
    Run ctl(String... args) {
        return ctl(adminUrl, agent.adminTokenFile(), args);
    }

    /**
     * Runs cadastrectl in this process against the admin API at {@code adminUrl}, with
     * {@code tokenFile} as its default token file and otherwise an empty environment.
     */
    static Run ctl(String adminUrl, Path tokenFile, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String[] withServer =
                Stream.concat(Stream.of("--server", adminUrl), Stream.of(args))
                        .toArray(String[]::new);
        int code =
                Cadastrectl.execute(
                        Map.of(),
                        tokenFile,
                        new PrintWriter(out, true),
                        new PrintWriter(err, true),
                        withServer);
        return new Run(code, out.toString(), err.toString());
    }

    /**
     * ADD through the real plugin, in a namespace of its own, which must succeed.
     *
     * @param pools the netconf's {@code ipam.pools}; none for the agent's choice
     */
    Pod addPod(String name, String... pools) throws Exception {
        Result add = tryAdd(name, pools);
        assertEquals(0, add.exit(), add.toString());
        return added.get(added.size() - 1);
    }

    /**
     * ADD through the real plugin, in a namespace of its own; the pod, when made, is live as
     * {@link #lastPod()} until {@link #del} or {@link #close()}.
     *
     * @param pools the netconf's {@code ipam.pools}; none for the agent's choice
     * @return the plugin's result or error
     */
    Result tryAdd(String name, String... pools) throws Exception {
        TestNetns ns = TestNetns.create();
        namespaces.add(ns);
        String container = CniEndToEndTest.container();
        Map<String, String> env = CniExec.env("ADD", container, ns.path(), "eth0");
        env.put("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=" + name);
        Result add = CniExec.run(env, netconf(pools));
        List<String> addresses = new ArrayList<>();
        if (add.exit() == 0) {
            for (JsonNode ip : add.json().path("ips")) {
                addresses.add(ip.path("address").asText().split("/")[0]);
            }
        }
        added.add(new Pod(ns, container, name, network, List.copyOf(addresses)));
        return add;
    }

    /** @return the pod of the last {@link #tryAdd} */
    Pod lastPod() {
        return added.get(added.size() - 1);
    }

    /** DEL through the real plugin, which must succeed. */
    void del(Pod pod) throws Exception {
        Result del =
                CniExec.run(
                        CniExec.env("DEL", pod.container(), pod.ns().path(), "eth0"), netconf());
        assertEquals(0, del.exit(), del.toString());
        added.remove(pod);
    }

    /** DELs every pod an ADD was tried for and not DELeted yet, each even when one before failed. */
    void delAll() throws Exception {
        each(List.copyOf(added), this::del);
    }

    /** @return the netconf ADDs through {@link #tryAdd} use: this network, the agent's socket, {@code ipam.pools} */
    String netconf(String... pools) {
        String names =
                Stream.of(pools)
                        .map(p -> "\"" + p + "\"")
                        .reduce((a, b) -> a + "," + b)
                        .orElse(null);
        return "{\"cniVersion\":\"1.1.0\",\"name\":\""
                + network
                + "\",\"type\":\"cadastre\",\"agentSocket\":\""
                + agent.socket()
                + "\",\"ipam\":{"
                + (names == null ? "" : "\"pools\":[" + names + "]")
                + "}}";
    }

    /**
     * DELs every pod still added while the agent runs, then removes every namespace, stops the
     * agent (SIGTERM: exit 143), removes its directory; each step also when one before failed.
     */
    @Override
    public void close() throws Exception {
        try {
            delAll();
        } finally {
            try {
                each(namespaces, TestNetns::close);
            } finally {
                try {
                    assertEquals(143, agent.stop(), "agent exit code on SIGTERM");
                } finally {
                    agent.close();
                    CniEndToEndTest.deleteTree(dir);
                }
            }
        }
    }

    private interface Step<T> {
        void run(T item) throws Exception;
    }

    /** Runs the step on every item, each even when one before failed; the first failure is thrown. */
    private static <T> void each(List<T> items, Step<T> step) throws Exception {
        Throwable first = null;
        for (T item : items) {
            try {
                step.run(item);
            } catch (Exception | AssertionError e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first instanceof Exception e) {
            throw e;
        }
        if (first != null) {
            throw (AssertionError) first;
        }
    }
}
