package io.cadastre.agent;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.config.DriverOption;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.internal.core.ssl.DefaultSslEngineFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.NoSuchAlgorithmException;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.SignatureException;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Collection;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.pki.pem.DERPrivateKeyLoader;
import org.apache.pekko.pki.pem.PEMDecoder;

/**
 * The Cassandra driver's SSL engine factory reading PEM files, the form Kubernetes Secrets carry
 * them in (cert-manager's {@code ca.crt}, {@code tls.crt}, {@code tls.key}), where the driver's own
 * {@link DefaultSslEngineFactory} takes only JKS or PKCS#12 stores and their passwords:
 *
 * <ul>
 *   <li>the trust anchors from the CA certificates of {@value #CA_FILE_OPTION}, else the driver's
 *       trust store settings, else the JVM's default trust;
 *   <li>the client certificate (for Cassandra's {@code require_client_auth}) from the chain in
 *       {@value #CERT_FILE_OPTION} and the unencrypted private key in {@value #KEY_FILE_OPTION},
 *       else the driver's key store settings, else none.
 * </ul>
 *
 * Everything else is the driver's: hostname validation, cipher suites. The files are read once,
 * at start. {@link CassandraSecurity} sets it for {@code cadastre.cassandra.tls.ca-file} and
 * {@code cert-file}, after reading every file once itself. The driver instantiates it by its
 * class name, with the driver's context.
 */
public class PemSslEngineFactory extends DefaultSslEngineFactory {
    /** The driver option naming the CA file, under the driver's SSL settings. */
    static final String CA_FILE_OPTION = "advanced.ssl-engine-factory.cadastre-ca-file";

    /** The driver option naming the client certificate chain (PEM). */
    static final String CERT_FILE_OPTION = "advanced.ssl-engine-factory.cadastre-cert-file";

    /** The driver option naming the client certificate's private key (PEM). */
    static final String KEY_FILE_OPTION = "advanced.ssl-engine-factory.cadastre-key-file";

    private static final DriverOption CA_FILE = () -> CA_FILE_OPTION;
    private static final DriverOption CERT_FILE = () -> CERT_FILE_OPTION;
    private static final DriverOption KEY_FILE = () -> KEY_FILE_OPTION;

    /** The password of the in-memory key store: it never leaves the process. */
    private static final char[] NO_PASSWORD = new char[0];

    /**
     * @param context the driver's; its default profile names the files
     * @throws IllegalStateException (the driver's) when the files do not give an SSL context
     */
    public PemSslEngineFactory(DriverContext context) {
        super(context);
    }

    @Override
    protected SSLContext buildContext(DriverExecutionProfile config) throws Exception {
        TrustManager[] trust = null;
        if (config.isDefined(CA_FILE)) {
            trust = trustManagers(trustStore(Path.of(config.getString(CA_FILE))));
        } else if (config.isDefined(DefaultDriverOption.SSL_TRUSTSTORE_PATH)) {
            trust =
                    trustManagers(
                            store(
                                    config,
                                    DefaultDriverOption.SSL_TRUSTSTORE_PATH,
                                    DefaultDriverOption.SSL_TRUSTSTORE_PASSWORD));
        }
        KeyManager[] keys = null;
        if (config.isDefined(CERT_FILE)) {
            keys =
                    keyManagers(
                            keyStore(
                                    Path.of(config.getString(CERT_FILE)),
                                    Path.of(config.getString(KEY_FILE))),
                            NO_PASSWORD);
        } else if (config.isDefined(DefaultDriverOption.SSL_KEYSTORE_PATH)) {
            keys =
                    keyManagers(
                            store(
                                    config,
                                    DefaultDriverOption.SSL_KEYSTORE_PATH,
                                    DefaultDriverOption.SSL_KEYSTORE_PASSWORD),
                            password(config, DefaultDriverOption.SSL_KEYSTORE_PASSWORD));
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys, trust, new SecureRandom());
        return context;
    }

    /**
     * Holds nothing to release: the client certificate is read once, not watched as the driver's
     * own reloading key manager is (whose close this skips: it is never made here).
     */
    @Override
    public void close() {}

    /**
     * @param pemFile one or more X.509 certificates in PEM ({@code -----BEGIN CERTIFICATE-----})
     * @return an in-memory key store holding each as a trusted certificate
     * @throws CertificateException when the file holds no certificate or one that does not parse
     * @throws IOException when it cannot be read
     */
    static KeyStore trustStore(Path pemFile) throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int i = 0;
        for (Certificate certificate : certificates(pemFile)) {
            store.setCertificateEntry("ca-" + i++, certificate);
        }
        return store;
    }

    /**
     * @param certFile the client's certificate, then any intermediates, in PEM
     * @param keyFile its unencrypted private key in PEM: PKCS#8 ({@code PRIVATE KEY}: RSA, EC or
     *     Ed25519) or PKCS#1 ({@code RSA PRIVATE KEY})
     * @return an in-memory key store holding the key with its chain (alias {@code client}, an empty
     *     password)
     * @throws CertificateException when the certificate file holds no certificate or one that does
     *     not parse
     * @throws InvalidKeySpecException when the key file holds no such key, or one that is not the
     *     certificate's (its message never carries key material)
     * @throws IOException when a file cannot be read
     */
    static KeyStore keyStore(Path certFile, Path keyFile)
            throws IOException, GeneralSecurityException {
        Certificate[] chain = certificates(certFile).toArray(Certificate[]::new);
        PrivateKey key = privateKey(keyFile);
        if (!matches(key, chain[0])) {
            throw new InvalidKeySpecException("it is not the private key of the first certificate");
        }
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        store.setKeyEntry("client", key, NO_PASSWORD, chain);
        return store;
    }

    private static Collection<? extends Certificate> certificates(Path pemFile)
            throws IOException, CertificateException {
        Collection<? extends Certificate> certificates;
        try (InputStream in = Files.newInputStream(pemFile)) {
            certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certificates.isEmpty()) {
            throw new CertificateException("no PEM certificate in it");
        }
        return certificates;
    }

    private static PrivateKey privateKey(Path keyFile) throws IOException, InvalidKeySpecException {
        String pem = Files.readString(keyFile, StandardCharsets.US_ASCII);
        PEMDecoder.DERData der;
        try {
            der = PEMDecoder.decode(pem);
        } catch (RuntimeException e) {
            // The decoder's message names labels and structure, never key material.
            throw new InvalidKeySpecException("no PEM block: " + e.getMessage());
        }
        if (der.label().equals("PRIVATE KEY")) {
            PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der.bytes());
            for (String algorithm : new String[] {"RSA", "EC", "Ed25519"}) {
                try {
                    return KeyFactory.getInstance(algorithm).generatePrivate(spec);
                } catch (InvalidKeySpecException | NoSuchAlgorithmException e) {
                    // another algorithm's key
                }
            }
            throw new InvalidKeySpecException("a PKCS#8 key of none of RSA, EC, Ed25519");
        }
        if (der.label().equals("RSA PRIVATE KEY")) {
            try {
                return DERPrivateKeyLoader.load(der);
            } catch (RuntimeException e) {
                throw new InvalidKeySpecException("a PKCS#1 RSA key that does not parse");
            }
        }
        throw new InvalidKeySpecException(
                "PEM block \""
                        + der.label()
                        + "\": expected an unencrypted \"PRIVATE KEY\" (PKCS#8) or \"RSA PRIVATE"
                        + " KEY\" (PKCS#1); openssl pkcs8 -topk8 -nocrypt converts others");
    }

    /** Whether {@code key} signs what the certificate's public key verifies. */
    private static boolean matches(PrivateKey key, Certificate certificate)
            throws GeneralSecurityException {
        String algorithm =
                switch (key.getAlgorithm()) {
                    case "RSA" -> "SHA256withRSA";
                    case "EC" -> "SHA256withECDSA";
                    default -> key.getAlgorithm(); // Ed25519, EdDSA
                };
        byte[] probe = new byte[32];
        new SecureRandom().nextBytes(probe);
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (InvalidKeyException | SignatureException e) {
            return false; // keys of different algorithms
        }
    }

    private static KeyStore store(
            DriverExecutionProfile config, DriverOption path, DriverOption password)
            throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance("JKS"); // reads PKCS#12 too
        try (InputStream in = Files.newInputStream(Path.of(config.getString(path)))) {
            store.load(in, password(config, password));
        }
        return store;
    }

    private static char[] password(DriverExecutionProfile config, DriverOption password) {
        return config.isDefined(password) ? config.getString(password).toCharArray() : null;
    }

    private static TrustManager[] trustManagers(KeyStore anchors) throws GeneralSecurityException {
        TrustManagerFactory factory =
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(anchors);
        return factory.getTrustManagers();
    }

    private static KeyManager[] keyManagers(KeyStore store, char[] password)
            throws GeneralSecurityException {
        KeyManagerFactory factory =
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        factory.init(store, password);
        return factory.getKeyManagers();
    }
}
