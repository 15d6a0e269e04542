package io.cadastre.agent;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import io.cadastre.journal.EmbeddedStore;
import io.cadastre.journal.H2Migration;
import io.cadastre.journal.RocksJournalStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSessionRegistry;

/**
 * The event journal behind the entities, chosen by {@code cadastre.persistence}: {@code embedded}
 * (RocksDB through {@code io.cadastre.journal}, in {@code cadastre.data-dir}: one host) or {@code cassandra}
 * (pekko-persistence-cassandra: every member of a cluster shares it).
 */
public enum Persistence {
    EMBEDDED("cadastre.embedded-journal.journal", "cadastre.embedded-journal.snapshot"),
    CASSANDRA("pekko.persistence.cassandra.journal", "pekko.persistence.cassandra.snapshot");

    private final String journalPlugin;
    private final String snapshotPlugin;

    Persistence(String journalPlugin, String snapshotPlugin) {
        this.journalPlugin = journalPlugin;
        this.snapshotPlugin = snapshotPlugin;
    }

    /**
     * @throws IllegalArgumentException when {@code cadastre.persistence} is neither value
     */
    public static Persistence of(Config config) {
        String value = config.getString("cadastre.persistence").trim();
        return switch (value) {
            case "embedded" -> EMBEDDED;
            case "cassandra" -> CASSANDRA;
            default ->
                    throw new IllegalArgumentException(
                            "cadastre.persistence must be \"embedded\" or \"cassandra\", not \""
                                    + value
                                    + "\"");
        };
    }

    /**
     * @return the settings that select this journal, to lay over the configuration: the plugins,
     *     and for Cassandra the contact points, whether keyspaces and tables are auto-created, and
     *     the driver's credentials and TLS ({@link CassandraSecurity})
     * @throws IllegalArgumentException naming the setting when Cassandra's credentials or TLS
     *     settings are inconsistent or their files unreadable
     */
    public Config selection(Config config) {
        Config selected =
                ConfigFactory.parseMap(
                        Map.of(
                                "pekko.persistence.journal.plugin", journalPlugin,
                                "pekko.persistence.snapshot-store.plugin", snapshotPlugin));
        if (this == CASSANDRA) {
            Config c = config.getConfig("cadastre.cassandra");
            List<String> contactPoints =
                    c.getString("contact-points-env").isBlank()
                            ? c.getStringList("contact-points")
                            : Arrays.stream(c.getString("contact-points-env").split(","))
                                    .map(String::trim)
                                    .filter(s -> !s.isEmpty())
                                    .toList();
            boolean autocreate = c.getBoolean("schema-autocreate");
            selected =
                    selected.withValue(
                                    "datastax-java-driver.basic.contact-points",
                                    ConfigValueFactory.fromIterable(contactPoints))
                            .withValue(
                                    "pekko.persistence.cassandra.journal.keyspace-autocreate",
                                    ConfigValueFactory.fromAnyRef(autocreate))
                            .withValue(
                                    "pekko.persistence.cassandra.journal.tables-autocreate",
                                    ConfigValueFactory.fromAnyRef(autocreate))
                            .withValue(
                                    "pekko.persistence.cassandra.snapshot.keyspace-autocreate",
                                    ConfigValueFactory.fromAnyRef(autocreate))
                            .withValue(
                                    "pekko.persistence.cassandra.snapshot.tables-autocreate",
                                    ConfigValueFactory.fromAnyRef(autocreate));
            selected = CassandraSecurity.from(c).driverSettings().withFallback(selected);
        }
        return selected;
    }

    /**
     * Prepares the journal before the member joins the cluster (and entities may start here): the
     * embedded journal is opened (RocksDB recovers it) and an H2 journal of an older agent migrated into it
     * ({@link H2Migration}; a failure fails start-up); for Cassandra the journal's session is
     * connected (it waits while Cassandra is down; the schema is created ahead by
     * {@link SchemaCommand} or by the plugin).
     */
    public CompletionStage<Done> prepare(ActorSystem<?> system) {
        return this == EMBEDDED
                ? CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                RocksJournalStore store = EmbeddedStore.ID.get(system).store();
                                H2Migration.Result migrated =
                                        H2Migration.migrateIfPresent(
                                                Path.of(
                                                        system.settings()
                                                                .config()
                                                                .getString("cadastre.data-dir")),
                                                store);
                                if (migrated != null) {
                                    system.log()
                                            .info(
                                                    "migrated the H2 journal into the embedded journal: {} ({} renamed to {})",
                                                    migrated,
                                                    H2Migration.H2_FILE,
                                                    H2Migration.MIGRATED);
                                }
                                return Done.getInstance();
                            } catch (IOException e) {
                                throw new UncheckedIOException(e);
                            }
                        })
                : CassandraSessionRegistry.get(system)
                        .sessionFor("pekko.persistence.cassandra")
                        .underlying()
                        .thenApply(session -> Done.getInstance());
    }
}
