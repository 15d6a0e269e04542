package io.cadastre.testcri;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The one image the tests and benchmarks run, built without a registry: an OCI image archive
 * (OCI image-layout 1.0, as {@code ctr images import} reads it) holding a single uncompressed
 * layer with {@code /bin/busybox} from Debian's {@code busybox-static} (statically linked, so
 * nothing else is needed). Its entrypoint sleeps, so it serves as the runtime's pause
 * ({@code sandbox_image}) image, and containers run busybox applets from it
 * ({@code /bin/busybox ip addr}).
 *
 * <p>The archive's index names the image {@value #NAME} in the annotation containerd reads
 * ({@code io.containerd.image.name}) and its tag in the OCI one
 * ({@code org.opencontainers.image.ref.name}).
 */
public final class PauseImage {
    /** The image's name once imported. */
    public static final String NAME = "cadastre.test/pause:1";

    /** Debian's busybox-static. */
    public static final Path BUSYBOX = Path.of("/bin/busybox");

    private PauseImage() {}

    /**
     * Writes the archive.
     *
     * @param busybox a statically linked busybox executable
     * @param archive the tar file to write (replaced if it exists)
     * @throws IOException when busybox cannot be read or the archive written
     */
    public static void write(Path busybox, Path archive) throws IOException {
        byte[] layer =
                tar(orderedEntries("bin/", null, "bin/busybox", Files.readAllBytes(busybox)));
        String layerDigest = sha256(layer);
        byte[] config =
                ("{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Entrypoint\":[\"/bin/busybox\",\"sleep\","
                                + "\"2147483647\"],\"WorkingDir\":\"/\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:"
                                + layerDigest
                                + "\"]}}")
                        .getBytes(StandardCharsets.UTF_8);
        String configDigest = sha256(config);
        byte[] manifest =
                ("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                                + "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:"
                                + configDigest
                                + "\",\"size\":"
                                + config.length
                                + "},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
                                + "\"digest\":\"sha256:"
                                + layerDigest
                                + "\",\"size\":"
                                + layer.length
                                + "}]}")
                        .getBytes(StandardCharsets.UTF_8);
        String manifestDigest = sha256(manifest);
        String tag = NAME.substring(NAME.lastIndexOf(':') + 1);
        byte[] index =
                ("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                                + "\"digest\":\"sha256:"
                                + manifestDigest
                                + "\",\"size\":"
                                + manifest.length
                                + ",\"annotations\":{"
                                + "\"io.containerd.image.name\":\""
                                + NAME
                                + "\",\"org.opencontainers.image.ref.name\":\""
                                + tag
                                + "\"}}]}")
                        .getBytes(StandardCharsets.UTF_8);
        byte[] layout =
                tar(
                        orderedEntries(
                                "oci-layout",
                                "{\"imageLayoutVersion\":\"1.0.0\"}"
                                        .getBytes(StandardCharsets.UTF_8),
                                "index.json",
                                index,
                                "blobs/",
                                null,
                                "blobs/sha256/",
                                null,
                                "blobs/sha256/" + layerDigest,
                                layer,
                                "blobs/sha256/" + configDigest,
                                config,
                                "blobs/sha256/" + manifestDigest,
                                manifest));
        Files.write(archive, layout);
    }

    private static Map<String, byte[]> orderedEntries(Object... pairs) {
        Map<String, byte[]> entries = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            entries.put((String) pairs[i], (byte[]) pairs[i + 1]);
        }
        return entries;
    }

    /**
     * A POSIX ustar archive: names ending in {@code /} are directories (0755), other entries regular
     * files (0755, so busybox is executable), owned by 0:0, time 0 (a reproducible digest).
     */
    static byte[] tar(Map<String, byte[]> entries) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            boolean dir = e.getKey().endsWith("/");
            byte[] body = dir ? new byte[0] : e.getValue();
            out.write(header(e.getKey(), body.length, dir));
            out.write(body);
            pad(out, body.length);
        }
        out.write(new byte[1024]); // two zero blocks end the archive
        return out.toByteArray();
    }

    private static byte[] header(String name, long size, boolean dir) {
        byte[] nameBytes = name.getBytes(StandardCharsets.US_ASCII);
        if (nameBytes.length > 100) {
            throw new IllegalArgumentException("tar name over 100 bytes: " + name);
        }
        byte[] h = new byte[512];
        System.arraycopy(nameBytes, 0, h, 0, nameBytes.length);
        octal(h, 100, 8, 0755);
        octal(h, 108, 8, 0);
        octal(h, 116, 8, 0);
        octal(h, 124, 12, size);
        octal(h, 136, 12, 0);
        h[156] = (byte) (dir ? '5' : '0');
        byte[] magic = "ustar\u000000".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(magic, 0, h, 257, magic.length);
        for (int i = 148; i < 156; i++) {
            h[i] = ' ';
        }
        long sum = 0;
        for (byte b : h) {
            sum += b & 0xff;
        }
        octal(h, 148, 7, sum);
        h[155] = ' ';
        return h;
    }

    /** Writes {@code value} as zero-padded octal digits in {@code width - 1} bytes and a NUL. */
    private static void octal(byte[] h, int offset, int width, long value) {
        String digits = Long.toOctalString(value);
        String padded = "0".repeat(width - 1 - digits.length()) + digits;
        byte[] b = padded.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(b, 0, h, offset, b.length);
        h[offset + width - 1] = 0;
    }

    private static void pad(OutputStream out, long size) throws IOException {
        int rest = (int) (size % 512);
        if (rest != 0) {
            out.write(new byte[512 - rest]);
        }
    }

    private static String sha256(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
