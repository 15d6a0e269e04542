package io.cadastre.node;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * Tells whether a pod's network namespace is certainly gone, by its path (CNI_NETNS): a bind-mount
 * file such as {@code /var/run/netns/x}, or {@code /proc/<pid>/ns/net}. The {@link Reclaimer}
 * releases the addresses of attachments whose namespace is gone; the production check looks at the
 * file, tests put a fake behind this interface.
 *
 * <p>Implementations answer {@code true} only when sure: a path whose existence cannot be told
 * (no permission, an I/O error, a malformed path) is not gone, since a wrong "gone" releases the
 * addresses of a live pod. They may block briefly (a file-system call): call them off the actor's
 * dispatcher.
 */
@FunctionalInterface
public interface NetnsPresence {

    /**
     * @param netnsPath an absolute path, as the runtime gave it
     * @return true when nothing exists at the path any more
     */
    boolean isGone(String netnsPath);

    /**
     * The file check: gone when {@link Files#notExists} says so. A netns path is removed when the
     * runtime deletes the namespace ({@code /var/run/netns/x} is unmounted and unlinked), or when
     * the process behind {@code /proc/<pid>/ns/net} has exited. The agent must see the same paths
     * as the runtime (it opens them at ADD anyway).
     */
    NetnsPresence FILES =
            path -> {
                try {
                    return Files.notExists(Path.of(path));
                } catch (InvalidPathException e) {
                    return false;
                }
            };
}
