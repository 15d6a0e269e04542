package io.cadastre.testsupport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Carries TCP connections from a test host's network namespace to a server in this JVM's, through
 * a Unix socket, which is a file and so reachable from every namespace: a topology's host has no
 * route to the machine's loopback ({@link Topology}), yet a process on it (an agent reaching its
 * Kubernetes API server) must reach a server the test runs ({@code MockKubernetesApi}). Two
 * halves: {@link #unixToTcp} in this JVM accepts on the Unix socket and connects to the server;
 * {@link #main} (started in the host's namespace with {@link #command}) listens on the host's TCP
 * address and connects each connection to the Unix socket. Bytes pass through unchanged (TLS stays
 * end to end); each side's end of stream is passed on as a shutdown of output.
 */
public final class PortRelay implements AutoCloseable {
    /** What {@link #main} prints on standard output once it listens. */
    public static final String LISTENING = "listening";

    private final ServerSocketChannel server;
    private final SocketAddress target;
    private final Set<SocketChannel> open = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;

    private PortRelay(ServerSocketChannel server, SocketAddress target, String name) {
        this.server = server;
        this.target = target;
        this.acceptor = new Thread(this::accept, name);
        acceptor.setDaemon(true);
    }

    /**
     * Accepts connections on the Unix socket {@code socket} (created; it must not exist) and relays
     * each to {@code target}.
     *
     * @throws IOException when the socket cannot be bound
     */
    public static PortRelay unixToTcp(Path socket, InetSocketAddress target) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        PortRelay relay = new PortRelay(server, target, "relay-" + socket.getFileName());
        relay.acceptor.start();
        return relay;
    }

    /**
     * @return the command that runs {@link #main} with this JVM's runtime and class path: it
     *     listens on {@code listen} (an IPv4 literal) and {@code port}, and relays to {@code socket}
     */
    public static List<String> command(String listen, int port, Path socket) {
        return List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx32m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                PortRelay.class.getName(),
                listen,
                Integer.toString(port),
                socket.toString());
    }

    /**
     * Listens on {@code address} and {@code port} (TCP; 0: any free port, see {@link #port}) and
     * relays each connection to the Unix socket {@code socket}.
     *
     * @throws IOException when the address cannot be bound
     */
    public static PortRelay tcpToUnix(String address, int port, Path socket) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.INET);
        server.bind(new InetSocketAddress(address, port));
        PortRelay relay =
                new PortRelay(server, UnixDomainSocketAddress.of(socket), "relay-" + port);
        relay.acceptor.start();
        return relay;
    }

    /** @return the TCP port it listens on (a {@link #tcpToUnix} relay) */
    public int port() throws IOException {
        return ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    /**
     * Arguments: {@code ADDRESS PORT SOCKET}. Listens on ADDRESS:PORT (TCP), prints
     * {@value #LISTENING}, and relays every connection to the Unix socket SOCKET until killed.
     */
    public static void main(String[] args) throws Exception {
        PortRelay relay = tcpToUnix(args[0], Integer.parseInt(args[1]), Path.of(args[2]));
        System.out.println(LISTENING);
        System.out.flush();
        relay.acceptor.join();
    }

    private void accept() {
        while (server.isOpen()) {
            SocketChannel in;
            try {
                in = server.accept();
            } catch (ClosedChannelException closed) {
                return;
            } catch (IOException e) {
                continue;
            }
            try {
                SocketChannel out =
                        SocketChannel.open(
                                target instanceof UnixDomainSocketAddress
                                        ? StandardProtocolFamily.UNIX
                                        : StandardProtocolFamily.INET);
                out.connect(target);
                open.add(in);
                open.add(out);
                // The second direction to end closes both channels.
                AtomicInteger directions = new AtomicInteger(2);
                pump(in, out, directions);
                pump(out, in, directions);
            } catch (IOException e) {
                closeQuietly(in);
            }
        }
    }

    private void pump(SocketChannel from, SocketChannel to, AtomicInteger directions) {
        Thread t =
                new Thread(
                        () -> {
                            ByteBuffer buffer = ByteBuffer.allocate(16 << 10);
                            try {
                                while (from.read(buffer) >= 0) {
                                    buffer.flip();
                                    while (buffer.hasRemaining()) {
                                        to.write(buffer);
                                    }
                                    buffer.clear();
                                }
                                to.shutdownOutput();
                                if (directions.decrementAndGet() > 0) {
                                    return;
                                }
                            } catch (IOException e) {
                                // one side failed: the connection ends both ways
                            }
                            closeQuietly(from);
                            closeQuietly(to);
                        },
                        "relay-pump");
        t.setDaemon(true);
        t.start();
    }

    private void closeQuietly(SocketChannel channel) {
        open.remove(channel);
        try {
            channel.close();
        } catch (IOException e) {
            // closing: nothing left to do with it
        }
    }

    /** Stops accepting, closes every relayed connection and removes a Unix socket it listened on. */
    @Override
    public void close() throws IOException {
        SocketAddress local = server.getLocalAddress();
        server.close();
        open.forEach(this::closeQuietly);
        if (local instanceof UnixDomainSocketAddress unix) {
            Files.deleteIfExists(unix.getPath());
        }
    }
}
