package io.cadastre.testcri;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.cadastre.testcri.v1.ContainerConfig;
import io.cadastre.testcri.v1.ContainerStatus;
import io.cadastre.testcri.v1.ContainerStatusRequest;
import io.cadastre.testcri.v1.CreateContainerRequest;
import io.cadastre.testcri.v1.ExecSyncRequest;
import io.cadastre.testcri.v1.ExecSyncResponse;
import io.cadastre.testcri.v1.ListPodSandboxRequest;
import io.cadastre.testcri.v1.PodSandbox;
import io.cadastre.testcri.v1.PodSandboxConfig;
import io.cadastre.testcri.v1.PodSandboxStatus;
import io.cadastre.testcri.v1.PodSandboxStatusRequest;
import io.cadastre.testcri.v1.RemoveContainerRequest;
import io.cadastre.testcri.v1.RemovePodSandboxRequest;
import io.cadastre.testcri.v1.RunPodSandboxRequest;
import io.cadastre.testcri.v1.RuntimeCondition;
import io.cadastre.testcri.v1.RuntimeServiceGrpc;
import io.cadastre.testcri.v1.RuntimeServiceGrpc.RuntimeServiceBlockingStub;
import io.cadastre.testcri.v1.StartContainerRequest;
import io.cadastre.testcri.v1.StatusRequest;
import io.cadastre.testcri.v1.StopContainerRequest;
import io.cadastre.testcri.v1.StopPodSandboxRequest;
import io.cadastre.testcri.v1.VersionRequest;
import io.cadastre.testcri.v1.VersionResponse;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A minimal client of a container runtime's CRI {@code runtime.v1.RuntimeService} (kubelet's side
 * of the Kubernetes Container Runtime Interface), over the runtime's gRPC Unix socket
 * ({@code unix://PATH}, Netty's native epoll transport; Linux on amd64 only).
 *
 * <p>Every call has a deadline ({@link #callTimeout}); a runtime's refusal or a missed deadline
 * surfaces as the gRPC {@link StatusRuntimeException} (its status code and the runtime's message),
 * unchanged. Thread-safe: calls may run concurrently, as kubelet's pod workers make them.
 */
public final class CriClient implements AutoCloseable {
    /** The condition kubelet waits for before it starts pods that need the pod network. */
    public static final String NETWORK_READY = "NetworkReady";

    /** The condition of a runtime able to run containers at all. */
    public static final String RUNTIME_READY = "RuntimeReady";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final EventLoopGroup group;
    private final ManagedChannel channel;
    private final RuntimeServiceBlockingStub stub;
    private final Duration callTimeout;

    /**
     * Connects lazily (on the first call) to the runtime's socket.
     *
     * @param socket the runtime's gRPC socket, e.g. containerd's {@code /run/containerd/containerd.sock}
     * @param callTimeout the deadline of each call
     */
    public CriClient(Path socket, Duration callTimeout) {
        this.group = new EpollEventLoopGroup(1);
        this.channel =
                NettyChannelBuilder.forTarget("unix://" + socket.toAbsolutePath())
                        .channelType(EpollDomainSocketChannel.class, DomainSocketAddress.class)
                        .eventLoopGroup(group)
                        .usePlaintext()
                        .maxInboundMessageSize(32 << 20)
                        .build();
        this.stub = RuntimeServiceGrpc.newBlockingStub(channel);
        this.callTimeout = callTimeout;
    }

    /** @return the deadline of each call */
    public Duration callTimeout() {
        return callTimeout;
    }

    private RuntimeServiceBlockingStub call() {
        return stub.withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** CRI {@code Version}: the runtime's name and versions. */
    public VersionResponse version() {
        return call().version(VersionRequest.newBuilder().setVersion("v1").build());
    }

    /** CRI {@code Status}: the runtime's conditions ({@link #RUNTIME_READY}, {@link #NETWORK_READY}, ...). */
    public List<RuntimeCondition> conditions() {
        return call().status(StatusRequest.getDefaultInstance()).getStatus().getConditionsList();
    }

    /** @return the named condition as the runtime reports it now, if it reports it */
    public Optional<RuntimeCondition> condition(String type) {
        return conditions().stream().filter(c -> c.getType().equals(type)).findFirst();
    }

    /**
     * CRI {@code RunPodSandbox}: creates the pod's sandbox, its network included (the runtime
     * calls CNI ADD before it answers), and starts it.
     *
     * @return the sandbox's ID
     */
    public String runPodSandbox(PodSandboxConfig config) {
        return runPodSandbox(config, "");
    }

    /**
     * As {@link #runPodSandbox(PodSandboxConfig)} with a runtime handler (a RuntimeClass's
     * {@code handler}; {@code ""} for the runtime's default).
     */
    public String runPodSandbox(PodSandboxConfig config, String runtimeHandler) {
        return call().runPodSandbox(
                        RunPodSandboxRequest.newBuilder()
                                .setConfig(config)
                                .setRuntimeHandler(runtimeHandler)
                                .build())
                .getPodSandboxId();
    }

    /** CRI {@code PodSandboxStatus}: state, metadata and network (the pod's IPs). */
    public PodSandboxStatus podSandboxStatus(String sandboxId) {
        return call().podSandboxStatus(
                        PodSandboxStatusRequest.newBuilder().setPodSandboxId(sandboxId).build())
                .getStatus();
    }

    /**
     * CRI {@code PodSandboxStatus} with {@code verbose}: the runtime's extra information, JSON
     * values by key (containerd: {@code "info"} holds the sandbox's OCI runtime spec, whose
     * network namespace entry names the path the runtime gave CNI as {@code CNI_NETNS}).
     */
    public Map<String, String> podSandboxInfo(String sandboxId) {
        return call().podSandboxStatus(
                        PodSandboxStatusRequest.newBuilder()
                                .setPodSandboxId(sandboxId)
                                .setVerbose(true)
                                .build())
                .getInfoMap();
    }

    /**
     * @return the network namespace path the runtime gave CNI as {@code CNI_NETNS} for the
     *     sandbox: the {@code network} entry of the OCI spec in containerd's verbose status
     *     ({@code info.runtimeSpec.linux.namespaces})
     * @throws IllegalStateException when the status holds no such entry (another runtime, or a
     *     sandbox on the host's network)
     */
    public String networkNamespace(String sandboxId) {
        String info = podSandboxInfo(sandboxId).get("info");
        try {
            for (JsonNode ns :
                    JSON.readTree(info == null ? "{}" : info)
                            .path("runtimeSpec")
                            .path("linux")
                            .path("namespaces")) {
                if ("network".equals(ns.path("type").asText())
                        && !ns.path("path").asText().isEmpty()) {
                    return ns.path("path").asText();
                }
            }
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(
                    "sandbox " + sandboxId + "'s verbose info is not JSON", e);
        }
        throw new IllegalStateException(
                "no network namespace path in sandbox " + sandboxId + "'s verbose info");
    }

    /**
     * CRI {@code StopPodSandbox}: stops its containers and tears its network down (CNI DEL).
     * Idempotent in the API: kubelet calls it more than once.
     */
    public void stopPodSandbox(String sandboxId) {
        call().stopPodSandbox(
                        StopPodSandboxRequest.newBuilder().setPodSandboxId(sandboxId).build());
    }

    /** CRI {@code RemovePodSandbox}: removes a stopped sandbox and its containers; idempotent. */
    public void removePodSandbox(String sandboxId) {
        call().removePodSandbox(
                        RemovePodSandboxRequest.newBuilder().setPodSandboxId(sandboxId).build());
    }

    /** CRI {@code ListPodSandbox} without a filter: every sandbox the runtime knows. */
    public List<PodSandbox> listPodSandboxes() {
        return call().listPodSandbox(ListPodSandboxRequest.getDefaultInstance()).getItemsList();
    }

    /**
     * CRI {@code CreateContainer} in a sandbox.
     *
     * @param sandboxConfig the configuration the sandbox was run with (kubelet passes it again)
     * @return the container's ID
     */
    public String createContainer(
            String sandboxId, ContainerConfig config, PodSandboxConfig sandboxConfig) {
        return call().createContainer(
                        CreateContainerRequest.newBuilder()
                                .setPodSandboxId(sandboxId)
                                .setConfig(config)
                                .setSandboxConfig(sandboxConfig)
                                .build())
                .getContainerId();
    }

    /**
     * CreateContainer then StartContainer, as kubelet starts a pod's container.
     *
     * @return the running container's ID
     */
    public String createAndStartContainer(
            String sandboxId, ContainerConfig config, PodSandboxConfig sandboxConfig) {
        String id = createContainer(sandboxId, config, sandboxConfig);
        startContainer(id);
        return id;
    }

    /** CRI {@code StartContainer}. */
    public void startContainer(String containerId) {
        call().startContainer(
                        StartContainerRequest.newBuilder().setContainerId(containerId).build());
    }

    /** CRI {@code StopContainer}, killing it after {@code graceSeconds}. */
    public void stopContainer(String containerId, long graceSeconds) {
        call().stopContainer(
                        StopContainerRequest.newBuilder()
                                .setContainerId(containerId)
                                .setTimeout(graceSeconds)
                                .build());
    }

    /** CRI {@code ContainerStatus}: state, exit code once exited, and the runtime's reason and message. */
    public ContainerStatus containerStatus(String containerId) {
        return call().containerStatus(
                        ContainerStatusRequest.newBuilder().setContainerId(containerId).build())
                .getStatus();
    }

    /** CRI {@code RemoveContainer}. */
    public void removeContainer(String containerId) {
        call().removeContainer(
                        RemoveContainerRequest.newBuilder().setContainerId(containerId).build());
    }

    /** What a command run with {@link #execSync} printed and how it exited. */
    public record ExecResult(int exitCode, String stdout, String stderr) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\nstdout:\n" + stdout + "\nstderr:\n" + stderr;
        }
    }

    /**
     * CRI {@code ExecSync}: runs a command in a running container and waits for it.
     *
     * @param timeoutSeconds how long the runtime lets the command run (must be below {@link #callTimeout})
     * @param command the argv, e.g. {@code /bin/busybox ip addr}
     */
    public ExecResult execSync(String containerId, long timeoutSeconds, String... command) {
        ExecSyncResponse r =
                call().execSync(
                                ExecSyncRequest.newBuilder()
                                        .setContainerId(containerId)
                                        .addAllCmd(List.of(command))
                                        .setTimeout(timeoutSeconds)
                                        .build());
        return new ExecResult(
                r.getExitCode(),
                r.getStdout().toString(StandardCharsets.UTF_8),
                r.getStderr().toString(StandardCharsets.UTF_8));
    }

    /** Closes the channel and its event loop, waiting up to 10 s. */
    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow();
        channel.awaitTermination(10, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
    }
}
