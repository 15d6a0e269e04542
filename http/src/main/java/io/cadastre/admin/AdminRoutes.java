package io.cadastre.admin;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.concat;
import static org.apache.pekko.http.javadsl.server.Directives.delete;
import static org.apache.pekko.http.javadsl.server.Directives.entity;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequestEntity;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.handleExceptions;
import static org.apache.pekko.http.javadsl.server.Directives.handleRejections;
import static org.apache.pekko.http.javadsl.server.Directives.optionalHeaderValueByName;
import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;
import static org.apache.pekko.http.javadsl.server.Directives.path;
import static org.apache.pekko.http.javadsl.server.Directives.pathEnd;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;
import static org.apache.pekko.http.javadsl.server.Directives.post;
import static org.apache.pekko.http.javadsl.server.PathMatchers.segment;

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
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpCharsets;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.javadsl.unmarshalling.Unmarshaller;
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
    private static final ContentType YAML =
            MediaTypes.applicationWithOpenCharset("yaml", "yaml").toContentType(HttpCharsets.UTF_8);
    private static final ContentType PROMETHEUS_TEXT =
            ContentTypes.parse(MetricsEndpoint.CONTENT_TYPE);

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

    Route route() {
        return handleExceptions(
                exceptions(),
                () ->
                        handleRejections(
                                rejections(),
                                () ->
                                        concat(
                                                path(
                                                        "healthz",
                                                        () ->
                                                                get(
                                                                        () ->
                                                                                complete(
                                                                                        response(
                                                                                                200,
                                                                                                new AdminViews
                                                                                                        .Status(
                                                                                                        "ok",
                                                                                                        null))))),
                                                path(
                                                        "readyz",
                                                        () -> get(() -> complete(readiness()))),
                                                path(
                                                        "openapi.yaml",
                                                        () ->
                                                                get(
                                                                        () ->
                                                                                complete(
                                                                                        HttpResponse
                                                                                                .create()
                                                                                                .withEntity(
                                                                                                        YAML,
                                                                                                        openApi)))),
                                                path(
                                                        "metrics",
                                                        () ->
                                                                get(
                                                                        () ->
                                                                                completeWithFuture(
                                                                                        metricsEndpoint
                                                                                                .scrape()
                                                                                                .thenApply(
                                                                                                        text ->
                                                                                                                HttpResponse
                                                                                                                        .create()
                                                                                                                        .withEntity(
                                                                                                                                PROMETHEUS_TEXT,
                                                                                                                                text))))),
                                                pathPrefix("v1", () -> authorized(this::v1)))));
    }

    private Route v1() {
        return concat(
                pathPrefix(
                        "pools",
                        () ->
                                concat(
                                        pathEnd(
                                                () ->
                                                        concat(
                                                                get(
                                                                        () ->
                                                                                answer(
                                                                                        inventory
                                                                                                .pools())),
                                                                post(
                                                                        () ->
                                                                                jsonBody(
                                                                                        this
                                                                                                ::createPool)))),
                                        pathPrefix(
                                                segment(),
                                                name ->
                                                        concat(
                                                                pathEnd(
                                                                        () ->
                                                                                delete(
                                                                                        () ->
                                                                                                answer(
                                                                                                        poolAdmin
                                                                                                                .delete(
                                                                                                                        name)))),
                                                                path(
                                                                        "disable",
                                                                        () ->
                                                                                post(
                                                                                        () ->
                                                                                                answer(
                                                                                                        poolAdmin
                                                                                                                .setDisabled(
                                                                                                                        name,
                                                                                                                        true)))),
                                                                path(
                                                                        "enable",
                                                                        () ->
                                                                                post(
                                                                                        () ->
                                                                                                answer(
                                                                                                        poolAdmin
                                                                                                                .setDisabled(
                                                                                                                        name,
                                                                                                                        false)))))))),
                path(
                        "blocks",
                        () ->
                                get(
                                        () ->
                                                parameterOptional(
                                                        "pool",
                                                        pool ->
                                                                parameterOptional(
                                                                        "node",
                                                                        node ->
                                                                                answer(
                                                                                        Inventory
                                                                                                .guard(
                                                                                                        () ->
                                                                                                                inventory
                                                                                                                        .blocks(
                                                                                                                                nonEmpty(
                                                                                                                                        "pool",
                                                                                                                                        pool),
                                                                                                                                nonEmpty(
                                                                                                                                        "node",
                                                                                                                                        node)))))))),
                pathPrefix(
                        "nodes",
                        () ->
                                concat(
                                        pathEnd(() -> get(() -> answer(inventory.nodes()))),
                                        path(
                                                segment(),
                                                name ->
                                                        concat(
                                                                get(
                                                                        () ->
                                                                                answer(
                                                                                        inventory
                                                                                                .node(
                                                                                                        name)
                                                                                                .thenCompose(
                                                                                                        detail ->
                                                                                                                hostRoutes
                                                                                                                        .routing(
                                                                                                                                name)
                                                                                                                        .thenApply(
                                                                                                                                routing ->
                                                                                                                                        detail
                                                                                                                                                .with(
                                                                                                                                                        routing
                                                                                                                                                                .orElse(
                                                                                                                                                                        null)))))),
                                                                delete(
                                                                        () ->
                                                                                parameterOptional(
                                                                                        "releaseAddresses",
                                                                                        release ->
                                                                                                answer(
                                                                                                        Inventory
                                                                                                                .guard(
                                                                                                                        () ->
                                                                                                                                nodeRemoval
                                                                                                                                        .remove(
                                                                                                                                                name,
                                                                                                                                                flag(
                                                                                                                                                        "releaseAddresses",
                                                                                                                                                        release)))))))))),
                pathPrefix(
                        "addresses",
                        () ->
                                path(
                                        segment(),
                                        address -> get(() -> answer(inventory.address(address))))),
                path("release", () -> post(() -> body(this::release))),
                path("check", () -> get(() -> answer(check.run()))),
                path("gc", () -> post(() -> body(this::gc))));
    }

    /** 201 when the pool was created, 200 when an identical one existed. */
    private Route createPool(String text) {
        CompletionStage<PoolAdmin.Created> created =
                Inventory.guard(() -> poolAdmin.create(PoolAdmin.specOf(parseObject(text))));
        return completeWithFuture(
                created.handle(
                        (value, error) ->
                                error == null
                                        ? response(value.created() ? 201 : 200, value.pool())
                                        : failure(error)));
    }

    private HttpResponse readiness() {
        return unreadiness
                .get()
                .map(reason -> response(503, new AdminViews.Status("not ready", reason)))
                .orElseGet(() -> response(200, new AdminViews.Status("ready", null)));
    }

    // ---- authentication ----

    private Route authorized(Supplier<Route> inner) {
        return optionalHeaderValueByName(
                "Authorization",
                header -> {
                    Optional<String> presented =
                            header.filter(h -> h.regionMatches(true, 0, "Bearer ", 0, 7))
                                    .map(h -> h.substring(7).trim());
                    if (presented.isEmpty()) {
                        return complete(
                                unauthorized(
                                        "missing bearer token (Authorization: Bearer <token>)"));
                    }
                    // Constant time: the comparison must not tell how much of a guess was right.
                    if (!MessageDigest.isEqual(
                            presented.get().getBytes(StandardCharsets.UTF_8), token)) {
                        return complete(unauthorized("wrong bearer token"));
                    }
                    return inner.get();
                });
    }

    private HttpResponse unauthorized(String message) {
        return response(401, new AdminViews.ErrorReply(message))
                .addHeader(RawHeader.create("WWW-Authenticate", "Bearer realm=\"cadastre-admin\""));
    }

    // ---- request bodies ----

    private Route body(Function<JsonNode, CompletionStage<?>> handler) {
        return jsonBody(text -> answer(Inventory.guard(() -> handler.apply(parseObject(text)))));
    }

    /** The body as text when it is declared JSON (with any parameters, such as a charset), else 415. */
    private Route jsonBody(Function<String, Route> inner) {
        return extractRequestEntity(
                entity -> {
                    ContentType type = entity.getContentType();
                    if (!type.mediaType().equals(MediaTypes.APPLICATION_JSON)) {
                        return complete(
                                response(
                                        415,
                                        new AdminViews.ErrorReply(
                                                "the body must be JSON (Content-Type: "
                                                        + MediaTypes.APPLICATION_JSON
                                                        + "), not "
                                                        + type)));
                    }
                    return entity(Unmarshaller.entityToString(), inner);
                });
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

    private Route answer(CompletionStage<?> result) {
        return completeWithFuture(
                result.handle(
                        (value, error) -> error == null ? response(200, value) : failure(error)));
    }

    private HttpResponse response(int status, Object body) {
        return HttpResponse.create()
                .withStatus(StatusCodes.get(status))
                .withEntity(ContentTypes.APPLICATION_JSON, jsonBytes(body));
    }

    private HttpResponse failure(Throwable error) {
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

    private ExceptionHandler exceptions() {
        return ExceptionHandler.newBuilder()
                .match(Throwable.class, e -> complete(failure(e)))
                .build();
    }

    /** Pekko's own rejection answers (404, 405, 400 for a malformed request), their text as {"error": ...}. */
    private RejectionHandler rejections() {
        return RejectionHandler.defaultHandler()
                .mapRejectionResponse(
                        r -> {
                            if (r.entity().isStrict()
                                    && !r.entity()
                                            .getContentType()
                                            .equals(ContentTypes.APPLICATION_JSON)) {
                                String text =
                                        ((HttpEntity.Strict) r.entity()).getData().utf8String();
                                return r.withEntity(
                                        ContentTypes.APPLICATION_JSON,
                                        jsonBytes(new AdminViews.ErrorReply(text)));
                            }
                            return r;
                        });
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
