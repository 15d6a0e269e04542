package io.cadastre.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Reads a child process's output on a thread of its own, so that waiting for the child keeps its
 * deadline. The threads are pooled (daemons, kept while idle): starting two threads per plugin
 * exec would put about 0.2 ms of thread start-up into every timed benchmark call.
 */
public final class Streams {
    private static final ExecutorService READERS =
            Executors.newCachedThreadPool(
                    r -> {
                        Thread t = new Thread(r, "child-output-reader");
                        t.setDaemon(true);
                        return t;
                    });

    private Streams() {}

    /** @return all of {@code stream} as UTF-8, once it ends */
    public static CompletableFuture<String> readAll(InputStream stream) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try (stream) {
                        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                },
                READERS);
    }
}
