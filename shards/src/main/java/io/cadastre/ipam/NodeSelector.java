package io.cadastre.ipam;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which nodes a pool serves, as a Kubernetes label selector over the node's labels (the equality-
 * and set-based syntax of {@code kubectl get -l}): requirements separated by commas, all of which
 * must hold.
 *
 * <ul>
 *   <li>{@code key=value}, {@code key==value}: the label is present with that value;
 *   <li>{@code key!=value}: the label is absent or has another value;
 *   <li>{@code key in (a,b)}: present with one of the values; {@code key notin (a,b)}: absent or
 *       none of them;
 *   <li>{@code key}: present; {@code !key}: absent.
 * </ul>
 * The empty selector and {@code all()} (Calico's spelling) select every node. Keys are label keys
 * ({@code [prefix/]name}, e.g. {@code topology.kubernetes.io/zone}); values are label values.
 */
public final class NodeSelector {
    /** Selects every node. */
    public static final NodeSelector ALL = new NodeSelector("", List.of());

    private static final String KEY =
            "(?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
    private static final String VALUE = "(?:[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?";
    private static final Pattern EQUALITY =
            Pattern.compile("(" + KEY + ")\\s*(==|=|!=)\\s*(" + VALUE + ")");
    private static final Pattern SET =
            Pattern.compile("(" + KEY + ")\\s+(in|notin)\\s*\\(([^()]*)\\)");
    private static final Pattern EXISTS = Pattern.compile("(!)?\\s*(" + KEY + ")");
    private static final Pattern LABEL_VALUE = Pattern.compile(VALUE);
    private static final Pattern LABEL_KEY = Pattern.compile(KEY);

    private enum Operator {
        EQUALS,
        NOT_EQUALS,
        IN,
        NOT_IN,
        EXISTS,
        DOES_NOT_EXIST
    }

    private record Requirement(String key, Operator operator, Set<String> values) {
        boolean matches(Map<String, String> labels) {
            String value = labels.get(key);
            return switch (operator) {
                case EQUALS, IN -> value != null && values.contains(value);
                case NOT_EQUALS, NOT_IN -> value == null || !values.contains(value);
                case EXISTS -> value != null;
                case DOES_NOT_EXIST -> value == null;
            };
        }
    }

    private final String expression;
    private final List<Requirement> requirements;

    private NodeSelector(String expression, List<Requirement> requirements) {
        this.expression = expression;
        this.requirements = requirements;
    }

    /**
     * @param expression the selector; {@code null}, blank or {@code all()} select every node
     * @throws IllegalArgumentException naming the requirement that does not parse
     */
    public static NodeSelector parse(String expression) {
        String text = expression == null ? "" : expression.trim();
        if (text.isEmpty() || text.equals("all()")) {
            return ALL;
        }
        List<Requirement> requirements = new ArrayList<>();
        for (String part : splitTopLevel(text)) {
            requirements.add(requirement(part.trim(), text));
        }
        return new NodeSelector(text, List.copyOf(requirements));
    }

    /** @return whether a node with these labels is selected */
    public boolean matches(Map<String, String> labels) {
        return requirements.stream().allMatch(r -> r.matches(labels));
    }

    /** @return whether every node is selected */
    public boolean selectsAll() {
        return requirements.isEmpty();
    }

    /** @return the expression as given, trimmed ({@code ""} for every node) */
    public String expression() {
        return expression;
    }

    /** @return whether the text is a valid label key ({@code [prefix/]name}) */
    public static boolean isLabelKey(String key) {
        return key != null && LABEL_KEY.matcher(key).matches();
    }

    /** @return whether the text is a valid label value (may be empty) */
    public static boolean isLabelValue(String value) {
        return value != null && LABEL_VALUE.matcher(value).matches();
    }

    @Override
    public String toString() {
        return expression;
    }

    /** Splits on commas outside parentheses: {@code a in (x,y),b} is two requirements. */
    private static List<String> splitTopLevel(String text) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')') {
                depth--;
            } else if (c == ',' && depth == 0) {
                parts.add(text.substring(start, i));
                start = i + 1;
            }
        }
        parts.add(text.substring(start));
        return parts;
    }

    private static Requirement requirement(String part, String whole) {
        Matcher m = SET.matcher(part);
        if (m.matches()) {
            Set<String> values = new LinkedHashSet<>();
            for (String v : m.group(m.groupCount()).split(",", -1)) {
                String value = v.trim();
                if (!LABEL_VALUE.matcher(value).matches()) {
                    throw invalid(whole, "'" + value + "' is not a label value");
                }
                values.add(value);
            }
            String key = m.group(1);
            return new Requirement(
                    key,
                    part.contains(" notin") ? Operator.NOT_IN : Operator.IN,
                    Set.copyOf(values));
        }
        m = EQUALITY.matcher(part);
        if (m.matches()) {
            String key = m.group(1);
            String op = part.substring(key.length()).trim();
            Operator operator = op.startsWith("!=") ? Operator.NOT_EQUALS : Operator.EQUALS;
            return new Requirement(key, operator, Set.of(valueOf(part)));
        }
        m = EXISTS.matcher(part);
        if (m.matches()) {
            return new Requirement(
                    m.group(2),
                    m.group(1) == null ? Operator.EXISTS : Operator.DOES_NOT_EXIST,
                    Set.of());
        }
        throw invalid(
                whole,
                "'"
                        + part
                        + "' is not a requirement (key=value, key!=value, key in (a,b), key notin (a,b), key, !key)");
    }

    /** @return the value after the operator of an equality requirement */
    private static String valueOf(String part) {
        int at = part.indexOf('=');
        return part.substring(at + 1).replaceFirst("^=", "").trim();
    }

    private static IllegalArgumentException invalid(String whole, String why) {
        return new IllegalArgumentException("node selector '" + whole + "': " + why);
    }
}
