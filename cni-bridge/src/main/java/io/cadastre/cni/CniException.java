package io.cadastre.cni;

/**
 * A CNI error to report to the runtime (CNI spec 1.1 §Error): the code, a short message and
 * optional details. Codes 0-99 are the spec's; Cadastre's own start at 100 (see {@link CniCodes}).
 */
public class CniException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int code;
    private final String details;

    public CniException(int code, String msg, String details) {
        super(msg);
        this.code = code;
        this.details = details;
    }

    public CniException(int code, String msg) {
        this(code, msg, null);
    }

    public int code() {
        return code;
    }

    /** @return the longer explanation, or {@code null} */
    public String details() {
        return details;
    }
}
