package io.cadastre.admin;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.CadastreMetrics;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.IpamException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API's routes (contract v1; {@code openapi.yaml} beside this class documents them).
 * Only parses, validates and delegates: to {@link Inventory} for reads and releases, to
 * {@link PoolAdmin} for pools, to {@link NodeRemoval}, to {@link ConsistencyCheck}, to this
 * agent's {@link Ipam} for GC (counting what it released in
 * {@code cadastre_ipam_allocations_gc_reclamations_total{reason="admin-gc"}}), and to {@link
 * MetricsEndpoint} for {@code /metrics}, which is open like the probes (no token). Every {@code
 * /v1} request must carry the bearer token, on loopback too: any local user can connect there, and
 * the reads name pods and their addresses.
 *
 * <p>Every error is {@code {"error": "..."}}: 400 for malformed input (checked before anything is
 * asked, so nothing changes), 401 for a missing or wrong bearer token, 404 for an unknown pool,
 * node, path or an address in no pool, 405 for a wrong method, 409 when the state forbids the
 * change, 415 for a request body that is not {@code application/json}, 503 when an entity did not
 * answer in time, 500 for a bug (logged). Request bodies must be exactly one JSON object with only
 * the documented fields, each once: a misspelt field, a field given twice or anything after the
 * object is refused rather than ignored or resolved (last wins), since a reader that resolved it
 * otherwise (a proxy, a log, the next version) could take a release of one attachment for another.
 */
final class AdminRoutes {
    private static final Logger log = LoggerFactory.getLogger(AdminRoutes.class);
    private static final String JSON = "application/json";
    private static final String YAML = "application/yaml; charset=UTF-8";

    /** The interface name a release by handle means when it names none, as for the CLI and CNI. */
    static final String DEFAULT_IFNAME = "eth0";

    private final ObjectMapper json =
            JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    private final Inventory inventory;
    private final ConsistencyCheck check;
    private final PoolAdmin poolAdmin;
    private final NodeRemoval nodeRemoval;
    private final Ipam ipam;
    private final Supplier<Optional<String>> unreadiness;
    private final byte[] token;
    private final byte[] openApi;
    private final MetricsEndpoint metricsEndpoint;
    private final CadastreMetrics metrics;
    private final HostRoutes hostRoutes;

    /**
     * @param ipam this agent's IPAM: GC runs for its node only
     * @param unreadiness why the agent is not ready, or empty when it is
     * @param token the bearer token every /v1 request must carry
     * @param metricsEndpoint what {@code /metrics} answers
     * @param metrics where GC counts the attachments it released
     */
    AdminRoutes(
            Inventory inventory,
            Ipam ipam,
            Supplier<Optional<String>> unreadiness,
            String token,
            MetricsEndpoint metricsEndpoint,
            CadastreMetrics metrics,
            HostRoutes hostRoutes) {
        this.inventory = inventory;
        this.hostRoutes = hostRoutes;
        this.check = new ConsistencyCheck(inventory, hostRoutes);
        this.poolAdmin = new PoolAdmin(inventory);
        this.nodeRemoval = new NodeRemoval(inventory);
        this.ipam = ipam;
        this.unreadiness = unreadiness;
        this.token = token.getBytes(StandardCharsets.UTF_8);
        this.openApi = openApiDocument();
        this.metricsEndpoint = metricsEndpoint;
        this.metrics = metrics;
    }

    /** @return the OpenAPI document served at {@code /openapi.yaml} */
    static byte[] openApiDocument() {
        try (InputStream in = AdminRoutes.class.getResourceAsStream("openapi.yaml")) {
            if (in == null) {
                throw new IllegalStateException("openapi.yaml is missing from the class path");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * One request as the server read it.
     *
     * @param method the HTTP method, upper case
     * @param path the path's segments, each percent-decoded ({@code /v1/pools/a} is {@code [v1,
     *     pools, a]}); an empty segment (a trailing or doubled slash) matches no route
     * @param query the query's parameters, decoded, each name's values in order
     * @param header a header's value by name (case-insensitive), null when absent
     * @param contentType the request's {@code Content-Type}, null when absent
     * @param body the body's bytes, empty when none
     * @param charset the charset the {@code Content-Type} names, UTF-8 when it names none
     */
    record Request(
            String method,
            List<String> path,
            Map<String, List<String>> query,
            Function<String, String> header,
            String contentType,
            byte[] body,
            Charset charset) {
        /** @return the first value of a query parameter, empty when it is absent */
        Optional<String> parameter(String name) {
            List<String> values = query.getOrDefault(name, List.of());
            return values.isEmpty() ? Optional.empty() : Optional.of(values.get(0));
        }
    }

    /**
     * An answer: status, content type, body, and any other headers.
     *
     * @param headers header name to value, besides Content-Type and Content-Length
     */
    record Response(int status, String contentType, byte[] body, Map<String, String> headers) {
        Response(int status, String contentType, byte[] body) {
            this(status, contentType, body, Map.of());
        }
    }

    /**
     * Routes and answers one request. Never fails: an error of any kind is an answer ({@code
     * {"error": ...}}, see the class comment); 404 for a path no route has, 405 with {@code Allow}
     * for a method the path does not take.
     */
    CompletionStage<Response> handle(Request request) {
        CompletionStage<Response> answer;
        try {
            answer = route(request);
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        return answer.exceptionally(this::failure);
    }

    private CompletionStage<Response> route(Request request) {
        List<String> path = request.path();
        if (path.contains("")) {
            return notFound(request);
        }
        if (path.equals(List.of("healthz"))) {
            return only(
                    request, "GET", () -> done(response(200, new AdminViews.Status("ok", null))));
        }
        if (path.equals(List.of("readyz"))) {
            return only(request, "GET", () -> done(readiness()));
        }
        if (path.equals(List.of("openapi.yaml"))) {
            return only(request, "GET", () -> done(new Response(200, YAML, openApi)));
        }
        if (path.equals(List.of("metrics"))) {
            return only(
                    request,
                    "GET",
                    () ->
                            metricsEndpoint
                                    .scrape()
                                    .thenApply(
                                            text ->
                                                    new Response(
                                                            200,
                                                            MetricsEndpoint.CONTENT_TYPE,
                                                            text)));
        }
        if (!path.isEmpty() && path.get(0).equals("v1")) {
            Optional<Response> refused = unauthorized(request);
            if (refused.isPresent()) {
                return done(refused.get());
            }
            return v1(request, path.subList(1, path.size()));
        }
        return notFound(request);
    }

    private CompletionStage<Response> v1(Request request, List<String> path) {
        int size = path.size();
        String first = size == 0 ? "" : path.get(0);
        switch (first) {
            case "pools":
                if (size == 1) {
                    return request.method().equals("POST")
                            ? jsonBody(request, this::createPool)
                            : only(
                                    request,
                                    List.of("GET", "POST"),
                                    () -> answer(inventory.pools()));
                }
                String pool = path.get(1);
                if (size == 2) {
                    return only(request, "DELETE", () -> answer(poolAdmin.delete(pool)));
                }
                if (size == 3 && path.get(2).equals("disable")) {
                    return only(request, "POST", () -> answer(poolAdmin.setDisabled(pool, true)));
                }
                if (size == 3 && path.get(2).equals("enable")) {
                    return only(request, "POST", () -> answer(poolAdmin.setDisabled(pool, false)));
                }
                break;
            case "blocks":
                if (size == 1) {
                    return only(
                            request,
                            "GET",
                            () ->
                                    answer(
                                            inventory.blocks(
                                                    nonEmpty("pool", request.parameter("pool")),
                                                    nonEmpty("node", request.parameter("node")))));
                }
                break;
            case "nodes":
                if (size == 1) {
                    return only(request, "GET", () -> answer(inventory.nodes()));
                }
                if (size == 2) {
                    String node = path.get(1);
                    return switch (request.method()) {
                        case "GET" ->
                                answer(
                                        inventory
                                                .node(node)
                                                .thenCompose(
                                                        detail ->
                                                                hostRoutes
                                                                        .routing(node)
                                                                        .thenApply(
                                                                                routing ->
                                                                                        detail.with(
                                                                                                routing
                                                                                                        .orElse(
                                                                                                                null)))));
                        case "DELETE" ->
                                answer(
                                        nodeRemoval.remove(
                                                node,
                                                flag(
                                                        "releaseAddresses",
                                                        request.parameter("releaseAddresses"))));
                        default -> methodNotAllowed(request, List.of("GET", "DELETE"));
                    };
                }
                break;
            case "addresses":
                if (size == 2) {
                    return only(request, "GET", () -> answer(inventory.address(path.get(1))));
                }
                break;
            case "release":
                if (size == 1) {
                    return only(request, "POST", () -> body(request, this::release));
                }
                break;
            case "check":
                if (size == 1) {
                    return only(request, "GET", () -> answer(check.run()));
                }
                break;
            case "gc":
                if (size == 1) {
                    return only(request, "POST", () -> body(request, this::gc));
                }
                break;
            default:
                break;
        }
        return notFound(request);
    }

    private CompletionStage<Response> only(
            Request request, String method, Supplier<CompletionStage<Response>> route) {
        return only(request, List.of(method), route);
    }

    /** The route when the request's method is one of {@code methods}, else 405. */
    private CompletionStage<Response> only(
            Request request, List<String> methods, Supplier<CompletionStage<Response>> route) {
        return methods.contains(request.method())
                ? route.get()
                : methodNotAllowed(request, methods);
    }

    private CompletionStage<Response> methodNotAllowed(Request request, List<String> methods) {
        String allowed = String.join(", ", methods);
        return done(
                response(
                        405,
                        new AdminViews.ErrorReply(
                                "HTTP method "
                                        + request.method()
                                        + " not allowed here, supported methods: "
                                        + allowed),
                        Map.of("Allow", allowed)));
    }

    private CompletionStage<Response> notFound(Request request) {
        return done(
                response(
                        404,
                        new AdminViews.ErrorReply(
                                "no such resource: /" + String.join("/", request.path()))));
    }

    private static CompletionStage<Response> done(Response response) {
        return CompletableFuture.completedFuture(response);
    }

    /** 201 when the pool was created, 200 when an identical one existed. */
    private CompletionStage<Response> createPool(String text) {
        return poolAdmin
                .create(PoolAdmin.specOf(parseObject(text)))
                .thenApply(created -> response(created.created() ? 201 : 200, created.pool()));
    }

    private Response readiness() {
        return unreadiness
                .get()
                .map(reason -> response(503, new AdminViews.Status("not ready", reason)))
                .orElseGet(() -> response(200, new AdminViews.Status("ready", null)));
    }

    // ---- authentication ----

    /** @return the 401 answer when the request lacks the bearer token or has another, else empty */
    private Optional<Response> unauthorized(Request request) {
        Optional<String> presented =
                Optional.ofNullable(request.header().apply("Authorization"))
                        .filter(h -> h.regionMatches(true, 0, "Bearer ", 0, 7))
                        .map(h -> h.substring(7).trim());
        if (presented.isEmpty()) {
            return Optional.of(
                    unauthorized("missing bearer token (Authorization: Bearer <token>)"));
        }
        // Constant time: the comparison must not tell how much of a guess was right.
        if (!MessageDigest.isEqual(presented.get().getBytes(StandardCharsets.UTF_8), token)) {
            return Optional.of(unauthorized("wrong bearer token"));
        }
        return Optional.empty();
    }

    private Response unauthorized(String message) {
        return response(
                401,
                new AdminViews.ErrorReply(message),
                Map.of("WWW-Authenticate", "Bearer realm=\"cadastre-admin\""));
    }

    // ---- request bodies ----

    private CompletionStage<Response> body(
            Request request, Function<JsonNode, CompletionStage<?>> handler) {
        return jsonBody(request, text -> answer(handler.apply(parseObject(text))));
    }

    /** The body as text when it is declared JSON (with any parameters, such as a charset), else 415. */
    private CompletionStage<Response> jsonBody(
            Request request, Function<String, CompletionStage<Response>> inner) {
        String type = request.contentType();
        String mediaType =
                type == null ? "" : type.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
        if (!mediaType.equals(JSON)) {
            return done(
                    response(
                            415,
                            new AdminViews.ErrorReply(
                                    "the body must be JSON (Content-Type: "
                                            + JSON
                                            + "), not "
                                            + (type == null ? "none" : type))));
        }
        return inner.apply(new String(request.body(), request.charset()));
    }

    /**
     * @return the body's one JSON object
     * @throws AdminException BAD_REQUEST for malformed JSON, a field given twice, anything after the
     *     object, or a value that is not an object
     */
    private JsonNode parseObject(String text) {
        JsonNode node;
        try (JsonParser parser = json.createParser(text)) {
            node = json.readTree(parser);
            if (node != null && parser.nextToken() != null) {
                throw AdminException.badRequest(
                        "malformed JSON: more after the JSON value (one object only)");
            }
        } catch (JsonProcessingException e) {
            throw AdminException.badRequest("malformed JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (node == null || !node.isObject()) {
            throw AdminException.badRequest("the body must be a JSON object");
        }
        return node;
    }

    /** {@code {"address": ...}} or {@code {"node": ..., "handle": ..., "ifname": ...}}. */
    private CompletionStage<AdminViews.Released> release(JsonNode body) {
        onlyFields(body, "address", "node", "handle", "ifname");
        boolean byAddress = body.has("address");
        boolean byHandle = body.has("node") || body.has("handle") || body.has("ifname");
        if (byAddress == byHandle) {
            throw AdminException.badRequest(
                    "give either \"address\" or \"node\" and \"handle\" (with \"ifname\", default "
                            + DEFAULT_IFNAME
                            + "), "
                            + (byAddress ? "not both" : "none was given"));
        }
        if (byAddress) {
            return inventory.releaseAddress(requiredText(body, "address"));
        }
        String ifname = body.has("ifname") ? requiredText(body, "ifname") : DEFAULT_IFNAME;
        return inventory.releaseAttachment(
                requiredText(body, "node"), requiredText(body, "handle"), ifname);
    }

    /** {@code {"node": ..., "network": ..., "validAttachments": [{"containerId": ..., "ifname": ...}]}}. */
    private CompletionStage<AdminViews.Released> gc(JsonNode body) {
        onlyFields(body, "node", "network", "validAttachments");
        String node = requiredText(body, "node");
        String network = requiredText(body, "network");
        JsonNode valid = body.get("validAttachments");
        // Required even when empty: a forgotten list must not mean "nothing is valid, release all".
        if (valid == null || !valid.isArray()) {
            throw AdminException.badRequest(
                    "\"validAttachments\" must be an array (empty to keep nothing)");
        }
        Set<String> keep = new HashSet<>();
        for (JsonNode attachment : valid) {
            if (!attachment.isObject()) {
                throw AdminException.badRequest(
                        "each of \"validAttachments\" must be an object with containerId and ifname");
            }
            onlyFields(attachment, "containerId", "ifname");
            keep.add(
                    AttachmentRecord.key(
                            network + "." + requiredText(attachment, "containerId"),
                            requiredText(attachment, "ifname")));
        }
        if (!node.equals(ipam.node())) {
            throw AdminException.badRequest(
                    "GC runs on the node's own agent: this agent is node "
                            + ipam.node()
                            + ", not "
                            + node);
        }
        return ipam.collectGarbage(network, keep)
                .handle(
                        (released, error) -> {
                            if (error != null) {
                                throw asAdmin(error);
                            }
                            metrics.gcReclaimed(node, CadastreMetrics.GC_ADMIN, released.size());
                            return new AdminViews.Released(released);
                        });
    }

    static void onlyFields(JsonNode object, String... allowed) {
        List<String> unknown = new ArrayList<>();
        for (Iterator<String> names = object.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!List.of(allowed).contains(name)) {
                unknown.add(name);
            }
        }
        if (!unknown.isEmpty()) {
            throw AdminException.badRequest(
                    "unknown field"
                            + (unknown.size() > 1 ? "s " : " ")
                            + String.join(", ", unknown)
                            + " (expected "
                            + String.join(", ", allowed)
                            + ")");
        }
    }

    static String requiredText(JsonNode object, String field) {
        JsonNode value = object.get(field);
        if (value == null || value.isNull()) {
            throw AdminException.badRequest("\"" + field + "\" is required");
        }
        if (!value.isTextual() || value.asText().isBlank()) {
            throw AdminException.badRequest("\"" + field + "\" must be a non-empty string");
        }
        return value.asText().trim();
    }

    private static Optional<String> nonEmpty(String parameter, Optional<String> value) {
        if (value.isPresent() && value.get().isBlank()) {
            throw AdminException.badRequest("query parameter " + parameter + " is empty");
        }
        return value;
    }

    /** @return a boolean query parameter: false when absent; BAD_REQUEST for anything but true or false */
    private static boolean flag(String parameter, Optional<String> value) {
        if (value.isEmpty() || value.get().equals("false")) {
            return false;
        }
        if (value.get().equals("true")) {
            return true;
        }
        throw AdminException.badRequest(
                "query parameter "
                        + parameter
                        + " must be true or false, not '"
                        + value.get()
                        + "'");
    }

    // ---- responses ----

    private CompletionStage<Response> answer(CompletionStage<?> result) {
        return result.thenApply(value -> response(200, value));
    }

    private Response response(int status, Object body) {
        return response(status, body, Map.of());
    }

    private Response response(int status, Object body, Map<String, String> headers) {
        return new Response(status, JSON, jsonBytes(body), headers);
    }

    /** @return an error answer, {@code {"error": message}}, for a failure outside the routes */
    Response error(int status, String message) {
        return response(status, new AdminViews.ErrorReply(message));
    }

    private Response failure(Throwable error) {
        AdminException admin = asAdmin(error);
        if (admin.kind() == AdminException.Kind.UNAVAILABLE) {
            log.warn("admin request unavailable: {}", admin.getMessage());
        }
        return response(admin.kind().status(), new AdminViews.ErrorReply(admin.getMessage()));
    }

    /** @return the failure as the AdminException to answer with; anything unexpected is a logged 500 */
    private static AdminException asAdmin(Throwable error) {
        Throwable cause = EntityReads.unwrap(error);
        if (cause instanceof AdminException admin) {
            return admin;
        }
        if (cause instanceof IpamException ipam) {
            AdminException.Kind kind =
                    switch (ipam.reason()) {
                        case UNAVAILABLE -> AdminException.Kind.UNAVAILABLE;
                        case CONFLICT, AFFINE_TO_OTHER_NODE, BLOCK_RELEASING ->
                                AdminException.Kind.CONFLICT;
                        case UNKNOWN_POOL -> AdminException.Kind.NOT_FOUND;
                        default -> AdminException.Kind.BAD_REQUEST;
                    };
            return new AdminException(kind, ipam.getMessage(), ipam);
        }
        log.error("admin request failed", cause);
        return new AdminException(AdminException.Kind.INTERNAL, "internal error: " + cause, cause);
    }

    private byte[] jsonBytes(Object body) {
        try {
            return json.writeValueAsBytes(body);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(
                    "cannot write " + body.getClass().getSimpleName() + " as JSON", e);
        }
    }
}
