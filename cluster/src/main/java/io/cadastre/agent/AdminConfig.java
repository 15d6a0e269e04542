package io.cadastre.agent;

import com.typesafe.config.Config;
import io.cadastre.admin.AdminServer;
import io.cadastre.admin.AdminToken;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Reads the admin API's settings from {@code cadastre.admin} ({@code application.conf} documents
 * the keys and their environment overrides), with the token: {@code token-file}'s, or the agent's
 * own in its data directory ({@link AdminToken#ensure}).
 */
final class AdminConfig {
    private AdminConfig() {}

    /**
     * The settings, and where the token came from.
     *
     * @param kept the agent's own token file, when no {@code token-file} is configured; else null
     */
    record Resolved(AdminServer.Settings settings, Path tokenFile, AdminToken.Kept kept) {}

    /**
     * @param dataDir the agent's data directory, existing and private ({@link DataDir#prepare}):
     *     where the token is kept when {@code token-file} is not set
     * @throws IllegalArgumentException naming the key: a malformed {@code bind}, a {@code
     *     token-file} that is missing, unreadable, empty or readable by group or others, or a
     *     negative {@code metrics-refresh}
     * @throws IOException when the agent's own token file cannot be read or written
     */
    static Resolved from(Config root, Path dataDir) throws IOException {
        Config c = root.getConfig("cadastre.admin");
        String configured = c.getString("token-file").trim();
        String token;
        Path tokenFile;
        AdminToken.Kept kept = null;
        if (configured.isEmpty()) {
            kept = AdminToken.ensure(dataDir);
            token = kept.token();
            tokenFile = kept.file();
        } else {
            tokenFile = Path.of(configured);
            try {
                token = AdminToken.read(tokenFile);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "cadastre.admin.token-file: " + e.getMessage(), e);
            }
        }
        AdminServer.Settings settings;
        try {
            settings = AdminServer.Settings.parse(c.getString("bind"), token);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("cadastre.admin.bind: " + e.getMessage(), e);
        }
        try {
            return new Resolved(
                    settings.withMetricsRefresh(c.getDuration("metrics-refresh")), tokenFile, kept);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "cadastre.admin.metrics-refresh: " + e.getMessage(), e);
        }
    }
}
