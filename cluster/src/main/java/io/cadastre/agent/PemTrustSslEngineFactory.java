package io.cadastre.agent;

import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverExecutionProfile;
import com.datastax.oss.driver.api.core.config.DriverOption;
import com.datastax.oss.driver.api.core.context.DriverContext;
import com.datastax.oss.driver.internal.core.ssl.DefaultSslEngineFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The Cassandra driver's SSL engine factory with the CA certificates of a PEM file as its trust
 * anchors (the driver option {@value #CA_FILE_OPTION}), the form Kubernetes Secrets carry them in
 * (a {@code ca.crt} key, as cert-manager writes it), where the driver's own
 * {@link DefaultSslEngineFactory} takes only a JKS or PKCS#12 trust store and its password.
 * Everything else is the driver's: hostname validation, cipher suites, and the client certificate
 * from {@code keystore-path} and {@code keystore-password} when Cassandra requires one (read once,
 * at start). {@link CassandraSecurity} sets it for {@code cadastre.cassandra.tls.ca-file}. The driver
 * instantiates it by its class name, with the driver's context.
 */
public class PemTrustSslEngineFactory extends DefaultSslEngineFactory {
    /** The driver option naming the PEM file, under the driver's SSL settings. */
    static final String CA_FILE_OPTION = "advanced.ssl-engine-factory.cadastre-ca-file";

    private static final DriverOption CA_FILE = () -> CA_FILE_OPTION;

    /**
     * @param context the driver's; its default profile names the PEM file
     * @throws IllegalStateException (the driver's) when the file does not give a trust store
     */
    public PemTrustSslEngineFactory(DriverContext context) {
        super(context);
    }

    @Override
    protected SSLContext buildContext(DriverExecutionProfile config) throws Exception {
        TrustManagerFactory trust =
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trustStore(Path.of(config.getString(CA_FILE))));
        KeyManager[] keys = null;
        if (config.isDefined(DefaultDriverOption.SSL_KEYSTORE_PATH)) {
            char[] password =
                    config.isDefined(DefaultDriverOption.SSL_KEYSTORE_PASSWORD)
                            ? config.getString(DefaultDriverOption.SSL_KEYSTORE_PASSWORD)
                                    .toCharArray()
                            : null;
            KeyStore store = KeyStore.getInstance("JKS"); // reads PKCS#12 too
            try (InputStream in =
                    Files.newInputStream(
                            Path.of(config.getString(DefaultDriverOption.SSL_KEYSTORE_PATH)))) {
                store.load(in, password);
            }
            KeyManagerFactory factory =
                    KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(store, password);
            keys = factory.getKeyManagers();
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys, trust.getTrustManagers(), new SecureRandom());
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
        Collection<? extends Certificate> certificates;
        try (InputStream in = Files.newInputStream(pemFile)) {
            certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certificates.isEmpty()) {
            throw new CertificateException("no PEM certificate in it");
        }
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int i = 0;
        for (Certificate certificate : certificates) {
            store.setCertificateEntry("ca-" + i++, certificate);
        }
        return store;
    }
}
