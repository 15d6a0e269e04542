package io.cadastre.testsupport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class PortRelayTest {
    /**
     * Both halves in this JVM (in the test the TCP half runs in a host's namespace): a client's
     * bytes reach the server through TCP, the Unix socket and TCP again, the server's answer comes
     * back, and the client's end of stream reaches the server.
     */
    @Test
    void bytesAndTheEndOfStreamPassBothWays() throws Exception {
        Path dir = Files.createTempDirectory("relay");
        Path socket = dir.resolve("relay.sock");
        try {
            try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                    PortRelay inward =
                            PortRelay.unixToTcp(
                                    socket,
                                    new InetSocketAddress(
                                            InetAddress.getLoopbackAddress(),
                                            server.getLocalPort()))) {
                try (PortRelay outward = PortRelay.tcpToUnix("127.0.0.1", 0, socket);
                        Socket client =
                                new Socket(InetAddress.getLoopbackAddress(), outward.port())) {
                    server.setSoTimeout(10_000); // a relay that lost the bytes fails, not hangs
                    client.setSoTimeout(10_000);
                    OutputStream out = client.getOutputStream();
                    out.write("GET /readyz".getBytes(StandardCharsets.US_ASCII));
                    client.shutdownOutput();
                    try (Socket accepted = server.accept()) {
                        InputStream in = accepted.getInputStream();
                        assertArrayEquals(
                                "GET /readyz".getBytes(StandardCharsets.US_ASCII),
                                in.readAllBytes());
                        accepted.getOutputStream().write("200".getBytes(StandardCharsets.US_ASCII));
                        accepted.shutdownOutput();
                        assertEquals(
                                "200",
                                new String(
                                        client.getInputStream().readAllBytes(),
                                        StandardCharsets.US_ASCII));
                    }
                }
            }
            assertFalse(Files.exists(socket), "closing removes the Unix socket");
        } finally {
            Files.deleteIfExists(socket);
            Files.delete(dir);
        }
    }
}
