package io.cadastre.agent;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.security.interfaces.RSAPrivateKey;
import java.security.interfaces.RSAPublicKey;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import org.apache.pekko.pki.pem.DERPrivateKeyLoader;
import org.apache.pekko.pki.pem.PEMDecoder;
import org.apache.pekko.pki.pem.PEMLoadingException;

/**
 * This member's credentials for the cluster's mutual TLS ({@code cadastre.cluster.tls}), checked
 * the way Pekko's {@code RotatingKeysSSLEngineProvider} will use them, so that a bad file stops
 * the agent at start (exit 2) instead of failing every connection later: a PEM certificate, its
 * unencrypted RSA private key (PKCS#8 {@code PRIVATE KEY} or PKCS#1 {@code RSA PRIVATE KEY}, which
 * is all that Pekko's PEM reader takes), and the PEM certificate of the root CA that signed it
 * (the provider trusts only that one certificate: no intermediate). The certificate must be valid
 * now and carry a subject name (its CN or a DNS subject alternative name): after the handshake,
 * each side accepts the other only when their certificates share one of these names.
 *
 * <p>Pekko reads the files again every {@code reloadInterval}, so that rotated files (a
 * Kubernetes Secret, cert-manager) take effect without a restart; only the start-up copy is
 * checked here.
 *
 * @param certFile the member's certificate (PEM; the first certificate in the file is used)
 * @param keyFile its private key (PEM, unencrypted RSA)
 * @param caFile the cluster CA's certificate (PEM; the first certificate in the file is used)
 * @param reloadInterval how long Pekko uses what it read before reading the files again; positive
 * @param subjectNames the certificate's CN and DNS subject alternative names, as Pekko compares them
 * @param notAfter when the certificate expires
 */
public record ClusterTls(
        Path certFile,
        Path keyFile,
        Path caFile,
        Duration reloadInterval,
        Set<String> subjectNames,
        Instant notAfter) {

    static final String CERT_FILE = "cadastre.cluster.tls.cert-file";
    static final String KEY_FILE = "cadastre.cluster.tls.key-file";
    static final String CA_FILE = "cadastre.cluster.tls.ca-file";

    /**
     * Reads and checks the three files.
     *
     * @throws IllegalArgumentException naming the setting and the file: a file that is missing or
     *     unreadable, not PEM of the right kind, a key that is not RSA or not the certificate's, a
     *     certificate not signed by the CA, not valid at {@code now}, or without a subject name.
     *     The message never contains key material.
     */
    public static ClusterTls read(
            Path certFile, Path keyFile, Path caFile, Duration reloadInterval, Instant now) {
        if (reloadInterval.isNegative() || reloadInterval.isZero()) {
            throw new IllegalArgumentException(
                    "cadastre.cluster.tls.reload-interval must be positive, not " + reloadInterval);
        }
        X509Certificate ca = certificate(CA_FILE, caFile);
        X509Certificate cert = certificate(CERT_FILE, certFile);
        PrivateKey key = privateKey(keyFile);
        checkValid(CA_FILE, caFile, ca, now);
        checkValid(CERT_FILE, certFile, cert, now);
        if (!cert.getIssuerX500Principal().equals(ca.getSubjectX500Principal())
                || !signedBy(cert, ca.getPublicKey())) {
            throw new IllegalArgumentException(
                    CERT_FILE
                            + " "
                            + certFile
                            + " (issuer "
                            + cert.getIssuerX500Principal()
                            + ") is not signed by the CA in "
                            + CA_FILE
                            + " "
                            + caFile
                            + " ("
                            + ca.getSubjectX500Principal()
                            + "): members trust only certificates that this CA signed directly");
        }
        if (!(cert.getPublicKey() instanceof RSAPublicKey certKey)) {
            throw new IllegalArgumentException(
                    CERT_FILE
                            + " "
                            + certFile
                            + " holds a "
                            + cert.getPublicKey().getAlgorithm()
                            + " key: Pekko's cluster TLS reads RSA keys only");
        }
        if (!(key instanceof RSAPrivateKey rsa) || !rsa.getModulus().equals(certKey.getModulus())) {
            throw new IllegalArgumentException(
                    KEY_FILE
                            + " "
                            + keyFile
                            + " is not the private key of the certificate in "
                            + CERT_FILE
                            + " "
                            + certFile);
        }
        Set<String> names = subjectNames(cert);
        if (names.isEmpty()) {
            throw new IllegalArgumentException(
                    CERT_FILE
                            + " "
                            + certFile
                            + " has no subject name (CN or DNS subject "
                            + "alternative name): members accept a peer only when its certificate shares such a name with theirs");
        }
        return new ClusterTls(
                certFile, keyFile, caFile, reloadInterval, names, cert.getNotAfter().toInstant());
    }

    /**
     * @return the certificate's CN (the first) and its DNS subject alternative names: the names
     *     Pekko's peer check compares (an IP subject alternative name does not count)
     */
    static Set<String> subjectNames(X509Certificate cert) {
        Set<String> names = new LinkedHashSet<>();
        try {
            List<Rdn> rdns = new LdapName(cert.getSubjectX500Principal().getName()).getRdns();
            // LdapName lists the RDNs from the last to the first; Pekko takes the first CN it meets
            // in that order.
            rdns.stream()
                    .filter(r -> r.getType().equalsIgnoreCase("CN"))
                    .findFirst()
                    .ifPresent(r -> names.add(r.getValue().toString()));
            Collection<List<?>> alternatives = cert.getSubjectAlternativeNames();
            if (alternatives != null) {
                for (List<?> alternative : alternatives) {
                    if (alternative.size() == 2
                            && Integer.valueOf(2).equals(alternative.get(0))
                            && alternative.get(1) instanceof String dns) {
                        names.add(dns);
                    }
                }
            }
        } catch (InvalidNameException | CertificateException e) {
            throw new IllegalArgumentException(
                    CERT_FILE + ": cannot read the certificate's names: " + e.getMessage(), e);
        }
        return names;
    }

    private static X509Certificate certificate(String setting, Path file) {
        byte[] bytes = read(setting, file);
        try {
            if (!new String(bytes, StandardCharsets.US_ASCII)
                    .contains("-----BEGIN CERTIFICATE-----")) {
                throw new CertificateException("no PEM block \"CERTIFICATE\"");
            }
            return (X509Certificate)
                    CertificateFactory.getInstance("X.509")
                            .generateCertificate(new ByteArrayInputStream(bytes));
        } catch (CertificateException | ClassCastException e) {
            throw new IllegalArgumentException(
                    setting + " " + file + " is not a PEM X.509 certificate: " + e.getMessage(), e);
        }
    }

    private static PrivateKey privateKey(Path file) {
        String pem = new String(read(KEY_FILE, file), StandardCharsets.US_ASCII);
        try {
            return DERPrivateKeyLoader.load(PEMDecoder.decode(pem));
        } catch (Exception e) {
            // Only the decoder's own message: it names labels and structure, never key material.
            throw new IllegalArgumentException(
                    KEY_FILE
                            + " "
                            + file
                            + " is not an unencrypted RSA private key in PEM "
                            + "(PKCS#8 \"PRIVATE KEY\" or PKCS#1 \"RSA PRIVATE KEY\"): "
                            + e.getClass().getSimpleName()
                            + (e instanceof PEMLoadingException ? ": " + e.getMessage() : ""));
        }
    }

    private static byte[] read(String setting, Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(setting + " " + file + ": no such file", e);
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(
                    setting + " " + file + ": not readable (permission denied)", e);
        } catch (IOException e) {
            throw new IllegalArgumentException(setting + " " + file + ": cannot be read: " + e, e);
        }
    }

    private static void checkValid(String setting, Path file, X509Certificate cert, Instant now) {
        try {
            cert.checkValidity(Date.from(now));
        } catch (CertificateExpiredException e) {
            throw new IllegalArgumentException(
                    setting
                            + " "
                            + file
                            + ": the certificate expired at "
                            + cert.getNotAfter().toInstant(),
                    e);
        } catch (CertificateNotYetValidException e) {
            throw new IllegalArgumentException(
                    setting
                            + " "
                            + file
                            + ": the certificate is not valid before "
                            + cert.getNotBefore().toInstant()
                            + " (is this host's clock right?)",
                    e);
        }
    }

    private static boolean signedBy(X509Certificate cert, PublicKey caKey) {
        try {
            cert.verify(caKey);
            return true;
        } catch (Exception e) {
            return false;
        }
    }
}
