package io.cadastre.kube;

import static io.cadastre.shards.TestCluster.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.cni.CniCodes;
import io.cadastre.cni.CniException;
import io.cadastre.ipam.AddressRules;
import io.cadastre.ipam.Cidr;
import io.cadastre.ipam.PoolSpec;
import io.cadastre.shards.AssignRequest;
import io.cadastre.shards.AttachmentRecord;
import io.cadastre.shards.HeldAddress;
import io.cadastre.shards.Ipam;
import io.cadastre.shards.IpamException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Namespace and pod annotations choose pools and addresses, through the production
 * {@link KubeApi} and {@link AnnotatedIpamChoice} over fabric8's mock API server (CRUD), into the
 * real {@link Ipam} on sharded entities, the way the agent's CNI backend builds its request.
 * Malformed or impossible annotations are refused with the CNI layer's codes (7; the IPAM's
 * reasons map to 7, 101, 102), and a refused ADD changes nothing.
 */
class KubernetesAnnotationsTest {
    private static final String NODE = "kube-ann-node";
    private static final PoolSpec BLUE =
            new PoolSpec("blue", Cidr.parse("198.18.64.0/24"), 28, false, true, 0);
    private static final PoolSpec GREEN =
            new PoolSpec("green", Cidr.parse("198.18.65.0/24"), 28, false, true, 0);
    private static final PoolSpec BLUE6 =
            new PoolSpec("blue6", Cidr.parse("fd00:198:64::/120"), 124, false, true, 0);
    private static final PoolSpec GREEN6 =
            new PoolSpec("green6", Cidr.parse("fd00:198:65::/120"), 124, false, true, 0);

    private static IpamCluster cluster;
    private static MockApi mock;
    private static KubeApi api;
    private static Ipam ipam;
    private static PodIpamChoice choice;
    private static int counter;

    @BeforeAll
    static void start() {
        cluster = new IpamCluster("kube-annotations", List.of(BLUE, GREEN, BLUE6, GREEN6));
        ipam = cluster.ipam(NODE, Map.of(), List.of(BLUE.name(), BLUE6.name()));
        mock = new MockApi();
        api = mock.agentApi(NODE, Duration.ofSeconds(2));
        api.start(node -> {});
        choice = new AnnotatedIpamChoice(api);
    }

    @AfterAll
    static void stop() {
        if (api != null) {
            api.close();
        }
        if (mock != null) {
            mock.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void theNamespaceChoosesThePoolsOfAFamilyAndThePodWinsOverIt() {
        mock.namespace(
                "green-ns",
                Map.of(
                        IpamAnnotations.IPV4_POOLS,
                        "[\"green\"]",
                        IpamAnnotations.IPV6_POOLS,
                        "[\"green6\"]"));
        mock.pod("green-ns", "plain", NODE, Map.of());
        // The pod names a pool by its CIDR for IPv4 only: IPv6 stays the namespace's.
        mock.pod(
                "green-ns",
                "own",
                NODE,
                Map.of(IpamAnnotations.IPV4_POOLS, "[\"198.18.64.0/24\"]"));
        mock.pod("default", "nothing", NODE, Map.of());

        assertIn(add("green-ns", "plain", List.of(), List.of()), GREEN, GREEN6);
        assertIn(add("green-ns", "own", List.of(), List.of()), BLUE, GREEN6);
        assertIn(add("default", "nothing", List.of(), List.of()), BLUE, BLUE6);
        // Over the netconf's pools too; a family the request does not cover is not added.
        assertIn(add("green-ns", "plain", List.of(BLUE.name()), List.of()), GREEN);
    }

    @Test
    void aPodAsksForItsAddressWithinTheChosenPools() {
        mock.namespace("addr-ns", Map.of(IpamAnnotations.IPV4_POOLS, "[\"green\"]"));
        mock.pod(
                "addr-ns",
                "fixed",
                NODE,
                Map.of(IpamAnnotations.IP_ADDRS, "[\"198.18.65.77\", \"fd00:198:64::77\"]"));
        AttachmentRecord record = add("addr-ns", "fixed", List.of(), List.of());
        assertEquals(
                List.of("198.18.65.77", "fd00:198:64::77"),
                record.addresses().stream().map(HeldAddress::address).sorted().toList());
        // The same addresses asked by CNI_ARGS as well: no conflict.
        // Asked by CNI_ARGS as well, alike: no conflict (a repeated ADD of the same attachment).
        assertEquals(
                record,
                add(
                        record.containerId(),
                        "addr-ns",
                        "fixed",
                        List.of("fd00:198:64::77", "198.18.65.77")));
    }

    @Test
    void malformedOrImpossibleAnnotationsAreRefusedAndChangeNothing() {
        mock.namespace("bad-ns", Map.of());
        mock.pod("bad-ns", "holder", NODE, Map.of(IpamAnnotations.IP_ADDRS, "[\"198.18.64.200\"]"));
        AttachmentRecord held = add("bad-ns", "holder", List.of(), List.of());
        int attachments = cluster.nodeView(NODE).attachments().size();

        // Refused by the annotation's parser: code 7, before the IPAM is asked.
        for (String bad :
                List.of(
                        "blue",
                        "[\"blue\"",
                        "[]",
                        "[1]",
                        "[\"Blue Pool\"]",
                        "{\"a\":1}",
                        "[\"blue\"] x",
                        "[" + "\"blue\",".repeat(20) + "\"blue\"]",
                        "[\"" + "a".repeat(5000) + "\"]")) {
            mock.pod("bad-ns", "pools", NODE, Map.of(IpamAnnotations.IPV4_POOLS, bad));
            CniException e =
                    assertInstanceOf(
                            CniException.class,
                            failure(() -> add("bad-ns", "pools", List.of(), List.of())),
                            bad);
            assertEquals(CniCodes.INVALID_NETWORK_CONFIG, e.code(), bad);
            assertTrue(
                    e.getMessage().contains(IpamAnnotations.IPV4_POOLS)
                            && e.getMessage().contains("pod bad-ns/pools"),
                    e.getMessage());
        }
        for (String bad :
                List.of(
                        "[\"198.18.64.1/32\"]",
                        "[\"198.18.64.1\", \"198.18.64.2\"]",
                        "[\"host.example\"]",
                        "[\"1\", \"2\", \"3\"]")) {
            mock.pod("bad-ns", "addrs", NODE, Map.of(IpamAnnotations.IP_ADDRS, bad));
            CniException e =
                    assertInstanceOf(
                            CniException.class,
                            failure(() -> add("bad-ns", "addrs", List.of(), List.of())),
                            bad);
            assertEquals(CniCodes.INVALID_NETWORK_CONFIG, e.code(), bad);
        }
        // ipAddrs and CNI_ARGS disagree: code 7.
        mock.pod("bad-ns", "both", NODE, Map.of(IpamAnnotations.IP_ADDRS, "[\"198.18.64.201\"]"));
        assertEquals(
                CniCodes.INVALID_NETWORK_CONFIG,
                assertInstanceOf(
                                CniException.class,
                                failure(
                                        () ->
                                                add(
                                                        "bad-ns",
                                                        "both",
                                                        List.of(),
                                                        List.of("198.18.64.202"))))
                        .code());

        // Refused by the IPAM: an unknown pool (7), a pool of the other family (7), an address in
        // no pool (102), an address another pod holds (101).
        assertReason(
                IpamException.Reason.UNKNOWN_POOL,
                Map.of(IpamAnnotations.IPV4_POOLS, "[\"no-such-pool\"]"));
        assertReason(
                IpamException.Reason.UNKNOWN_POOL,
                Map.of(IpamAnnotations.IPV4_POOLS, "[\"198.18.99.0/24\"]"));
        assertReason(
                IpamException.Reason.INVALID_REQUEST,
                Map.of(IpamAnnotations.IPV4_POOLS, "[\"blue6\"]"));
        assertReason(
                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                Map.of(IpamAnnotations.IP_ADDRS, "[\"198.19.250.1\"]"));
        assertReason(
                IpamException.Reason.ADDRESS_NOT_IN_POOL,
                Map.of(
                        IpamAnnotations.IPV4_POOLS,
                        "[\"green\"]",
                        IpamAnnotations.IP_ADDRS,
                        "[\"198.18.64.9\"]"));
        assertReason(
                IpamException.Reason.ADDRESS_TAKEN,
                Map.of(IpamAnnotations.IP_ADDRS, "[\"198.18.64.200\"]"));

        assertEquals(
                attachments,
                cluster.nodeView(NODE).attachments().size(),
                "a refused ADD records nothing");
        AttachmentRecord holder = await(ipam.lookup(held.handle(), "eth0")).orElseThrow();
        assertEquals(
                List.of("198.18.64.200"),
                holder.addresses().stream().map(HeldAddress::address).toList());
    }

    private void assertReason(IpamException.Reason reason, Map<String, String> annotations) {
        String pod = "refused-" + (++counter);
        mock.pod("bad-ns", pod, NODE, annotations);
        String containerId = "bad-ns-" + pod;
        Throwable failure = failure(() -> add(containerId, "bad-ns", pod, List.of()));
        IpamException e = assertInstanceOf(IpamException.class, failure, annotations.toString());
        assertEquals(reason, e.reason(), e.getMessage());
        assertTrue(await(ipam.lookup("kube-test." + containerId, "eth0")).isEmpty());
    }

    /**
     * The agent's ADD as NodeAgentCniBackend builds it: the annotations' choice over the request's.
     *
     * @param containerId CNI_CONTAINERID: the attachment (handle {@code kube-test.<containerId>}, ifname eth0)
     */
    static AttachmentRecord add(
            Ipam ipam,
            PodIpamChoice choice,
            String containerId,
            String namespace,
            String pod,
            List<String> pools,
            List<String> requestedIps) {
        PodIpamChoice.Choice chosen = await(choice.choose(namespace, pod));
        return await(
                ipam.assign(
                        new AssignRequest(
                                "kube-test." + containerId,
                                "eth0",
                                "kube-test",
                                containerId,
                                null,
                                namespace,
                                pod,
                                pools,
                                chosen.requestedIps(requestedIps),
                                AddressRules.ROUTED,
                                chosen.poolsByFamily())));
    }

    /** A new attachment of the pod. */
    private static AttachmentRecord add(
            String namespace, String pod, List<String> pools, List<String> requestedIps) {
        return add(
                ipam,
                choice,
                namespace + "-" + pod + "-" + (++counter),
                namespace,
                pod,
                pools,
                requestedIps);
    }

    private static AttachmentRecord add(
            String containerId, String namespace, String pod, List<String> requestedIps) {
        return add(ipam, choice, containerId, namespace, pod, List.of(), requestedIps);
    }

    private static Throwable failure(Runnable call) {
        Throwable t = assertThrows(Throwable.class, call::run);
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static void assertIn(AttachmentRecord record, PoolSpec... pools) {
        assertEquals(pools.length, record.addresses().size(), record.toString());
        for (PoolSpec pool : pools) {
            assertTrue(
                    record.addresses().stream()
                            .anyMatch(
                                    h ->
                                            pool.cidr().contains(h.address())
                                                    && h.pool().equals(pool.name())),
                    record + " has no address of " + pool.name());
        }
    }
}
