package io.cadastre.dataplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HostInterfaceNameTest {
    private static final String CONTAINER =
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    @Test
    void isFifteenCharactersOfPrefixAndLowerCaseHex() {
        String name = HostInterfaceName.of("k8s-pod-network", CONTAINER, "eth0");
        assertEquals(15, name.length());
        assertTrue(name.matches("cad[0-9a-f]{12}"), name);
    }

    @Test
    void isStableAcrossCallsAndReleases() {
        // Pinned: pods created by an older agent must still be found by DEL after an upgrade.
        // Computed independently: "cad" + sha256(len32be(v) + v for each value)[:12 hex].
        assertEquals("cad5ea9f4abe219", HostInterfaceName.of("k8s-pod-network", CONTAINER, "eth0"));
        assertEquals(
                HostInterfaceName.of("n", "c", "eth0"), HostInterfaceName.of("n", "c", "eth0"));
    }

    @Test
    void differsWhenAnyValueDiffers() {
        Set<String> names = new HashSet<>();
        names.add(HostInterfaceName.of("net", CONTAINER, "eth0"));
        names.add(HostInterfaceName.of("net2", CONTAINER, "eth0"));
        names.add(HostInterfaceName.of("net", CONTAINER + "0", "eth0"));
        names.add(HostInterfaceName.of("net", CONTAINER, "eth1"));
        assertEquals(4, names.size(), names.toString());
    }

    @Test
    void joinsValuesUnambiguously() {
        assertNotEquals(
                HostInterfaceName.of("ab", "c", "eth0"), HostInterfaceName.of("a", "bc", "eth0"));
        assertNotEquals(
                HostInterfaceName.of("a", "", "beth0"), HostInterfaceName.of("a", "b", "eth0"));
    }

    @Test
    void hasNoCollisionsAmongManyContainers() {
        Set<String> names = new HashSet<>();
        for (int i = 0; i < 100_000; i++) {
            names.add(HostInterfaceName.of("net", "container-" + i, "eth0"));
        }
        assertEquals(100_000, names.size());
    }

    @Test
    void rejectsNull() {
        assertThrows(NullPointerException.class, () -> HostInterfaceName.of("net", null, "eth0"));
    }

    @Test
    void theIfbDeviceOfAHostEndSharesItsDigitsAndAnyOtherNameGetsAHash() {
        String hostEnd = HostInterfaceName.of("cadastre", "c1", "eth0");
        assertEquals("cbw" + hostEnd.substring(3), HostInterfaceName.ifbOf(hostEnd));
        String other = HostInterfaceName.ifbOf("veth0");
        assertTrue(other.matches("cbw[0-9a-f]{12}"), other);
        assertEquals(other, HostInterfaceName.ifbOf("veth0"));
    }
}
