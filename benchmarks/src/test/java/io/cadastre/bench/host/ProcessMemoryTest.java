package io.cadastre.bench.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The resident memory of a process's file mappings, read from this JVM's own smaps. */
class ProcessMemoryTest {
    private static final long SELF = ProcessHandle.current().pid();

    @Test
    void countsTheResidentPagesOfTheMappedFilesNamedAndOfNoOther() {
        long jvm = ProcessMemory.residentInFiles(SELF, "/libjvm.so");
        assertTrue(jvm > 1024 * 1024, "libjvm.so resident: " + jvm);
        long all = ProcessMemory.statusKib(SELF, "VmRSS:") * 1024;
        assertTrue(jvm < all, jvm + " of " + all);
        assertEquals(0, ProcessMemory.residentInFiles(SELF, ".no-such-file"));
    }

    @Test
    void aProcessThatIsGoneHoldsNothing() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        assertEquals(0, ProcessMemory.residentInFiles(gone.pid(), "/libjvm.so"));
    }
}
