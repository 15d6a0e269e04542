package io.cadastre.agent;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.agent.CtlOutput.Run;
import io.cadastre.testcri.Containerd;
import io.cadastre.testcri.CriClient;
import io.cadastre.testcri.KubeletPods;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.PodSandboxStatus;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Command;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine;

/**
 * One Kubernetes node as kubelet sees it, for the containerd end-to-end tests: a real agent
 * ({@link CtlAgent}: embedded journal, admin API, cadastrectl), Cadastre installed by
 * {@code cadastre-agent install} into a private CNI bin and conf dir next to Debian's reference
 * {@code loopback}, {@code bridge} and {@code macvlan}, and a private containerd ({@link
 * Containerd}) whose CRI plugin calls them. Kubelet's part is the test's, through {@link #cri()}.
 *
 * <p>{@link #close()} removes containerd first (it stops and removes the sandboxes left, so CNI
 * DEL still reaches the agent), then the agent, then the directory, each also when one before failed.
 */
final class CriNode implements AutoCloseable {
    /** Debian's reference plugins (containernetworking-plugins). */
    static final Path REFERENCE_PLUGINS = Path.of("/usr/lib/cni");

    /** The network name of Cadastre's conflist. */
    static final String NETWORK = "cadpod";

    final CtlAgent agent;
    final Containerd containerd;
    final Path dir;
    final Path binDir;
    final Path confDir;
    private final Set<String> natTablesBefore;

    private CriNode(CtlAgent agent, Containerd containerd, Path dir, Set<String> natTablesBefore) {
        this.agent = agent;
        this.containerd = containerd;
        this.dir = dir;
        this.natTablesBefore = natTablesBefore;
        this.binDir = dir.resolve("cni-bin");
        this.confDir = dir.resolve("cni-conf");
    }

    /**
     * Starts the agent, installs the plugin and {@code 10-cadastre.conflist} (cniVersion 1.0.0,
     * what containerd 1.6's libcni accepts; with the reference portmap plugin chained, as a node
     * with the reference plugins in its bin dir gets it), writes the other configurations, starts containerd
     * and waits for its NetworkReady condition, as kubelet does before it runs a pod.
     *
     * @param agentConfig the agent's pools and settings
     * @param maxConfNum containerd's {@code max_conf_num}
     * @param otherConfs further conflists by file name (sorted after {@code 10-cadastre.conflist}
     *     when named {@code 20-...}); {@code %SOCKET%} in them is replaced by the agent's socket
     */
    static CriNode start(
            String node, String agentConfig, int maxConfNum, Map<String, String> otherConfs)
            throws Exception {
        Set<String> natTablesBefore = natTables();
        CtlAgent agent = CtlAgent.start(node, NETWORK, agentConfig);
        Path dir = null;
        Containerd containerd = null;
        try {
            dir = Files.createTempDirectory("cad-cri");
            Path bin = Files.createDirectories(dir.resolve("cni-bin"));
            Path conf = dir.resolve("cni-conf");
            // Before the install, which chains portmap because the bin dir holds it.
            for (String plugin : List.of("loopback", "bridge", "macvlan", "portmap")) {
                Files.copy(REFERENCE_PLUGINS.resolve(plugin), bin.resolve(plugin));
            }
            int code =
                    new CommandLine(new AgentMain())
                            .execute(
                                    "install",
                                    "--bin-dir",
                                    bin.toString(),
                                    "--conf-dir",
                                    conf.toString(),
                                    "--plugin",
                                    CniExec.PLUGIN.toString(),
                                    "--socket",
                                    agent.socket().toString(),
                                    "--network",
                                    NETWORK);
            if (code != 0) {
                throw new IllegalStateException("cadastre-agent install exited with " + code);
            }
            for (Map.Entry<String, String> e : otherConfs.entrySet()) {
                Files.writeString(
                        conf.resolve(e.getKey()),
                        e.getValue().replace("%SOCKET%", agent.socket().toString()));
            }
            containerd = Containerd.start(dir.resolve("ctrd"), bin, conf, maxConfNum);
            containerd.awaitNetworkReady(Duration.ofSeconds(30));
            return new CriNode(agent, containerd, dir, natTablesBefore);
        } catch (Exception | AssertionError e) {
            try {
                closeAll(containerd, agent, dir);
                dropPortmapTables(natTablesBefore);
            } catch (Exception | AssertionError suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** @return the CRI client of the running containerd (a new one after a restart) */
    CriClient cri() {
        return containerd.cri();
    }

    /** @return a kubelet-shaped sandbox configuration for pod {@code namespace/name}, a fresh UID */
    PodSandboxConfig pod(String namespace, String name) throws Exception {
        return KubeletPods.sandbox(namespace, name, dir.resolve("pods"));
    }

    /** @return the pod's IPs as kubelet reads them: {@code network.ip}, then {@code network.additional_ips} */
    static List<String> ips(PodSandboxStatus status) {
        List<String> ips = new ArrayList<>();
        if (!status.getNetwork().getIp().isEmpty()) {
            ips.add(status.getNetwork().getIp());
        }
        status.getNetwork().getAdditionalIpsList().forEach(ip -> ips.add(ip.getIp()));
        return ips;
    }

    /**
     * Stops and removes the sandbox if containerd runs, ignoring failures: a test's cleanup after
     * its own failure, so that the next test starts from nothing ({@link #close()} tries again).
     */
    void removeQuietly(String sandbox) {
        try {
            if (containerd.isAlive() && cri() != null) {
                cri().stopPodSandbox(sandbox);
                cri().removePodSandbox(sandbox);
            }
        } catch (RuntimeException e) {
            // the test's own failure is what matters
        }
    }

    /** @return cadastrectl against the agent: {@link CtlAgent#ctl} */
    Run ctl(String... args) {
        return agent.ctl(args);
    }

    /**
     * @return the attachments the admin API lists on this node for the pod (any interface),
     *     through {@code cadastrectl node show NODE -o json}
     */
    List<JsonNode> attachments(String namespace, String name) throws Exception {
        Run show = ctl("node", "show", agent.node, "-o", "json");
        if (show.code() != 0) {
            throw new AssertionError(show.toString());
        }
        List<JsonNode> found = new ArrayList<>();
        for (JsonNode a : show.json().path("attachmentList")) {
            if (namespace.equals(a.path("podNamespace").asText())
                    && name.equals(a.path("podName").asText())) {
                found.add(a);
            }
        }
        return found;
    }

    /** @return the number of attachments the node records */
    int attachmentCount() throws Exception {
        Run show = ctl("node", "show", agent.node, "-o", "json");
        if (show.code() != 0) {
            throw new AssertionError(show.toString());
        }
        return show.json().path("attachmentList").size();
    }

    /** @return {@code cadastrectl ipam check -o json}'s report (exit 0 or 1) */
    JsonNode ipamCheck() throws Exception {
        Run check = ctl("ipam", "check", "-o", "json");
        if (check.code() > 1) {
            throw new AssertionError(check.toString());
        }
        return check.json();
    }

    @Override
    public void close() throws Exception {
        try {
            closeAll(containerd, agent, dir);
        } finally {
            dropPortmapTables(natTablesBefore);
        }
    }

    /**
     * The reference portmap plugin writes with iptables, which (iptables-nft) keeps its chains in
     * the nftables tables {@code ip nat} and {@code ip6 nat} and leaves them after the last DEL.
     *
     * @return which of the two exist now
     */
    static Set<String> natTables() throws IOException, InterruptedException {
        Set<String> found = new HashSet<>();
        for (String family : List.of("ip", "ip6")) {
            if (Command.run(List.of("nft", "list", "table", family, "nat")).exit() == 0) {
                found.add(family);
            }
        }
        return found;
    }

    /** Deletes the nat tables that portmap made during the test: those that did not exist before it. */
    static void dropPortmapTables(Set<String> before) throws IOException, InterruptedException {
        for (String family : natTables()) {
            if (!before.contains(family)) {
                Command.run(List.of("nft", "delete", "table", family, "nat"));
            }
        }
    }

    /** containerd (when started), then the agent, then the directory (when made), each also when one before failed. */
    private static void closeAll(Containerd containerd, CtlAgent agent, Path dir) throws Exception {
        try {
            if (containerd != null) {
                containerd.close();
            }
        } finally {
            try {
                agent.close();
            } finally {
                CniEndToEndTest.deleteTree(dir);
            }
        }
    }
}
