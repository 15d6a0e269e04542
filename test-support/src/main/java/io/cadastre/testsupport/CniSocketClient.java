package io.cadastre.testsupport;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The agent's CNI endpoint spoken directly, as the plugin speaks it (cni-bridge/DESIGN.md,
 * "Request" and "Reply": {@code POST /v1/cni} over the Unix socket, the CNI variables as headers,
 * one connection per call): the IPAM throughput without a process exec per call.
 */
public final class CniSocketClient {
    /**
     * A reply.
     *
     * @param status the HTTP status (200: success; otherwise the body is a CNI error object)
     * @param body the CNI result or error object
     */
    public record Reply(int status, String body) {}

    private final Path socket;
    private final String netconf;
    private final String netns;

    /**
     * @param netconf the network configuration sent as the body (an IPAM-only one)
     * @param netns every call's {@code CNI_NETNS}: a namespace that exists, as the pod's does
     *     ({@code BenchContext#ipamNetns})
     */
    public CniSocketClient(Path socket, String netconf, String netns) {
        this.socket = socket;
        this.netconf = netconf;
        this.netns = netns;
    }

    /** An IPAM-only configuration for the reference bridge with {@code cadastre-ipam}, from the pool given. */
    public static String ipamOnly(Path socket, String pool) {
        return """
                {"cniVersion":"1.0.0","name":"bench","type":"bridge","ipam":{"type":"cadastre-ipam",\
                "agentSocket":"%s","pools":["%s"]}}"""
                .formatted(socket, pool);
    }

    /**
     * @param command {@code ADD} or {@code DEL}
     * @throws IOException when the agent cannot be reached or the reply is not HTTP/1.x
     */
    public Reply call(String command, String containerId) throws IOException {
        byte[] body = netconf.getBytes(StandardCharsets.UTF_8);
        String head =
                "POST /v1/cni HTTP/1.1\r\nHost: cadastre\r\nContent-Type: application/json\r\n"
                        + "Content-Length: "
                        + body.length
                        + "\r\nConnection: close\r\n"
                        + "CNI-Command: "
                        + command
                        + "\r\nCNI-ContainerID: "
                        + containerId
                        + "\r\n"
                        + "CNI-Netns: "
                        + netns
                        + "\r\nCNI-Ifname: eth0\r\n\r\n";
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            ByteBuffer out = ByteBuffer.allocate(head.length() + body.length);
            out.put(head.getBytes(StandardCharsets.US_ASCII)).put(body).flip();
            while (out.hasRemaining()) {
                channel.write(out);
            }
            ByteArrayOutputStream reply = new ByteArrayOutputStream();
            ByteBuffer in = ByteBuffer.allocate(8192);
            while (channel.read(in) >= 0) {
                reply.write(in.array(), 0, in.position());
                in.clear();
            }
            return parse(reply.toString(StandardCharsets.UTF_8));
        }
    }

    /** Status line and body; a chunked reply's body is left as it came (the figures need only the status). */
    static Reply parse(String reply) throws IOException {
        if (!reply.startsWith("HTTP/1.") || reply.length() < 12) {
            throw new IOException("not an HTTP/1.x reply: " + reply.lines().findFirst().orElse(""));
        }
        int status = Integer.parseInt(reply.substring(9, 12));
        int bodyAt = reply.indexOf("\r\n\r\n");
        return new Reply(status, bodyAt < 0 ? "" : reply.substring(bodyAt + 4));
    }
}
