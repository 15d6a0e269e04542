package io.cadastre.deploy;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The manifests under {@code deploy/kubernetes}, read into fabric8's Kubernetes model classes. No
 * Kubernetes API server runs on these machines, so this parse stands in for the server's own
 * validation of field names: the model classes keep fields they do not know in
 * {@code additionalProperties} instead of failing, so {@link #parse} refuses any object in the
 * tree that has some ({@link #unknownFields}), as well as any kind not listed in {@link #TYPES}.
 */
final class Manifests {
    /** The folder {@code kubectl apply -f} is given. */
    static final Path DIR = Path.of(System.getProperty("cadastre.manifests", "kubernetes"));

    /** The single-node variant, applied over it. */
    static final Path SINGLE_NODE = DIR.resolve("single-node");

    /** The kinds the manifests may hold, by {@code apiVersion/kind}. */
    static final Map<String, Class<? extends HasMetadata>> TYPES =
            Map.of(
                    "v1/Namespace", Namespace.class,
                    "v1/ServiceAccount", ServiceAccount.class,
                    "v1/ConfigMap", ConfigMap.class,
                    "apps/v1/DaemonSet", DaemonSet.class,
                    "rbac.authorization.k8s.io/v1/ClusterRole", ClusterRole.class,
                    "rbac.authorization.k8s.io/v1/ClusterRoleBinding", ClusterRoleBinding.class);

    private static final ObjectMapper YAML =
            new ObjectMapper(new YAMLFactory())
                    .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private Manifests() {}

    /** @return the YAML files directly in {@code dir}, by name (the order {@code kubectl apply -f dir} takes) */
    static List<Path> files(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".yaml"))
                    .sorted()
                    .toList();
        }
    }

    /** @return every object of every YAML file directly in {@code dir}, in order */
    static List<HasMetadata> read(Path dir) throws IOException {
        List<HasMetadata> objects = new ArrayList<>();
        for (Path file : files(dir)) {
            objects.addAll(parse(Files.readString(file), file.toString()));
        }
        return objects;
    }

    /**
     * @param yaml one or more YAML documents ({@code ---} between them)
     * @param origin what to name in errors (a file)
     * @return the objects, each as its model class
     * @throws IllegalArgumentException for an unknown kind, a field no model class has, or YAML
     *     that does not fit the model (a string where a number goes, ...)
     */
    static List<HasMetadata> parse(String yaml, String origin) throws IOException {
        List<HasMetadata> objects = new ArrayList<>();
        for (JsonNode doc : YAML.readerFor(JsonNode.class).<JsonNode>readValues(yaml).readAll()) {
            if (doc == null || doc.isNull() || doc.isMissingNode()) {
                continue;
            }
            String type = doc.path("apiVersion").asText() + "/" + doc.path("kind").asText();
            Class<? extends HasMetadata> model = TYPES.get(type);
            if (model == null) {
                throw new IllegalArgumentException(origin + ": no model for " + type);
            }
            HasMetadata object;
            try {
                object = YAML.treeToValue(doc, model);
            } catch (IOException e) {
                throw new IllegalArgumentException(origin + ": " + type + ": " + e.getMessage(), e);
            }
            List<String> unknown =
                    unknownFields(object, type + " " + object.getMetadata().getName());
            if (!unknown.isEmpty()) {
                throw new IllegalArgumentException(origin + ": unknown fields " + unknown);
            }
            objects.add(object);
        }
        return objects;
    }

    /** @return the one object of {@code type} named {@code name} among {@code objects} */
    static <T extends HasMetadata> T one(List<HasMetadata> objects, Class<T> type, String name) {
        List<T> found =
                objects.stream()
                        .filter(type::isInstance)
                        .map(type::cast)
                        .filter(o -> name.equals(o.getMetadata().getName()))
                        .toList();
        if (found.size() != 1) {
            throw new AssertionError(found.size() + " " + type.getSimpleName() + " named " + name);
        }
        return found.get(0);
    }

    /**
     * @return the paths (e.g. {@code DaemonSet x.spec.template.hostNetwrok}) of the fields that
     *     some model object in the tree under {@code model} kept as additional properties
     */
    static List<String> unknownFields(Object model, String path) {
        List<String> unknown = new ArrayList<>();
        walk(model, path, unknown);
        return unknown;
    }

    private static void walk(Object value, String path, List<String> unknown) {
        if (value instanceof Collection<?> list) {
            int i = 0;
            for (Object item : list) {
                walk(item, path + "[" + i++ + "]", unknown);
            }
            return;
        }
        if (value instanceof Map<?, ?> map) {
            map.forEach((k, v) -> walk(v, path + "[" + k + "]", unknown));
            return;
        }
        if (value == null
                || !value.getClass().getName().startsWith("io.fabric8.kubernetes.api.model")) {
            return;
        }
        for (Method getter : value.getClass().getMethods()) {
            if (getter.getParameterCount() != 0
                    || Modifier.isStatic(getter.getModifiers())
                    || !getter.getName().startsWith("get")
                    || getter.getName().equals("getClass")) {
                continue;
            }
            Object child;
            try {
                child = getter.invoke(value);
            } catch (IllegalAccessException | InvocationTargetException e) {
                throw new IllegalStateException(path + "." + getter.getName(), e);
            }
            if (getter.getName().equals("getAdditionalProperties")) {
                if (child instanceof Map<?, ?> extra) {
                    extra.keySet().forEach(k -> unknown.add(path + "." + k));
                }
            } else {
                String name = getter.getName().substring(3);
                walk(
                        child,
                        path + "." + Character.toLowerCase(name.charAt(0)) + name.substring(1),
                        unknown);
            }
        }
    }
}
