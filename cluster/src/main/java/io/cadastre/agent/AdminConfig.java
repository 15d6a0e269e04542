package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.admin.AdminServer;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Reads the admin API's settings from {@code cadastre.admin} ({@code application.conf} documents
 * the keys and their environment overrides).
 */
final class AdminConfig {
    private AdminConfig() {}

    /**
     * @throws IllegalArgumentException naming the key: a malformed {@code bind}, an unreadable or
     *     empty {@code token-file}, a non-loopback {@code bind} without a {@code token-file}, or a
     *     negative {@code metrics-refresh}
     */
    static AdminServer.Settings from(Config root) {
        Config c = root.getConfig("cadastre.admin");
        String tokenFile = c.getString("token-file").trim();
        AdminServer.Settings settings;
        try {
            settings = AdminServer.Settings.parse(c.getString("bind"),
                    tokenFile.isEmpty() ? Optional.empty() : Optional.of(Path.of(tokenFile)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("cadastre.admin (bind, token-file): " + e.getMessage(), e);
        }
        try {
            return settings.withMetricsRefresh(c.getDuration("metrics-refresh"));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("cadastre.admin.metrics-refresh: " + e.getMessage(), e);
        }
    }
}
