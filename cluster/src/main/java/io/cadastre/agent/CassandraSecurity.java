package io.cadastre.agent;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.util.Optional;
import org.slf4j.Logger;

/**
 * Credentials and TLS for the journal's connection to Cassandra ({@code cadastre.cassandra}:
 * {@code username}, {@code password-file}, {@code tls.*}), turned into the Cassandra driver's own
 * settings ({@code datastax-java-driver.advanced.auth-provider}: {@code PlainTextAuthProvider};
 * {@code advanced.ssl-engine-factory}: {@code DefaultSslEngineFactory}). Every file is read and
 * every store opened here, so that a wrong path or password stops the agent at start.
 *
 * <p>Passwords are held only to hand them to the driver's settings; {@link #toString()} and
 * {@link #summary()} leave them out.
 */
final class CassandraSecurity {
    private static final String PREFIX = "cadastre.cassandra.";

    private final Optional<String> username;
    private final Optional<String> password;
    private final boolean tls;
    private final Optional<Path> caFile;
    private final Optional<Path> truststore;
    private final Optional<String> truststorePassword;
    private final Optional<Path> keystore;
    private final Optional<String> keystorePassword;
    private final Optional<Path> certFile;
    private final Optional<Path> keyFile;
    private final boolean hostnameValidation;

    private CassandraSecurity(
            Optional<String> username,
            Optional<String> password,
            boolean tls,
            Optional<Path> caFile,
            Optional<Path> truststore,
            Optional<String> truststorePassword,
            Optional<Path> keystore,
            Optional<String> keystorePassword,
            Optional<Path> certFile,
            Optional<Path> keyFile,
            boolean hostnameValidation) {
        this.username = username;
        this.password = password;
        this.tls = tls;
        this.caFile = caFile;
        this.truststore = truststore;
        this.truststorePassword = truststorePassword;
        this.keystore = keystore;
        this.keystorePassword = keystorePassword;
        this.certFile = certFile;
        this.keyFile = keyFile;
        this.hostnameValidation = hostnameValidation;
    }

    /**
     * @param c the {@code cadastre.cassandra} section
     * @throws IllegalArgumentException naming the setting: a username without a password file or
     *     the reverse, an unreadable or empty password file, CA, trust or key store settings while
     *     {@code tls.enabled} is off, a CA file and a trust store both, a CA file that holds no PEM
     *     certificate, a key store without its password file, a store that does not open with its
     *     password, a client certificate file without its key file or the reverse, both beside a
     *     key store, or a certificate and key that do not parse or do not belong together
     */
    static CassandraSecurity from(Config c) {
        Optional<String> username = nonBlank(c.getString("username"));
        Optional<Path> passwordFile = nonBlank(c.getString("password-file")).map(Path::of);
        if (username.isPresent() != passwordFile.isPresent()) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "username and "
                            + PREFIX
                            + "password-file go together "
                            + "(CADASTRE_CASSANDRA_USERNAME, CADASTRE_CASSANDRA_PASSWORD_FILE)");
        }
        Optional<String> password = passwordFile.map(f -> secret("password-file", f));
        Config t = c.getConfig("tls");
        boolean tls = t.getBoolean("enabled");
        Optional<Path> caFile = nonBlank(t.getString("ca-file")).map(Path::of);
        Optional<Path> truststore = nonBlank(t.getString("truststore-file")).map(Path::of);
        Optional<Path> truststorePasswordFile =
                nonBlank(t.getString("truststore-password-file")).map(Path::of);
        Optional<Path> keystore = nonBlank(t.getString("keystore-file")).map(Path::of);
        Optional<Path> keystorePasswordFile =
                nonBlank(t.getString("keystore-password-file")).map(Path::of);
        Optional<Path> certFile = nonBlank(t.getString("cert-file")).map(Path::of);
        Optional<Path> keyFile = nonBlank(t.getString("key-file")).map(Path::of);
        if (!tls
                && (caFile.isPresent()
                        || truststore.isPresent()
                        || truststorePasswordFile.isPresent()
                        || keystore.isPresent()
                        || keystorePasswordFile.isPresent()
                        || certFile.isPresent()
                        || keyFile.isPresent())) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "tls: a CA file, trust or key store or client certificate set while "
                            + PREFIX
                            + "tls.enabled is off (CADASTRE_CASSANDRA_TLS_ENABLED)");
        }
        if (certFile.isPresent() != keyFile.isPresent()) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "tls.cert-file and tls.key-file go together"
                            + " (CADASTRE_CASSANDRA_TLS_CERT_FILE, CADASTRE_CASSANDRA_TLS_KEY_FILE)");
        }
        if (certFile.isPresent() && keystore.isPresent()) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "tls.cert-file and tls.keystore-file are both set: the client"
                            + " certificate comes from one or the other");
        }
        if (caFile.isPresent() && truststore.isPresent()) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "tls.ca-file and tls.truststore-file are both set: the CA's"
                            + " certificates come from one or the other");
        }
        if (truststore.isEmpty() && truststorePasswordFile.isPresent()) {
            throw new IllegalArgumentException(
                    PREFIX + "tls.truststore-password-file is set without tls.truststore-file");
        }
        if (keystore.isPresent() != keystorePasswordFile.isPresent()) {
            throw new IllegalArgumentException(
                    PREFIX + "tls.keystore-file and tls.keystore-password-file go together");
        }
        Optional<String> truststorePassword =
                truststorePasswordFile.map(f -> secret("tls.truststore-password-file", f));
        Optional<String> keystorePassword =
                keystorePasswordFile.map(f -> secret("tls.keystore-password-file", f));
        caFile.ifPresent(CassandraSecurity::readCa);
        truststore.ifPresent(f -> open("tls.truststore-file", f, truststorePassword));
        keystore.ifPresent(f -> open("tls.keystore-file", f, keystorePassword));
        certFile.ifPresent(f -> readClientCertificate(f, keyFile.orElseThrow()));
        return new CassandraSecurity(
                username,
                password,
                tls,
                caFile,
                truststore,
                truststorePassword,
                keystore,
                keystorePassword,
                certFile,
                keyFile,
                t.getBoolean("hostname-validation"));
    }

    /** @return the driver settings to lay over the configuration; empty when neither credentials nor TLS are set */
    Config driverSettings() {
        Config settings = ConfigFactory.empty();
        String auth = "datastax-java-driver.advanced.auth-provider.";
        if (username.isPresent()) {
            settings =
                    settings.withValue(
                                    auth + "class",
                                    ConfigValueFactory.fromAnyRef("PlainTextAuthProvider"))
                            .withValue(
                                    auth + "username",
                                    ConfigValueFactory.fromAnyRef(username.get()))
                            .withValue(
                                    auth + "password",
                                    ConfigValueFactory.fromAnyRef(password.orElseThrow()));
        }
        if (tls) {
            String ssl = "datastax-java-driver.advanced.ssl-engine-factory.";
            settings =
                    settings.withValue(
                                    ssl + "class",
                                    ConfigValueFactory.fromAnyRef(
                                            caFile.isPresent() || certFile.isPresent()
                                                    ? PemSslEngineFactory.class.getName()
                                                    : "DefaultSslEngineFactory"))
                            .withValue(
                                    ssl + "hostname-validation",
                                    ConfigValueFactory.fromAnyRef(hostnameValidation));
            if (caFile.isPresent()) {
                settings =
                        settings.withValue(
                                "datastax-java-driver." + PemSslEngineFactory.CA_FILE_OPTION,
                                ConfigValueFactory.fromAnyRef(caFile.get().toString()));
            }
            if (certFile.isPresent()) {
                settings =
                        settings.withValue(
                                        "datastax-java-driver."
                                                + PemSslEngineFactory.CERT_FILE_OPTION,
                                        ConfigValueFactory.fromAnyRef(certFile.get().toString()))
                                .withValue(
                                        "datastax-java-driver."
                                                + PemSslEngineFactory.KEY_FILE_OPTION,
                                        ConfigValueFactory.fromAnyRef(
                                                keyFile.orElseThrow().toString()));
            }
            if (truststore.isPresent()) {
                settings =
                        settings.withValue(
                                ssl + "truststore-path",
                                ConfigValueFactory.fromAnyRef(truststore.get().toString()));
            }
            if (truststorePassword.isPresent()) {
                settings =
                        settings.withValue(
                                ssl + "truststore-password",
                                ConfigValueFactory.fromAnyRef(truststorePassword.get()));
            }
            if (keystore.isPresent()) {
                settings =
                        settings.withValue(
                                        ssl + "keystore-path",
                                        ConfigValueFactory.fromAnyRef(keystore.get().toString()))
                                .withValue(
                                        ssl + "keystore-password",
                                        ConfigValueFactory.fromAnyRef(
                                                keystorePassword.orElseThrow()));
            }
        }
        return settings;
    }

    /**
     * Logs how the agent reaches Cassandra ({@link #summary()}): INFO, or WARN for TLS without
     * hostname validation. Never a password.
     */
    void log(Logger log) {
        if (tlsWithoutHostnameValidation()) {
            log.warn(
                    "Cassandra: {}: any certificate from a trusted CA is taken for Cassandra's "
                            + "(cadastre.cassandra.tls.hostname-validation = off)",
                    summary());
        } else {
            log.info("Cassandra: {}", summary());
        }
    }

    /** @return whether the connection is TLS without checking that the certificate names the node */
    boolean tlsWithoutHostnameValidation() {
        return tls && !hostnameValidation;
    }

    /** @return how the agent reaches Cassandra, for the start-up log: the role and files, never a password */
    String summary() {
        return (username.map(u -> "as " + u).orElse("without credentials"))
                + ", "
                + (!tls
                        ? "plain TCP"
                        : "TLS (hostname validation "
                                + (hostnameValidation ? "on" : "OFF")
                                + ", trust "
                                + caFile.map(f -> f + " (PEM)")
                                        .or(() -> truststore.map(Path::toString))
                                        .orElse("the JVM's default")
                                + ", client certificate "
                                + certFile.map(f -> f + " (PEM)")
                                        .or(() -> keystore.map(Path::toString))
                                        .orElse("none")
                                + ")");
    }

    @Override
    public String toString() {
        return "CassandraSecurity[" + summary() + "]";
    }

    private static Optional<String> nonBlank(String s) {
        return s.isBlank() ? Optional.empty() : Optional.of(s.trim());
    }

    /** @return the file's content, trimmed (a trailing newline is not part of a password) */
    private static String secret(String key, Path file) {
        String value;
        try {
            value = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(PREFIX + key + " " + file + ": no such file", e);
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(
                    PREFIX + key + " " + file + ": not readable (permission denied)", e);
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    PREFIX + key + " " + file + ": cannot be read: " + e.getClass().getSimpleName(),
                    e);
        }
        if (value.isEmpty()) {
            throw new IllegalArgumentException(PREFIX + key + " " + file + " is empty");
        }
        return value;
    }

    /** Reads the CA file as {@link PemSslEngineFactory} will. */
    private static void readCa(Path file) {
        try {
            PemSslEngineFactory.trustStore(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(
                    PREFIX + "tls.ca-file " + file + ": no such file", e);
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "tls.ca-file "
                            + file
                            + " does not hold PEM X.509 certificates: "
                            + e.getMessage(),
                    e);
        }
    }

    /** Reads the client certificate and its key as {@link PemSslEngineFactory} will. */
    private static void readClientCertificate(Path certFile, Path keyFile) {
        try {
            PemSslEngineFactory.keyStore(certFile, keyFile);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(
                    PREFIX
                            + (e.getFile() != null && e.getFile().equals(keyFile.toString())
                                    ? "tls.key-file " + keyFile
                                    : "tls.cert-file " + certFile)
                            + ": no such file",
                    e);
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(
                    PREFIX + "tls: " + e.getFile() + ": not readable (permission denied)", e);
        } catch (CertificateException e) {
            throw new IllegalArgumentException(
                    PREFIX
                            + "tls.cert-file "
                            + certFile
                            + " does not hold PEM X.509 certificates: "
                            + e.getMessage(),
                    e);
        } catch (IOException | GeneralSecurityException e) {
            // The factory's messages name structure, never key material.
            throw new IllegalArgumentException(
                    PREFIX + "tls.key-file " + keyFile + ": " + e.getMessage(), e);
        }
    }

    /** Opens the store as the driver will (type JKS, which also reads PKCS12). */
    private static void open(String key, Path file, Optional<String> password) {
        try (InputStream in = Files.newInputStream(file)) {
            KeyStore.getInstance("JKS").load(in, password.map(String::toCharArray).orElse(null));
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(PREFIX + key + " " + file + ": no such file", e);
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException(
                    PREFIX
                            + key
                            + " "
                            + file
                            + " does not open as a JKS or PKCS12 store"
                            + " with its password: "
                            + e.getMessage(),
                    e);
        }
    }
}
