package io.cadastre.kube;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.net.InetAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * fabric8's Kubernetes mock API server in CRUD mode (objects created are stored, listed and
 * watched), in this JVM, on {@code 127.0.0.1} over HTTPS with the mock's self-signed certificate
 * (subject alternative names {@code localhost} and {@code 127.0.0.1}); for the end-to-end tests
 * that point a real agent (a process of module cluster's, or the image's container in module
 * deploy) at it as a DaemonSet pod is pointed at its API server.
 *
 * <p>The mock runs on Vert.x 5 and Netty 4.2, and the class path of the tests that use it (the
 * agent's) holds the project's Netty 4.1; so the mock is loaded from this module's test class path
 * ({@code kube/target/mock-api.classpath}, written by its build, named by the system property
 * {@code cadastre.kube-mock-classpath}) in a class loader of its own whose parent is the platform's,
 * and driven by reflection through its start and stop. Objects are made through the caller's
 * fabric8 client over HTTPS, as kubectl makes them ({@link #admin()}; {@link KubeObjects}).
 *
 * <p>One difference from an API server matters to the agent: the mock selects by labels and by
 * {@code metadata.name} only, so the agent's informer of the pods bound to its node (field selector
 * {@code spec.nodeName}) lists none; the agent's reads then go through its GETs (kube/DESIGN.md).
 *
 * <p>{@link #stop()} closes the port: every call fails from then on.
 */
public final class MockKubernetesApi implements AutoCloseable {
    /** The agents' namespace, as the manifests name it. */
    public static final String AGENTS = "cadastre-system";

    private final Object server;
    private final int port;

    /** The CA a client must trust; null when the API is plain HTTP. */
    private final Path caFile;

    private final KubernetesClient admin;
    private boolean stopped;

    private MockKubernetesApi(Object server, int port, Path caFile) {
        this.server = server;
        this.port = port;
        this.caFile = caFile;
        ConfigBuilder config =
                new ConfigBuilder(Config.empty())
                        .withMasterUrl(url())
                        .withRequestTimeout(10_000)
                        .withConnectionTimeout(10_000);
        if (caFile != null) {
            config.withCaCertFile(caFile.toString());
        }
        this.admin = new KubernetesClientBuilder().withConfig(config.build()).build();
    }

    /**
     * Starts the mock API over HTTPS on {@code 127.0.0.1}, any free port, and copies its certificate
     * to {@code dir/ca.crt} (the CA a client must trust).
     *
     * @throws IllegalStateException when module kube's class path file is missing (build kube first)
     */
    public static MockKubernetesApi start(Path dir) throws Exception {
        return start(dir, 0, true);
    }

    /**
     * Starts the mock API on {@code 127.0.0.1}.
     *
     * @param port the port; 0 for any free one
     * @param https over HTTPS with a certificate of its own (copied to {@code dir/ca.crt}; a new one
     *     at every start), else plain HTTP (for a client that must be told where the API is before
     *     it runs: only a kubeconfig can point there)
     * @throws IllegalStateException when module kube's class path file is missing (build kube first)
     */
    public static MockKubernetesApi start(Path dir, int port, boolean https) throws Exception {
        Path classPathFile =
                Path.of(
                        System.getProperty(
                                "cadastre.kube-mock-classpath",
                                "../kube/target/mock-api.classpath"));
        if (!Files.isRegularFile(classPathFile)) {
            throw new IllegalStateException(
                    classPathFile
                            + " is missing: build module kube (its generate-test-resources"
                            + " phase writes it), e.g. mvn -pl cluster -am test-compile");
        }
        List<URL> urls = new ArrayList<>();
        for (String entry :
                Files.readString(classPathFile).trim().split(java.io.File.pathSeparator)) {
            urls.add(Path.of(entry).toUri().toURL());
        }
        URLClassLoader loader =
                new URLClassLoader(
                        "kube-mock-api",
                        urls.toArray(URL[]::new),
                        ClassLoader.getPlatformClassLoader());
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        Object server;
        int bound;
        Path ca = null;
        // Vert.x finds its services through the context class loader, and its threads inherit it.
        thread.setContextClassLoader(loader);
        try {
            Class<?> context = loader.loadClass("io.fabric8.mockwebserver.Context");
            Class<?> webServerClass = loader.loadClass("io.fabric8.mockwebserver.MockWebServer");
            Class<?> dispatcher = loader.loadClass("io.fabric8.mockwebserver.http.Dispatcher");
            Class<?> crud =
                    loader.loadClass(
                            "io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher");
            Class<?> serverClass =
                    loader.loadClass(
                            "io.fabric8.kubernetes.client.server.mock.KubernetesMockServer");
            Object webServer = webServerClass.getConstructor().newInstance();
            server =
                    serverClass
                            .getConstructor(
                                    context, webServerClass, Map.class, dispatcher, boolean.class)
                            .newInstance(
                                    context.getConstructor().newInstance(),
                                    webServer,
                                    new HashMap<>(),
                                    crud.getConstructor().newInstance(),
                                    https);
            serverClass
                    .getMethod("init", InetAddress.class, int.class)
                    .invoke(server, InetAddress.getByName("127.0.0.1"), port);
            bound = (int) serverClass.getMethod("getPort").invoke(server);
            if (https) {
                Object certificate =
                        webServerClass.getMethod("getSelfSignedCertificate").invoke(webServer);
                Path generated =
                        Path.of(
                                (String)
                                        loader.loadClass("io.vertx.core.net.SelfSignedCertificate")
                                                .getMethod("certificatePath")
                                                .invoke(certificate));
                ca =
                        Files.copy(
                                generated,
                                dir.resolve("ca.crt"),
                                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (Exception e) {
            loader.close();
            throw e instanceof InvocationTargetException i
                            && i.getCause() instanceof Exception cause
                    ? cause
                    : e;
        } finally {
            thread.setContextClassLoader(previous);
        }
        // Back on the caller's class loader: the admin client is the project's fabric8 (JDK HTTP
        // client).
        try {
            return new MockKubernetesApi(server, bound, ca);
        } catch (RuntimeException e) {
            server.getClass().getMethod("destroy").invoke(server);
            throw e;
        }
    }

    /** @return the API's URL, {@code https://127.0.0.1:PORT} (or {@code http://}) */
    public String url() {
        return (caFile == null ? "http" : "https") + "://127.0.0.1:" + port;
    }

    /** @return the CA certificate (PEM) a client must trust; null when the API is plain HTTP */
    public Path caFile() {
        return caFile;
    }

    /** @return a client with the rights of kubectl's admin */
    public KubernetesClient admin() {
        return admin;
    }

    /**
     * What the kubelet gives a pod of the agents' DaemonSet to reach the API, in {@code dir}: the
     * service account's files ({@code token}, {@code ca.crt}, {@code namespace}, as mounted at
     * {@code /var/run/secrets/kubernetes.io/serviceaccount}) and the variables the kubelet sets
     * ({@code KUBERNETES_SERVICE_HOST}, {@code KUBERNETES_SERVICE_PORT}). fabric8 reads the files
     * from the mount's paths, which belong to the host here; its own variables
     * ({@code KUBERNETES_AUTH_SERVICEACCOUNT_TOKEN}, {@code KUBERNETES_CERTS_CA_FILE},
     * {@code KUBENAMESPACE}) point it at these copies instead.
     *
     * @return the variables for the agent's environment
     * @throws IllegalStateException when the API is plain HTTP (a pod's client speaks HTTPS only)
     */
    public Map<String, String> inClusterEnvironment(Path dir) throws IOException {
        Path account = serviceAccount(dir.resolve("serviceaccount"), AGENTS);
        Map<String, String> env = new LinkedHashMap<>(serviceEnvironment());
        env.put("KUBERNETES_AUTH_SERVICEACCOUNT_TOKEN", account.resolve("token").toString());
        env.put("KUBERNETES_CERTS_CA_FILE", account.resolve("ca.crt").toString());
        env.put("KUBENAMESPACE", account.resolve("namespace").toString());
        return env;
    }

    /**
     * The service account's files as the kubelet projects them into a pod at
     * {@code /var/run/secrets/kubernetes.io/serviceaccount}: {@code token} (a bearer token the mock
     * accepts, as it accepts any), {@code ca.crt} (the API's CA) and {@code namespace}.
     *
     * @param dir the directory to write them in (created)
     * @param namespace the pod's namespace
     * @return {@code dir}
     * @throws IllegalStateException when the API is plain HTTP (a pod's client speaks HTTPS only)
     */
    public Path serviceAccount(Path dir, String namespace) throws IOException {
        if (caFile == null) {
            throw new IllegalStateException("a pod reaches its API server over HTTPS only");
        }
        Files.createDirectories(dir);
        privateFile(dir.resolve("token"), "mock-" + UUID.randomUUID());
        Files.copy(caFile, dir.resolve("ca.crt"));
        privateFile(dir.resolve("namespace"), namespace);
        return dir;
    }

    /**
     * @return the variables the kubelet gives every container for the API server's Service
     *     ({@code KUBERNETES_SERVICE_HOST}, {@code KUBERNETES_SERVICE_PORT}): this mock's address
     */
    public Map<String, String> serviceEnvironment() {
        return Map.of(
                "KUBERNETES_SERVICE_HOST",
                "127.0.0.1",
                "KUBERNETES_SERVICE_PORT",
                Integer.toString(port));
    }

    /**
     * A kubeconfig in {@code dir} for the API (its CA, a token, the agents' namespace), the other
     * way the agent's client finds its API server outside a pod.
     *
     * @return {@code KUBECONFIG} for the agent's environment
     */
    public Map<String, String> kubeconfigEnvironment(Path dir) throws IOException {
        return kubeconfigEnvironment(dir, url(), caFile);
    }

    /**
     * A kubeconfig in {@code dir} for an API server at {@code url} (that may not run yet), with a
     * token and the agents' namespace.
     *
     * @param ca the CA to trust (PEM); null for a plain HTTP {@code url}
     * @return {@code KUBECONFIG} for the agent's environment
     */
    public static Map<String, String> kubeconfigEnvironment(Path dir, String url, Path ca)
            throws IOException {
        Path kubeconfig =
                privateFile(
                        dir.resolve("kubeconfig"),
                        """
                apiVersion: v1
                kind: Config
                clusters:
                - name: mock
                  cluster:
                    server: %s
                %susers:
                - name: agent
                  user:
                    token: mock-%s
                contexts:
                - name: mock
                  context:
                    cluster: mock
                    user: agent
                    namespace: %s
                current-context: mock
                """
                                .formatted(
                                        url,
                                        ca == null ? "" : "    certificate-authority: " + ca + "\n",
                                        UUID.randomUUID(),
                                        AGENTS));
        return Map.of("KUBECONFIG", kubeconfig.toString());
    }

    private static Path privateFile(Path path, String content) throws IOException {
        Files.writeString(path, content);
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
        return path;
    }

    /**
     * Closes the API's port: every call fails from now on, and informers lose their watches. The
     * class loader stays open (the mock's threads may still be finishing); it goes with this object.
     */
    public void stop() {
        if (stopped) {
            return;
        }
        stopped = true;
        try {
            admin.close();
            server.getClass().getMethod("destroy").invoke(server);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("the mock API did not stop", e);
        }
    }

    /** @return whether {@link #stop()} has closed the API */
    public boolean stopped() {
        return stopped;
    }

    @Override
    public void close() {
        stop();
    }
}
