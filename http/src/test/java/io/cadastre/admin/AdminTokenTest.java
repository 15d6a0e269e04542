package io.cadastre.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The token's files: an operator's, checked; the agent's own, generated 0600 and reused. */
class AdminTokenTest {
    private static final Pattern HEX_256_BITS = Pattern.compile("[0-9a-f]{64}");

    @TempDir Path dir;

    private static String mode(Path file) throws Exception {
        return PosixFilePermissions.toString(
                Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS));
    }

    private Path file(String name, String content, String mode) throws Exception {
        Path file = Files.writeString(dir.resolve(name), content);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
        return file;
    }

    // ---- an operator's token file

    @Test
    void anOperatorsFileIsReadTrimmed() throws Exception {
        assertEquals("abc123", AdminToken.read(file("token", "  abc123\n", "rw-------")));
        assertEquals("abc123", AdminToken.read(file("read-only", "abc123", "r--------")));
    }

    @Test
    void anOperatorsFileThatOthersMayReadOrWriteIsRefusedWithTheFix() throws Exception {
        for (String mode :
                new String[] {"rw-r--r--", "rw-r-----", "rw----r--", "rw--w----", "rw-----w-"}) {
            Path file = file("token-" + mode, "abc123\n", mode);
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> AdminToken.read(file), mode);
            assertTrue(
                    e.getMessage().contains("has mode " + mode)
                            && e.getMessage().contains("chmod 600 " + file),
                    e.getMessage());
            assertFalse(e.getMessage().contains("abc123"), "never the token: " + e.getMessage());
        }
    }

    @Test
    void aLinkIsFollowedToTheFileItNames() throws Exception {
        // A Kubernetes Secret volume's files are links into a timestamped directory.
        Path target = file("target", "linked\n", "r--------");
        Path link = Files.createSymbolicLink(dir.resolve("link"), target);
        assertEquals("linked", AdminToken.read(link));
    }

    @Test
    void anEmptyMissingOrMultiWordFileIsRefused() throws Exception {
        assertTrue(
                assertThrows(
                                IllegalArgumentException.class,
                                () -> AdminToken.read(file("empty", " \n", "rw-------")))
                        .getMessage()
                        .contains("is empty"));
        assertTrue(
                assertThrows(
                                IllegalArgumentException.class,
                                () -> AdminToken.read(dir.resolve("missing")))
                        .getMessage()
                        .contains("does not exist"));
        IllegalArgumentException twoWords =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                AdminToken.read(
                                        file("two", "secret one\nsecret two\n", "rw-------")));
        assertTrue(twoWords.getMessage().contains("more than one word"), twoWords.getMessage());
        assertFalse(twoWords.getMessage().contains("secret"), twoWords.getMessage());
    }

    // ---- the agent's own

    @Test
    void theAgentsTokenIsGenerated0600AndReused() throws Exception {
        AdminToken.Kept first = AdminToken.ensure(dir);
        assertEquals(AdminToken.Origin.GENERATED, first.origin());
        assertEquals(dir.resolve("admin.token"), first.file());
        assertTrue(HEX_256_BITS.matcher(first.token()).matches(), "256 bits as hex");
        assertEquals("rw-------", mode(first.file()));
        assertEquals(first.token() + "\n", Files.readString(first.file()));
        assertEquals(Set.of("admin.token"), Set.of(dir.toFile().list()), "no temporary file left");
        assertFalse(first.toString().contains(first.token()), "never the token: " + first);

        AdminToken.Kept again = AdminToken.ensure(dir);
        assertEquals(AdminToken.Origin.REUSED, again.origin());
        assertEquals(first.token(), again.token());
        assertNotEquals(
                first.token(),
                AdminToken.ensure(Files.createDirectory(dir.resolve("other"))).token(),
                "random");
    }

    @Test
    void aFileOthersCouldReadIsReplacedByANewToken() throws Exception {
        String old = AdminToken.ensure(dir).token();
        Files.setPosixFilePermissions(
                dir.resolve("admin.token"), PosixFilePermissions.fromString("rw-r--r--"));
        AdminToken.Kept replaced = AdminToken.ensure(dir);
        assertEquals(AdminToken.Origin.REPLACED, replaced.origin());
        assertTrue(
                replaced.replacedBecause().orElseThrow().contains("rw-r--r--"),
                replaced.toString());
        assertNotEquals(old, replaced.token(), "a token others may have read is not used again");
        assertEquals("rw-------", mode(replaced.file()));
    }

    @Test
    void aFileThatHoldsNoGeneratedTokenOrIsALinkIsReplaced() throws Exception {
        file("admin.token", "chosen-by-someone\n", "rw-------");
        AdminToken.Kept replaced = AdminToken.ensure(dir);
        assertEquals(AdminToken.Origin.REPLACED, replaced.origin());
        assertTrue(HEX_256_BITS.matcher(replaced.token()).matches());

        Path elsewhere = file("elsewhere", replaced.token() + "\n", "rw-------");
        Files.delete(dir.resolve("admin.token"));
        Files.createSymbolicLink(dir.resolve("admin.token"), elsewhere);
        AdminToken.Kept unlinked = AdminToken.ensure(dir);
        assertEquals(Optional.of("not a regular file"), unlinked.replacedBecause());
        assertFalse(
                Files.isSymbolicLink(dir.resolve("admin.token")), "the link itself is replaced");
        assertEquals(
                replaced.token() + "\n",
                Files.readString(elsewhere),
                "what it pointed to is left alone");
    }
}
