package io.cadastre.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
import io.cadastre.testsupport.CniExec;
import io.cadastre.testsupport.Member;
import io.cadastre.testsupport.PodNamespaces;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Makes CNI calls through the real plugin ({@link Cni#run}), as a runtime would, against a host's
 * own agent, and records each in the {@link History}: the invocation before the plugin is
 * started, the completion after it exited. Outcome: exit 0 is OK; code 11 (try again later: agent
 * unreachable, entity timeout), a reply without a code, or no reply at all is UNKNOWN; any other
 * code is a definite FAIL. Thread-safe.
 */
final class Calls {
    static final String NETWORK = "chaos";

    /** ADD needs a CNI_NETNS; IPAM-only never opens it. */
    private static final String NO_NETNS = "/var/run/netns/unused";

    private static final int DETAIL_MAX = 300;

    private final History history;
    private final Map<String, Member> members;
    private final PodNamespaces pods;

    /** @param members by host name */
    Calls(History history, Map<String, Member> members, PodNamespaces pods) {
        this.history = history;
        this.members = Map.copyOf(members);
        this.pods = pods;
    }

    History history() {
        return history;
    }

    Operation add(Phase phase, Purpose purpose, int client, Attachment a, boolean full) {
        return onAttachment(Kind.ADD, phase, purpose, client, a, full);
    }

    Operation del(Phase phase, Purpose purpose, int client, Attachment a, boolean full) {
        return onAttachment(Kind.DEL, phase, purpose, client, a, full);
    }

    /**
     * ADD or DEL of the attachment on its host: full (in the pod's namespace) or IPAM-only (an
     * ADD names an unused namespace, a DEL none).
     */
    private Operation onAttachment(
            Kind kind, Phase phase, Purpose purpose, int client, Attachment a, boolean full) {
        Member m = member(a.host());
        String netns = full ? podNetns(a) : kind == Kind.ADD ? NO_NETNS : null;
        return call(
                phase,
                kind,
                purpose,
                a.host(),
                client,
                a,
                full,
                netns,
                full ? CniExec.full(m) : CniExec.ipamOnly(m));
    }

    /** @return the path of the attachment's pod namespace ({@code <topology>-p<containerId>}) */
    private String podNetns(Attachment a) {
        return PodNamespaces.path(pods.name(a.containerId()));
    }

    /** GC of the network on the host with no valid attachment: everything of it there is released. */
    Operation gc(Phase phase, String host, int client) {
        Member m = member(host);
        String conf =
                "{\"cniVersion\":\"1.1.0\",\"name\":\""
                        + NETWORK
                        + "\",\"type\":\"bridge\","
                        + "\"ipam\":{\"type\":\"cadastre-ipam\",\"agentSocket\":\""
                        + m.socket()
                        + "\"},"
                        + "\"cni.dev/valid-attachments\":[]}";
        return call(phase, Kind.GC, Purpose.SWEEP, host, client, null, false, null, conf);
    }

    private Member member(String host) {
        Member m = members.get(host);
        if (m == null) {
            throw new IllegalArgumentException("no member on " + host);
        }
        return m;
    }

    private Operation call(
            Phase phase,
            Kind kind,
            Purpose purpose,
            String host,
            int client,
            Attachment a,
            boolean full,
            String netns,
            String netconf) {
        Operation invoked = history.invoke(phase, kind, purpose, host, client, a, full);
        CniExec.Result r;
        try {
            r = CniExec.run(kind.name(), a == null ? null : a.containerId(), netns, netconf);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return history.complete(invoked, Status.UNKNOWN, List.of(), -1, "interrupted");
        } catch (Exception e) {
            return history.complete(invoked, Status.UNKNOWN, List.of(), -1, shorten(e.toString()));
        }
        if (r.exit() == 0) {
            return history.complete(
                    invoked,
                    Status.OK,
                    kind == Kind.ADD ? addresses(r.json()) : List.of(),
                    0,
                    null);
        }
        int code = r.code();
        String detail =
                r.json() == null
                        ? shorten(r.stdout())
                        : shorten(
                                r.json().path("msg").asText()
                                        + ": "
                                        + r.json().path("details").asText());
        Status status = code == 11 || code < 0 ? Status.UNKNOWN : Status.FAIL;
        return history.complete(invoked, status, List.of(), code, detail);
    }

    private static List<String> addresses(JsonNode json) {
        List<String> all = new ArrayList<>();
        if (json != null) {
            json.path("ips").forEach(ip -> all.add(ip.path("address").asText().split("/")[0]));
        }
        return all;
    }

    private static String shorten(String s) {
        String one = s == null ? "" : s.replace('\n', ' ').strip();
        return one.length() <= DETAIL_MAX ? one : one.substring(0, DETAIL_MAX) + "...";
    }
}
