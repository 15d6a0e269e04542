package io.cadastre.dataplane;

import java.nio.file.Path;

/**
 * The host-wide and per-interface kernel settings Cadastre's routing needs, read and written
 * through {@code /proc/sys} (never the {@code sysctl} command). {@code /proc/sys/net} shows the
 * network namespace of the thread that opens a file there, so these act on the calling thread's
 * namespace: the process's for the agent, a test namespace for a test thread that entered one.
 * Every call opens and closes its own file; thread-safe.
 *
 * <p>Each method throws {@link DataplaneException} naming the file and the reason (no such file:
 * IPv6 disabled at boot, or an interface that does not exist).
 */
public final class HostSysctls {
    private final Path root;

    /** Settings of the calling thread's network namespace, under {@code /proc/sys}. */
    public HostSysctls() {
        this(Path.of("/proc/sys"));
    }

    /** Settings under another root laid out as {@code /proc/sys} is: for the agent's tests. */
    public HostSysctls(Path root) {
        this.root = root;
    }

    /** @return net.ipv4.ip_forward: whether IPv4 packets are routed between interfaces */
    public boolean ipv4Forwarding() throws DataplaneException {
        return "1".equals(read("net/ipv4/ip_forward"));
    }

    /** Sets net.ipv4.ip_forward, which the kernel copies to every interface's forwarding. */
    public void setIpv4Forwarding(boolean on) throws DataplaneException {
        write("net/ipv4/ip_forward", on ? "1" : "0");
    }

    /** @return net.ipv6.conf.all.forwarding */
    public boolean ipv6Forwarding() throws DataplaneException {
        return "1".equals(read("net/ipv6/conf/all/forwarding"));
    }

    /**
     * Sets net.ipv6.conf.all.forwarding, which the kernel copies to every interface and to
     * {@code default}. With forwarding on, an interface ignores router advertisements unless its
     * accept_ra is 2: a host that learns its default route from them must set that on its uplink
     * first ({@link #setAcceptRa}), or lose the route when it expires.
     */
    public void setIpv6Forwarding(boolean on) throws DataplaneException {
        write("net/ipv6/conf/all/forwarding", on ? "1" : "0");
    }

    /** @return net.ipv6.conf.IFNAME.accept_ra: 0 never, 1 unless forwarding, 2 even when forwarding */
    public int acceptRa(String ifname) throws DataplaneException {
        return number("net/ipv6/conf/" + checked(ifname) + "/accept_ra");
    }

    /** @param value 0, 1 or 2 (see {@link #acceptRa}) */
    public void setAcceptRa(String ifname, int value) throws DataplaneException {
        write(
                "net/ipv6/conf/" + checked(ifname) + "/accept_ra",
                Integer.toString(inRange(value, "accept_ra")));
    }

    /**
     * @param ifname an interface, or {@code all} (the kernel applies the larger of all's and the
     *     interface's value)
     * @return net.ipv4.conf.IFNAME.rp_filter: 0 off, 1 strict (the source must be routed back out
     *     of the interface it came in by), 2 loose (routed back at all)
     */
    public int rpFilter(String ifname) throws DataplaneException {
        return number("net/ipv4/conf/" + checked(ifname) + "/rp_filter");
    }

    /** @param value 0, 1 or 2 (see {@link #rpFilter}) */
    public void setRpFilter(String ifname, int value) throws DataplaneException {
        write(
                "net/ipv4/conf/" + checked(ifname) + "/rp_filter",
                Integer.toString(inRange(value, "rp_filter")));
    }

    private String read(String key) throws DataplaneException {
        try {
            return NetlinkDataplane.readSysctl(root.resolve(key));
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    private int number(String key) throws DataplaneException {
        String value = read(key);
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new DataplaneException(
                    root.resolve(key) + " holds '" + value + "', not a number", false, e);
        }
    }

    private void write(String key, String value) throws DataplaneException {
        try {
            NetlinkDataplane.writeSysctl(root.resolve(key), value);
        } catch (SyscallException e) {
            throw new DataplaneException(e.getMessage(), false, e);
        }
    }

    /** An interface name becomes a path element: refuse what could leave the directory. */
    private static String checked(String ifname) throws DataplaneException {
        String why = NetlinkDataplane.invalidName(ifname);
        if (why != null) {
            throw new DataplaneException("invalid interface name: " + why);
        }
        return ifname;
    }

    private static int inRange(int value, String what) {
        if (value < 0 || value > 2) {
            throw new IllegalArgumentException(what + " " + value + " is not 0, 1 or 2");
        }
        return value;
    }
}
