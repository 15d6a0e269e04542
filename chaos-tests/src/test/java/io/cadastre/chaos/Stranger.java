package io.cadastre.chaos;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.AddressFromURIString;
import org.apache.pekko.actor.Props;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.pki.pem.DERPrivateKeyLoader;
import org.apache.pekko.pki.pem.PEMDecoder;
import org.apache.pekko.remote.artery.tcp.SSLEngineProvider;
import scala.Option;

/**
 * A node that is not one of the cluster's members and tries to become one, as an attacker who
 * reaches the cluster port would: a plain Pekko {@code ActorSystem} named {@code cadastre}, with
 * the agent's own cluster settings from its application.conf (so that the join's configuration
 * check passes) and no Cadastre code, that calls {@code Cluster.join} on a member and meanwhile
 * asks the member's shard region of blocks to identify itself, the first step to messaging an
 * entity. Its transport is plain TCP, or TLS presenting the certificate and key given while
 * trusting any peer and skipping Pekko's subject-name check ({@link Permissive}): whatever stops
 * it, the members do.
 *
 * <pre>
 * Stranger HOST PORT SEED SECONDS [--until-joined] [CERT KEY]
 * </pre>
 *
 * Prints {@code RESULT up=<b> identified=<b> members=<n>} on stdout after SECONDS (or, with
 * {@code --until-joined}, as soon as it is Up and the shard region answered): whether it became
 * an Up member, whether the region answered, and how many Up members it saw. An Up stranger then
 * leaves the cluster. It always exits: 0 once it has reported, 1 for bad arguments or a failure.
 */
public final class Stranger {
    private Stranger() {}

    public static void main(String[] args) {
        int code = 1;
        try {
            code = run(args);
        } catch (Exception e) {
            e.printStackTrace();
        } finally {
            // Pekko's threads must not keep a stranger alive after it has reported (or failed).
            System.exit(code);
        }
    }

    private static int run(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println(
                    "usage: Stranger HOST PORT SEED SECONDS [--until-joined] [CERT KEY]");
            return 1;
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String seed = args[2];
        Duration window = Duration.ofSeconds(Long.parseLong(args[3]));
        List<String> rest = List.of(args).subList(4, args.length);
        boolean untilJoined = !rest.isEmpty() && rest.get(0).equals("--until-joined");
        List<String> files = untilJoined ? rest.subList(1, rest.size()) : rest;
        String transport =
                files.isEmpty()
                        ? "pekko.remote.artery.transport = tcp\n"
                        : """
                pekko.remote.artery.transport = tls-tcp
                pekko.remote.artery.ssl.ssl-engine-provider = "%s"
                stranger.cert-file = "%s"
                stranger.key-file = "%s"
                """
                                .formatted(Permissive.class.getName(), files.get(0), files.get(1));
        Config config =
                ConfigFactory.parseString(
                                transport
                                        + """
                pekko.actor.provider = cluster
                pekko.remote.artery.canonical.hostname = "%s"
                pekko.remote.artery.canonical.port = %d
                pekko.coordinated-shutdown.exit-jvm = off
                """
                                                .formatted(host, port))
                        .withFallback(ConfigFactory.load());

        ActorSystem system = ActorSystem.create("cadastre", config);
        Cluster cluster = Cluster.get(system);
        AtomicBoolean up = new AtomicBoolean();
        AtomicBoolean identified = new AtomicBoolean();
        Set<String> upMembers = ConcurrentHashMap.newKeySet();
        cluster.registerOnMemberUp(() -> up.set(true));
        system.actorOf(
                Props.create(MemberWatch.class, () -> new MemberWatch(upMembers)), "member-watch");
        cluster.join(AddressFromURIString.parse(seed));

        long deadline = System.nanoTime() + window.toNanos();
        while (System.nanoTime() < deadline && !(untilJoined && up.get() && identified.get())) {
            try {
                // The seed's block shard region: what a member talks to when it sends a block a
                // command.
                system.actorSelection(seed + "/system/sharding/Block")
                        .resolveOne(Duration.ofSeconds(1))
                        .toCompletableFuture()
                        .get(2, TimeUnit.SECONDS);
                identified.set(true);
            } catch (Exception notAnswered) {
                TimeUnit.MILLISECONDS.sleep(
                        200); // an undeliverable selection may fail at once: pace the probes
            }
        }
        System.out.println(
                "RESULT up="
                        + up.get()
                        + " identified="
                        + identified.get()
                        + " members="
                        + upMembers.size());
        System.out.flush();
        if (up.get()) {
            CountDownLatch removed = new CountDownLatch(1);
            cluster.registerOnMemberRemoved(removed::countDown);
            cluster.leave(cluster.selfAddress());
            removed.await(30, TimeUnit.SECONDS);
        }
        system.terminate();
        system.getWhenTerminated()
                .toCompletableFuture()
                .completeOnTimeout(null, 15, TimeUnit.SECONDS)
                .join();
        return 0;
    }

    /** Counts the members it sees Up. */
    static final class MemberWatch extends AbstractActor {
        private final Set<String> upMembers;

        MemberWatch(Set<String> upMembers) {
            this.upMembers = upMembers;
        }

        @Override
        public void preStart() {
            Cluster.get(getContext().getSystem())
                    .subscribe(
                            getSelf(),
                            ClusterEvent.initialStateAsEvents(),
                            ClusterEvent.MemberUp.class);
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder()
                    .match(
                            ClusterEvent.MemberUp.class,
                            up -> upMembers.add(up.member().address().toString()))
                    .matchAny(other -> {})
                    .build();
        }
    }

    /**
     * An attacker's TLS: presents {@code stranger.cert-file} with {@code stranger.key-file} (PEM,
     * RSA), trusts every peer certificate and accepts every session, so that only the other side
     * can refuse the connection.
     */
    public static final class Permissive implements SSLEngineProvider {
        private final SSLContext context;

        public Permissive(ActorSystem system) throws Exception {
            Config c = system.settings().config().getConfig("stranger");
            X509Certificate cert =
                    (X509Certificate)
                            CertificateFactory.getInstance("X.509")
                                    .generateCertificate(
                                            new ByteArrayInputStream(
                                                    Files.readAllBytes(
                                                            Path.of(c.getString("cert-file")))));
            PrivateKey key =
                    DERPrivateKeyLoader.load(
                            PEMDecoder.decode(
                                    Files.readString(
                                            Path.of(c.getString("key-file")),
                                            StandardCharsets.US_ASCII)));
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            char[] password = "stranger".toCharArray();
            store.setKeyEntry("stranger", key, password, new Certificate[] {cert});
            KeyManagerFactory keys =
                    KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, password);
            context = SSLContext.getInstance("TLSv1.3");
            context.init(keys.getKeyManagers(), new TrustManager[] {new TrustingAll()}, null);
        }

        @Override
        public SSLEngine createServerSSLEngine(String hostname, int port) {
            SSLEngine engine = context.createSSLEngine(hostname, port);
            engine.setUseClientMode(false);
            engine.setWantClientAuth(true);
            return engine;
        }

        @Override
        public SSLEngine createClientSSLEngine(String hostname, int port) {
            SSLEngine engine = context.createSSLEngine(hostname, port);
            engine.setUseClientMode(true);
            return engine;
        }

        @Override
        public Option<Throwable> verifyClientSession(String hostname, SSLSession session) {
            return Option.empty();
        }

        @Override
        public Option<Throwable> verifyServerSession(String hostname, SSLSession session) {
            return Option.empty();
        }
    }

    private static final class TrustingAll implements X509TrustManager {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {}

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    }
}
