package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.dataplane.HostInterfaceName;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.CniExec.Result;
import io.cadastre.testsupport.Ip;
import io.cadastre.testsupport.TestNetns;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Real runtimes and real reference plugins on top of an installed Cadastre: Debian's podman 4.3
 * on its CNI backend (libcni), and the reference {@code bridge} plugin delegating IPAM to
 * {@code cadastre-ipam}. The plugin is installed by {@code cadastre-agent install}.
 */
class RuntimesTest {
    private static final Path REFERENCE_PLUGINS = Path.of("/usr/lib/cni");
    private static Path dir;
    private static AgentProcess agent;
    private static Path binDir;
    private static Path confDir;

    @BeforeAll
    static void install() throws Exception {
        dir = Files.createTempDirectory("cad-runtimes");
        agent = new AgentProcess(dir, "runtime-node", AgentProcess.TEST_POOLS).start();
        binDir = dir.resolve("bin");
        confDir = dir.resolve("net.d");
        int code =
                new CommandLine(new AgentMain())
                        .execute(
                                "install",
                                "--bin-dir",
                                binDir.toString(),
                                "--conf-dir",
                                confDir.toString(),
                                "--plugin",
                                CniExec.PLUGIN.toString(),
                                "--socket",
                                agent.socket().toString(),
                                "--network",
                                "cadpod");
        assertEquals(0, code);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            agent.stop();
        } finally {
            agent.close();
            CniEndToEndTest.deleteTree(dir);
        }
    }

    @Test
    void installPutsBothPluginNamesAndAConfigListInPlace() throws IOException {
        assertTrue(Files.isExecutable(binDir.resolve("cadastre")));
        assertTrue(Files.isExecutable(binDir.resolve("cadastre-ipam")));
        var list = CniExec.JSON.readTree(confDir.resolve("10-cadastre.conflist").toFile());
        assertEquals("1.0.0", list.path("cniVersion").asText());
        assertEquals("cadpod", list.path("name").asText());
        assertEquals("cadastre", list.path("plugins").get(0).path("type").asText());
        assertEquals(
                agent.socket().toString(),
                list.path("plugins").get(0).path("agentSocket").asText());
        assertTrue(
                list.path("plugins").get(0).path("capabilities").path("bandwidth").asBoolean(),
                "the runtime passes a pod's bandwidth annotations");
    }

    @Test
    void theConflistChainsPortmapOnlyWhenTheBinDirHoldsIt() throws Exception {
        JsonNode without =
                CniExec.JSON.readTree(
                        InstallCommand.confList("1.0.0", "n", "/run/x.sock", 0, false));
        assertEquals(1, without.path("plugins").size());
        JsonNode with =
                CniExec.JSON.readTree(
                        InstallCommand.confList("1.0.0", "n", "/run/x.sock", 0, true));
        JsonNode portmap = with.path("plugins").get(1);
        assertEquals("portmap", portmap.path("type").asText());
        assertTrue(portmap.path("capabilities").path("portMappings").asBoolean());
        assertTrue(portmap.path("snat").asBoolean());
        Path bin = Files.createDirectories(binDir.resolveSibling("bin-portmap"));
        Path conf = binDir.resolveSibling("net.d-portmap");
        assertEquals(1, install(bin, conf, "on"), "on, and no portmap in the bin dir");
        assertEquals(0, install(bin, conf, "auto"));
        assertEquals(
                1,
                CniExec.JSON
                        .readTree(conf.resolve("10-cadastre.conflist").toFile())
                        .path("plugins")
                        .size(),
                "auto, and no portmap: Cadastre alone");
        Files.copy(REFERENCE_PLUGINS.resolve("portmap"), bin.resolve("portmap"));
        assertEquals(0, install(bin, conf, "auto"));
        assertEquals(
                "portmap",
                CniExec.JSON
                        .readTree(conf.resolve("10-cadastre.conflist").toFile())
                        .path("plugins")
                        .path(1)
                        .path("type")
                        .asText());
    }

    private static int install(Path bin, Path conf, String portMappings) {
        return new CommandLine(new AgentMain())
                .execute(
                        "install",
                        "--bin-dir",
                        bin.toString(),
                        "--conf-dir",
                        conf.toString(),
                        "--plugin",
                        CniExec.PLUGIN.toString(),
                        "--socket",
                        "/run/x.sock",
                        "--port-mappings",
                        portMappings);
    }

    @Test
    void installRefusesAMissingPlugin() {
        int code =
                new CommandLine(new AgentMain())
                        .execute(
                                "install",
                                "--bin-dir",
                                dir.resolve("x").toString(),
                                "--conf-dir",
                                dir.resolve("y").toString(),
                                "--plugin",
                                dir.resolve("absent").toString());
        assertEquals(1, code);
        assertFalse(Files.exists(dir.resolve("x").resolve("cadastre")));
    }

    @Test
    void referenceBridgePluginUsesCadastreIpam() throws Exception {
        String bridge = "cadbr" + UUID.randomUUID().toString().substring(0, 8);
        String conf =
                "{\"cniVersion\":\"1.0.0\",\"name\":\"cadbridge\",\"type\":\"bridge\",\"bridge\":\""
                        + bridge
                        + "\",\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\""
                        + agent.socket()
                        + "\",\"pools\":[\"test-ipv4\",\"test-ipv6\"]}}";
        String id = "br" + UUID.randomUUID().toString().substring(0, 8);
        try (TestNetns ns = TestNetns.create()) {
            Map<String, String> env = CniExec.env("ADD", id, ns.path(), "eth0");
            env.put("CNI_PATH", binDir + ":" + REFERENCE_PLUGINS);
            Result add = CniExec.run(REFERENCE_PLUGINS.resolve("bridge"), env, conf);
            assertEquals(0, add.exit(), add.toString());
            List<String> inNs = ns.addresses("eth0");
            assertEquals(2, inNs.size(), inNs.toString());
            assertTrue(
                    inNs.stream().anyMatch(a -> a.startsWith("198.18.") && a.endsWith("/20")),
                    inNs.toString());
            assertTrue(
                    inNs.stream().anyMatch(a -> a.startsWith("fd00:198:1::") && a.endsWith("/112")),
                    inNs.toString());

            env.put("CNI_COMMAND", "DEL");
            assertEquals(0, CniExec.run(REFERENCE_PLUGINS.resolve("bridge"), env, conf).exit());
            assertFalse(ns.hasLink("eth0"));
        } finally {
            if (TestNetns.hostHasLink(bridge)) {
                Ip.run("link", "del", bridge);
            }
        }
    }

    @Test
    void podmanContainerGetsItsAddressFromCadastre() throws Exception {
        Path rootfs = dir.resolve("rootfs");
        Files.createDirectories(rootfs.resolve("bin"));
        Files.copy(Path.of("/bin/busybox"), rootfs.resolve("bin/busybox"));
        Path containersConf = dir.resolve("containers.conf");
        Files.writeString(
                containersConf,
                "[network]\nnetwork_backend = \"cni\"\ncni_plugin_dirs = [\""
                        + binDir
                        + "\", \""
                        + REFERENCE_PLUGINS
                        + "\"]\nnetwork_config_dir = \""
                        + confDir
                        + "\"\n");
        String name = "cadtest-" + UUID.randomUUID().toString().substring(0, 8);
        // runc with the cgroupfs manager and explicit limits: what works in a container sandbox
        // with hybrid cgroups (crun refuses those).
        List<String> command =
                new ArrayList<>(
                        List.of(
                                "podman",
                                "--root",
                                dir.resolve("storage").toString(),
                                "--runroot",
                                dir.resolve("run").toString(),
                                "--runtime",
                                "runc",
                                "--cgroup-manager",
                                "cgroupfs",
                                "run",
                                "--rm",
                                "--name",
                                name,
                                "--cidfile",
                                dir.resolve(name + ".cid").toString(),
                                "--ulimit",
                                "nofile=1024:1024",
                                "--ulimit",
                                "nproc=1024:1024",
                                "--network",
                                "cadpod",
                                "--rootfs",
                                rootfs.toString(),
                                "/bin/busybox",
                                "ip",
                                "addr",
                                "show",
                                "eth0"));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("CONTAINERS_CONF", containersConf.toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "podman did not finish");
        assertEquals(0, p.exitValue(), out);
        Matcher v4 = Pattern.compile("inet (198\\.18\\.\\d+\\.\\d+)/32").matcher(out);
        assertTrue(v4.find(), out);
        assertTrue(Pattern.compile("inet6 fd00:198:1::[0-9a-f]*/128").matcher(out).find(), out);
        // podman ran DEL when the container exited: the host end is gone (or down and going).
        String containerId = Files.readString(dir.resolve(name + ".cid")).trim();
        TestNetns.awaitPairGone(HostInterfaceName.of("cadpod", containerId, "eth0"), null, null);
    }
}
