package io.cadastre.agent;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;

/**
 * How this member's cluster port (Pekko Artery) is secured, decided at start from
 * {@code cadastre.cluster}. Whoever completes a connection to the port can join the cluster, down
 * members and send any entity any command, so beyond loopback the members authenticate each
 * other: mutual TLS ({@code tls-tcp}) with Pekko's {@code RotatingKeysSSLEngineProvider} and the
 * PEM files of {@code cadastre.cluster.tls} ({@link ClusterTls}).
 *
 * <ul>
 *   <li>TLS files set: {@link Mode#TLS}.
 *   <li>No TLS files, every address the port is bound to or advertised on is loopback:
 *       {@link Mode#LOOPBACK_PLAINTEXT} (a single-host agent): every process of the host, of any
 *       user, reaches the port, so Pekko's untrusted mode is on and no other process can join
 *       or reach an entity; a cluster of several members on one host needs TLS as well.
 *   <li>No TLS files, {@code cadastre.cluster.insecure-plaintext} on: {@link Mode#INSECURE_PLAINTEXT},
 *       logged as a warning.
 *   <li>Otherwise the agent refuses to start.
 * </ul>
 *
 * @param mode how the port is secured
 * @param hostname the address the port is advertised on ({@code pekko.remote.artery.canonical.hostname})
 * @param port the port
 * @param tls the checked credentials, present exactly in {@link Mode#TLS}
 */
public record ClusterTransport(Mode mode, String hostname, int port, Optional<ClusterTls> tls) {

    /** How the cluster port is secured. */
    public enum Mode {
        /** Mutual TLS: a peer must present a certificate from the cluster CA sharing a subject name with ours. */
        TLS,
        /** Plain TCP, bound and advertised on loopback only. */
        LOOPBACK_PLAINTEXT,
        /** Plain TCP beyond loopback without authentication, because the insecure switch says so. */
        INSECURE_PLAINTEXT
    }

    static final String PROVIDER =
            "org.apache.pekko.remote.artery.tcp.ssl.RotatingKeysSSLEngineProvider";
    private static final String INSECURE = "cadastre.cluster.insecure-plaintext";

    /**
     * @param config the agent's resolved configuration
     * @param now the time the certificates must be valid at
     * @throws IllegalArgumentException naming the settings: some but not all TLS files set, TLS
     *     files together with the insecure switch, a non-loopback address without TLS files and
     *     without the switch, or a bad file ({@link ClusterTls#read})
     */
    public static ClusterTransport from(Config config, Instant now) {
        Config c = config.getConfig("cadastre.cluster");
        String hostname = config.getString("pekko.remote.artery.canonical.hostname");
        String bind = config.getString("pekko.remote.artery.bind.hostname");
        int port = config.getInt("pekko.remote.artery.canonical.port");
        Map<String, String> files =
                Map.of(
                        "cert-file",
                        c.getString("tls.cert-file").trim(),
                        "key-file",
                        c.getString("tls.key-file").trim(),
                        "ca-file",
                        c.getString("tls.ca-file").trim());
        List<String> missing = new ArrayList<>();
        for (String key : List.of("cert-file", "key-file", "ca-file")) {
            if (files.get(key).isEmpty()) {
                missing.add(key);
            }
        }
        boolean insecure = c.getBoolean("insecure-plaintext");
        if (missing.size() < 3) {
            if (!missing.isEmpty()) {
                throw new IllegalArgumentException(
                        "cadastre.cluster.tls: cert-file, key-file and ca-file go together; missing "
                                + missing.stream().map(k -> k + " (" + envName(k) + ")").toList());
            }
            if (insecure) {
                throw new IllegalArgumentException(
                        INSECURE + " is on and cadastre.cluster.tls files are set: choose one");
            }
            ClusterTls tls =
                    ClusterTls.read(
                            Path.of(files.get("cert-file")),
                            Path.of(files.get("key-file")),
                            Path.of(files.get("ca-file")),
                            c.getDuration("tls.reload-interval"),
                            now);
            return new ClusterTransport(Mode.TLS, hostname, port, Optional.of(tls));
        }
        if (insecure) {
            return new ClusterTransport(Mode.INSECURE_PLAINTEXT, hostname, port, Optional.empty());
        }
        Optional<String> exposed =
                !isLoopback(hostname)
                        ? Optional.of("cadastre.cluster.hostname " + quoted(hostname))
                        : !bind.isBlank() && !isLoopback(bind)
                                ? Optional.of("pekko.remote.artery.bind.hostname " + quoted(bind))
                                : Optional.empty();
        if (exposed.isPresent()) {
            throw new IllegalArgumentException(
                    exposed.get()
                            + " is not a loopback address and no TLS credentials are set: "
                            + "anyone who reaches port "
                            + port
                            + " could join the cluster. Set cadastre.cluster.tls.cert-file, "
                            + "key-file and ca-file ("
                            + envName("cert-file")
                            + ", "
                            + envName("key-file")
                            + ", "
                            + envName("ca-file")
                            + "; README: Securing the cluster), or "
                            + INSECURE
                            + " = on (CADASTRE_CLUSTER_INSECURE_PLAINTEXT) to "
                            + "run the cluster without authentication");
        }
        return new ClusterTransport(Mode.LOOPBACK_PLAINTEXT, hostname, port, Optional.empty());
    }

    /**
     * @return {@code config} with Pekko's transport set to this mode: {@code tls-tcp} with the
     *     rotating-keys provider and the files, or plain {@code tcp} (in untrusted mode on loopback)
     */
    public Config applyTo(Config config) {
        Config selected =
                ConfigFactory.empty()
                        .withValue(
                                "pekko.remote.artery.transport",
                                ConfigValueFactory.fromAnyRef(
                                        mode == Mode.TLS ? "tls-tcp" : "tcp"));
        if (mode == Mode.LOOPBACK_PLAINTEXT) {
            // Loopback is every local user's: untrusted mode drops the actor selections a joining
            // node (InitJoin to the cluster daemon) or a messenger (Identify to a shard region)
            // starts with, and remote system messages, so no local process joins a single-host
            // agent or reaches its entities; a cluster of several members needs TLS.
            selected =
                    selected.withValue(
                            "pekko.remote.artery.untrusted-mode",
                            ConfigValueFactory.fromAnyRef("on"));
        }
        if (tls.isPresent()) {
            ClusterTls t = tls.get();
            String engine = "pekko.remote.artery.ssl.rotating-keys-engine.";
            selected =
                    selected.withValue(
                                    "pekko.remote.artery.ssl.ssl-engine-provider",
                                    ConfigValueFactory.fromAnyRef(PROVIDER))
                            .withValue(
                                    engine + "cert-file",
                                    ConfigValueFactory.fromAnyRef(
                                            t.certFile().toAbsolutePath().toString()))
                            .withValue(
                                    engine + "key-file",
                                    ConfigValueFactory.fromAnyRef(
                                            t.keyFile().toAbsolutePath().toString()))
                            .withValue(
                                    engine + "ca-cert-file",
                                    ConfigValueFactory.fromAnyRef(
                                            t.caFile().toAbsolutePath().toString()))
                            .withValue(
                                    engine + "ssl-context-cache-ttl",
                                    ConfigValueFactory.fromAnyRef(
                                            t.reloadInterval().toMillis() + "ms"));
        }
        return selected.withFallback(config);
    }

    /** Logs how the port is secured: INFO, or WARN for {@link Mode#INSECURE_PLAINTEXT}. Names files, never their content. */
    public void log(Logger log) {
        switch (mode) {
            case TLS -> {
                ClusterTls t = tls.orElseThrow();
                log.info(
                        "cluster port {}:{}: mutual TLS with the CA in {}; certificate {} (names {}, expires {}), "
                                + "files read again every {}",
                        hostname,
                        port,
                        t.caFile(),
                        t.certFile(),
                        t.subjectNames(),
                        t.notAfter(),
                        t.reloadInterval());
            }
            case LOOPBACK_PLAINTEXT ->
                    log.info(
                            "cluster port {}:{}: plain TCP on loopback in untrusted mode (no other "
                                    + "process joins this single-member cluster)",
                            hostname,
                            port);
            case INSECURE_PLAINTEXT ->
                    log.warn(
                            "cluster port {}:{}: plain TCP WITHOUT AUTHENTICATION ({} = on): anyone who "
                                    + "reaches it can join the cluster, down members and change every allocation",
                            hostname,
                            port,
                            INSECURE);
        }
    }

    /**
     * @return whether every address {@code hostname} names is a loopback address: an IP literal
     *     (IPv6 with or without brackets) is looked at as it is, a name is resolved; a name that
     *     does not resolve, an empty one and Pekko's {@code <getHostAddress>} are not loopback
     */
    static boolean isLoopback(String hostname) {
        String h = hostname.trim();
        if (h.startsWith("[") && h.endsWith("]")) {
            h = h.substring(1, h.length() - 1);
        }
        if (h.isEmpty() || h.startsWith("<")) {
            return false;
        }
        try {
            InetAddress[] all = InetAddress.getAllByName(h);
            return all.length > 0 && Arrays.stream(all).allMatch(InetAddress::isLoopbackAddress);
        } catch (UnknownHostException e) {
            return false;
        }
    }

    private static String envName(String key) {
        return "CADASTRE_CLUSTER_TLS_" + key.toUpperCase(Locale.ROOT).replace('-', '_');
    }

    private static String quoted(String s) {
        return "\"" + s + "\"";
    }
}
