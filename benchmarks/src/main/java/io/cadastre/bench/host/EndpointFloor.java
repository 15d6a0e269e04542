package io.cadastre.bench.host;

import com.typesafe.config.ConfigFactory;
import io.cadastre.cni.CniBackend;
import io.cadastre.cni.CniHandler;
import io.cadastre.http.CniSocketServer;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The floor under the agent's CPU per IPAM call: the agent's own CNI endpoint ({@link
 * CniSocketServer} and {@link CniHandler}: the socket, HTTP, the netconf parsed and checked, the
 * result rendered) over a backend that answers at once from memory, on the CNI thread, with no
 * actor, journal or netns check behind it. Run in a JVM of its own with the agent's flags by
 * {@code agent-cost}, which sends it the same calls through the real plugin as the agent, so the
 * two CPU figures per call differ by what the IPAM work adds.
 *
 * <p>Usage: {@code EndpointFloor SOCKET}; runs until killed. Not a server anyone should run.
 */
public final class EndpointFloor {
    private EndpointFloor() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: EndpointFloor SOCKET");
            System.exit(2);
        }
        // A local actor system: the server needs one for its lifecycle, nothing runs on it. Only
        // Pekko's reference settings, not the agent's application.conf (a cluster member).
        ActorSystem<Void> system =
                ActorSystem.create(
                        Behaviors.empty(),
                        "endpoint-floor",
                        ConfigFactory.parseString("pekko.actor.provider = local")
                                .withFallback(ConfigFactory.defaultReference()));
        CniSocketServer server =
                new CniSocketServer(
                        system,
                        new CniHandler(new FromMemory()),
                        CniSocketServer.Settings.defaults(Path.of(args[0])));
        server.start();
        new CountDownLatch(1).await();
    }

    /** Answers every ADD with one address of the benchmark range, everything else with success. */
    private static final class FromMemory implements CniBackend {
        private static final AddResult ADDRESS =
                new AddResult(
                        List.of(), List.of(new IpConfig("198.18.0.1/20", null, null)), List.of());

        @Override
        public CompletionStage<AddResult> add(AddRequest request) {
            return CompletableFuture.completedFuture(ADDRESS);
        }

        @Override
        public CompletionStage<Void> del(Attachment attachment, boolean ipamOnly) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<List<String>> check(
                Attachment attachment,
                boolean ipamOnly,
                AddResult prevResult,
                CniBackend.Bandwidth bandwidth) {
            return CompletableFuture.completedFuture(List.of());
        }

        @Override
        public CompletionStage<Void> gc(String network, Set<AttachmentRef> validAttachments) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<Void> status(List<String> pools) {
            return CompletableFuture.completedFuture(null);
        }
    }
}
