package io.cadastre.testsupport;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A throw-away certificate authority for tests: a self-signed RSA root that issues member
 * certificates for the cluster's TLS (and server certificates for Cassandra), written as the PEM
 * files an agent reads (README, "Securing the cluster"). Keys are RSA 2048 unless a {@link Spec}
 * asks for EC, which Pekko's PEM reader refuses (a negative case).
 *
 * <pre>{@code
 * TestPki ca = TestPki.authority("test-ca");
 * TestPki.PemFiles files = ca.write(ca.member("h1", "198.19.255.11"), dir);  // tls.crt, tls.key, ca.crt, mode 0600
 * }</pre>
 */
public final class TestPki {
    /** The DNS subject alternative name every member certificate of a cluster shares (Pekko compares them). */
    public static final String CLUSTER_NAME = "cadastre-cluster";

    private static final Duration VALIDITY = Duration.ofDays(2);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final KeyPair keys;
    private final X509Certificate certificate;

    private TestPki(KeyPair keys, X509Certificate certificate) {
        this.keys = keys;
        this.certificate = certificate;
    }

    /** @return a new root CA, {@code CN=<commonName>}, valid from an hour ago for two days */
    public static TestPki authority(String commonName) {
        KeyPair keys = keyPair("RSA");
        Instant now = Instant.now();
        X500Name name = new X500Name("CN=" + commonName);
        try {
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder builder =
                    new JcaX509v3CertificateBuilder(
                                    name,
                                    serial(),
                                    Date.from(now.minus(Duration.ofHours(1))),
                                    Date.from(now.plus(VALIDITY)),
                                    name,
                                    keys.getPublic())
                            .addExtension(
                                    Extension.basicConstraints, true, new BasicConstraints(true))
                            .addExtension(
                                    Extension.keyUsage,
                                    true,
                                    new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                            .addExtension(
                                    Extension.subjectKeyIdentifier,
                                    false,
                                    extensions.createSubjectKeyIdentifier(keys.getPublic()));
            return new TestPki(keys, sign(builder, keys.getPrivate()));
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a test CA", e);
        }
    }

    /** @return the CA's certificate */
    public X509Certificate certificate() {
        return certificate;
    }

    /**
     * What to put in a leaf certificate.
     *
     * @param commonName the subject's CN; null for an empty subject
     * @param dnsNames DNS subject alternative names
     * @param ipAddresses IP subject alternative names (literals)
     * @param notBefore start of validity
     * @param notAfter end of validity
     * @param keyAlgorithm "RSA" (2048 bits) or "EC" (P-256)
     */
    public record Spec(
            String commonName,
            List<String> dnsNames,
            List<String> ipAddresses,
            Instant notBefore,
            Instant notAfter,
            String keyAlgorithm) {
        /** @return a member's: {@code CN=<name>}, DNS SAN {@value #CLUSTER_NAME}, the address as IP SAN, RSA, valid now */
        public static Spec member(String name, String ipAddress) {
            Instant now = Instant.now();
            return new Spec(
                    name,
                    List.of(CLUSTER_NAME),
                    ipAddress == null ? List.of() : List.of(ipAddress),
                    now.minus(Duration.ofHours(1)),
                    now.plus(VALIDITY),
                    "RSA");
        }

        public Spec withDnsNames(List<String> names) {
            return new Spec(commonName, names, ipAddresses, notBefore, notAfter, keyAlgorithm);
        }

        public Spec withCommonName(String name) {
            return new Spec(name, dnsNames, ipAddresses, notBefore, notAfter, keyAlgorithm);
        }

        public Spec withValidity(Instant from, Instant until) {
            return new Spec(commonName, dnsNames, ipAddresses, from, until, keyAlgorithm);
        }

        public Spec withKeyAlgorithm(String algorithm) {
            return new Spec(commonName, dnsNames, ipAddresses, notBefore, notAfter, algorithm);
        }
    }

    /** A certificate this CA issued, with its private key. */
    public record Leaf(X509Certificate certificate, PrivateKey key) {}

    /** Where {@link #write} put a leaf's PEM files. */
    public record PemFiles(Path cert, Path key, Path ca) {}

    /** @return a member certificate ({@link Spec#member}) */
    public Leaf member(String name, String ipAddress) {
        return issue(Spec.member(name, ipAddress));
    }

    /** @return a certificate for a TLS client and server (both extended key usages), signed by this CA */
    public Leaf issue(Spec spec) {
        KeyPair leafKeys = keyPair(spec.keyAlgorithm());
        List<GeneralName> names = new ArrayList<>();
        spec.dnsNames().forEach(n -> names.add(new GeneralName(GeneralName.dNSName, n)));
        spec.ipAddresses().forEach(a -> names.add(new GeneralName(GeneralName.iPAddress, a)));
        try {
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder builder =
                    new JcaX509v3CertificateBuilder(
                                    certificate,
                                    serial(),
                                    Date.from(spec.notBefore()),
                                    Date.from(spec.notAfter()),
                                    new X500Name(
                                            spec.commonName() == null
                                                    ? ""
                                                    : "CN=" + spec.commonName()),
                                    leafKeys.getPublic())
                            .addExtension(
                                    Extension.basicConstraints, true, new BasicConstraints(false))
                            .addExtension(
                                    Extension.keyUsage,
                                    true,
                                    new KeyUsage(
                                            KeyUsage.digitalSignature | KeyUsage.keyEncipherment))
                            .addExtension(
                                    Extension.extendedKeyUsage,
                                    false,
                                    new ExtendedKeyUsage(
                                            new KeyPurposeId[] {
                                                KeyPurposeId.id_kp_serverAuth,
                                                KeyPurposeId.id_kp_clientAuth
                                            }))
                            .addExtension(
                                    Extension.authorityKeyIdentifier,
                                    false,
                                    extensions.createAuthorityKeyIdentifier(certificate));
            if (!names.isEmpty()) {
                builder.addExtension(
                        Extension.subjectAlternativeName,
                        spec.commonName() == null,
                        new GeneralNames(names.toArray(GeneralName[]::new)));
            }
            return new Leaf(sign(builder, keys.getPrivate()), leafKeys.getPrivate());
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("cannot issue a test certificate", e);
        }
    }

    /**
     * Writes {@code tls.crt}, {@code tls.key} (unencrypted PKCS#8) and {@code ca.crt} (this CA)
     * into {@code dir}, each created with mode 0600 (the directory is created if missing).
     *
     * @throws UncheckedIOException when a file cannot be written (an existing one is replaced)
     */
    public PemFiles write(Leaf leaf, Path dir) {
        PemFiles files =
                new PemFiles(dir.resolve("tls.crt"), dir.resolve("tls.key"), dir.resolve("ca.crt"));
        try {
            writePrivate(files.cert(), pem("CERTIFICATE", leaf.certificate().getEncoded()));
            writePrivate(files.key(), pem("PRIVATE KEY", leaf.key().getEncoded()));
            writePrivate(files.ca(), pem("CERTIFICATE", certificate.getEncoded()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
        return files;
    }

    /**
     * Writes a PKCS#12 key store holding the leaf (alias {@code leaf}, with this CA in its chain),
     * mode 0600, protected by {@code password}: what Cassandra's {@code client_encryption_options} reads.
     */
    public Path writeKeyStore(Leaf leaf, Path file, char[] password) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry(
                    "leaf",
                    leaf.key(),
                    password,
                    new Certificate[] {leaf.certificate(), certificate});
            return writeStore(store, file, password);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot write a key store", e);
        }
    }

    /** Writes a PKCS#12 trust store holding this CA (alias {@code ca}), mode 0600, protected by {@code password}. */
    public Path writeTrustStore(Path file, char[] password) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setCertificateEntry("ca", certificate);
            return writeStore(store, file, password);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot write a trust store", e);
        }
    }

    /** @return {@code der} as PEM text with {@code label} (64-character lines) */
    public static String pem(String label, byte[] der) {
        return "-----BEGIN "
                + label
                + "-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END "
                + label
                + "-----\n";
    }

    /** Creates (or replaces) {@code file} with mode 0600 before anything is written to it. */
    public static void writePrivate(Path file, String content) {
        writePrivate(file, content.getBytes(StandardCharsets.UTF_8));
    }

    private static void writePrivate(Path file, byte[] content) {
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            Files.deleteIfExists(file);
            Files.createFile(
                    file,
                    PosixFilePermissions.asFileAttribute(
                            PosixFilePermissions.fromString("rw-------")));
            Files.write(file, content);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private static Path writeStore(KeyStore store, Path file, char[] password)
            throws IOException, GeneralSecurityException {
        var bytes = new ByteArrayOutputStream();
        store.store(bytes, password);
        writePrivate(file, bytes.toByteArray());
        return file;
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey caKey)
            throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter()
                    .getCertificate(
                            builder.build(
                                    new JcaContentSignerBuilder("SHA256withRSA").build(caKey)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e);
        }
    }

    private static KeyPair keyPair(String algorithm) {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance(algorithm);
            if (algorithm.equals("EC")) {
                generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            } else {
                generator.initialize(2048, RANDOM);
            }
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot make a " + algorithm + " key", e);
        }
    }

    private static BigInteger serial() {
        return new BigInteger(64, RANDOM).abs().add(BigInteger.ONE);
    }
}
