package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;
import io.cadastre.agent.AgentMain;
import io.cadastre.agent.AgentSettings;
import io.cadastre.agent.Persistence;
import io.cadastre.testsupport.TestPki;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The ConfigMaps' settings, loaded as the agent loads its {@code --config} file
 * ({@link AgentMain#loadConfig}, {@link AgentSettings#from}: the same checks, so a pool the agent
 * would refuse fails here), every key one that the agent's application.conf defines, and the
 * files they name where the DaemonSet mounts them.
 */
class ConfigMapTest {
    /** The ConfigMap's key that holds the settings file. */
    static final String CONF_KEY = "cadastre.conf";

    /**
     * The Kubernetes settings block: the ConfigMap sets it ahead of the agent's API client (issue
     * 15's other half); while application.conf has no such block, its keys are not checked.
     */
    private static final String KUBERNETES = "cadastre.kubernetes";

    private static final String PASSWORD_KEY = "cadastre.cassandra.password-file";

    /** Where the main settings expect Cassandra's password: a key of the Secret the DaemonSet mounts. */
    static final String PASSWORD_FILE = "/etc/cadastre/cassandra/password";

    private static final String CA_KEY = "cadastre.cassandra.tls.ca-file";

    /** Where the main settings expect the CA of Cassandra's certificates (PEM): the same Secret's. */
    static final String CA_FILE = "/etc/cadastre/cassandra/ca.crt";

    /** @return the settings text of the ConfigMap in {@code dir} */
    static String settingsText(Path dir) {
        try {
            ConfigMap map = Manifests.one(Manifests.read(dir), ConfigMap.class, "cadastre-config");
            assertEquals(Set.of(CONF_KEY), map.getData().keySet());
            return map.getData().get(CONF_KEY);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * @return the ConfigMap in {@code dir} loaded by the agent's own loader (this JVM's
     *     environment), which reads the Cassandra password and CA files at once: the files the
     *     settings name ({@link #PASSWORD_FILE}, {@link #CA_FILE}, from a Secret in a pod) are
     *     replaced by test files
     */
    static Config load(Path dir) {
        try {
            Path file = Files.createTempFile("cadastre-configmap", ".conf");
            Path password = Files.createTempFile("cadastre-password", "");
            Path ca = Files.createTempFile("cadastre-ca", ".crt");
            try {
                Files.writeString(file, settingsText(dir));
                Files.writeString(password, "not-a-real-password\n");
                TestPki.writePrivate(
                        ca,
                        TestPki.pem(
                                "CERTIFICATE",
                                TestPki.authority("cassandra-ca").certificate().getEncoded()));
                Config config = ConfigFactory.parseFile(file.toFile());
                Map<String, String> forced = new HashMap<>();
                if (config.hasPath(PASSWORD_KEY)) {
                    assertEquals(PASSWORD_FILE, config.getString(PASSWORD_KEY));
                    forced.put(PASSWORD_KEY, password.toString());
                }
                if (config.hasPath(CA_KEY)) {
                    assertEquals(CA_FILE, config.getString(CA_KEY));
                    forced.put(CA_KEY, ca.toString());
                }
                return AgentMain.loadConfig(file.toFile(), ConfigFactory.parseMap(forced));
            } finally {
                Files.delete(file);
                Files.delete(password);
                Files.delete(ca);
            }
        } catch (IOException | java.security.cert.CertificateEncodingException e) {
            throw new UncheckedIOException(new IOException(e));
        }
    }

    /** @return a setting of the main ConfigMap, as the agent reads it */
    static String setting(String path) {
        return load(Manifests.DIR).getString(path);
    }

    @Test
    void theMainSettingsLoadWithTheAgentsLoader() {
        Config config = load(Manifests.DIR);
        AgentSettings settings = AgentSettings.from(config);
        assertEquals(Persistence.CASSANDRA, settings.persistence());
        assertEquals(Path.of("/host/proc/sys"), settings.procSys());
        assertEquals(
                List.of("default-ipv4", "default-ipv6"),
                settings.pools().stream().map(p -> p.name()).toList());
        assertEquals(3, config.getInt("cadastre.cassandra.replication-factor"));
        assertEquals(3, config.getStringList("cadastre.cassandra.contact-points").size());
        assertTrue(config.getBoolean("cadastre.kubernetes.enabled"));

        PodSpec pod =
                Manifests.one(readMain(), DaemonSet.class, "cadastre")
                        .getSpec()
                        .getTemplate()
                        .getSpec();
        Container agent = DaemonSetTest.container(pod, "agent");
        // Cluster TLS: the three files, in the Secret mounted for them.
        for (String key : List.of("cert-file", "key-file", "ca-file")) {
            assertSecretFile(
                    pod,
                    agent,
                    config.getString("cadastre.cluster.tls." + key),
                    "cadastre-cluster-tls");
        }
        assertSecretFile(pod, agent, PASSWORD_FILE, "cadastre-cassandra");
        // Cassandra over TLS, its CA from the same Secret.
        assertTrue(config.getBoolean("cadastre.cassandra.tls.enabled"));
        assertSecretFile(pod, agent, CA_FILE, "cadastre-cassandra");
    }

    @Test
    void theSingleNodeSettingsKeepEverythingOnTheNode() throws Exception {
        Config config = load(Manifests.SINGLE_NODE);
        AgentSettings settings = AgentSettings.from(config);
        assertEquals(Persistence.EMBEDDED, settings.persistence());
        assertTrue(
                InetAddress.getByName(config.getString("cadastre.cluster.hostname"))
                        .isLoopbackAddress(),
                "a single member needs no cluster TLS only while its port is on loopback");
        assertEquals(settings.procSys(), AgentSettings.from(load(Manifests.DIR)).procSys());
        assertEquals(AgentSettings.from(load(Manifests.DIR)).pools(), settings.pools());
    }

    @Test
    void everyKeyIsOneTheAgentDefines() throws Exception {
        Set<String> known =
                paths(
                        ConfigFactory.parseURL(AgentMain.class.getResource("/application.conf"))
                                .root());
        boolean kubernetesKnown = known.stream().anyMatch(p -> p.startsWith(KUBERNETES + "."));
        for (Path dir : List.of(Manifests.DIR, Manifests.SINGLE_NODE)) {
            List<String> unknown = new ArrayList<>();
            for (String path : paths(ConfigFactory.parseString(settingsText(dir)).root())) {
                if (!known.contains(path)
                        && (kubernetesKnown || !path.startsWith(KUBERNETES + "."))) {
                    unknown.add(path);
                }
            }
            assertEquals(List.of(), unknown, dir + ": settings the agent does not have");
        }
        // The check itself: a misspelt key is caught.
        assertTrue(
                !known.containsAll(
                        paths(ConfigFactory.parseString("cadastre.proc-sysctl = x").root())));
    }

    /** @return the paths of the leaves (values that are not objects) under {@code object} */
    private static Set<String> paths(ConfigObject object) {
        Set<String> paths = new TreeSet<>();
        collect(object, new ArrayList<>(), paths);
        return paths;
    }

    private static void collect(ConfigObject object, List<String> prefix, Set<String> paths) {
        for (Map.Entry<String, ConfigValue> e : object.entrySet()) {
            List<String> path = new ArrayList<>(prefix);
            path.add(e.getKey());
            if (e.getValue() instanceof ConfigObject child) {
                collect(child, path, paths);
            } else {
                paths.add(ConfigUtil.joinPath(path));
            }
        }
    }

    private static List<io.fabric8.kubernetes.api.model.HasMetadata> readMain() {
        try {
            return Manifests.read(Manifests.DIR);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code file} is a key of Secret {@code secret}, mounted by {@code container} (readable by root only). */
    private static void assertSecretFile(
            PodSpec pod, Container container, String file, String secret) {
        String dir = file.substring(0, file.lastIndexOf('/'));
        String mountName = DaemonSetTest.mountAt(container, dir).getName();
        Volume volume =
                pod.getVolumes().stream()
                        .filter(v -> v.getName().equals(mountName))
                        .findFirst()
                        .orElseThrow();
        assertEquals(secret, volume.getSecret().getSecretName(), file);
        assertEquals(0400, volume.getSecret().getDefaultMode(), file);
        String name = file.substring(file.lastIndexOf('/') + 1);
        if (volume.getSecret().getItems() != null && !volume.getSecret().getItems().isEmpty()) {
            assertTrue(
                    volume.getSecret().getItems().stream().anyMatch(i -> i.getPath().equals(name)),
                    file);
        }
    }
}
