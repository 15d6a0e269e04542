package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cadastre.cni.CniException;
import io.cadastre.shards.IpamException;
import io.cadastre.shards.IpamException.Reason;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The table of IPAM refusal reasons to CNI error codes, as the README documents it. */
class NodeAgentCniBackendTest {
    /** The README's table ("CNI error codes"), written out once more on purpose. */
    private static final Map<Reason, Integer> DOCUMENTED =
            new EnumMap<>(
                    Map.ofEntries(
                            Map.entry(Reason.UNKNOWN_POOL, 7),
                            Map.entry(Reason.INVALID_REQUEST, 7),
                            Map.entry(Reason.POOL_EXHAUSTED, 100),
                            Map.entry(Reason.ADDRESS_TAKEN, 101),
                            Map.entry(Reason.ADDRESS_NOT_IN_POOL, 102),
                            Map.entry(Reason.POOL_DISABLED, 102),
                            Map.entry(Reason.NODE_BLOCK_LIMIT, 102),
                            Map.entry(Reason.AFFINE_TO_OTHER_NODE, 105),
                            Map.entry(Reason.BLOCK_RELEASING, 11),
                            Map.entry(Reason.CONFLICT, 11),
                            Map.entry(Reason.UNAVAILABLE, 11)));

    @Test
    void everyReasonHasItsDocumentedCode() {
        assertEquals(Reason.values().length, DOCUMENTED.size(), "every reason is in the table");
        DOCUMENTED.forEach(
                (reason, code) -> {
                    CniException cni =
                            NodeAgentCniBackend.toCni(
                                    new IpamException(reason, "because " + reason));
                    assertEquals(code, cni.code(), reason::toString);
                    assertEquals(
                            "because " + reason,
                            cni.details(),
                            "the refusal's words reach the runtime as details");
                });
    }
}
