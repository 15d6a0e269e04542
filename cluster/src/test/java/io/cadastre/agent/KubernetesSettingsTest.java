package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.cadastre.kube.KubeSettings;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@code cadastre.kubernetes}: off by default, its defaults, the node name, and bad values refused by name. */
class KubernetesSettingsTest {
    private static AgentSettings settings(String forced) {
        return AgentSettings.from(AgentMain.loadConfig(null, ConfigFactory.parseString(forced)));
    }

    @Test
    void offByDefault() {
        KubeSettings k = settings("cadastre.node-name = n").kubernetes();
        assertFalse(k.enabled());
        assertEquals(KubeSettings.DISABLED, k);
    }

    @Test
    void defaultsWhenOn() {
        KubeSettings k =
                settings("cadastre.node-name = n\ncadastre.kubernetes.enabled = on").kubernetes();
        assertTrue(k.enabled());
        assertEquals("n", k.nodeName());
        assertEquals(Duration.ofSeconds(2), k.requestTimeout());
        assertEquals(Duration.ofSeconds(10), k.labelsWait());
        assertEquals(
                new KubeSettings.Bootstrap(
                        true,
                        "app.kubernetes.io/name=cadastre",
                        "cluster",
                        1,
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(1)),
                k.bootstrap());
    }

    @Test
    void theKubernetesNodeNameNamesTheIpamNode() {
        AgentSettings s = settings("cadastre.kubernetes { enabled = on, node-name = worker-1 }");
        assertEquals("worker-1", s.nodeName());
        assertEquals("worker-1", s.kubernetes().nodeName());
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                settings(
                                        "cadastre.node-name = a\ncadastre.kubernetes { enabled = on, node-name = b }"));
        assertTrue(e.getMessage().contains("cadastre.kubernetes.node-name"), e.getMessage());
    }

    @Test
    void badValuesAreRefusedByName() {
        for (String[] bad :
                new String[][] {
                    {
                        "cadastre.kubernetes.request-timeout = 0s",
                        "cadastre.kubernetes.request-timeout"
                    },
                    {
                        "cadastre.kubernetes.bootstrap.probe-interval = 0s",
                        "cadastre.kubernetes.bootstrap.probe-interval"
                    },
                    {
                        "cadastre.kubernetes.bootstrap.required-contact-points = 0",
                        "required-contact-points"
                    },
                    {
                        "cadastre.kubernetes { enabled = on, bootstrap.pod-label-selector = \"\" }",
                        "pod-label-selector"
                    }
                }) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> settings("cadastre.node-name = n\n" + bad[0]));
            assertTrue(e.getMessage().contains(bad[1]), e.getMessage());
        }
    }
}
