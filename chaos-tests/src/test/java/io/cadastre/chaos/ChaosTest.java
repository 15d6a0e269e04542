package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The chaos test: three agents on a real Cassandra under a seeded schedule of SIGKILLs, SIGSTOP
 * pauses, network partitions and a Cassandra restart, with CNI clients on every host; then the
 * {@link Checker} over the recorded history (unique, idempotent, durable, released). Fails on any
 * violation or liveness problem, with the seed to reproduce it ({@code -Dchaos.seed=...}) and the
 * history's path. Settings: {@link ChaosSettings}; the harness: chaos-tests/DESIGN.md.
 */
class ChaosTest {

    @Test
    void noAddressIsHandedOutTwiceOrLostUnderKillsPausesPartitionsAndCassandraRestarts()
            throws Exception {
        ChaosSettings settings = ChaosSettings.fromSystemProperties();
        System.out.println("chaos: " + settings);
        Path dir = Files.createTempDirectory("cad-chaos");
        System.out.println("chaos: files in " + dir);
        ChaosRun.Result result;
        Path history;
        try (ChaosRun run = new ChaosRun(settings, dir)) {
            history = run.historyFile();
            result = run.execute();
        }
        System.out.println(result.summary());
        if (!result.passed()) {
            System.out.println(result.timelines());
            fail(
                    result.violations().size()
                            + " violations and "
                            + result.problems().size()
                            + " problems (seed "
                            + settings.seed()
                            + ", reproduce with -Dchaos.seed="
                            + settings.seed()
                            + "); history: "
                            + history
                            + ", agent logs and Cassandra in "
                            + dir
                            + "\n"
                            + result.summary()
                            + "\n"
                            + result.timelines());
        }
        if (Boolean.getBoolean("chaos.keepFiles")) {
            System.out.println("chaos: kept " + dir + " (-Dchaos.keepFiles)");
        } else {
            deleteRecursively(dir);
        }
    }

    private static void deleteRecursively(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
