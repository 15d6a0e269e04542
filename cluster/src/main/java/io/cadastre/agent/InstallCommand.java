package io.cadastre.agent;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cadastre-agent install}: puts the plugin executable into a CNI bin dir, under both its
 * names ({@code cadastre} and {@code cadastre-ipam}), and a network configuration list for it into
 * a CNI conf dir. Every file is written to a temporary name and renamed, so a runtime never execs
 * or reads a half-written file. Exit code 0, or 1 with a message on stderr.
 *
 * <p>Pods' {@code hostPort}s are the reference {@code portmap} plugin's, chained after Cadastre's
 * as Calico's and Flannel's conflists chain it: the runtime passes a pod's port mappings to it
 * (the {@code portMappings} capability), and it writes the DNAT rules with iptables. It is in the
 * conflist when the bin dir holds it ({@code --port-mappings auto}), since a conflist naming a
 * plugin that is not there fails every ADD.
 */
@Command(
        name = "install",
        mixinStandardHelpOptions = true,
        description = "Install the cadastre CNI plugin and a network config list.")
public final class InstallCommand implements Callable<Integer> {
    /** The reference plugin that maps pods' hostPorts. */
    static final String PORTMAP = "portmap";

    @Option(
            names = "--bin-dir",
            defaultValue = "/opt/cni/bin",
            description = "CNI bin dir (default: ${DEFAULT-VALUE}).")
    Path binDir;

    @Option(
            names = "--conf-dir",
            defaultValue = "/etc/cni/net.d",
            description = "CNI conf dir (default: ${DEFAULT-VALUE}).")
    Path confDir;

    @Option(
            names = "--plugin",
            defaultValue = "${sys:cadastre.plugin:-${env:CADASTRE_PLUGIN}}",
            required = true,
            description =
                    "The built plugin executable (default: -Dcadastre.plugin or $CADASTRE_PLUGIN).")
    Path plugin;

    @Option(
            names = "--network",
            defaultValue = "cadastre",
            description = "The network name (default: ${DEFAULT-VALUE}).")
    String network;

    @Option(
            names = "--socket",
            description =
                    "The agent's CNI socket (default: the agent configuration's cadastre.cni-socket).")
    String socket;

    @Option(
            names = "--mtu",
            defaultValue = "0",
            description = "Pod interface MTU in bytes; 0 leaves the kernel default.")
    int mtu;

    @Option(
            names = "--cni-version",
            defaultValue = "1.0.0",
            description =
                    "cniVersion of the config list (default: ${DEFAULT-VALUE}, what libcni before 1.2 - podman 4, "
                            + "containerd 1.7 - accepts; 1.1.0 adds GC and STATUS).")
    String cniVersion;

    /** Whether the conflist chains the reference portmap plugin. */
    enum PortMappings {
        auto,
        on,
        off
    }

    @Option(
            names = "--port-mappings",
            defaultValue = "auto",
            description =
                    "Chain the reference portmap plugin for pods' hostPorts: auto (when the bin dir holds it), on"
                            + " (it must), off (default: ${DEFAULT-VALUE}).")
    PortMappings portMappings;

    @Option(
            names = "--conf-name",
            defaultValue = "10-cadastre.conflist",
            description = "File name of the config list.")
    String confName;

    @Override
    public Integer call() {
        try {
            if (!Files.isRegularFile(plugin) || !Files.isExecutable(plugin)) {
                throw new IOException(
                        "--plugin "
                                + plugin
                                + " is not an executable file (build it with mvn package)");
            }
            if (!List.of("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0").contains(cniVersion)) {
                throw new IOException(
                        "--cni-version must be one of 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0");
            }
            if (mtu != 0 && (mtu < 68 || mtu > 65535)) {
                throw new IOException("--mtu must be 0 or 68-65535");
            }
            String socketPath =
                    socket != null
                            ? socket
                            : AgentMain.loadConfig(null).getString("cadastre.cni-socket");
            Files.createDirectories(binDir);
            Files.createDirectories(confDir);
            for (String name : new String[] {"cadastre", "cadastre-ipam"}) {
                Path tmp = binDir.resolve("." + name + ".tmp");
                Files.copy(plugin, tmp, StandardCopyOption.REPLACE_EXISTING);
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwxr-xr-x"));
                Files.move(
                        tmp,
                        binDir.resolve(name),
                        StandardCopyOption.REPLACE_EXISTING,
                        StandardCopyOption.ATOMIC_MOVE);
            }
            Path portmap = binDir.resolve(PORTMAP);
            boolean present = Files.isRegularFile(portmap) && Files.isExecutable(portmap);
            if (portMappings == PortMappings.on && !present) {
                throw new IOException(
                        "--port-mappings on, but "
                                + portmap
                                + " is not an executable file (install the reference CNI plugins)");
            }
            boolean chainPortmap = portMappings != PortMappings.off && present;
            Path conf = confDir.resolve(confName);
            Path tmp = confDir.resolve("." + confName + ".tmp");
            Files.writeString(tmp, confList(cniVersion, network, socketPath, mtu, chainPortmap));
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
            Files.move(
                    tmp, conf, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            System.out.println(
                    "installed "
                            + binDir.resolve("cadastre")
                            + ", "
                            + binDir.resolve("cadastre-ipam")
                            + " and "
                            + conf
                            + (chainPortmap ? " (hostPorts by " + portmap + ")" : ""));
            return 0;
        } catch (IOException | RuntimeException e) {
            System.err.println("cadastre-agent install: " + e.getMessage());
            return 1;
        }
    }

    /**
     * @param chainPortmap whether the reference portmap plugin follows, with the {@code
     *     portMappings} capability and {@code snat} (so that a pod reaches itself, and the node
     *     reaches it, through its own hostPort)
     * @return the network configuration list (CNI spec 1.1 §Section 1) for the full plugin, with
     *     the {@code bandwidth} capability (CNI conventions)
     */
    static String confList(
            String cniVersion, String network, String socketPath, int mtu, boolean chainPortmap) {
        ObjectMapper json = new ObjectMapper();
        ObjectNode list = json.createObjectNode();
        list.put("cniVersion", cniVersion);
        list.put("name", network);
        ArrayNode plugins = list.putArray("plugins");
        ObjectNode plugin = plugins.addObject();
        plugin.put("type", "cadastre");
        plugin.put("agentSocket", socketPath);
        if (mtu > 0) {
            plugin.put("mtu", mtu);
        }
        plugin.putObject("ipam");
        // The runtime then passes the pod's kubernetes.io/ingress-bandwidth and egress-bandwidth
        // annotations as runtimeConfig.bandwidth (CNI conventions), which the agent enforces.
        plugin.putObject("capabilities").put("bandwidth", true);
        if (chainPortmap) {
            ObjectNode portmap = plugins.addObject();
            portmap.put("type", PORTMAP);
            portmap.put("snat", true);
            portmap.putObject("capabilities").put("portMappings", true);
        }
        try {
            return json.writerWithDefaultPrettyPrinter().writeValueAsString(list) + "\n";
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
