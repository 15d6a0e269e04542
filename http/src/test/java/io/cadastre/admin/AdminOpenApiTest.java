package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The hand-written OpenAPI document describes the served API: an OpenAPI 3.0 document with exactly its paths. */
class AdminOpenApiTest {
    @Test
    void theDocumentListsExactlyTheServedPathsAndMethods() {
        assertEquals("3.0.3", OpenApi.DOCUMENT.get("openapi").asText());
        Set<String> documented = new TreeSet<>();
        OpenApi.DOCUMENT
                .get("paths")
                .properties()
                .forEach(
                        path ->
                                path.getValue()
                                        .fieldNames()
                                        .forEachRemaining(
                                                method ->
                                                        documented.add(
                                                                method.toUpperCase()
                                                                        + " "
                                                                        + path.getKey())));
        assertEquals(
                new TreeSet<>(
                        Set.of(
                                "GET /healthz",
                                "GET /readyz",
                                "GET /openapi.yaml",
                                "GET /metrics",
                                "GET /v1/pools",
                                "POST /v1/pools",
                                "DELETE /v1/pools/{name}",
                                "POST /v1/pools/{name}/disable",
                                "DELETE /v1/nodes/{name}",
                                "POST /v1/pools/{name}/enable",
                                "GET /v1/blocks",
                                "GET /v1/nodes",
                                "GET /v1/nodes/{name}",
                                "GET /v1/addresses/{address}",
                                "POST /v1/release",
                                "GET /v1/check",
                                "POST /v1/gc")),
                documented);
    }

    /**
     * What the routes enforce is what the document says: every /v1 operation needs the bearer
     * token (401), the probes, the document and the metrics need none; every operation taking a
     * body refuses malformed ones (400) and other content types (415).
     */
    @Test
    void theDocumentSaysWhichOperationsNeedTheTokenAndAJsonBody() {
        assertEquals("bearer", OpenApi.DOCUMENT.get("security").get(0).fieldNames().next());
        OpenApi.DOCUMENT
                .get("paths")
                .properties()
                .forEach(
                        path ->
                                path.getValue()
                                        .properties()
                                        .forEach(
                                                operation -> {
                                                    String what =
                                                            operation.getKey().toUpperCase()
                                                                    + " "
                                                                    + path.getKey();
                                                    com.fasterxml.jackson.databind.JsonNode
                                                            responses =
                                                                    operation
                                                                            .getValue()
                                                                            .get("responses");
                                                    if (path.getKey().startsWith("/v1/")) {
                                                        assertEquals(
                                                                false,
                                                                operation
                                                                        .getValue()
                                                                        .has("security"),
                                                                what
                                                                        + " keeps the document's bearer security");
                                                        assertEquals(
                                                                true, responses.has("401"), what);
                                                    } else {
                                                        assertEquals(
                                                                0,
                                                                operation
                                                                        .getValue()
                                                                        .get("security")
                                                                        .size(),
                                                                what + " is open");
                                                    }
                                                    boolean body =
                                                            operation.getValue().has("requestBody");
                                                    assertEquals(body, responses.has("415"), what);
                                                    if (body) {
                                                        assertEquals(
                                                                true, responses.has("400"), what);
                                                        assertEquals(
                                                                Set.of("application/json"),
                                                                Set.copyOf(
                                                                        iterable(
                                                                                operation
                                                                                        .getValue()
                                                                                        .get(
                                                                                                "requestBody")
                                                                                        .get(
                                                                                                "content")
                                                                                        .fieldNames())),
                                                                what);
                                                    }
                                                }));
    }

    private static java.util.List<String> iterable(java.util.Iterator<String> names) {
        java.util.List<String> list = new java.util.ArrayList<>();
        names.forEachRemaining(list::add);
        return list;
    }

    @Test
    void everySchemaReferenceResolves() {
        Set<String> refs = new TreeSet<>();
        collect(OpenApi.DOCUMENT, refs);
        for (String ref : refs) {
            assertEquals(false, OpenApi.DOCUMENT.at(ref.substring(1)).isMissingNode(), ref);
        }
    }

    private static void collect(com.fasterxml.jackson.databind.JsonNode node, Set<String> refs) {
        if (node.has("$ref")) {
            refs.add(node.get("$ref").asText());
        }
        node.forEach(child -> collect(child, refs));
    }
}
