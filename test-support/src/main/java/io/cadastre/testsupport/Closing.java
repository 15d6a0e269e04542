package io.cadastre.testsupport;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;

/** Stopping what a test started, several at once. */
public final class Closing {
    private Closing() {}

    /**
     * Closes every resource, each on a thread of its own, and waits for all of them: one after
     * another would cost each one's stop in turn (a member leaves the cluster on SIGTERM, a
     * containerd stops its pods first, seconds each).
     *
     * @throws Exception the first failure, the later ones suppressed
     */
    public static void together(Collection<? extends AutoCloseable> resources) throws Exception {
        List<FutureTask<Void>> closes = new ArrayList<>();
        for (AutoCloseable resource : resources) {
            FutureTask<Void> close =
                    new FutureTask<>(
                            () -> {
                                resource.close();
                                return null;
                            });
            new Thread(close, "close-" + resource.getClass().getSimpleName()).start();
            closes.add(close);
        }
        Exception first = null;
        for (FutureTask<Void> close : closes) {
            try {
                close.get();
            } catch (ExecutionException e) {
                Exception cause = e.getCause() instanceof Exception c ? c : e;
                if (first == null) {
                    first = cause;
                } else {
                    first.addSuppressed(cause);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
