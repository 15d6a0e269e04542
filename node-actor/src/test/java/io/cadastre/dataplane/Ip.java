package io.cadastre.dataplane;

import io.cadastre.testsupport.Command;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Runs iproute2 for the tests: setting up namespaces and looking at what the dataplane did from
 * the outside. Tests only; product code never starts a process.
 */
final class Ip {
    private Ip() {}

    /** Runs {@code ip args...} and returns its exit code and output, failing only if it cannot start. */
    static Command.Result tryRun(String... args) {
        List<String> command = new ArrayList<>();
        command.add("ip");
        command.addAll(Arrays.asList(args));
        return tryRunCommand(command.toArray(String[]::new));
    }

    /**
     * Runs any command (e.g. {@code bridge}, {@code ip netns exec ...}) to its end (test-support's
     * {@link Command}: 30 s at most), failing only if it cannot start or outlives that.
     */
    static Command.Result tryRunCommand(String... command) {
        try {
            return Command.run(List.of(command));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Runs {@code ip args...}, failing the test unless it exits 0. @return its standard output */
    static String run(String... args) {
        Command.Result r = tryRun(args);
        if (r.exit() != 0) {
            throw new AssertionError(
                    "ip " + String.join(" ", args) + " exited " + r.exit() + ": " + r.err());
        }
        return r.out();
    }

    /** Runs any command, failing the test unless it exits 0. @return its standard output */
    static String runCommand(String... command) {
        Command.Result r = tryRunCommand(command);
        if (r.exit() != 0) {
            throw new AssertionError(
                    String.join(" ", command) + " exited " + r.exit() + ": " + r.err());
        }
        return r.out();
    }

    /** {@code ip -j args...} parsed. */
    static List<Map<String, Object>> json(String... args) {
        String[] withJ = new String[args.length + 1];
        withJ[0] = "-j";
        System.arraycopy(args, 0, withJ, 1, args.length);
        return MiniJson.parseArrayOfObjects(run(withJ));
    }

    /** @param netns null for the host */
    static boolean linkExists(String netns, String name) {
        return (netns == null
                                ? tryRun("link", "show", "dev", name)
                                : tryRun("-n", netns, "link", "show", "dev", name))
                        .exit()
                == 0;
    }

    /** @param netns null for the host */
    static Map<String, Object> link(String netns, String name) {
        List<Map<String, Object>> links =
                netns == null
                        ? json("link", "show", "dev", name)
                        : json("-n", netns, "link", "show", "dev", name);
        if (links.size() != 1) {
            throw new AssertionError("expected one link " + name + ", got " + links);
        }
        return links.get(0);
    }

    /** @return the link's non-link-local addresses as CIDRs, e.g. {@code 198.18.0.5/32} */
    @SuppressWarnings("unchecked")
    static Set<String> globalAddresses(String netns, String name) {
        Set<String> out = new LinkedHashSet<>();
        for (Map<String, Object> link : json("-n", netns, "addr", "show", "dev", name)) {
            for (Map<String, Object> a : (List<Map<String, Object>>) link.get("addr_info")) {
                if ("global".equals(a.get("scope"))) {
                    out.add(a.get("local") + "/" + a.get("prefixlen"));
                }
            }
        }
        return out;
    }

    /**
     * @param netns null for the host
     * @param family "-4" or "-6"
     * @param dev only routes through this link
     * @return the main table's routes except those the kernel adds for addresses, rendered as
     *     {@code "<dst>[ via <gateway>] dev <dev>[ scope <scope>]"}
     */
    static Set<String> routes(String netns, String family, String dev) {
        List<Map<String, Object>> all =
                netns == null
                        ? json(family, "route", "show", "table", "main")
                        : json("-n", netns, family, "route", "show", "table", "main");
        Set<String> out = new LinkedHashSet<>();
        for (Map<String, Object> r : all) {
            if ("kernel".equals(r.get("protocol")) || !dev.equals(r.get("dev"))) {
                continue;
            }
            out.add(
                    r.get("dst")
                            + (r.containsKey("gateway") ? " via " + r.get("gateway") : "")
                            + " dev "
                            + dev
                            + (r.containsKey("scope") ? " scope " + r.get("scope") : ""));
        }
        return out;
    }
}
