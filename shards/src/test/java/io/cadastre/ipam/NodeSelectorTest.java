package io.cadastre.ipam;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class NodeSelectorTest {
    private static final Map<String, String> NODE =
            Map.of("zone", "a", "topology.kubernetes.io/region", "eu-1", "gpu", "");

    @ParameterizedTest(name = "{0} → {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "''|true",
                "all()|true",
                "zone=a|true",
                "zone==a|true",
                "zone = b|false",
                "zone!=b|true",
                "zone!=a|false",
                "rack!=r1|true",
                "zone in (a, b)|true",
                "zone notin (a,b)|false",
                "rack notin (r1)|true",
                "rack in (r1)|false",
                "gpu|true",
                "!gpu|false",
                "!rack|true",
                "topology.kubernetes.io/region=eu-1|true",
                "zone=a,topology.kubernetes.io/region in (eu-1,eu-2),!rack|true",
                "zone=a,rack|false"
            })
    void matchesAsKubernetesLabelSelectorsDo(String expression, boolean selected) {
        assertEquals(selected, NodeSelector.parse(expression).matches(NODE), expression);
    }

    /** One spelling for every node, so that a pool given either is the same definition. */
    @ParameterizedTest
    @ValueSource(strings = {"", "  ", "all()", " all() "})
    void everySpellingOfEveryNodeIsTheEmptySelector(String expression) {
        assertEquals("", NodeSelector.parse(expression).expression());
        assertTrue(NodeSelector.parse(expression).selectsAll());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "zone in a",
                "zone=a=b",
                "=a",
                "zone in (a",
                "zone ~ a",
                "zone=(a)",
                ",",
                "zone=a,"
            })
    void malformedSelectorsAreRefusedWithTheExpression(String expression) {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> NodeSelector.parse(expression));
        assertTrue(
                e.getMessage().contains("node selector '" + expression.trim() + "'"),
                e.getMessage());
    }
}
