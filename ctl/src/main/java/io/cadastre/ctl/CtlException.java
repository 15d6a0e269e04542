package io.cadastre.ctl;

/**
 * A failure that ends a command with exit code 2 and one line on stderr: the agent cannot be
 * reached, it answered an error status, its answer is not the contract's shape, or a local input
 * (the token file) is unusable. The message is meant for the operator as it is.
 */
final class CtlException extends RuntimeException {
    CtlException(String message) {
        super(message);
    }

    CtlException(String message, Throwable cause) {
        super(message, cause);
    }
}
