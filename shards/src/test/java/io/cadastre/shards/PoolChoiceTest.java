package io.cadastre.shards;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.IpFamily;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.PoolRegistry.Catalog;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PoolChoiceTest {
    private static PoolSpec pool(String name, String cidr, String selector) {
        Cidr range = Cidr.parse(cidr);
        return new PoolSpec(
                name,
                range,
                PoolSpec.defaultBlockPrefix(range.family()),
                false,
                true,
                0,
                selector,
                List.of());
    }

    private static final PoolSpec ZONE_A = pool("zone-a", "198.18.0.0/24", "zone=a");
    private static final PoolSpec ZONE_B = pool("zone-b", "198.18.1.0/24", "zone=b");
    private static final PoolSpec ANY_V4 = pool("zz-any", "198.18.2.0/24", "");
    private static final PoolSpec ANY_V6 = pool("any-v6", "fd00:198::/120", "");
    private static final PoolSpec OFF = pool("off", "198.18.3.0/24", "");
    private static final Catalog CATALOG =
            new Catalog(
                    Map.of(
                            "zone-a", ZONE_A, "zone-b", ZONE_B, "zz-any", ANY_V4, "any-v6", ANY_V6,
                            "off", OFF),
                    Set.of("off"));

    @Test
    void withoutNamesEveryEnabledPoolSelectingTheNodeServesItByName() {
        assertEquals(
                Map.of(IpFamily.V4, List.of(ZONE_A, ANY_V4), IpFamily.V6, List.of(ANY_V6)),
                PoolChoice.choose(CATALOG, "n1", Map.of("zone", "a"), List.of()));
        assertEquals(
                Map.of(IpFamily.V4, List.of(ANY_V4), IpFamily.V6, List.of(ANY_V6)),
                PoolChoice.choose(CATALOG, "n2", Map.of(), List.of()));
    }

    @Test
    void namedPoolsKeepTheirOrderAndSkipThoseThatMayNotServe() {
        assertEquals(
                Map.of(IpFamily.V4, List.of(ANY_V4, ZONE_A)),
                PoolChoice.choose(
                        CATALOG, "n1", Map.of("zone", "a"), List.of("zz-any", "zone-b", "zone-a")));
        IpamException disabled =
                assertThrows(
                        IpamException.class,
                        () -> PoolChoice.choose(CATALOG, "n1", Map.of(), List.of("off", "any-v6")));
        assertEquals(IpamException.Reason.POOL_EXHAUSTED, disabled.reason());
        assertTrue(disabled.getMessage().contains("pool off is disabled"), disabled.getMessage());
        IpamException elsewhere =
                assertThrows(
                        IpamException.class,
                        () ->
                                PoolChoice.choose(
                                        CATALOG, "n1", Map.of("zone", "a"), List.of("zone-b")));
        assertTrue(
                elsewhere.getMessage().contains("selects nodes 'zone=b', not node n1"),
                elsewhere.getMessage());
        IpamException unknown =
                assertThrows(
                        IpamException.class,
                        () -> PoolChoice.choose(CATALOG, "n1", Map.of(), List.of("nope")));
        assertEquals(IpamException.Reason.UNKNOWN_POOL, unknown.reason());
    }

    @Test
    void noPoolSelectingTheNodeIsAnUnknownPool() {
        Catalog onlyZoned = new Catalog(Map.of("zone-a", ZONE_A), Set.of());
        IpamException none =
                assertThrows(
                        IpamException.class,
                        () -> PoolChoice.choose(onlyZoned, "n3", Map.of("zone", "c"), List.of()));
        assertEquals(IpamException.Reason.UNKNOWN_POOL, none.reason());
        assertTrue(
                none.getMessage().contains("no enabled pool selects node n3"), none.getMessage());
    }
}
