package io.cadastre.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Every manifest under {@code deploy/kubernetes} as the API server would take it, checked without
 * one (none runs on these machines): each document parses into its fabric8 model class with no
 * field left over ({@link Manifests}), and the objects reference each other consistently. The
 * DaemonSet's shape is {@link DaemonSetTest}'s, the settings {@link ConfigMapTest}'s.
 */
class ManifestsTest {

    @Test
    void everyManifestParsesIntoTheModelWithNoUnknownField() throws Exception {
        List<HasMetadata> main = Manifests.read(Manifests.DIR);
        Map<String, Long> kinds =
                new TreeMap<>(
                        main.stream()
                                .collect(
                                        Collectors.groupingBy(
                                                HasMetadata::getKind, Collectors.counting())));
        assertEquals(
                Map.of(
                        "ClusterRole",
                        1L,
                        "ClusterRoleBinding",
                        1L,
                        "ConfigMap",
                        1L,
                        "DaemonSet",
                        1L,
                        "Namespace",
                        1L,
                        "ServiceAccount",
                        1L),
                kinds);
        List<HasMetadata> singleNode = Manifests.read(Manifests.SINGLE_NODE);
        assertEquals(List.of("ConfigMap"), singleNode.stream().map(HasMetadata::getKind).toList());
        for (HasMetadata o : main) {
            assertEquals(
                    "cadastre",
                    o.getMetadata().getLabels().get("app.kubernetes.io/name"),
                    o.getKind());
        }
    }

    @Test
    void aMisspelledFieldIsRefused() {
        String yaml =
                """
                apiVersion: apps/v1
                kind: DaemonSet
                metadata: {name: x, namespace: cadastre}
                spec:
                  selector: {matchLabels: {a: b}}
                  template:
                    metadata: {labels: {a: b}}
                    spec:
                      hostNetwrok: true
                      containers: [{name: c, image: i}]
                """;
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> Manifests.parse(yaml, "inline"));
        assertTrue(e.getMessage().contains("spec.template.spec.hostNetwrok"), e.getMessage());
        IllegalArgumentException kind =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                Manifests.parse(
                                        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
                                        "inline"));
        assertTrue(kind.getMessage().contains("no model for v1/Secret"), kind.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        Manifests.parse(
                                """
                apiVersion: v1
                kind: Namespace
                metadata: {name: n, labels: [a]}
                """,
                                "inline"),
                "a list where a map goes");
    }

    @Test
    void everythingLivesInTheCadastreNamespaceAndTheBindingNamesTheAgentsAccount()
            throws Exception {
        List<HasMetadata> objects = Manifests.read(Manifests.DIR);
        Manifests.one(objects, Namespace.class, "cadastre");
        ServiceAccount account = Manifests.one(objects, ServiceAccount.class, "cadastre");
        assertEquals("cadastre", account.getMetadata().getNamespace());
        Manifests.one(objects, ConfigMap.class, "cadastre-config");
        DaemonSet ds = Manifests.one(objects, DaemonSet.class, "cadastre");
        assertEquals("cadastre", ds.getMetadata().getNamespace());
        assertEquals(
                account.getMetadata().getName(),
                ds.getSpec().getTemplate().getSpec().getServiceAccountName());
        for (HasMetadata o : objects) {
            boolean clusterScoped =
                    o instanceof Namespace
                            || o instanceof ClusterRole
                            || o instanceof ClusterRoleBinding;
            assertEquals(
                    clusterScoped ? null : "cadastre", o.getMetadata().getNamespace(), o.getKind());
        }
        ClusterRoleBinding binding = Manifests.one(objects, ClusterRoleBinding.class, "cadastre");
        assertEquals("ClusterRole", binding.getRoleRef().getKind());
        Manifests.one(objects, ClusterRole.class, binding.getRoleRef().getName());
        assertEquals(1, binding.getSubjects().size());
        assertEquals("ServiceAccount", binding.getSubjects().get(0).getKind());
        assertEquals("cadastre", binding.getSubjects().get(0).getName());
        assertEquals("cadastre", binding.getSubjects().get(0).getNamespace());
    }

    /**
     * Least privilege: read-only access to exactly what the agent reads (nodes: labels, deletion;
     * pods: annotations, reclaim, the other agents, policy peers; namespaces: annotations, labels;
     * NetworkPolicies), nothing written.
     */
    @Test
    void theClusterRoleOnlyReadsNodesPodsNamespacesAndNetworkPolicies() throws Exception {
        ClusterRole role =
                Manifests.one(Manifests.read(Manifests.DIR), ClusterRole.class, "cadastre");
        Map<String, Set<String>> verbsByResource = new TreeMap<>();
        for (PolicyRule rule : role.getRules()) {
            assertEquals(1, rule.getApiGroups().size(), "one group per rule");
            assertTrue(rule.getResourceNames() == null || rule.getResourceNames().isEmpty());
            assertTrue(rule.getNonResourceURLs() == null || rule.getNonResourceURLs().isEmpty());
            for (String resource : rule.getResources()) {
                assertFalse(verbsByResource.containsKey(resource), resource + " twice");
                verbsByResource.put(
                        rule.getApiGroups().get(0) + "/" + resource, Set.copyOf(rule.getVerbs()));
            }
        }
        Set<String> read = Set.of("get", "list", "watch");
        assertEquals(
                Map.of(
                        "/nodes",
                        read,
                        "/pods",
                        read,
                        "/namespaces",
                        read,
                        "networking.k8s.io/networkpolicies",
                        Set.of("list", "watch")),
                verbsByResource);
    }
}
