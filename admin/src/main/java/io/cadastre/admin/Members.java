package io.cadastre.admin;

import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The node names of the cluster's members, read from their roles: every agent's member carries
 * the role {@code cadastre-node:<node name>} ({@link #role}), so any member can name the nodes of
 * all the others from its own view of the cluster.
 */
public final class Members {
    /** The prefix of the role that names a member's node. */
    public static final String NODE_ROLE_PREFIX = "cadastre-node:";

    private Members() {}

    /** @return the role that names {@code node}: {@code cadastre-node:<node>} */
    public static String role(String node) {
        return NODE_ROLE_PREFIX + node;
    }

    /** How a node stands in the cluster. */
    enum Standing {
        /** A member that is Up (or WeaklyUp). */
        UP,
        /** A member that is joining, leaving or exiting: not serving, but not gone either. */
        PRESENT
    }

    /**
     * @return node name → standing, for every member of this member's view of the cluster that
     *     is not down or removed; a node with two incarnations (a restart) counts its best one
     */
    static Map<String, Standing> of(ActorSystem<?> system) {
        Map<String, Standing> nodes = new TreeMap<>();
        for (Member m : Cluster.get(system).state().getMembers()) {
            if (m.status() == MemberStatus.down() || m.status() == MemberStatus.removed()) {
                continue;
            }
            Standing standing = m.status() == MemberStatus.up() || m.status() == MemberStatus.weaklyUp()
                    ? Standing.UP : Standing.PRESENT;
            for (String role : m.getRoles()) {
                if (role.startsWith(NODE_ROLE_PREFIX)) {
                    nodes.merge(role.substring(NODE_ROLE_PREFIX.length()), standing,
                            (a, b) -> a == Standing.UP || b == Standing.UP ? Standing.UP : Standing.PRESENT);
                }
            }
        }
        return nodes;
    }

    /** @return the contract's spelling of a node's membership: "up" or "absent" */
    static String spelling(Standing standing) {
        return standing == Standing.UP ? "up" : "absent";
    }
}
