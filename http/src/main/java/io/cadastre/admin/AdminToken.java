package io.cadastre.admin;

import com.sun.security.auth.module.UnixSystem;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The admin API's bearer token as a file: one an operator provides ({@code
 * cadastre.admin.token-file}), or the one the agent keeps in its data directory ({@value
 * #FILE_NAME}), generated at the first start and reused after. Only the file's owner may read
 * either: the token is what separates root from every other local user (SECURITY.md).
 *
 * <p>No method here puts a token into a message or an exception: callers may log them.
 */
public final class AdminToken {
    /** The agent's own token file, in its data directory. */
    public static final String FILE_NAME = "admin.token";

    /** Random bytes in a generated token: 256 bits, written as 64 lower-case hex digits. */
    static final int GENERATED_BYTES = 32;

    private static final Pattern GENERATED =
            Pattern.compile("[0-9a-f]{" + 2 * GENERATED_BYTES + "}");
    private static final Set<PosixFilePermission> OWNER_ONLY =
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

    /** Bits that let another user read the token, or replace it with one they know. */
    private static final Set<PosixFilePermission> GROUP_OR_OTHERS =
            EnumSet.of(
                    PosixFilePermission.GROUP_READ,
                    PosixFilePermission.GROUP_WRITE,
                    PosixFilePermission.OTHERS_READ,
                    PosixFilePermission.OTHERS_WRITE);

    private static final SecureRandom RANDOM = new SecureRandom();

    private AdminToken() {}

    /** How {@link #ensure} came by the token; {@code replacedBecause} is set only for {@link Origin#REPLACED}. */
    public record Kept(String token, Path file, Origin origin, Optional<String> replacedBecause) {
        @Override
        public String toString() {
            // A record prints its components: never the token.
            return "Kept[file="
                    + file
                    + ", origin="
                    + origin
                    + ", replacedBecause="
                    + replacedBecause
                    + "]";
        }
    }

    /** Where the agent's token came from. */
    public enum Origin {
        /** There was none: generated. */
        GENERATED,
        /** The file there was valid and is used again. */
        REUSED,
        /** The file there was not fit to use (see {@link Kept#replacedBecause()}): a new token replaced it. */
        REPLACED
    }

    /**
     * Reads a token file an operator provides: its trimmed content is the token.
     *
     * @param file followed if a link (a Kubernetes Secret volume's files are links)
     * @return the token: one word, no blanks or control characters
     * @throws IllegalArgumentException naming the file when it cannot be read, when group or others
     *     may read or write it (with its mode and the fix), or when it is empty or holds more than
     *     one word
     */
    public static String read(Path file) {
        Set<PosixFilePermission> permissions;
        String token;
        try {
            permissions = Files.getPosixFilePermissions(file);
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(
                    "the admin token file " + file + " does not exist", e);
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(
                    "the admin token file " + file + " cannot be read: permission denied", e);
        } catch (IOException | UnsupportedOperationException e) {
            throw new IllegalArgumentException(
                    "cannot read the admin token file " + file + ": " + e, e);
        }
        if (permissions.stream().anyMatch(GROUP_OR_OTHERS::contains)) {
            throw new IllegalArgumentException(
                    "the admin token file "
                            + file
                            + " has mode "
                            + PosixFilePermissions.toString(permissions)
                            + ": only its owner may read it (chmod 600 "
                            + file
                            + "; for a Kubernetes Secret volume, defaultMode: 0400)");
        }
        if (token.isEmpty()) {
            throw new IllegalArgumentException("the admin token file " + file + " is empty");
        }
        // A header value cannot carry line breaks, and blanks would split the bearer credential.
        if (token.chars().anyMatch(c -> c <= ' ' || c == 0x7f)) {
            throw new IllegalArgumentException(
                    "the admin token file "
                            + file
                            + " holds more than one word (blanks, line breaks or control characters inside the token)");
        }
        return token;
    }

    /**
     * The agent's own token: {@code dataDir/}{@value #FILE_NAME} when it is fit to use (a regular
     * file, not a link, owned by this process's user, readable by nobody else, holding a token as
     * generated here), else a new one: {@value #GENERATED_BYTES} bytes of {@link SecureRandom} as
     * hex, written to a file created with mode 0600 (no window with wider permissions, whatever
     * the umask), synced, and renamed over the old one.
     *
     * @param dataDir an existing directory, which should be accessible to its owner only
     * @throws IOException when the file cannot be read, written or renamed
     */
    public static Kept ensure(Path dataDir) throws IOException {
        Path file = dataDir.resolve(FILE_NAME);
        Optional<String> unfit = unfit(file);
        if (unfit.isEmpty()) {
            return new Kept(
                    Files.readString(file, StandardCharsets.UTF_8).strip(),
                    file,
                    Origin.REUSED,
                    Optional.empty());
        }
        boolean existed = Files.exists(file, LinkOption.NOFOLLOW_LINKS);
        byte[] random = new byte[GENERATED_BYTES];
        RANDOM.nextBytes(random);
        String token = HexFormat.of().formatHex(random);
        write(file, token);
        return existed
                ? new Kept(token, file, Origin.REPLACED, unfit)
                : new Kept(token, file, Origin.GENERATED, Optional.empty());
    }

    /** @return why the agent's token file cannot be used as it is, or empty when it can */
    private static Optional<String> unfit(Path file) throws IOException {
        PosixFileAttributes attributes;
        try {
            attributes =
                    Files.readAttributes(
                            file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return Optional.of("absent");
        }
        if (!attributes.isRegularFile()) {
            return Optional.of("not a regular file");
        }
        // Someone else's file could hold a token they know (a data directory once writable by
        // them).
        long owner =
                ((Number) Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS))
                        .longValue();
        if (owner != new UnixSystem().getUid()) {
            return Optional.of(
                    "owned by " + attributes.owner().getName() + ", not this process's user");
        }
        if (attributes.permissions().stream().anyMatch(GROUP_OR_OTHERS::contains)) {
            return Optional.of(
                    "mode "
                            + PosixFilePermissions.toString(attributes.permissions())
                            + " let others read or write it");
        }
        if (attributes.size() > 4 * GENERATED_BYTES
                || !GENERATED
                        .matcher(Files.readString(file, StandardCharsets.UTF_8).strip())
                        .matches()) {
            return Optional.of("it holds no token as the agent generates them");
        }
        return Optional.empty();
    }

    private static void write(Path file, String token) throws IOException {
        FileAttribute<Set<PosixFilePermission>> ownerOnly =
                PosixFilePermissions.asFileAttribute(OWNER_ONLY);
        Path temporary = Files.createTempFile(file.getParent(), FILE_NAME + ".", ".new", ownerOnly);
        try {
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE);
                    OutputStream out = Channels.newOutputStream(channel)) {
                out.write((token + "\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                channel.force(true);
            }
            // The rename replaces a link itself, never what it points to.
            Files.move(
                    temporary,
                    file,
                    StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(temporary);
        }
    }
}
