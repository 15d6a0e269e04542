package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JavaRuntimeCheckTest {
    @ParameterizedTest
    @ValueSource(strings = {"17.0.15+6-Debian-1deb12u1", "17.0.16", "18.0.2", "21.0.7+6", "24.0.1"})
    void runtimesWithoutTheForkJoinPoolFixAreNamedWithTheFixedReleases(String version) {
        String warning =
                JavaRuntimeCheck.forkJoinPoolWarning(Runtime.Version.parse(version)).orElseThrow();
        assertTrue(
                warning.startsWith("Java " + version + " lacks the fix of JDK-8351933"), warning);
        assertTrue(warning.contains("17.0.17, 21.0.8, 25 or later"), warning);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {"17.0.17", "17.0.21.1+2-Debian-1deb12u1", "21.0.8", "25", "25.0.1+8-LTS"})
    void runtimesWithTheFixPass(String version) {
        assertEquals(
                Optional.empty(),
                JavaRuntimeCheck.forkJoinPoolWarning(Runtime.Version.parse(version)));
    }
}
