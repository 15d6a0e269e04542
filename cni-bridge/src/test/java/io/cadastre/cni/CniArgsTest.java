package io.cadastre.cni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.cni.CniBackend.PodRef;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CniArgsTest {

    @Test
    void kubernetesArgs() {
        CniArgs a =
                CniArgs.parse(
                        "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;"
                                + "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=1234-5678;SOMETHING_ELSE=x");
        assertEquals(new PodRef("default", "web-0"), a.pod());
        assertEquals("abc", a.podInfraContainerId());
        assertEquals("1234-5678", a.podUid());
        assertTrue(a.ignoreUnknown());
        assertEquals(List.of(), a.ips());
    }

    @Test
    void absentOrEmptyMeansNothing() {
        assertEquals(CniArgs.NONE, CniArgs.parse(null));
        assertEquals(CniArgs.NONE, CniArgs.parse(""));
        assertEquals(new PodRef(null, null), CniArgs.NONE.pod());
    }

    @Test
    void ipListIsTrimmedAndCanonical() {
        CniArgs a = CniArgs.parse("IP=198.18.0.7, FD00:198::7 ,198.18.0.8");
        assertEquals(List.of("198.18.0.7", "fd00:198::7", "198.18.0.8"), a.ips());
    }

    @Test
    void emptyValuesAreAbsentAndTheLastRepeatWins() {
        CniArgs a = CniArgs.parse("K8S_POD_NAME=;K8S_POD_NAMESPACE=a;K8S_POD_NAMESPACE=b;IP=");
        assertNull(a.podName());
        assertEquals("b", a.podNamespace());
        assertEquals(List.of(), a.ips());
        assertFalse(a.ignoreUnknown());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "IgnoreUnknown=TRUE;FOO=bar|true",
                "FOO=bar;IgnoreUnknown=true|true",
                "IgnoreUnknown=0|false",
                "IgnoreUnknown=False|false",
            })
    void ignoreUnknownValues(String raw, boolean ignore) {
        assertEquals(ignore, CniArgs.parse(raw).ignoreUnknown());
    }

    @ParameterizedTest(name = "{0} -> code {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                // malformed: code 4 (the variable is invalid)
                "K8S_POD_NAME|4",
                "=value|4",
                "A=b=c|4",
                "K8S_POD_NAME=a;|4",
                ";K8S_POD_NAME=a|4",
                "IgnoreUnknown=yes|4",
                // unknown keys without IgnoreUnknown: code 2 (unsupported field, the key named)
                "FOO=bar|2",
                "K8S_POD_NAME=a;FOO=bar|2",
                "IgnoreUnknown=0;FOO=bar|2",
                "k8s_pod_name=a|2",
                // invalid addresses: code 7
                "IP=198.18.0.256|7",
                "IP=198.18.0.5/32|7",
                "IP=198.18.0.5,|7",
                "IP=example.com|7",
                "IgnoreUnknown=1;IP=fe80::1%eth0|7",
            })
    void invalidArgs(String raw, int code) {
        CniException e = assertThrows(CniException.class, () -> CniArgs.parse(raw));
        assertEquals(code, e.code(), e.getMessage());
    }

    @Test
    void messagesNameTheOffendingKeyButNeverAnUnknownValue() {
        String unknown =
                assertThrows(CniException.class, () -> CniArgs.parse("SECRET_TOKEN=hunter2"))
                        .getMessage();
        assertTrue(unknown.contains("\"SECRET_TOKEN\""), unknown);
        assertFalse(
                unknown.contains("hunter2"),
                "a value of an unknown key may be a secret: " + unknown);
        String malformed =
                assertThrows(CniException.class, () -> CniArgs.parse("K8S_POD_NAME=a;hunter2"))
                        .getMessage();
        assertTrue(malformed.contains("pair 2 of 2"), malformed);
        assertFalse(malformed.contains("hunter2"), malformed);
        assertTrue(
                assertThrows(CniException.class, () -> CniArgs.parse("IP=1.2.3"))
                        .getMessage()
                        .contains("\"1.2.3\""));
        assertTrue(
                assertThrows(CniException.class, () -> CniArgs.parse("A=b=c"))
                        .getMessage()
                        .contains("CNI_ARGS"));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "K8S_POD_NAME=Web_0", "K8S_POD_NAME=web-", "K8S_POD_NAME=caf\u00e9",
                        "K8S_POD_NAMESPACE=team.a",
                "K8S_POD_NAMESPACE=Team", "K8S_POD_UID=a b", "K8S_POD_INFRA_CONTAINER_ID=-x",
                        "K8S_POD_NAME=a\nb"
            })
    void kubernetesValuesOfTheWrongShapeAreRefusedWithCode4(String raw) {
        CniException e = assertThrows(CniException.class, () -> CniArgs.parse(raw));
        assertEquals(CniCodes.INVALID_ENVIRONMENT, e.code(), e.getMessage());
        assertFalse(
                e.getMessage().contains("\n"),
                "escaped, never a raw line break: " + e.getMessage());
    }

    @Test
    void kubernetesValuesAreCappedAtKubernetesLengths() {
        String label = "a".repeat(63);
        assertEquals(label, CniArgs.parse("K8S_POD_NAMESPACE=" + label).podNamespace());
        assertThrows(CniException.class, () -> CniArgs.parse("K8S_POD_NAMESPACE=" + label + "a"));
        String subdomain = (label + ".").repeat(3) + "a".repeat(61);
        assertEquals(253, subdomain.length());
        assertEquals(subdomain, CniArgs.parse("K8S_POD_NAME=" + subdomain).podName());
        CniException tooLong =
                assertThrows(
                        CniException.class, () -> CniArgs.parse("K8S_POD_NAME=" + subdomain + "a"));
        assertTrue(
                tooLong.getMessage().length() < 300,
                "the value is cut in the message: " + tooLong.getMessage());
        assertEquals(
                "web-0.x",
                CniArgs.parse(
                                "K8S_POD_NAME=web-0.x;K8S_POD_UID=6f1c2e0a-1b2c-4d5e-8f90-0123456789ab")
                        .podName());
    }

    @Test
    void podPoolsAreCommaSeparatedNamesInOrder() {
        assertEquals(
                List.of("blue-v4", "blue-v6"),
                CniArgs.parse("CADASTRE_POOLS=blue-v4, blue-v6,blue-v4").pools());
        assertEquals(List.of(), CniArgs.parse("K8S_POD_NAME=x").pools());
        CniException e =
                assertThrows(CniException.class, () -> CniArgs.parse("CADASTRE_POOLS=a,,b"));
        assertEquals(CniCodes.INVALID_NETWORK_CONFIG, e.code());
    }
}
