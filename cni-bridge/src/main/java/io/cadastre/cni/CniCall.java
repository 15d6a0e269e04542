package io.cadastre.cni;

import io.cadastre.cni.CniBackend.AddResult;
import io.cadastre.cni.CniBackend.Attachment;
import io.cadastre.cni.CniBackend.PodRef;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * A request that passed every check and can go to the {@link CniBackend}: nothing reaches the
 * backend before the whole request is known to be valid, so bad input changes nothing (root
 * DESIGN.md, invariant 7).
 *
 * <p>Checks, in order (the first failure is reported):
 *
 * <ol>
 *   <li>{@code CNI_COMMAND}: present and a CNI verb, else code 4 ({@link CniCommand#parse}).
 *   <li>Environment (§Parameters and each verb's "Required environment parameters"), code 4 naming
 *       every bad variable: ADD and CHECK need {@code CNI_CONTAINERID}, {@code CNI_NETNS},
 *       {@code CNI_IFNAME}; DEL needs {@code CNI_CONTAINERID} and {@code CNI_IFNAME}
 *       ({@code CNI_NETNS} optional); GC and STATUS need none (and ignore them, as they ignore
 *       {@code CNI_ARGS}; {@code CNI_PATH} is never used). A container ID must be an alphanumeric
 *       then alphanumerics and {@code _ . -}; an ifname 1-15 bytes, not {@code .}/{@code ..}, without
 *       {@code /}, {@code :} or whitespace; a netns, when given, an absolute path.
 *   <li>The netconf ({@link NetConf#parse}: codes 6, 1, 7, 2), then whether its version defines the
 *       verb (code 1: CHECK from 0.4.0, GC and STATUS from 1.1.0).
 *   <li>ADD, DEL, CHECK: {@code CNI_ARGS} ({@link CniArgs#parse}: codes 4, 2, 7). The same checks
 *       for all three, so a DEL is never refused for what its ADD was accepted with.
 *   <li>CHECK: {@code prevResult} is required (code 7) and must parse ({@link
 *       CniResults#parsePrevResult}: 6, 7). ADD of the full plugin: a {@code prevResult}, when
 *       given, must parse too (the result is chained onto it). DEL and IPAM-only ADD ignore it
 *       (§DEL: plugins "should still return without error if prevResult is empty").
 *   <li>GC: {@code cni.dev/valid-attachments} is required (code 7): without it every allocation
 *       of the network would look stale.
 * </ol>
 *
 * @param command the verb (never VERSION: that needs no validation)
 * @param netConf the parsed netconf
 * @param attachment for ADD, DEL, CHECK; null for GC and STATUS
 * @param pod from CNI_ARGS; {@code PodRef(null, null)} when not given
 * @param requestedIps ADD: {@code IP=} of CNI_ARGS, then {@code args.cni.ips}, then
 *     {@code runtimeConfig.ips} (host-local's order), canonical and de-duplicated
 * @param prevResult parsed {@code prevResult} for CHECK and chained ADD, else null
 * @param pools ADD: the pools asked for ({@link NetConf#poolsFor}); empty for the agent's choice
 */
public record CniCall(
        CniCommand command,
        NetConf netConf,
        Attachment attachment,
        PodRef pod,
        List<String> requestedIps,
        AddResult prevResult,
        List<String> pools) {

    public CniCall {
        requestedIps = List.copyOf(requestedIps);
        pools = List.copyOf(pools);
    }

    /**
     * @throws CniException with the code of the first failed check (see the class comment)
     * @throws IllegalArgumentException for {@code CNI_COMMAND=VERSION}
     */
    public static CniCall validate(CniRequest request) {
        CniCommand command = CniCommand.parse(request.command());
        if (command == CniCommand.VERSION) {
            throw new IllegalArgumentException("VERSION needs no validation");
        }
        String netns = emptyToNull(request.netns());
        if (command.isAttachmentVerb()) {
            checkEnvironment(command, request.containerId(), netns, request.ifname());
        }

        NetConf conf = NetConf.parse(request.netconf());
        CniVersions.requireAllows(conf.cniVersion(), command);

        if (!command.isAttachmentVerb()) {
            if (command == CniCommand.GC && conf.validAttachments() == null) {
                throw new CniException(
                        CniCodes.INVALID_NETWORK_CONFIG,
                        "GC needs "
                                + NetConf.VALID_ATTACHMENTS
                                + " (an empty list if no attachment is valid)");
            }
            return new CniCall(
                    command,
                    conf,
                    null,
                    new PodRef(null, null),
                    List.of(),
                    null,
                    conf.ipam().pools());
        }

        CniArgs args = CniArgs.parse(request.args());
        LinkedHashSet<String> ips = new LinkedHashSet<>(args.ips());
        ips.addAll(conf.argsCniIps());
        ips.addAll(conf.runtimeConfigIps());

        AddResult prev = null;
        if (command == CniCommand.CHECK) {
            if (conf.prevResult() == null) {
                throw new CniException(CniCodes.INVALID_NETWORK_CONFIG, "CHECK needs prevResult");
            }
            prev = CniResults.parsePrevResult(conf.prevResult());
        } else if (command == CniCommand.ADD && !conf.ipamOnly() && conf.prevResult() != null) {
            prev = CniResults.parsePrevResult(conf.prevResult());
        }

        Attachment attachment =
                new Attachment(conf.name(), request.containerId(), request.ifname(), netns);
        return new CniCall(
                command,
                conf,
                attachment,
                args.pod(),
                new ArrayList<>(ips),
                prev,
                conf.poolsFor(args));
    }

    private static void checkEnvironment(
            CniCommand command, String containerId, String netns, String ifname) {
        List<String> problems = new ArrayList<>();
        if (containerId == null || containerId.isEmpty()) {
            problems.add("CNI_CONTAINERID is missing");
        } else if (!CniNames.isValidName(containerId)) {
            problems.add(
                    "CNI_CONTAINERID "
                            + CniText.quoted(containerId)
                            + " is invalid: it must start with a letter or digit,"
                            + " followed by letters, digits, '_', '.' or '-'");
        }
        if (netns == null) {
            if (command != CniCommand.DEL) {
                problems.add("CNI_NETNS is missing");
            }
        } else if (!netns.startsWith("/")) {
            problems.add("CNI_NETNS " + CniText.quoted(netns) + " is not an absolute path");
        }
        if (ifname == null || ifname.isEmpty()) {
            problems.add("CNI_IFNAME is missing");
        } else {
            String problem = CniNames.ifnameProblem(ifname);
            if (problem != null) {
                problems.add("CNI_IFNAME " + CniText.quoted(ifname) + " " + problem);
            }
        }
        if (!problems.isEmpty()) {
            throw new CniException(CniCodes.INVALID_ENVIRONMENT, String.join("; ", problems));
        }
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
