package io.cadastre.agent;

import com.datastax.oss.driver.api.core.CqlSession;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.cassandra.KeyspaceAndTableStatements;
import org.apache.pekko.persistence.cassandra.PluginSettings;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSession;
import org.apache.pekko.stream.connectors.cassandra.javadsl.CassandraSessionRegistry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cadastre-agent schema}: the Cassandra keyspaces and tables the journal needs, with the
 * configured keyspace name and replication factor, printed as CQL, or with {@code --execute}
 * created in the configured Cassandra (idempotent: {@code IF NOT EXISTS}). Production runs this
 * once, ahead of the members, instead of letting every member create the schema at start.
 * Exit code 0, or 1 with a message on stderr.
 */
@Command(
        name = "schema",
        mixinStandardHelpOptions = true,
        description =
                "Print (or --execute) the CQL that creates Cadastre's Cassandra keyspaces and tables.")
public final class SchemaCommand implements Callable<Integer> {

    @Option(
            names = {"-c", "--config"},
            paramLabel = "FILE",
            description = "A HOCON file overriding application.conf.")
    File configFile;

    @Option(
            names = "--execute",
            description = "Run the statements against cadastre.cassandra.contact-points.")
    boolean execute;

    @Option(
            names = "--timeout-seconds",
            defaultValue = "60",
            description = "Per statement (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Override
    public Integer call() {
        // DDL waits for schema agreement and is slow on a busy node: the driver's 2 s default
        // request timeout is for the journal's reads and writes, not for this. Nothing here reads
        // the driver's schema metadata, and refreshing it after each statement costs its 1 s
        // debounce window (10 statements: 16 s with it, under 5 s without); but the driver waits
        // for schema agreement only as part of that refresh, so the loop below asks for it.
        Config overrides =
                ConfigFactory.parseString(
                        "cadastre.persistence = cassandra\npekko.actor.provider = local\n"
                                + "pekko.loglevel = WARNING\npekko.coordinated-shutdown.exit-jvm = off\n"
                                + "datastax-java-driver.advanced.metadata.schema.enabled = false\n"
                                + "datastax-java-driver.basic.request.timeout = "
                                + timeoutSeconds
                                + " seconds");
        ActorSystem<Void> system;
        try {
            Config config = AgentMain.loadConfig(configFile, overrides);
            system = ActorSystem.create(Behaviors.empty(), "cadastre-schema", config);
        } catch (RuntimeException e) {
            System.err.println("cadastre-agent schema: configuration error: " + e.getMessage());
            return 1;
        }
        try {
            KeyspaceAndTableStatements cql =
                    new KeyspaceAndTableStatements(
                            system,
                            "pekko.persistence.cassandra",
                            PluginSettings.apply(Adapter.toClassic(system)));
            List<String> statements = new ArrayList<>();
            statements.add(cql.createJournalKeyspaceStatement());
            statements.addAll(cql.getCreateJournalTablesStatements());
            String journalKeyspace =
                    system.settings()
                            .config()
                            .getString(FencedCassandraJournal.PLUGIN_PATH + ".journal.keyspace");
            statements.add(CassandraJournalEpochs.createTableStatement(journalKeyspace));
            statements.add(CassandraJournalEpochs.addCutsStatement(journalKeyspace));
            statements.add(cql.createSnapshotKeyspaceStatement());
            statements.addAll(cql.getCreateSnapshotTablesStatements());
            if (!execute) {
                statements.forEach(s -> System.out.println(s.strip() + ";\n"));
                return 0;
            }
            CassandraSession session =
                    CassandraSessionRegistry.get(system).sessionFor("pekko.persistence.cassandra");
            CqlSession cqlSession =
                    session.underlying()
                            .toCompletableFuture()
                            .get(timeoutSeconds, TimeUnit.SECONDS);
            for (String statement : statements) {
                session.executeDDL(statement)
                        .toCompletableFuture()
                        .get(timeoutSeconds, TimeUnit.SECONDS);
                // The next statement may reach another coordinator, which must know this one's
                // keyspace or table already.
                if (!cqlSession
                        .checkSchemaAgreementAsync()
                        .toCompletableFuture()
                        .get(timeoutSeconds, TimeUnit.SECONDS)) {
                    System.err.println(
                            "cadastre-agent schema: the Cassandra nodes did not agree on the schema"
                                    + " after: "
                                    + statement.strip().lines().findFirst().orElse("")
                                    + " (run it again once every node is up)");
                    return 1;
                }
            }
            System.out.println(
                    "created " + statements.size() + " keyspaces and tables (or found them)");
            return 0;
        } catch (Exception e) {
            System.err.println(
                    "cadastre-agent schema: " + (e.getCause() != null ? e.getCause() : e));
            return 1;
        } finally {
            system.terminate();
            system.getWhenTerminated()
                    .toCompletableFuture()
                    .completeOnTimeout(
                            null, Duration.ofSeconds(10).toMillis(), TimeUnit.MILLISECONDS)
                    .join();
        }
    }
}
