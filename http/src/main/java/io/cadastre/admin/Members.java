package io.cadastre.admin;

import io.cadastre.shards.NodeRoles;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;

/**
 * The node names of the cluster's members and how they stand, read from their roles
 * ({@link NodeRoles}): every agent's member carries the role {@code cadastre-node:<node name>}
 * ({@link #role}), so any member can name the nodes of all the others from its own view of the
 * cluster.
 */
public final class Members {
    /** The prefix of the role that names a member's node. */
    public static final String NODE_ROLE_PREFIX = NodeRoles.PREFIX;

    private Members() {}

    /** @return the role that names {@code node}: {@code cadastre-node:<node>} */
    public static String role(String node) {
        return NodeRoles.role(node);
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
        NodeRoles.members(system)
                .forEach(
                        (node, statuses) ->
                                nodes.put(
                                        node,
                                        statuses.stream()
                                                        .anyMatch(
                                                                s ->
                                                                        s == MemberStatus.up()
                                                                                || s
                                                                                        == MemberStatus
                                                                                                .weaklyUp())
                                                ? Standing.UP
                                                : Standing.PRESENT));
        return nodes;
    }

    /** @return the contract's spelling of a node's membership: "up" or "absent" */
    static String spelling(Standing standing) {
        return standing == Standing.UP ? "up" : "absent";
    }
}
