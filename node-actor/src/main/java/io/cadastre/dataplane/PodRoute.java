package io.cadastre.dataplane;

/**
 * A route in the pod's netns.
 *
 * @param destination CIDR notation, e.g. {@code 0.0.0.0/0}, {@code 169.254.1.1/32}, {@code ::/0}
 * @param gateway the next hop's address, or {@code null} for a link-scope route
 */
public record PodRoute(String destination, String gateway) {}
