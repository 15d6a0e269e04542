package io.cadastre.cni;

import io.cadastre.cni.CniBackend.PodRef;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * {@code CNI_ARGS} (CNI spec 1.1 §Parameters: "key-value pairs separated by semicolons"), parsed as
 * libcni's {@code types.LoadArgs} does for the reference plugins.
 *
 * <ul>
 *   <li>Syntax: {@code K=V;K=V}; each pair has exactly one {@code =} and a non-empty key; an empty
 *       or absent {@code CNI_ARGS} has no pairs. A malformed pair is code 4 (the variable is
 *       invalid, §Error).
 *   <li>Known keys (case-sensitive): {@code K8S_POD_NAMESPACE}, {@code K8S_POD_NAME},
 *       {@code K8S_POD_INFRA_CONTAINER_ID}, {@code K8S_POD_UID}, {@code IgnoreUnknown}, {@code IP},
 *       {@code CADASTRE_POOLS}.
 *       A repeated key: the last value wins.
 *   <li>{@code IgnoreUnknown}: {@code 1}/{@code true} or {@code 0}/{@code false}, case-insensitive;
 *       anything else is code 4.
 *   <li>Unknown keys are code 2 (unsupported field; the message names each key, never a value:
 *       values may be secrets) unless
 *       {@code IgnoreUnknown} is true, as the reference plugins refuse them.
 *   <li>{@code K8S_POD_NAMESPACE} must be a DNS-1123 label (63 characters at most), {@code
 *       K8S_POD_NAME} a DNS-1123 subdomain (253 at most), {@code K8S_POD_UID} 1-128 letters,
 *       digits and '-', {@code K8S_POD_INFRA_CONTAINER_ID} a container ID, as Kubernetes makes
 *       them; anything else is code 4 (they are stored with the attachment and shown by the
 *       admin API).
 *   <li>{@code IP}: comma-separated literal addresses (no prefix), spaces around each trimmed, as
 *       host-local reads it; an invalid one is code 7 naming the value.
 * </ul>
 *
 * @param podNamespace {@code K8S_POD_NAMESPACE}, or null when absent or empty
 * @param podName {@code K8S_POD_NAME}, or null when absent or empty
 * @param podInfraContainerId {@code K8S_POD_INFRA_CONTAINER_ID}, or null
 * @param podUid {@code K8S_POD_UID}, or null
 * @param ignoreUnknown {@code IgnoreUnknown}
 * @param pools {@code CADASTRE_POOLS}: the pod's choice of pools, comma-separated names in order
 *     (set by runtimes that pass per-pod arguments, e.g. Multus' {@code cni-args}); empty when absent
 * @param ips {@code IP}, canonical addresses in the order given
 */
public record CniArgs(
        String podNamespace,
        String podName,
        String podInfraContainerId,
        String podUid,
        boolean ignoreUnknown,
        List<String> ips,
        List<String> pools) {

    public static final CniArgs NONE =
            new CniArgs(null, null, null, null, false, List.of(), List.of());

    public CniArgs {
        ips = List.copyOf(ips);
        pools = List.copyOf(pools);
    }

    /** @return the pod, {@code PodRef(null, null)} outside Kubernetes */
    public PodRef pod() {
        return new PodRef(podNamespace, podName);
    }

    /**
     * @param raw the decoded {@code CNI_ARGS}, or null when absent
     * @throws CniException code 4, 2 or 7 as described on the class
     */
    public static CniArgs parse(String raw) {
        if (raw == null || raw.isEmpty()) {
            return NONE;
        }
        String ns = null;
        String pod = null;
        String infra = null;
        String uid = null;
        String ignore = null;
        String ip = null;
        String poolList = null;
        List<String> unknown = new ArrayList<>();
        String[] pairs = raw.split(";", -1);
        for (int i = 0; i < pairs.length; i++) {
            String pair = pairs[i];
            String[] kv = pair.split("=", -1);
            if (kv.length != 2 || kv[0].isEmpty()) {
                // Not echoed: a malformed pair may be a secret with its '=' missing.
                throw new CniException(
                        CniCodes.INVALID_ENVIRONMENT,
                        "CNI_ARGS: pair "
                                + (i + 1)
                                + " of "
                                + pairs.length
                                + " is not KEY=VALUE (expected KEY=VALUE pairs separated by ';')");
            }
            String v = kv[1];
            switch (kv[0]) {
                case "K8S_POD_NAMESPACE" -> ns = v;
                case "K8S_POD_NAME" -> pod = v;
                case "K8S_POD_INFRA_CONTAINER_ID" -> infra = v;
                case "K8S_POD_UID" -> uid = v;
                case "IgnoreUnknown" -> ignore = v;
                case "IP" -> ip = v;
                case "CADASTRE_POOLS" -> poolList = v;
                default -> unknown.add(CniText.quoted(kv[0]));
            }
        }
        boolean ignoreUnknown = false;
        if (ignore != null) {
            switch (ignore.toLowerCase(Locale.ROOT)) {
                case "1", "true" -> ignoreUnknown = true;
                case "0", "false" -> ignoreUnknown = false;
                default ->
                        throw new CniException(
                                CniCodes.INVALID_ENVIRONMENT,
                                "CNI_ARGS: IgnoreUnknown="
                                        + CniText.quoted(ignore)
                                        + " is not 1, 0, true or false");
            }
        }
        if (!unknown.isEmpty() && !ignoreUnknown) {
            throw new CniException(
                    CniCodes.UNSUPPORTED_FIELD,
                    "CNI_ARGS: unknown keys "
                            + String.join(", ", unknown)
                            + " (add IgnoreUnknown=1 to ignore unknown keys)");
        }
        List<String> ips = new ArrayList<>();
        if (ip != null && !ip.isEmpty()) {
            for (String item : ip.split(",", -1)) {
                String s = item.strip();
                ips.add(
                        IpLiterals.canonicalAddress(s)
                                .orElseThrow(
                                        () ->
                                                new CniException(
                                                        CniCodes.INVALID_NETWORK_CONFIG,
                                                        "CNI_ARGS: IP "
                                                                + CniText.quoted(s)
                                                                + " is not an IP address")));
            }
        }
        List<String> pools = new ArrayList<>();
        if (poolList != null && !poolList.isEmpty()) {
            for (String item : poolList.split(",", -1)) {
                String name = item.strip();
                if (name.isEmpty()) {
                    throw new CniException(
                            CniCodes.INVALID_NETWORK_CONFIG,
                            "CNI_ARGS: CADASTRE_POOLS="
                                    + CniText.quoted(poolList)
                                    + " has an empty pool name");
                }
                if (!pools.contains(name)) {
                    pools.add(name);
                }
            }
        }
        requireShape(
                "K8S_POD_NAMESPACE",
                ns,
                CniNames::isNamespaceName,
                "a Kubernetes namespace name (DNS-1123 label)");
        requireShape(
                "K8S_POD_NAME",
                pod,
                CniNames::isPodName,
                "a Kubernetes pod name (DNS-1123 subdomain)");
        requireShape("K8S_POD_UID", uid, CniNames::isUid, "a Kubernetes UID");
        requireShape("K8S_POD_INFRA_CONTAINER_ID", infra, CniNames::isValidName, "a container ID");
        return new CniArgs(
                emptyToNull(ns),
                emptyToNull(pod),
                emptyToNull(infra),
                emptyToNull(uid),
                ignoreUnknown,
                ips,
                pools);
    }

    /** These values are stored with the attachment and logged: only their documented shapes pass. */
    private static void requireShape(
            String key, String value, Predicate<String> valid, String shape) {
        if (value != null && !value.isEmpty() && !valid.test(value)) {
            throw new CniException(
                    CniCodes.INVALID_ENVIRONMENT,
                    "CNI_ARGS: " + key + "=" + CniText.quoted(value) + " is not " + shape);
        }
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
