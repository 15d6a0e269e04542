package io.cadastre.testsupport;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A tiny TCP listener for connectivity checks inside a namespace (no ping, nc or socat needed):
 * {@code TcpHello ADDRESS PORT REPLY} binds ADDRESS:PORT, prints "listening" once bound, and
 * answers every connection with the line REPLY, then closes it. Runs until killed.
 */
public final class TcpHello {
    private TcpHello() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: TcpHello ADDRESS PORT REPLY");
            System.exit(2);
        }
        byte[] reply = (args[2] + "\n").getBytes(StandardCharsets.UTF_8);
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(
                    new InetSocketAddress(
                            InetAddress.getByName(args[0]), Integer.parseInt(args[1])));
            System.out.println("listening");
            System.out.flush();
            while (true) {
                try (Socket socket = server.accept();
                        OutputStream out = socket.getOutputStream()) {
                    out.write(reply);
                    out.flush();
                }
            }
        }
    }
}
