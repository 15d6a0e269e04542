package io.cadastre.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.Ipam;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The node's labels follow its Node object (the production {@link KubeApi} informer and
 * {@link NodeLabels} over fabric8's mock API server): the pools' node selectors choose by the
 * labels of the moment, and the node's entity records them.
 */
class KubernetesNodeLabelsTest {
    private static final String NODE = "kube-labels-node";
    private static final PoolSpec ZONE_A =
            new PoolSpec(
                    "zone-a",
                    Cidr.parse("198.18.80.0/24"),
                    28,
                    false,
                    true,
                    0,
                    "topology.kubernetes.io/zone=a",
                    List.of());
    private static final PoolSpec ZONE_B =
            new PoolSpec(
                    "zone-b",
                    Cidr.parse("198.18.81.0/24"),
                    28,
                    false,
                    true,
                    0,
                    "topology.kubernetes.io/zone=b",
                    List.of());

    @Test
    void labelsChangeAndTheSelectorsFollow() {
        try (IpamCluster cluster = new IpamCluster("kube-labels", List.of(ZONE_A, ZONE_B));
                MockApi mock = new MockApi()) {
            mock.node(
                    NODE,
                    Map.of("topology.kubernetes.io/zone", "a", "kubernetes.io/hostname", NODE));
            mock.node("another-node", Map.of("topology.kubernetes.io/zone", "b"));
            // Configured labels stand until the Node's arrive.
            Ipam ipam = cluster.ipam(NODE, Map.of("topology.kubernetes.io/zone", "b"), List.of());
            NodeLabels labels = new NodeLabels(ipam);
            try (KubeApi api = mock.agentApi(NODE, Duration.ofSeconds(2))) {
                api.start(labels::onNode);
                io.cadastre.shards.TestCluster.await(labels.firstTakenIn(Duration.ofSeconds(20)));
                assertEquals(
                        Map.of("topology.kubernetes.io/zone", "a", "kubernetes.io/hostname", NODE),
                        ipam.labels());
                assertIn(add(ipam, "first"), ZONE_A);

                mock.node(NODE, Map.of("topology.kubernetes.io/zone", "b", "bad key!", "x"));
                Waits.until(
                        Duration.ofSeconds(20),
                        () -> ipam.labels().equals(Map.of("topology.kubernetes.io/zone", "b")),
                        () -> "labels are " + ipam.labels());
                assertIn(add(ipam, "second"), ZONE_B);
                Waits.until(
                        Duration.ofSeconds(20),
                        () ->
                                cluster.nodeView(NODE)
                                        .labels()
                                        .equals(Map.of("topology.kubernetes.io/zone", "b")),
                        () -> "the node entity records " + cluster.nodeView(NODE).labels());
            }
        }
    }

    private static AttachmentRecord add(Ipam ipam, String pod) {
        return KubernetesAnnotationsTest.add(
                ipam, PodIpamChoice.NONE, "labels-" + pod, "default", pod, List.of(), List.of());
    }

    private static void assertIn(AttachmentRecord record, PoolSpec pool) {
        assertEquals(1, record.addresses().size(), record.toString());
        assertTrue(
                pool.cidr().contains(record.addresses().get(0).address()),
                record + " is not in " + pool.name());
    }
}
