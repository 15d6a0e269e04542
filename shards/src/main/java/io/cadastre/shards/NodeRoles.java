package io.cadastre.shards;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Which nodes have an agent in the cluster, read from the members' roles: every agent's member
 * carries the role {@code cadastre-node:<node name>} ({@link #role}), so any member can name the
 * nodes of all the others from its own view of the cluster. Used by the admin API (which nodes
 * are members) and the {@link BlockReclaimer} (which nodes are gone).
 */
public final class NodeRoles {
    /** The prefix of the role that names a member's node. */
    public static final String PREFIX = "cadastre-node:";

    private NodeRoles() {}

    /** @return the role that names {@code node}: {@code cadastre-node:<node>} */
    public static String role(String node) {
        return PREFIX + node;
    }

    /**
     * A member counts from joining until it is downed or removed: a member that is unreachable
     * (paused, cut off) still counts until the split-brain resolver downs it.
     *
     * @return node name → the statuses of its members that are neither down nor removed (two
     *     when a restarted agent's new incarnation joins before the old one is removed), by name
     */
    public static Map<String, List<MemberStatus>> members(ActorSystem<?> system) {
        Map<String, List<MemberStatus>> nodes = new TreeMap<>();
        for (Member m : Cluster.get(system).state().getMembers()) {
            if (m.status() == MemberStatus.down() || m.status() == MemberStatus.removed()) {
                continue;
            }
            for (String role : m.getRoles()) {
                if (role.startsWith(PREFIX)) {
                    nodes.computeIfAbsent(role.substring(PREFIX.length()), n -> new ArrayList<>())
                            .add(m.status());
                }
            }
        }
        return nodes;
    }
}
