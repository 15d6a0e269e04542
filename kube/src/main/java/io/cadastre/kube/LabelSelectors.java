package io.cadastre.kube;

import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import java.util.List;
import java.util.Map;

/**
 * Kubernetes label selectors ({@code metav1.LabelSelector}) matched against an object's labels,
 * as the API server's own matcher does (apimachinery {@code LabelSelectorAsSelector}): every
 * {@code matchLabels} pair and every {@code matchExpressions} requirement must hold; an empty
 * selector matches everything.
 *
 * <p>The selector comes from the API and is untrusted: a requirement the API server would have
 * refused (an unknown operator, {@code In} with no values, {@code Exists} with values) makes the
 * whole selector match nothing, so that a malformed policy never selects more than it says.
 */
final class LabelSelectors {
    private LabelSelectors() {}

    /**
     * @param selector the selector; {@code null} is the absent selector, which matches nothing (a
     *     field that is absent, not empty)
     * @param labels the object's labels; {@code null} for none
     * @return whether {@code selector} selects an object with {@code labels}
     */
    static boolean matches(LabelSelector selector, Map<String, String> labels) {
        if (selector == null) {
            return false;
        }
        Map<String, String> have = labels == null ? Map.of() : labels;
        Map<String, String> wanted = selector.getMatchLabels();
        if (wanted != null) {
            for (Map.Entry<String, String> e : wanted.entrySet()) {
                if (e.getKey() == null
                        || !java.util.Objects.equals(have.get(e.getKey()), e.getValue())) {
                    return false;
                }
            }
        }
        List<LabelSelectorRequirement> expressions = selector.getMatchExpressions();
        if (expressions != null) {
            for (LabelSelectorRequirement r : expressions) {
                if (!holds(r, have)) {
                    return false;
                }
            }
        }
        return true;
    }

    private static boolean holds(LabelSelectorRequirement r, Map<String, String> labels) {
        String key = r.getKey();
        List<String> values = r.getValues() == null ? List.of() : r.getValues();
        if (key == null || r.getOperator() == null) {
            return false;
        }
        String value = labels.get(key);
        return switch (r.getOperator()) {
            case "In" -> !values.isEmpty() && value != null && values.contains(value);
            case "NotIn" -> !values.isEmpty() && (value == null || !values.contains(value));
            case "Exists" -> values.isEmpty() && labels.containsKey(key);
            case "DoesNotExist" -> values.isEmpty() && !labels.containsKey(key);
            default -> false;
        };
    }
}
