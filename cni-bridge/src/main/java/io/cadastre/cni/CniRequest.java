package io.cadastre.cni;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * One plugin invocation as the C plugin forwards it (cni-bridge/DESIGN.md, "Request"): the CNI
 * environment variables, each null when the variable was not set (an empty value stays empty), and
 * stdin verbatim. Nothing here is validated; {@link CniCall#validate} does that.
 *
 * <p>{@link #toString()} leaves the netconf out: it may carry credentials.
 *
 * @param command {@code CNI_COMMAND}
 * @param containerId {@code CNI_CONTAINERID}
 * @param netns {@code CNI_NETNS}
 * @param ifname {@code CNI_IFNAME}
 * @param args {@code CNI_ARGS}
 * @param path {@code CNI_PATH}
 * @param netconf stdin, never null (empty when there was none)
 */
public record CniRequest(
        String command,
        String containerId,
        String netns,
        String ifname,
        String args,
        String path,
        byte[] netconf) {

    public static final String HEADER_COMMAND = "CNI-Command";
    public static final String HEADER_CONTAINER_ID = "CNI-ContainerID";
    public static final String HEADER_NETNS = "CNI-Netns";
    public static final String HEADER_IFNAME = "CNI-Ifname";
    public static final String HEADER_ARGS = "CNI-Args";
    public static final String HEADER_PATH = "CNI-Path";

    public CniRequest {
        netconf = netconf == null ? new byte[0] : netconf;
    }

    /**
     * Builds a request from HTTP headers and body. Each header value is percent-decoded: {@code %XX}
     * (either case of hex) is one byte, any other character of 0x20-0x7E stands for itself, and the
     * bytes are decoded as UTF-8.
     *
     * @param header case-insensitive header lookup, e.g. {@code name -> request.getHeader(name).map(value)}
     * @param body the request body, stdin verbatim
     * @throws CniException code 4, naming the variable, when a value is not valid percent-encoded UTF-8
     */
    public static CniRequest fromHeaders(Function<String, Optional<String>> header, byte[] body) {
        return new CniRequest(
                decode(header, HEADER_COMMAND, "CNI_COMMAND"),
                decode(header, HEADER_CONTAINER_ID, "CNI_CONTAINERID"),
                decode(header, HEADER_NETNS, "CNI_NETNS"),
                decode(header, HEADER_IFNAME, "CNI_IFNAME"),
                decode(header, HEADER_ARGS, "CNI_ARGS"),
                decode(header, HEADER_PATH, "CNI_PATH"),
                body);
    }

    private static String decode(
            Function<String, Optional<String>> header, String name, String variable) {
        Optional<String> raw = header.apply(name);
        if (raw == null || raw.isEmpty()) {
            return null;
        }
        try {
            return percentDecode(raw.get());
        } catch (IllegalArgumentException | CharacterCodingException e) {
            throw new CniException(
                    CniCodes.INVALID_ENVIRONMENT,
                    variable + " is invalid: header " + name + " is not percent-encoded UTF-8");
        }
    }

    /**
     * @throws IllegalArgumentException on a truncated or non-hex escape, or a character outside
     *     0x20-0x7E
     * @throws CharacterCodingException when the bytes are not UTF-8
     */
    static String percentDecode(String s) throws CharacterCodingException {
        if (s.indexOf('%') < 0 && s.chars().allMatch(c -> c >= 0x20 && c <= 0x7e)) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                if (i + 2 >= s.length()) {
                    throw new IllegalArgumentException("truncated escape");
                }
                int hi = Character.digit(s.charAt(i + 1), 16);
                int lo = Character.digit(s.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("bad escape");
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else if (c >= 0x20 && c <= 0x7e) {
                out.write(c);
            } else {
                throw new IllegalArgumentException("unencoded character");
            }
        }
        return StandardCharsets.UTF_8
                .newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(out.toByteArray()))
                .toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CniRequest r
                && Objects.equals(command, r.command)
                && Objects.equals(containerId, r.containerId)
                && Objects.equals(netns, r.netns)
                && Objects.equals(ifname, r.ifname)
                && Objects.equals(args, r.args)
                && Objects.equals(path, r.path)
                && Arrays.equals(netconf, r.netconf);
    }

    @Override
    public int hashCode() {
        return Objects.hash(command, containerId, netns, ifname, args, path) * 31
                + Arrays.hashCode(netconf);
    }

    @Override
    public String toString() {
        return "CniRequest[command="
                + command
                + ", containerId="
                + containerId
                + ", netns="
                + netns
                + ", ifname="
                + ifname
                + ", netconf="
                + netconf.length
                + " bytes]";
    }
}
