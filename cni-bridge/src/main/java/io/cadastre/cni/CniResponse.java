package io.cadastre.cni;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What the agent answers the C plugin (cni-bridge/DESIGN.md, "Reply"): 200 with the body the plugin
 * prints (a result, or nothing for DEL, CHECK, GC, STATUS), or another status with a CNI error
 * object (CNI spec 1.1 §Error).
 *
 * <p>Status for an error code ({@link #statusFor}): 400 for input errors (1-7), 503 for "try again
 * later" and "not available" (11, 50, 51), 500 for everything else (including Cadastre's 100+).
 * The plugin only distinguishes 200 from the rest; the status helps humans and metrics.
 *
 * @param httpStatus the HTTP status code
 * @param body JSON, or empty
 */
public record CniResponse(int httpStatus, byte[] body) {
    public CniResponse {
        body = body == null ? new byte[0] : body;
    }

    /** @return a 200 with {@code body} */
    public static CniResponse ok(byte[] body) {
        return new CniResponse(200, body);
    }

    /** @return a 200 with no body */
    public static CniResponse empty() {
        return new CniResponse(200, new byte[0]);
    }

    /** @return the HTTP status that carries the CNI error {@code code} */
    public static int statusFor(int code) {
        if (code >= 1 && code <= 7) {
            return 400;
        }
        if (code == CniCodes.TRY_AGAIN_LATER
                || code == CniCodes.NOT_AVAILABLE
                || code == CniCodes.LIMITED_CONNECTIVITY) {
            return 503;
        }
        return 500;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CniResponse r
                && httpStatus == r.httpStatus
                && Arrays.equals(body, r.body);
    }

    @Override
    public int hashCode() {
        return 31 * httpStatus + Arrays.hashCode(body);
    }

    @Override
    public String toString() {
        return "CniResponse[" + httpStatus + ", " + new String(body, StandardCharsets.UTF_8) + "]";
    }
}
