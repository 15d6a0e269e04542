package io.cadastre.agent;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSessionRegistry;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils;

/**
 * The event journal behind the entities, chosen by {@code cadastre.persistence}: {@code embedded}
 * (H2 through pekko-persistence-jdbc, in {@code cadastre.data-dir}: one host) or {@code cassandra}
 * (pekko-persistence-cassandra: every member of a cluster shares it).
 */
public enum Persistence {
    EMBEDDED("jdbc-journal", "jdbc-snapshot-store"),
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
            default -> throw new IllegalArgumentException(
                    "cadastre.persistence must be \"embedded\" or \"cassandra\", not \"" + value + "\"");
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
        Config selected = ConfigFactory.parseMap(Map.of(
                "pekko.persistence.journal.plugin", journalPlugin,
                "pekko.persistence.snapshot-store.plugin", snapshotPlugin));
        if (this == CASSANDRA) {
            Config c = config.getConfig("cadastre.cassandra");
            List<String> contactPoints = c.getString("contact-points-env").isBlank()
                    ? c.getStringList("contact-points")
                    : Arrays.stream(c.getString("contact-points-env").split(",")).map(String::trim)
                            .filter(s -> !s.isEmpty()).toList();
            boolean autocreate = c.getBoolean("schema-autocreate");
            selected = selected
                    .withValue("datastax-java-driver.basic.contact-points", ConfigValueFactory.fromIterable(contactPoints))
                    .withValue("pekko.persistence.cassandra.journal.keyspace-autocreate", ConfigValueFactory.fromAnyRef(autocreate))
                    .withValue("pekko.persistence.cassandra.journal.tables-autocreate", ConfigValueFactory.fromAnyRef(autocreate))
                    .withValue("pekko.persistence.cassandra.snapshot.keyspace-autocreate", ConfigValueFactory.fromAnyRef(autocreate))
                    .withValue("pekko.persistence.cassandra.snapshot.tables-autocreate", ConfigValueFactory.fromAnyRef(autocreate));
            selected = CassandraSecurity.from(c).driverSettings().withFallback(selected);
        }
        return selected;
    }

    /**
     * Prepares the journal before the member joins the cluster (and entities may start here): the
     * embedded journal's tables are created if missing; for Cassandra the journal's session is
     * connected (it waits while Cassandra is down; the schema is created ahead by
     * {@link SchemaCommand} or by the plugin).
     */
    public CompletionStage<Done> prepare(ActorSystem<?> system) {
        return this == EMBEDDED ? SchemaUtils.createIfNotExists(system)
                : CassandraSessionRegistry.get(system).sessionFor("pekko.persistence.cassandra").underlying()
                        .thenApply(session -> Done.getInstance());
    }
}
