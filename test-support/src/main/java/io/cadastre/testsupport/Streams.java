package io.cadastre.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/** Reads a child process's output on a thread of its own, so that waiting for the child keeps its deadline. */
final class Streams {
    private Streams() {}

    /** @return all of {@code stream} as UTF-8, once it ends (a daemon thread named {@code threadName} reads it) */
    static CompletableFuture<String> readAll(InputStream stream, String threadName) {
        CompletableFuture<String> result = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (stream) {
                result.complete(new String(stream.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException | UncheckedIOException e) {
                result.completeExceptionally(e);
            }
        }, threadName);
        reader.setDaemon(true);
        reader.start();
        return result;
    }
}
