package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Iterator;
import java.util.Set;
import java.util.TreeSet;

/** The served OpenAPI document, read as a tree, to hold the server's JSON against its schemas. */
final class OpenApi {
    static final JsonNode DOCUMENT = read();

    private OpenApi() {}

    private static JsonNode read() {
        try {
            return new YAMLMapper().readTree(AdminRoutes.openApiDocument());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JsonNode schema(String name) {
        JsonNode schema = DOCUMENT.at("/components/schemas/" + name);
        if (schema.isMissingNode()) {
            throw new AssertionError("openapi.yaml has no schema " + name);
        }
        return schema;
    }

    /** @return the property names of a schema, following $ref and allOf */
    static Set<String> properties(JsonNode schema) {
        Set<String> names = new TreeSet<>();
        if (schema.has("$ref")) {
            String ref = schema.get("$ref").asText();
            return properties(schema(ref.substring(ref.lastIndexOf('/') + 1)));
        }
        if (schema.has("allOf")) {
            schema.get("allOf").forEach(part -> names.addAll(properties(part)));
        }
        schema.path("properties").fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** Asserts that the object has exactly the schema's properties, and so do its nested objects that have schemas. */
    static void assertShape(String schemaName, JsonNode actual) {
        assertShape(schema(schemaName), actual, schemaName);
    }

    private static void assertShape(JsonNode schema, JsonNode actual, String where) {
        if (schema.has("$ref")) {
            String ref = schema.get("$ref").asText();
            assertShape(schema(ref.substring(ref.lastIndexOf('/') + 1)), actual, where);
            return;
        }
        if (actual.isNull()) {
            return;
        }
        if (actual.isArray()) {
            actual.forEach(item -> assertShape(schema.path("items"), item, where + "[]"));
            return;
        }
        if (!actual.isObject()) {
            return;
        }
        Set<String> keys = new TreeSet<>();
        actual.fieldNames().forEachRemaining(keys::add);
        assertEquals(
                properties(schema), keys, where + ": the JSON's keys differ from openapi.yaml's");
        for (Iterator<String> it = actual.fieldNames(); it.hasNext(); ) {
            String field = it.next();
            JsonNode property = propertySchema(schema, field);
            if (property != null) {
                assertShape(property, actual.get(field), where + "." + field);
            }
        }
    }

    private static JsonNode propertySchema(JsonNode schema, String field) {
        if (schema.path("properties").has(field)) {
            return schema.path("properties").get(field);
        }
        for (JsonNode part : schema.path("allOf")) {
            JsonNode resolved =
                    part.has("$ref")
                            ? schema(part.get("$ref").asText().replaceAll(".*/", ""))
                            : part;
            JsonNode found = propertySchema(resolved, field);
            if (found != null) {
                return found;
            }
        }
        return null;
    }
}
