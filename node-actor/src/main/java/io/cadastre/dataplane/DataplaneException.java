package io.cadastre.dataplane;

/**
 * A dataplane operation failed. The message names the step and the kernel's error
 * (e.g. {@code "RTM_NEWLINK veth cad1a2b3c4d5e6: File exists (errno 17)"}).
 */
public class DataplaneException extends Exception {
    private static final long serialVersionUID = 1L;
    private final boolean netnsMissing;

    public DataplaneException(String message, boolean netnsMissing, Throwable cause) {
        super(message, cause);
        this.netnsMissing = netnsMissing;
    }

    public DataplaneException(String message) {
        this(message, false, null);
    }

    /** @return true when the failure is that the pod's network namespace does not exist */
    public boolean netnsMissing() {
        return netnsMissing;
    }
}
