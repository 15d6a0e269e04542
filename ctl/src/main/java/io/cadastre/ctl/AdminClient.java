package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The admin API's client side: one HTTP/1.1 request per call through the JDK's
 * {@code java.net.http} client, JSON bodies both ways, {@code Authorization: Bearer} when a token
 * is given. It turns every way a request can fail into a {@link CtlException} whose message names
 * the request's URL; it interprets no answer beyond "a JSON object".
 * Lifecycle: one per command invocation; nothing to close (the client's selector thread ends with
 * the process, or when the client is collected).
 */
final class AdminClient {
    private static final String USER_AGENT = "cadastrectl/0.1.0";

    private final String base;
    private final String token;
    private final String unauthorizedHint;
    private final Duration connectTimeout;
    private final Duration requestTimeout;
    private final HttpClient http;

    /** A 2xx answer: its status and its JSON object. */
    record Answer(int status, JsonNode body) {}

    /**
     * @param base the server, {@code http[s]://host:port[/prefix]}; request paths are appended to it
     * @param token the bearer token, or {@code null} to send none
     * @param unauthorizedHint appended to the message of a 401 answer: what was sent and how to fix it
     * @param connectTimeout how long to wait for the TCP (and TLS) connection
     * @param requestTimeout how long to wait for the whole answer once the request is sent
     */
    AdminClient(
            URI base,
            String token,
            String unauthorizedHint,
            Duration connectTimeout,
            Duration requestTimeout) {
        String text = base.toString();
        this.base = text.endsWith("/") ? text.substring(0, text.length() - 1) : text;
        this.token = token;
        this.unauthorizedHint = unauthorizedHint;
        this.connectTimeout = connectTimeout;
        this.requestTimeout = requestTimeout;
        // HTTP/1.1 explicitly: the default would offer an h2c upgrade on every plain request.
        this.http =
                HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(connectTimeout)
                        .followRedirects(HttpClient.Redirect.NEVER)
                        .build();
    }

    /** @return the base URL requests go to, without a trailing slash */
    String base() {
        return base;
    }

    /**
     * {@code GET base + path}.
     *
     * @param path an absolute path with its query, already encoded (see {@link #segment})
     * @return the answer's JSON object
     * @throws CtlException when the agent cannot be reached or does not answer in time, answers a
     *     status outside 2xx (the message has the server's {@code error} and the status), or
     *     answers something other than a JSON object
     */
    JsonNode get(String path) {
        return send(HttpRequest.newBuilder(uri(path)).GET(), "GET", path).body();
    }

    /**
     * {@code POST base + path} with a JSON body.
     *
     * @return the answer's JSON object
     * @throws CtlException as {@link #get}; the request may have taken effect on the agent when the
     *     answer timed out or the connection broke after sending
     */
    JsonNode post(String path, JsonNode body) {
        return postForStatus(path, body).body();
    }

    /**
     * {@code POST base + path} with no body (an action on the resource the path names).
     *
     * @return the answer's JSON object
     * @throws CtlException as {@link #post(String, JsonNode)}
     */
    JsonNode post(String path) {
        return send(
                        HttpRequest.newBuilder(uri(path)).POST(HttpRequest.BodyPublishers.noBody()),
                        "POST",
                        path)
                .body();
    }

    /**
     * {@code POST base + path} with a JSON body, for the callers that tell 2xx statuses apart
     * (201 created, 200 already there).
     *
     * @return the answer's status and JSON object
     * @throws CtlException as {@link #post(String, JsonNode)}
     */
    Answer postForStatus(String path, JsonNode body) {
        HttpRequest.Builder request =
                HttpRequest.newBuilder(uri(path))
                        .header("Content-Type", "application/json")
                        .POST(
                                HttpRequest.BodyPublishers.ofString(
                                        Json.compact(body), StandardCharsets.UTF_8));
        return send(request, "POST", path);
    }

    /**
     * {@code DELETE base + path}.
     *
     * @return the answer's JSON object
     * @throws CtlException as {@link #get}; the request may have taken effect on the agent when the
     *     answer timed out or the connection broke after sending
     */
    JsonNode delete(String path) {
        return send(HttpRequest.newBuilder(uri(path)).DELETE(), "DELETE", path).body();
    }

    private URI uri(String path) {
        return URI.create(base + path);
    }

    private Answer send(HttpRequest.Builder request, String method, String path) {
        String target = method + " " + base + path;
        request.timeout(requestTimeout)
                .header("Accept", "application/json")
                .header("User-Agent", USER_AGENT);
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        HttpResponse<String> response;
        try {
            response =
                    http.send(
                            request.build(),
                            HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (HttpConnectTimeoutException e) {
            throw new CtlException(
                    "cannot connect to " + base + " within " + seconds(connectTimeout), e);
        } catch (HttpTimeoutException e) {
            throw new CtlException(
                    "no answer to "
                            + target
                            + " within "
                            + seconds(requestTimeout)
                            + " (--timeout)"
                            + mayHaveTakenEffect(method),
                    e);
        } catch (ConnectException e) {
            // Mostly without a message from the JDK's client; refused is what it means then.
            String reason = firstMessage(e);
            throw new CtlException(
                    "cannot connect to "
                            + base
                            + ": "
                            + (reason == null ? "connection refused" : reason),
                    e);
        } catch (IOException e) {
            String reason = firstMessage(e);
            throw new CtlException(
                    target
                            + " failed: "
                            + (reason == null ? e.getClass().getSimpleName() : reason)
                            + mayHaveTakenEffect(method),
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CtlException(target + " interrupted", e);
        }
        int status = response.statusCode();
        if (status < 200 || status > 299) {
            throw new CtlException(
                    errorMessage(response.body())
                            + " (HTTP "
                            + status
                            + " from "
                            + target
                            + ")"
                            + hint(status));
        }
        JsonNode answer = Json.parseOrNull(response.body());
        if (answer == null || !answer.isObject()) {
            throw new CtlException("unexpected answer to " + target + ": not a JSON object");
        }
        return new Answer(status, answer);
    }

    /**
     * A POST or DELETE whose answer was lost may have been applied. The admin API's POSTs are
     * idempotent; a DELETE is not always (a pool deleted is unknown the second time: 404).
     */
    private static String mayHaveTakenEffect(String method) {
        return switch (method) {
            case "POST" -> "; it may have taken effect on the agent, and is safe to repeat";
            case "DELETE" -> "; it may have taken effect on the agent";
            default -> "";
        };
    }

    private String hint(int status) {
        return status == 401 ? unauthorizedHint : "";
    }

    /**
     * @return the contract's {@code {"error": "..."}} message, else the body's first line (a proxy's
     *     or a servlet's page), else a placeholder
     */
    static String errorMessage(String body) {
        JsonNode node = Json.parseOrNull(body);
        if (node != null
                && node.path("error").isTextual()
                && !node.path("error").asText().isBlank()) {
            return node.path("error").asText();
        }
        String first = body == null ? "" : body.strip().lines().findFirst().orElse("").strip();
        if (first.isEmpty()) {
            return "no error message";
        }
        return first.length() > 200 ? first.substring(0, 200) + "..." : first;
    }

    /**
     * Percent-encodes one path segment (UTF-8), keeping RFC 3986's unreserved characters and
     * {@code :} and {@code @}, which a segment may hold as they are: an IPv6 address stays readable.
     */
    static String segment(String value) {
        StringBuilder out = new StringBuilder();
        for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if (c >= 'a' && c <= 'z'
                    || c >= 'A' && c <= 'Z'
                    || c >= '0' && c <= '9'
                    || c == '-'
                    || c == '.'
                    || c == '_'
                    || c == '~'
                    || c == ':'
                    || c == '@') {
                out.append(c);
            } else {
                out.append('%')
                        .append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xf, 16)))
                        .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
            }
        }
        return out.toString();
    }

    private static String seconds(Duration d) {
        return d.toSeconds() + " s";
    }

    /**
     * @return the first message in the cause chain, or {@code null}: the JDK's client often wraps
     *     the informative exception in one without a message
     */
    private static String firstMessage(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null && !t.getMessage().isBlank()) {
                return t.getMessage();
            }
        }
        return null;
    }
}
