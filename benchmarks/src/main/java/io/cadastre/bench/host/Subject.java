package io.cadastre.bench.host;

import io.cadastre.bench.BenchContext;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * What a plugin run measures: a plugin executable with its network configuration. Cadastre and the
 * reference plugins each get an IPv4 range of their own (RFC 2544 space), and for the dual-stack
 * pair an IPv6 range too, so that the work compared is the same: one veth pair into the pod, the
 * same addresses, routes. The reference
 * plugins take CNI 1.0.0 at most, so every configuration says 1.0.0.
 *
 * @param name the subject's name in the report ({@code cadastre}, {@code bridge+host-local})
 * @param plugin the executable
 * @param netconf the network configuration (stdin)
 * @param peer whether it is a reference plugin (compared against) rather than Cadastre
 */
public record Subject(String name, Path plugin, String netconf, boolean peer) {
    /** The names of the IPv4 reference subjects of {@link #ipv4}, Cadastre's peers in a report. */
    public static final Set<String> IPV4_PEERS = Set.of("bridge+host-local", "ptp+host-local");

    /**
     * Cadastre (IPv4, from the agent's pool) and its two IPv4 peers: bridge+host-local and
     * ptp+host-local, each on a range of its own.
     *
     * @param bridgeName the reference bridge plugin's bridge (removed by the caller afterwards)
     * @param bridgeSubnet bridge+host-local's range (CIDR notation)
     * @param ptpSubnet ptp+host-local's range (CIDR notation)
     * @param dir where the host-local IPAM plugins keep their state
     */
    public static List<Subject> ipv4(
            BenchContext context,
            SingleHostAgent agent,
            String bridgeName,
            String bridgeSubnet,
            String ptpSubnet,
            Path dir) {
        return List.of(
                cadastre(context.plugin(), agent.socket()),
                bridgeHostLocal(
                        context.referencePlugins(),
                        bridgeName,
                        bridgeSubnet,
                        dir.resolve("bridge-ipam")),
                ptpHostLocal(context.referencePlugins(), ptpSubnet, dir.resolve("ptp-ipam")));
    }

    /** The Cadastre plugin, full mode (veth, /32, routes), IPv4 from the agent's IPv4 pool. */
    public static Subject cadastre(Path plugin, Path socket) {
        return new Subject(
                "cadastre",
                plugin,
                """
                {"cniVersion":"1.0.0","name":"bench-cadastre","type":"cadastre","agentSocket":"%s",\
                "ipam":{"pools":["%s"]}}"""
                        .formatted(socket, SingleHostAgent.IPV4_POOL),
                false);
    }

    /** The Cadastre plugin, dual-stack (an address from each pool): what the default configuration does. */
    public static Subject cadastreDualStack(Path plugin, Path socket) {
        return new Subject(
                "cadastre dual-stack",
                plugin,
                """
                {"cniVersion":"1.0.0","name":"bench-cadastre","type":"cadastre","agentSocket":"%s",\
                "ipam":{"pools":["%s","%s"]}}"""
                        .formatted(socket, SingleHostAgent.IPV4_POOL, SingleHostAgent.IPV6_POOL),
                false);
    }

    /** The reference bridge plugin (bridge {@code bridgeName}, the gateway on it) with host-local IPAM. */
    public static Subject bridgeHostLocal(
            Path referencePlugins, String bridgeName, String subnet, Path dataDir) {
        return new Subject(
                "bridge+host-local",
                referencePlugins.resolve("bridge"),
                """
                {"cniVersion":"1.0.0","name":"bench-bridge","type":"bridge","bridge":"%s","isGateway":true,\
                "ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"%s"}]],"dataDir":"%s"}}"""
                        .formatted(bridgeName, subnet, dataDir),
                true);
    }

    /**
     * The reference bridge plugin with host-local IPAM handing out an IPv4 and an IPv6 address (two
     * ranges), the like-for-like peer of {@link #cadastreDualStack}.
     */
    public static Subject bridgeHostLocalDualStack(
            Path referencePlugins,
            String bridgeName,
            String subnet4,
            String subnet6,
            Path dataDir) {
        return new Subject(
                "bridge+host-local dual-stack",
                referencePlugins.resolve("bridge"),
                """
                {"cniVersion":"1.0.0","name":"bench-bridge-ds","type":"bridge","bridge":"%s","isGateway":true,\
                "ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"%s"}],[{"subnet":"%s"}]],\
                "dataDir":"%s"}}"""
                        .formatted(bridgeName, subnet4, subnet6, dataDir),
                true);
    }

    /** The reference ptp plugin (a veth pair, the pod's address routed to it) with host-local IPAM. */
    public static Subject ptpHostLocal(Path referencePlugins, String subnet, Path dataDir) {
        return new Subject(
                "ptp+host-local",
                referencePlugins.resolve("ptp"),
                """
                {"cniVersion":"1.0.0","name":"bench-ptp","type":"ptp","ipMasq":false,\
                "ipam":{"type":"host-local","ranges":[[{"subnet":"%s"}]],"dataDir":"%s"}}"""
                        .formatted(subnet, dataDir),
                true);
    }
}
