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
        List<AutoCloseable> waits = new ArrayList<>();
        for (FutureTask<Void> close : closes) {
            waits.add(
                    () -> {
                        try {
                            close.get();
                        } catch (ExecutionException e) {
                            throw e.getCause() instanceof Exception c ? c : e;
                        }
                    });
        }
        inTurn(waits);
    }

    /**
     * Closes every resource in the given order, each even after an earlier one failed: a clean-up
     * whose steps depend on each other (a pod's sandbox before its runtime, files last).
     *
     * @throws Exception the first failure, the later ones suppressed
     */
    public static void inTurn(List<? extends AutoCloseable> resources) throws Exception {
        Exception first = null;
        for (AutoCloseable resource : resources) {
            try {
                resource.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
