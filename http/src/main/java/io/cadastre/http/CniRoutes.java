package io.cadastre.http;

import io.cadastre.cni.CniCodes;
import io.cadastre.cni.CniException;
import io.cadastre.cni.CniHandler;
import io.cadastre.cni.CniResponse;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.stream.Materializer;

/**
 * The CNI endpoint's route (cni-bridge/DESIGN.md, "Request" and "Reply"): {@code POST /v1/cni},
 * the CNI variables in {@code CNI-*} headers and stdin as the body, answered by {@link CniHandler}.
 * Other paths get 404, other methods on this path 405 (Pekko's default rejection handling).
 *
 * <p>Bodies over {@link CniSocketServer#MAX_REQUEST_BYTES} get 413 with a CNI error object of code 5
 * (I/O failure, as the C plugin reports an oversize stdin). A handler that does not answer within
 * the request timeout gets 503 with code 11 (try again later); the backend work is not cancelled
 * (ADD and DEL are idempotent, the runtime retries).
 */
final class CniRoutes extends AllDirectives {
    private final CniHandler handler;
    private final Materializer materializer;
    private final Duration requestTimeout;
    private final Duration bodyTimeout;

    CniRoutes(CniHandler handler, Materializer materializer, Duration requestTimeout, Duration bodyTimeout) {
        this.handler = handler;
        this.materializer = materializer;
        this.requestTimeout = requestTimeout;
        this.bodyTimeout = bodyTimeout;
    }

    /** @return the route, sealed: rejections become 404/405 responses */
    Route route() {
        return path(PathMatchers.segment("v1").slash("cni"),
                () -> post(() -> extractRequest(request -> completeWithFuture(serve(request)))))
                .seal();
    }

    private CompletionStage<HttpResponse> serve(HttpRequest request) {
        OptionalLong declared = request.entity().getContentLengthOption();
        if (declared.isPresent() && declared.getAsLong() > CniSocketServer.MAX_REQUEST_BYTES) {
            request.discardEntityBytes(materializer);
            return CompletableFuture.completedFuture(toHttp(tooLarge()));
        }
        return request.entity()
                .withSizeLimit(CniSocketServer.MAX_REQUEST_BYTES)
                .toStrict(bodyTimeout.toMillis(), materializer)
                .thenCompose(strict -> {
                    byte[] body = strict.getData().toArray();
                    CniResponse timedOut = CniHandler.errorResponse(body, new CniException(CniCodes.TRY_AGAIN_LATER,
                            "the agent did not answer within " + requestTimeout.toMillis() + " ms"));
                    return handler.handle(name -> request.getHeader(name).map(HttpHeader::value), body)
                            .toCompletableFuture()
                            .copy()
                            .completeOnTimeout(timedOut, requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
                })
                .exceptionally(CniRoutes::bodyFailure)
                .thenApply(CniRoutes::toHttp);
    }

    private static CniResponse bodyFailure(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof EntityStreamSizeException) {
                return tooLarge();
            }
        }
        return CniHandler.errorResponse(new byte[0],
                new CniException(CniCodes.IO_FAILURE, "could not read the request body: " + t.getMessage()));
    }

    private static CniResponse tooLarge() {
        CniResponse r = CniHandler.errorResponse(new byte[0], new CniException(CniCodes.IO_FAILURE,
                "request body over " + CniSocketServer.MAX_REQUEST_BYTES + " bytes"));
        return new CniResponse(413, r.body());
    }

    static HttpResponse toHttp(CniResponse r) {
        HttpResponse response = HttpResponse.create().withStatus(r.httpStatus());
        return r.body().length == 0
                ? response.withEntity(HttpEntities.EMPTY)
                : response.withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, r.body()));
    }
}
