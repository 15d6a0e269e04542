package io.cadastre.cni;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.cadastre.cni.CniBackend.AddRequest;
import io.cadastre.cni.CniBackend.AddResult;
import io.cadastre.cni.CniBackend.IpConfig;
import io.cadastre.cni.CniBackend.Route;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CNI protocol, agent side: one {@link CniRequest} in, one {@link CniResponse} out. Stateless
 * and thread-safe; the transport ({@code io.cadastre.http.CniSocketServer}) calls it per request.
 *
 * <p>Flow: VERSION is answered at once, exactly as the C plugin answers it itself. Everything else
 * is validated completely ({@link CniCall#validate}) before the {@link CniBackend} is called, so bad
 * input changes nothing. Then:
 *
 * <ul>
 *   <li>ADD: {@link CniBackend#add}; 200 with the result rendered for the request's cniVersion
 *       ({@link CniResults#renderAdd}). IPAM-only: without interfaces and interface indices (§Delegated
 *       plugins), with {@code ipam.routes} appended to the backend's routes, and an address on a
 *       range of the netconf's subnet ({@link HostLocalRanges}) given that subnet's prefix length
 *       and its gateway, as host-local reports them. Full plugin with a
 *       {@code prevResult}: chained onto it ({@link CniResults#chain}).
 *   <li>DEL: {@link CniBackend#del}; 200, empty body.
 *   <li>CHECK: {@link CniBackend#check}; 200, empty body, when it reports no difference; else code
 *       {@link CniCodes#CHECK_FAILED} with one difference per line in {@code details}.
 *   <li>GC: {@link CniBackend#gc} with {@code cni.dev/valid-attachments}; STATUS: {@link
 *       CniBackend#status} with {@code ipam.pools}; 200, empty body.
 * </ul>
 *
 * <p>Failures: a {@link CniException} (from validation or the backend) becomes an error object with
 * its code; any other exception, or a backend that answers null, code 11 (try again later) with
 * the stack trace logged. Logs name the command, container ID, ifname and network only, never the
 * netconf or CNI_ARGS values (they may hold credentials); a value not yet validated is logged
 * escaped and cut ({@link CniText#quoted}), so it cannot forge a log line. Error objects carry the request's cniVersion when it is made
 * of digits and dots, else {@value CniVersions#LATEST}.
 *
 * <p>Metrics: every request, VERSION and refused ones included, is reported once to the {@link
 * CniListener} when its answer is ready, with its verb, its result ("ok" or the error code) and
 * the time since the handler received it. A request the transport gave up on (its timeout) is
 * still reported when the handler's answer comes, with that answer.
 */
public final class CniHandler {
    private static final Logger log = LoggerFactory.getLogger(CniHandler.class);

    private final CniBackend backend;
    private final CniListener listener;

    public CniHandler(CniBackend backend) {
        this(backend, CniListener.NONE);
    }

    /** @param listener told of every answer: verb, result and duration (metrics) */
    public CniHandler(CniBackend backend, CniListener listener) {
        this.backend = backend;
        this.listener = listener;
    }

    /**
     * Decodes the request from HTTP headers and body ({@link CniRequest#fromHeaders}) and handles it;
     * a header that cannot be decoded is answered with code 4 (reported with the verb
     * {@value CniListener#UNKNOWN_VERB}).
     */
    public CompletionStage<CniResponse> handle(
            Function<String, Optional<String>> header, byte[] body) {
        long start = System.nanoTime();
        CniRequest request;
        try {
            request = CniRequest.fromHeaders(header, body);
        } catch (CniException e) {
            log.info("CNI request refused: code {}: {}", e.code(), e.getMessage());
            return reported(
                    CniListener.UNKNOWN_VERB,
                    start,
                    CompletableFuture.completedFuture(
                            new Answer(errorResponse(body, e), e.code())));
        }
        return handle(request, start);
    }

    /**
     * Handles one request. The stage always completes normally: every failure is an error
     * response.
     */
    public CompletionStage<CniResponse> handle(CniRequest request) {
        return handle(request, System.nanoTime());
    }

    private CompletionStage<CniResponse> handle(CniRequest request, long start) {
        String verb;
        try {
            verb = CniCommand.parse(request.command()).name();
        } catch (CniException e) {
            verb = CniListener.UNKNOWN_VERB;
        }
        return reported(verb, start, answer(request));
    }

    /** A response and the CNI error code it carries, 0 for a success. */
    private record Answer(CniResponse response, int code) {
        static Answer ok(CniResponse response) {
            return new Answer(response, 0);
        }
    }

    /** Tells the listener of the answer once it is there; its failure never fails the answer. */
    private CompletionStage<CniResponse> reported(
            String verb, long start, CompletionStage<Answer> answer) {
        return answer.thenApply(
                a -> {
                    try {
                        listener.answered(
                                verb,
                                a.code() == 0 ? CniListener.OK : Integer.toString(a.code()),
                                Duration.ofNanos(System.nanoTime() - start));
                    } catch (RuntimeException e) {
                        log.warn("the CNI listener failed on a {} answer", verb, e);
                    }
                    return a.response();
                });
    }

    private CompletionStage<Answer> answer(CniRequest request) {
        if (CniCommand.VERSION.name().equals(request.command())) {
            return CompletableFuture.completedFuture(
                    Answer.ok(CniResponse.ok(CniVersions.versionReply(request.netconf()))));
        }
        CniCall call;
        try {
            call = CniCall.validate(request);
        } catch (CniException e) {
            log.info(
                    "CNI {} refused (container {}, ifname {}): code {}: {}",
                    CniText.quoted(request.command()),
                    CniText.quoted(request.containerId()),
                    CniText.quoted(request.ifname()),
                    e.code(),
                    e.getMessage());
            return CompletableFuture.completedFuture(
                    new Answer(errorResponse(request.netconf(), e), e.code()));
        } catch (RuntimeException e) {
            log.error(
                    "CNI {} failed in validation (container {}, ifname {})",
                    CniText.quoted(request.command()),
                    CniText.quoted(request.containerId()),
                    CniText.quoted(request.ifname()),
                    e);
            return CompletableFuture.completedFuture(
                    new Answer(internalError(request.netconf(), e), CniCodes.TRY_AGAIN_LATER));
        }
        CompletionStage<CniResponse> stage;
        try {
            stage = dispatch(call);
        } catch (RuntimeException e) { // a backend that throws instead of failing its stage
            stage = CompletableFuture.failedFuture(e);
        }
        return stage.handle(
                (response, failure) -> {
                    if (failure == null && response != null) {
                        log.debug("CNI {} done: {}", call.command(), describe(call));
                        return Answer.ok(response);
                    }
                    Throwable cause =
                            unwrap(
                                    failure == null
                                            ? new IllegalStateException("backend answered null")
                                            : failure);
                    String version = CniVersions.echoVersion(call.netConf().cniVersion());
                    if (cause instanceof CniException e) {
                        log.warn(
                                "CNI {} failed ({}): code {}: {}",
                                call.command(),
                                describe(call),
                                e.code(),
                                e.getMessage());
                        return new Answer(
                                error(version, e.code(), e.getMessage(), e.details()), e.code());
                    }
                    log.error("CNI {} failed ({})", call.command(), describe(call), cause);
                    return new Answer(
                            error(
                                    version,
                                    CniCodes.TRY_AGAIN_LATER,
                                    "internal error: " + cause,
                                    null),
                            CniCodes.TRY_AGAIN_LATER);
                });
    }

    private CompletionStage<CniResponse> dispatch(CniCall call) {
        NetConf conf = call.netConf();
        boolean ipamOnly = conf.ipamOnly();
        return switch (call.command()) {
            case ADD ->
                    backend.add(
                                    new AddRequest(
                                            call.attachment(),
                                            call.pod(),
                                            ipamOnly,
                                            call.pools(),
                                            call.requestedIps(),
                                            conf.mtu(),
                                            conf.ipam().ranges(),
                                            conf.runtimeConfigBandwidth()))
                            .thenApply(
                                    result ->
                                            CniResponse.ok(
                                                    CniResults.toBytes(renderAdd(call, result))));
            case DEL ->
                    backend.del(call.attachment(), ipamOnly).thenApply(v -> CniResponse.empty());
            case CHECK ->
                    backend.check(
                                    call.attachment(),
                                    ipamOnly,
                                    call.prevResult(),
                                    conf.runtimeConfigBandwidth())
                            .thenApply(
                                    diffs -> {
                                        if (diffs == null || diffs.isEmpty()) {
                                            return CniResponse.empty();
                                        }
                                        throw new CniException(
                                                CniCodes.CHECK_FAILED,
                                                "CHECK found "
                                                        + diffs.size()
                                                        + (diffs.size() == 1
                                                                ? " difference"
                                                                : " differences"),
                                                String.join("\n", diffs));
                                    });
            case GC ->
                    backend.gc(conf.name(), new HashSet<>(conf.validAttachments()))
                            .thenApply(v -> CniResponse.empty());
            case STATUS -> backend.status(conf.ipam().pools()).thenApply(v -> CniResponse.empty());
            case VERSION -> throw new IllegalStateException("VERSION is answered before dispatch");
        };
    }

    private static ObjectNode renderAdd(CniCall call, AddResult result) {
        if (result == null) {
            throw new IllegalStateException("backend answered ADD with null");
        }
        NetConf conf = call.netConf();
        if (conf.ipamOnly()) {
            List<IpConfig> ips = new ArrayList<>();
            for (IpConfig ip : result.ips()) {
                // On a range of the netconf's subnet: that subnet's prefix length and gateway
                // (host-local's result).
                String address = ip.address().substring(0, ip.address().indexOf('/'));
                ips.add(
                        HostLocalRanges.rangeOf(conf.ipam().ranges(), address)
                                .map(
                                        r ->
                                                new IpConfig(
                                                        address
                                                                + r.subnet()
                                                                        .substring(
                                                                                r.subnet()
                                                                                        .indexOf(
                                                                                                '/')),
                                                        r.gateway(),
                                                        null))
                                .orElse(new IpConfig(ip.address(), ip.gateway(), null)));
            }
            List<Route> routes = new ArrayList<>(result.routes());
            for (Route r : conf.ipam().routes()) {
                if (!routes.contains(r)) {
                    routes.add(r);
                }
            }
            return CniResults.renderAdd(new AddResult(List.of(), ips, routes), conf.cniVersion());
        }
        ObjectNode rendered = CniResults.renderAdd(result, conf.cniVersion());
        return conf.prevResult() == null ? rendered : CniResults.chain(rendered, conf.prevResult());
    }

    /**
     * An error response for a request whose netconf may not parse: the error object's cniVersion
     * is the netconf's when readable and made of digits and dots, else {@value CniVersions#LATEST}.
     */
    public static CniResponse errorResponse(byte[] netconf, CniException e) {
        return error(
                CniVersions.echoVersion(CniVersions.peekVersion(netconf)),
                e.code(),
                e.getMessage(),
                e.details());
    }

    private static CniResponse internalError(byte[] netconf, Throwable e) {
        return errorResponse(
                netconf, new CniException(CniCodes.TRY_AGAIN_LATER, "internal error: " + e));
    }

    private static CniResponse error(String version, int code, String msg, String details) {
        return new CniResponse(
                CniResponse.statusFor(code),
                CniResults.toBytes(CniResults.error(version, code, msg, details)));
    }

    private static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static String describe(CniCall call) {
        var a = call.attachment();
        return a == null
                ? "network " + call.netConf().name()
                : "network "
                        + a.network()
                        + ", container "
                        + a.containerId()
                        + ", ifname "
                        + a.ifname();
    }
}
