package io.cadastre.dataplane;

import io.cadastre.dataplane.Rtnetlink.Link;
import io.cadastre.dataplane.Rtnetlink.Route;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * The production {@link Dataplane}: rtnetlink over NETLINK_ROUTE sockets, libc through jnr-ffi,
 * per-interface settings through the sysctl tree's {@code net} ({@code /proc/sys/net} unless
 * constructed with another tree). No process is ever started.
 *
 * <p>"The host" is the network namespace of the threads that call this class, which is the
 * process's own namespace: nothing here moves a caller's thread (see {@link Netns}). Every call
 * opens and closes its own sockets and fds and keeps no state, so calls may run concurrently
 * from any threads, virtual ones included.
 *
 * <p>Requires CAP_NET_ADMIN in both namespaces and CAP_SYS_ADMIN for setns (in practice: root).
 */
public final class NetlinkDataplane implements Dataplane {
    private static final byte[] HOST_MAC_BYTES = HexFormat.ofDelimiter(":").parseHex(HOST_MAC);
    private static final InetAddress V4_GATEWAY = literal(IPV4_GATEWAY);
    private static final InetAddress V6_GATEWAY = literal(IPV6_GATEWAY);
    private static final InetAddress V4_ANY = literal("0.0.0.0");
    private static final InetAddress V6_ANY = literal("::");

    /** Priority of the pod's source filter on its host end's ingress hook ({@link PodSourceFilter}). */
    static final int SOURCE_FILTER_PRIORITY = 1;

    /**
     * Priority of the filter that hands a shaped pod's packets to its IFB device: after the source
     * filter, so a spoofed packet is dropped before it takes any of the pod's bandwidth.
     */
    static final int SHAPING_REDIRECT_PRIORITY = 2;

    /** The network namespaces no pod may be wired into: this process's and PID 1's. */
    private final List<Netns.Identity> hostNamespaces;

    /** The kernel's per-interface network settings: {@code net} under the sysctl tree given at construction. */
    private final Path sysctlNet;

    /** The source filters' drops, kept across the pods' removal. */
    private final SpoofDrops spoofDrops = new SpoofDrops();

    /** Creates a dataplane whose host is the calling process's network namespace, with the sysctls under {@code /proc/sys}. */
    public NetlinkDataplane() {
        this(Path.of("/proc/sys"));
    }

    /**
     * Creates a dataplane whose host is the calling process's network namespace.
     *
     * @param procSys where the kernel's sysctl tree is mounted: {@code /proc/sys}, or a writable
     *     mount of the host's {@code /proc/sys/net} at {@code procSys/net} where {@code /proc/sys}
     *     is read-only (an unprivileged container). Files under {@code net} show and set the
     *     network namespace of the thread that opens them, wherever they are mounted.
     */
    public NetlinkDataplane(Path procSys) {
        this.hostNamespaces = Netns.Identity.host();
        this.sysctlNet = procSys.resolve("net");
    }

    /**
     * {@inheritDoc}
     *
     * <p>The host namespaces are this process's ({@code /proc/self/ns/net}) and PID 1's, compared
     * by the nsfs inode of the opened file, so any path naming them is refused.
     */
    @Override
    public void checkPodNetns(String netnsPath) throws DataplaneException {
        Netns.openPod(netnsPath, hostNamespaces).close();
    }

    /**
     * {@inheritDoc}
     *
     * <p>Steps, in order: check that neither name is taken; create the veth pair, the pod end
     * directly inside the netns under {@code podIfname} (so a same-named link in the host
     * namespace cannot clash); host end: proxy ARP, forwarding, IPv6 on (and, for an IPv6 pod,
     * EUI-64 link-local without DAD), its clsact qdisc, the source filter and the bandwidth
     * limits' qdiscs, filter and IFB device (before it is up), up; pod: {@code lo} up, link up,
     * addresses, routes; host routes; read back the MACs. Any failure after the pair exists
     * deletes the host end, which removes the pod end and every address, route and per-interface
     * setting with it, and then the IFB device. {@code lo} is left up.
     *
     * <p>The host end's IPv6 link-local address (the pod's gateway) is added by the kernel when
     * the pair's carrier comes up, which it reports asynchronously: it may trail the return by a
     * moment.
     *
     * <p>Repeated for a pod that is wired already (an ADD retried by the runtime), it changes
     * nothing and returns the wiring when the host end, the pod end, their addresses and routes
     * are all as planned ({@link #check} finds no difference).
     *
     * @throws DataplaneException {@code WIRED_DIFFERENTLY} when the host end exists but differs
     *     from the plan (detach it first to wire afresh); {@code INVALID_NETNS} for a host
     *     namespace; also for an invalid attachment (a name longer than 15 bytes or with '/', ':'
     *     or blanks; a prefix other than /32 or /128; two addresses of one family)
     */
    @Override
    public WiredPod attach(PodAttachment attachment) throws DataplaneException {
        return attach(attachment, OptionalInt.empty());
    }

    /**
     * {@inheritDoc}
     *
     * <p>Creates the pair, both ends down, the pod end inside the netns, as {@link #attach} would
     * first, and does what needs no address: the host end's settings (IPv6's too, as for an IPv6
     * pod: they only shape the host end's link-local address, which an IPv4 pod does not use),
     * its clsact qdisc (the source filter itself needs the addresses), and {@code lo} up in the
     * netns. Nothing when either name is taken. Checks the names and the MTU as attach does.
     */
    @Override
    public OptionalInt prepare(String netnsPath, String hostIfname, String podIfname, int mtu)
            throws DataplaneException {
        Plan.checkNames(hostIfname, podIfname, mtu);
        try (Netns netns = Netns.openPod(netnsPath, hostNamespaces);
                Rtnetlink pod = netns.rtnetlink();
                Rtnetlink host = hostRtnetlink()) {
            if (host.link(hostIfname).isPresent() || pod.link(podIfname).isPresent()) {
                return OptionalInt.empty();
            }
            host.createVeth(hostIfname, HOST_MAC_BYTES, mtu, podIfname, netns);
            Link hostLink = host.existingLink(hostIfname);
            try {
                configureHostInterface(hostIfname, true);
                host.addClsact(hostLink);
                podLoopbackUp(pod);
            } catch (SyscallException | RuntimeException e) {
                throw rollBack(e, host, hostIfname);
            }
            return OptionalInt.of(hostLink.index());
        } catch (SyscallException e) {
            throw fail(e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>A host end that exists, is down and has the index {@code prepared} is {@link #prepare}'s
     * pair: it is configured as a pair just created. Any other existing host end is an earlier
     * wiring, compared with the plan as {@link #attach(PodAttachment)} does.
     */
    @Override
    public WiredPod attach(PodAttachment attachment, OptionalInt prepared)
            throws DataplaneException {
        Plan plan;
        try {
            plan = Plan.of(attachment);
        } catch (DataplaneException refused) {
            // Refused before any wiring: the pair prepared for it goes too, as a failed wiring's.
            if (prepared.isPresent()) {
                try {
                    deleteUnplugged(attachment.hostIfname(), prepared.getAsInt());
                } catch (DataplaneException | RuntimeException e) {
                    refused.addSuppressed(e);
                }
            }
            throw refused;
        }
        try (Netns netns = Netns.openPod(attachment.netnsPath(), hostNamespaces);
                Rtnetlink pod = netns.rtnetlink();
                Rtnetlink host = hostRtnetlink()) {
            try {
                Optional<Link> existing = host.link(attachment.hostIfname());
                if (existing.isPresent() && isPrepared(existing.get(), prepared)) {
                    return configureOrRollBack(plan, pod, host, existing.get(), true);
                }
                if (existing.isPresent()) {
                    return alreadyWired(plan, existing.get(), pod, host, netns.path());
                }
                if (pod.link(attachment.podIfname()).isPresent()) {
                    throw new DataplaneException(
                            "link "
                                    + attachment.podIfname()
                                    + " already exists in netns "
                                    + netns.path());
                }
                host.createVeth(
                        attachment.hostIfname(),
                        HOST_MAC_BYTES,
                        attachment.mtu(),
                        attachment.podIfname(),
                        netns);
            } catch (SyscallException e) {
                throw fail(e);
            }
            Link created;
            try {
                created = host.existingLink(attachment.hostIfname());
            } catch (SyscallException e) {
                throw rollBack(e, host, attachment.hostIfname());
            }
            return configureOrRollBack(plan, pod, host, created, false);
        }
    }

    private static boolean isPrepared(Link hostLink, OptionalInt prepared) {
        return prepared.isPresent()
                && hostLink.index() == prepared.getAsInt()
                && !hostLink.up()
                && "veth".equals(hostLink.kind());
    }

    /**
     * Configures a pair that exists and is not configured yet ({@code prepared}: {@link #prepare}
     * did its part); deletes it when that fails.
     */
    private WiredPod configureOrRollBack(
            Plan plan, Rtnetlink pod, Rtnetlink host, Link hostLink, boolean prepared)
            throws DataplaneException {
        try {
            return configure(plan, pod, host, hostLink, prepared);
        } catch (SyscallException | RuntimeException e) {
            throw rollBack(e, host, plan.attachment().hostIfname());
        }
    }

    /**
     * An ADD repeated for a pod that is wired already: the wiring as it is when nothing differs
     * from the plan (a retry must not flap the pod's link or change its MAC), else a refusal.
     */
    private WiredPod alreadyWired(
            Plan plan, Link hostLink, Rtnetlink pod, Rtnetlink host, String netnsPath)
            throws SyscallException, DataplaneException {
        PodAttachment a = plan.attachment();
        List<String> differences =
                differences(
                        plan,
                        Optional.of(hostLink),
                        pod,
                        host,
                        " in netns " + Netns.shown(netnsPath));
        if (!differences.isEmpty()) {
            throw new DataplaneException(
                    "host link "
                            + a.hostIfname()
                            + " already exists and differs: "
                            + String.join("; ", differences),
                    DataplaneException.Kind.WIRED_DIFFERENTLY,
                    null);
        }
        List<PodRoute> routes = plan.podRoutes().stream().map(RouteSpec::toPodRoute).toList();
        return new WiredPod(
                a.hostIfname(),
                hostLink.mac(),
                a.podIfname(),
                pod.existingLink(a.podIfname()).mac(),
                a.netnsPath(),
                a.addresses(),
                routes);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Refuses (DataplaneException) to delete a link that exists but is not a veth, so that a
     * wrong name cannot take down a host interface.
     */
    @Override
    public void detach(String hostIfname) throws DataplaneException {
        try (Rtnetlink host = hostRtnetlink()) {
            Optional<Link> link = hostVeth(host, hostIfname);
            if (link.isPresent()) {
                spoofDrops.retire(host, link.get().index());
                deleteIgnoringAbsence(host, link.get());
            }
            deleteShapingDevice(host, hostIfname);
        } catch (SyscallException e) {
            // ENODEV: gone between the look-up and the delete, e.g. with its netns.
            if (e.errno() != LibC.ENODEV) {
                throw fail(e);
            }
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>Refuses (DataplaneException) to touch a link that exists but is not a veth, as
     * {@link #detach} does.
     */
    @Override
    public OptionalInt unplug(String hostIfname) throws DataplaneException {
        try (Rtnetlink host = hostRtnetlink()) {
            Optional<Link> link = hostVeth(host, hostIfname);
            if (link.isEmpty()) {
                // The pair went with its netns; its IFB device, if any, did not.
                deleteShapingDevice(host, hostIfname);
                return OptionalInt.empty();
            }
            if (link.get().up()) {
                host.setDown(link.get());
                spoofDrops.retire(host, link.get().index());
            }
            return OptionalInt.of(link.get().index());
        } catch (SyscallException e) {
            if (e.errno() != LibC.ENODEV) {
                throw fail(e);
            }
            return OptionalInt.empty();
        }
    }

    @Override
    public boolean deleteUnplugged(String hostIfname, int hostIndex) throws DataplaneException {
        try (Rtnetlink host = hostRtnetlink()) {
            Optional<Link> link = hostVeth(host, hostIfname);
            if (link.isEmpty()) {
                deleteShapingDevice(host, hostIfname);
                return false;
            }
            // Another index under the name: an ADD deleted the unplugged pair and wired a new one.
            if (link.get().index() != hostIndex || link.get().up()) {
                return false;
            }
            spoofDrops.retire(host, hostIndex);
            host.deleteLink(link.get());
            deleteShapingDevice(host, hostIfname);
            return true;
        } catch (SyscallException e) {
            if (e.errno() != LibC.ENODEV) {
                throw fail(e);
            }
            return false;
        }
    }

    /**
     * @return the host end of a pod's veth pair by name, empty when there is none
     * @throws DataplaneException when the name is not one {@link HostInterfaceName} gives, or the
     *     link is not a veth
     */
    private static Optional<Link> hostVeth(Rtnetlink host, String hostIfname)
            throws DataplaneException, SyscallException {
        String invalid = invalidName(hostIfname);
        if (invalid != null) {
            throw new DataplaneException("invalid hostIfname: " + invalid);
        }
        Optional<Link> link = host.link(hostIfname);
        if (link.isPresent() && !"veth".equals(link.get().kind())) {
            throw new DataplaneException(
                    "refusing to delete "
                            + hostIfname
                            + ": not a veth (kind '"
                            + link.get().kind()
                            + "')");
        }
        return link;
    }

    /**
     * {@inheritDoc}
     *
     * <p>Checks presence, not absence: links, addresses and routes the kernel adds by itself
     * (IPv6 link-local, fe80::/64) or that someone added later are not reported. A missing link
     * is one line; its addresses and routes are then not listed separately.
     */
    @Override
    public List<String> check(PodAttachment attachment) throws DataplaneException {
        Plan plan = Plan.of(attachment);
        try (Netns netns = Netns.openPod(attachment.netnsPath(), hostNamespaces);
                Rtnetlink pod = netns.rtnetlink();
                Rtnetlink host = hostRtnetlink()) {
            return differences(
                    plan,
                    host.link(attachment.hostIfname()),
                    pod,
                    host,
                    " in netns " + netns.path());
        } catch (SyscallException e) {
            throw fail(e);
        }
    }

    private List<String> differences(
            Plan plan, Optional<Link> hostLink, Rtnetlink pod, Rtnetlink host, String where)
            throws SyscallException {
        PodAttachment attachment = plan.attachment();
        List<String> differences = new ArrayList<>();
        Optional<Link> podLink = pod.link(attachment.podIfname());
        if (podLink.isEmpty()) {
            differences.add("link " + attachment.podIfname() + " missing" + where);
        } else {
            checkPod(plan, podLink.get(), hostLink, pod, where, differences);
        }
        if (hostLink.isEmpty()) {
            differences.add("host link " + attachment.hostIfname() + " missing");
        } else {
            checkHost(plan, hostLink.get(), host, differences);
        }
        return differences;
    }

    /**
     * @param hostLink the host end as just read (its MAC is the one it keeps: links going up and
     *     addresses do not change MACs)
     */
    private WiredPod configure(
            Plan plan, Rtnetlink pod, Rtnetlink host, Link hostLink, boolean prepared)
            throws SyscallException {
        PodAttachment a = plan.attachment();
        if (!prepared) {
            configureHostInterface(a.hostIfname(), plan.v6() != null);
            host.addClsact(hostLink);
            podLoopbackUp(pod);
        }
        // Before the link is up: no packet of the pod's passes unchecked, or unshaped.
        host.addIngressBpfFilter(hostLink, SOURCE_FILTER_PRIORITY, plan.sourceFilter());
        shape(a.bandwidth(), host, hostLink);
        host.setUp(hostLink);

        Link podLink = pod.existingLink(a.podIfname());
        // Before routes: the kernel refuses routes through a link that is down (ENETDOWN).
        pod.setUp(podLink);
        for (PodAddress address : a.addresses()) {
            pod.addAddress(podLink, address.address(), address.prefixLength());
        }
        for (RouteSpec route : plan.podRoutes()) {
            pod.addRoute(podLink, route.destination(), route.length(), route.gateway());
        }
        // The host end's neighbour entry of each pod address, seeded with the pod end's MAC
        // (STALE: used at once, confirmed later by a unicast probe, as a learned entry would be).
        // Without it the first packet to the pod waits for the host's ARP or NDP, and when that
        // first request goes unanswered, for the kernel's retransmit a second later (benchmarks'
        // pod-network: convergence samples of about 1 s).
        for (PodAddress address : a.addresses()) {
            host.addNeighbour(
                    new Rtnetlink.Neighbour(
                            Rtnetlink.family(address.address()),
                            hostLink.index(),
                            address.address(),
                            podLink.mac(),
                            LinuxNetlinkAbi.NUD_STALE,
                            0,
                            0),
                    true,
                    hostLink.name());
        }
        for (PodAddress address : a.addresses()) {
            host.addRoute(hostLink, address.address(), address.prefixLength(), null);
        }
        List<PodRoute> routes = plan.podRoutes().stream().map(RouteSpec::toPodRoute).toList();
        return new WiredPod(
                a.hostIfname(),
                hostLink.mac(),
                a.podIfname(),
                podLink.mac(),
                a.netnsPath(),
                a.addresses(),
                routes);
    }

    /**
     * The pod's bandwidth limits ({@link Bandwidth}): what it receives, a token bucket filter as
     * the host end's root qdisc; what it sends, the same on an IFB device of its own that a filter
     * on the host end's ingress hook redirects every packet to. An IFB device left by an earlier
     * attempt under the name is replaced.
     */
    private static void shape(Bandwidth bandwidth, Rtnetlink host, Link hostLink)
            throws SyscallException {
        if (bandwidth.ingress() != null) {
            addTbf(host, hostLink, bandwidth.ingress());
        }
        if (bandwidth.egress() != null) {
            String name = HostInterfaceName.ifbOf(hostLink.name());
            deleteShapingDevice(host, hostLink.name());
            host.createIfb(name, hostLink.mtu());
            Link ifb = host.existingLink(name);
            addTbf(host, ifb, bandwidth.egress());
            host.setUp(ifb);
            host.addIngressRedirect(hostLink, SHAPING_REDIRECT_PRIORITY, ifb.index());
        }
    }

    private static void addTbf(Rtnetlink host, Link link, Bandwidth.Shaping shaping)
            throws SyscallException {
        host.addRootTbf(
                link, shaping.rate(), shaping.bucket(link.mtu()), shaping.limit(link.mtu()));
    }

    /** Deletes the IFB device that shapes the egress of the pod behind {@code hostIfname}, if there is one. */
    private static void deleteShapingDevice(Rtnetlink host, String hostIfname)
            throws SyscallException {
        Optional<Link> ifb = host.link(HostInterfaceName.ifbOf(hostIfname));
        if (ifb.isPresent() && "ifb".equals(ifb.get().kind())) {
            deleteIgnoringAbsence(host, ifb.get());
        }
    }

    /** Deletes a link; one gone meanwhile (ENODEV) is no error. */
    private static void deleteIgnoringAbsence(Rtnetlink host, Link link) throws SyscallException {
        try {
            host.deleteLink(link);
        } catch (SyscallException e) {
            if (e.errno() != LibC.ENODEV) {
                throw e;
            }
        }
    }

    /** The differences between the pod's planned bandwidth limits and its host end's qdiscs and filters. */
    private static void checkShaping(
            PodAttachment a,
            Link link,
            List<Rtnetlink.Filter> filters,
            Rtnetlink host,
            List<String> differences)
            throws SyscallException {
        String name = "host link " + link.name();
        compareTbf(
                name + " (what the pod receives)",
                a.bandwidth().ingress(),
                host.rootTbf(link),
                link.mtu(),
                differences);
        Optional<Rtnetlink.Filter> redirect =
                filters.stream().filter(f -> f.priority() == SHAPING_REDIRECT_PRIORITY).findFirst();
        String ifbName = HostInterfaceName.ifbOf(link.name());
        if (a.bandwidth().egress() == null) {
            if (redirect.isPresent()) {
                differences.add(name + " redirects what the pod sends, which is not limited");
            }
            return;
        }
        Optional<Link> ifb = host.link(ifbName);
        if (ifb.isEmpty() || !"ifb".equals(ifb.get().kind())) {
            differences.add("IFB device " + ifbName + " (what the pod sends) missing");
            return;
        }
        if (redirect.isEmpty() || redirect.get().redirectIndex() != ifb.get().index()) {
            differences.add(name + " does not redirect what the pod sends to " + ifbName);
        }
        if (!ifb.get().up()) {
            differences.add("IFB device " + ifbName + " is down");
        }
        compareTbf(
                "IFB device " + ifbName + " (what the pod sends)",
                a.bandwidth().egress(),
                host.rootTbf(ifb.get()),
                ifb.get().mtu(),
                differences);
    }

    private static void compareTbf(
            String what,
            Bandwidth.Shaping planned,
            Optional<Rtnetlink.Tbf> found,
            int mtu,
            List<String> differences) {
        if (planned == null) {
            if (found.isPresent()) {
                differences.add(what + " is shaped, which is not limited");
            }
            return;
        }
        Rtnetlink.Tbf expected = new Rtnetlink.Tbf(planned.rate(), planned.limit(mtu));
        if (found.isEmpty()) {
            differences.add(what + " lacks its token bucket filter (" + planned + ")");
        } else if (!found.get().equals(expected)) {
            differences.add(
                    what
                            + " is shaped at "
                            + found.get().rate()
                            + " B/s, limit "
                            + found.get().limit()
                            + " B; expected "
                            + expected.rate()
                            + " B/s, limit "
                            + expected.limit()
                            + " B");
        }
    }

    private static void podLoopbackUp(Rtnetlink pod) throws SyscallException {
        Optional<Link> lo = pod.link("lo");
        if (lo.isPresent() && !lo.get().up()) {
            pod.setUp(lo.get());
        }
    }

    /**
     * Proxy ARP (without the default 0.8 s random delay) answers the pod's ARP for 169.254.1.1 with
     * the host end's MAC; it and the routing of pod traffic need forwarding on the input interface.
     * For IPv6 the gateway is the host end's own link-local address, which exists only with IPv6
     * on, is fe80::ecee:eeff:feee:eeee only in EUI-64 mode (hosts may default to stable-privacy),
     * and needs no DAD: every host end has the same one, each on its own link.
     */
    private void configureHostInterface(String ifname, boolean ipv6Pod) throws SyscallException {
        writeSysctl(sysctlNet.resolve("ipv4/conf").resolve(ifname).resolve("proxy_arp"), "1");
        writeSysctl(sysctlNet.resolve("ipv4/neigh").resolve(ifname).resolve("proxy_delay"), "0");
        writeSysctl(sysctlNet.resolve("ipv4/conf").resolve(ifname).resolve("forwarding"), "1");
        Path v6 = sysctlNet.resolve("ipv6/conf").resolve(ifname);
        if (!Files.isDirectory(v6)) {
            return; // IPv6 not compiled in or disabled at boot; an IPv6 route will say so.
        }
        writeSysctl(v6.resolve("disable_ipv6"), "0");
        if (ipv6Pod) {
            writeSysctl(v6.resolve("accept_dad"), "0");
            Path mode = v6.resolve("addr_gen_mode");
            if (Files.exists(mode) && !"0".equals(readSysctl(mode))) {
                writeSysctl(mode, "0");
            }
        }
    }

    private static void checkPod(
            Plan plan,
            Link link,
            Optional<Link> hostLink,
            Rtnetlink pod,
            String where,
            List<String> differences)
            throws SyscallException {
        PodAttachment a = plan.attachment();
        String name = "link " + link.name() + where;
        if (!link.up()) {
            differences.add(name + " is down");
        }
        if (a.mtu() > 0 && link.mtu() != a.mtu()) {
            differences.add(name + " has MTU " + link.mtu() + ", expected " + a.mtu());
        }
        if (hostLink.isPresent()
                && (!"veth".equals(link.kind()) || link.peerIndex() != hostLink.get().index())) {
            differences.add(name + " is not the veth peer of host link " + a.hostIfname());
        }
        List<Rtnetlink.Address> addresses = pod.addresses();
        for (PodAddress expected : a.addresses()) {
            boolean present =
                    addresses.stream()
                            .anyMatch(
                                    x ->
                                            x.index() == link.index()
                                                    && x.address().equals(expected.address())
                                                    && x.prefixLength() == expected.prefixLength());
            if (!present) {
                differences.add(
                        name
                                + " lacks address "
                                + Rtnetlink.text(expected.address())
                                + "/"
                                + expected.prefixLength());
            }
        }
        List<Route> routes = pod.routes();
        for (RouteSpec expected : plan.podRoutes()) {
            if (routes.stream().noneMatch(r -> expected.matches(r, link.index()))) {
                differences.add("route " + expected + " dev " + link.name() + " missing" + where);
            }
        }
    }

    private void checkHost(Plan plan, Link link, Rtnetlink host, List<String> differences)
            throws SyscallException {
        PodAttachment a = plan.attachment();
        String name = "host link " + link.name();
        if (!"veth".equals(link.kind())) {
            differences.add(name + " is not a veth (kind '" + link.kind() + "')");
        }
        if (!link.up()) {
            differences.add(name + " is down");
        }
        if (!HOST_MAC.equals(link.mac())) {
            differences.add(name + " has MAC " + link.mac() + ", expected " + HOST_MAC);
        }
        if (a.mtu() > 0 && link.mtu() != a.mtu()) {
            differences.add(name + " has MTU " + link.mtu() + ", expected " + a.mtu());
        }
        List<Route> routes = host.routes();
        for (PodAddress address : a.addresses()) {
            RouteSpec expected = new RouteSpec(address.address(), address.prefixLength(), null);
            if (routes.stream().noneMatch(r -> expected.matches(r, link.index()))) {
                differences.add("host route " + expected + " dev " + link.name() + " missing");
            }
        }
        List<Rtnetlink.Filter> filters = host.ingressFilters(link);
        boolean filtered =
                filters.stream()
                        .anyMatch(
                                f ->
                                        f.priority() == SOURCE_FILTER_PRIORITY
                                                && "bpf".equals(f.kind())
                                                && Arrays.equals(f.ops(), plan.sourceFilter())
                                                && (f.flags()
                                                                & LinuxNetlinkAbi
                                                                        .TCA_BPF_FLAG_ACT_DIRECT)
                                                        != 0);
        if (!filtered) {
            differences.add(
                    name
                            + (filters.isEmpty() ? " lacks" : " has another filter than")
                            + " the pod's source filter (anti-spoofing)");
        }
        checkShaping(a, link, filters, host, differences);
        String proxyArp =
                readSysctl(
                        sysctlNet.resolve("ipv4/conf").resolve(link.name()).resolve("proxy_arp"));
        if (!"1".equals(proxyArp)) {
            differences.add(name + " has proxy_arp " + proxyArp + ", expected 1");
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>The drops counted by the clsact qdisc of every host end in this namespace (a veth with
     * the fixed host MAC), plus those of host ends gone since: read at {@link #detach}, or found
     * gone at the next call (a pod whose netns was deleted without a DEL loses the drops since
     * the previous call).
     */
    @Override
    public long spoofedPacketsDropped() throws DataplaneException {
        try (Rtnetlink host = hostRtnetlink()) {
            return spoofDrops.total(host);
        } catch (SyscallException e) {
            throw fail(e);
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>A device is orphaned when no veth of the name {@link HostInterfaceName#of} gives its
     * digits exists. A pair is always created before its IFB device and deleted before it, so a
     * device found alone is no pod's any more.
     */
    @Override
    public List<String> deleteOrphanedShapingDevices() throws DataplaneException {
        try (Rtnetlink host = hostRtnetlink()) {
            List<Link> links = host.links();
            Set<String> veths = new HashSet<>();
            for (Link link : links) {
                if ("veth".equals(link.kind())) {
                    veths.add(link.name());
                }
            }
            List<String> deleted = new ArrayList<>();
            for (Link link : links) {
                String digits =
                        link.name()
                                .substring(
                                        Math.min(
                                                HostInterfaceName.IFB_PREFIX.length(),
                                                link.name().length()));
                String hostEnd = HostInterfaceName.PREFIX + digits;
                if ("ifb".equals(link.kind())
                        && link.name().startsWith(HostInterfaceName.IFB_PREFIX)
                        && HostInterfaceName.ifbOf(hostEnd).equals(link.name())
                        && !veths.contains(hostEnd)) {
                    deleteIgnoringAbsence(host, link);
                    deleted.add(link.name());
                }
            }
            return deleted;
        } catch (SyscallException e) {
            throw fail(e);
        }
    }

    /** Deletes the host end, which takes everything else this attach created along. */
    private static DataplaneException rollBack(
            Exception failure, Rtnetlink host, String hostIfname) {
        String message =
                failure instanceof SyscallException ? failure.getMessage() : failure.toString();
        try {
            host.deleteLink(hostIfname);
        } catch (SyscallException e) {
            if (e.errno() != LibC.ENODEV) {
                failure.addSuppressed(e);
                message +=
                        "; rollback failed, host link "
                                + hostIfname
                                + " may remain: "
                                + e.getMessage();
            }
        }
        try {
            deleteShapingDevice(host, hostIfname);
        } catch (SyscallException e) {
            failure.addSuppressed(e);
            message +=
                    "; rollback failed, IFB device "
                            + HostInterfaceName.ifbOf(hostIfname)
                            + " may remain: "
                            + e.getMessage();
        }
        return new DataplaneException(message, false, failure);
    }

    private static Rtnetlink hostRtnetlink() throws DataplaneException {
        try {
            return new Rtnetlink(NetlinkSocket.open(), "");
        } catch (SyscallException e) {
            throw fail(e);
        }
    }

    private static DataplaneException fail(SyscallException e) {
        return new DataplaneException(e.getMessage(), false, e);
    }

    static void writeSysctl(Path path, String value) throws SyscallException {
        try {
            Files.write(path, value.getBytes(StandardCharsets.US_ASCII), StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new SyscallException("write " + value + " to " + path + ": " + ioText(e), e);
        }
    }

    static String readSysctl(Path path) throws SyscallException {
        try {
            return Files.readString(path, StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            throw new SyscallException("read " + path + ": " + ioText(e), e);
        }
    }

    private static String ioText(IOException e) {
        return e instanceof NoSuchFileException ? "no such file" : e.toString();
    }

    /** @return why {@code name} is not a valid Linux interface name (dev_valid_name), or null if it is */
    static String invalidName(String name) {
        if (name == null || name.isEmpty()) {
            return "empty";
        }
        if (name.getBytes(StandardCharsets.UTF_8).length > 15) {
            return "'" + name + "' is longer than 15 bytes";
        }
        if (name.equals(".") || name.equals("..")) {
            return "'" + name + "' is reserved";
        }
        for (char c : name.toCharArray()) {
            if (c == '/' || c == ':' || c == 0 || Character.isWhitespace(c)) {
                return "'" + name + "' contains '/', ':', NUL or a blank";
            }
        }
        return null;
    }

    private static InetAddress literal(String address) {
        try {
            return InetAddress.getByName(address); // a literal: no lookup happens
        } catch (UnknownHostException e) {
            throw new AssertionError(address, e);
        }
    }

    /** A route in the pod or on the host, as attach configures it and check expects it. */
    private record RouteSpec(InetAddress destination, int length, InetAddress gateway) {
        boolean matches(Route r, int outputIndex) {
            boolean sameDestination =
                    length == 0
                            ? r.destination() == null || r.destination().isAnyLocalAddress()
                            : destination.equals(r.destination());
            return sameDestination
                    && r.destinationLength() == length
                    && r.outputIndex() == outputIndex
                    && Objects.equals(gateway, r.gateway());
        }

        PodRoute toPodRoute() {
            return new PodRoute(
                    Rtnetlink.text(destination) + "/" + length,
                    gateway == null ? null : Rtnetlink.text(gateway));
        }

        @Override
        public String toString() {
            return Rtnetlink.describe(destination, length, gateway);
        }
    }

    /** The smallest MTU of a link that carries IPv6, in bytes (RFC 8200 §5). */
    private static final int IPV6_MIN_MTU = 1280;

    /** A validated attachment and what follows from it. */
    private record Plan(PodAttachment attachment, PodAddress v4, PodAddress v6) {
        /** @return the pod's source filter: its own addresses only ({@link PodSourceFilter}) */
        byte[] sourceFilter() {
            return PodSourceFilter.program(
                    v4 == null ? null : v4.address(), v6 == null ? null : v6.address());
        }

        static Plan of(PodAttachment a) throws DataplaneException {
            if (a.netnsPath() == null || a.netnsPath().isEmpty()) {
                throw invalid("netnsPath is empty");
            }
            checkNames(a.hostIfname(), a.podIfname(), a.mtu());
            PodAddress v4 = null;
            PodAddress v6 = null;
            for (PodAddress p : a.addresses()) {
                boolean isV4 = p.address() instanceof Inet4Address;
                if (p.prefixLength() != (isV4 ? 32 : 128)) {
                    throw invalid(p.cidr() + " is not a host address (/32 or /128)");
                }
                if ((isV4 ? v4 : v6) != null) {
                    throw invalid("more than one " + (isV4 ? "IPv4" : "IPv6") + " address");
                }
                if (isV4) {
                    v4 = p;
                } else {
                    v6 = p;
                }
            }
            if (v6 != null && a.mtu() > 0 && a.mtu() < IPV6_MIN_MTU) {
                // The kernel turns IPv6 off on a link below it and refuses the address (EINVAL).
                throw invalid(
                        "mtu "
                                + a.mtu()
                                + " is below IPv6's minimum of "
                                + IPV6_MIN_MTU
                                + " bytes (RFC 8200 §5), and the pod has an IPv6 address");
            }
            return new Plan(a, v4, v6);
        }

        /** @throws DataplaneException for a name {@link #invalidName} refuses, or a negative MTU */
        static void checkNames(String hostIfname, String podIfname, int mtu)
                throws DataplaneException {
            for (String[] field :
                    new String[][] {{"podIfname", podIfname}, {"hostIfname", hostIfname}}) {
                String why = invalidName(field[1]);
                if (why != null) {
                    throw invalid(field[0] + " " + why);
                }
            }
            if (mtu < 0) {
                throw invalid("mtu " + mtu + " is negative");
            }
        }

        /** IPv4: the gateway on the link, then the default route through it; IPv6: the default route. */
        List<RouteSpec> podRoutes() {
            List<RouteSpec> routes = new ArrayList<>();
            if (v4 != null) {
                routes.add(new RouteSpec(V4_GATEWAY, 32, null));
                routes.add(new RouteSpec(V4_ANY, 0, V4_GATEWAY));
            }
            if (v6 != null) {
                routes.add(new RouteSpec(V6_ANY, 0, V6_GATEWAY));
            }
            return routes;
        }

        private static DataplaneException invalid(String why) {
            return new DataplaneException("invalid attachment: " + why);
        }
    }
}
