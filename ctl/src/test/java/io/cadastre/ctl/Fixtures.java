package io.cadastre.ctl;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Map;

/**
 * Answers in the admin contract v1's shapes (what the fake agent serves), and a way to run the
 * real command line in-process with its output captured.
 */
final class Fixtures {
    private Fixtures() {}

    /** One run of cadastrectl: its exit code and what it printed. */
    record Run(int code, String out, String err) {}

    /** A default token file that does not exist: tests see no agent's token of this machine. */
    static final Path NO_DEFAULT_TOKEN_FILE = Path.of("/nonexistent/cadastre-ctl-test/admin.token");

    /** Runs {@code cadastrectl args} with the environment {@code env} and no default token file. */
    static Run run(Map<String, String> env, String... args) {
        return run(env, NO_DEFAULT_TOKEN_FILE, args);
    }

    /** Runs {@code cadastrectl args} with the environment {@code env} and this default token file. */
    static Run run(Map<String, String> env, Path defaultTokenFile, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code =
                Cadastrectl.execute(
                        env,
                        defaultTokenFile,
                        new PrintWriter(out, true),
                        new PrintWriter(err, true),
                        args);
        return new Run(code, out.toString(), err.toString());
    }

    /** @return the command line creating pool {@code blue} on 198.19.0.0/16, then {@code options} */
    static String[] createBlue(String... options) {
        String[] args = new String[options.length + 5];
        System.arraycopy(
                new String[] {"pool", "create", "blue", "--cidr", "198.19.0.0/16"}, 0, args, 0, 5);
        System.arraycopy(options, 0, args, 5, options.length);
        return args;
    }

    /**
     * An IPv4 pool with defaults (every node) and two excluded ranges, and an IPv6 pool with a node
     * selector whose size and block count exceed a long.
     */
    static final String POOLS =
            """
            {"pools":[
              {"name":"default-ipv4","cidr":"198.18.0.0/16","blockSize":26,"strictAffinity":false,
               "allowBorrowing":true,"maxBlocksPerNode":0,"disabled":false,"size":65536,
               "blocks":{"claimed":3,"total":1024},"allocated":130,"nodeSelector":"",
               "excluded":["198.18.0.0/28","198.18.255.0/24"]},
              {"name":"default-ipv6","cidr":"fd00:198::/48","blockSize":122,"strictAffinity":true,
               "allowBorrowing":false,"maxBlocksPerNode":4,"disabled":false,"size":1208925819614629174706176,
               "blocks":{"claimed":1,"total":18889465931478580854784},"allocated":2,
               "nodeSelector":"topology.kubernetes.io/zone in (a,b)","excluded":[]}]}
            """;

    /** The answer to creating (disabling, enabling) a pool: the Pool alone. */
    static final String POOL_BLUE =
            """
            {"name":"blue","cidr":"198.19.0.0/16","blockSize":24,"strictAffinity":true,"allowBorrowing":false,
             "maxBlocksPerNode":1,"disabled":false,"size":65536,"blocks":{"claimed":0,"total":256},"allocated":0,
             "nodeSelector":"pool=blue","excluded":["198.19.0.0/24"]}
            """;

    static final String POOL_BLUE_DISABLED =
            POOL_BLUE.replace("\"disabled\":false", "\"disabled\":true");

    static final String POOL_DELETED =
            """
            {"deleted":"blue","releasedBlocks":["198.19.0.0/24","198.19.1.0/24"]}
            """;

    /** A node removed with its addresses: one block could not be released (another node borrows in it). */
    static final String NODE_REMOVED =
            """
            {"node":"node-b","releasedBlocks":["198.18.0.64/26"],"remainingBlocks":["198.18.1.0/26"],
             "releasedAddresses":["198.18.0.70","fd00:198::46"],"remainingAllocations":1}
            """;

    static final String BLOCKS =
            """
            {"blocks":[
              {"cidr":"198.18.0.0/26","pool":"default-ipv4","affinity":"node-a","size":64,"allocated":12,
               "free":52,"borrowedBy":["node-b"]},
              {"cidr":"198.18.0.64/26","pool":"default-ipv4","affinity":"node-b","size":64,"allocated":64,
               "free":0,"borrowedBy":[]},
              {"cidr":"fd00:198::/122","pool":"default-ipv6","affinity":"node-a","size":64,"allocated":2,
               "free":62,"borrowedBy":["node-b","node-c"]}]}
            """;

    static final String NODES =
            """
            {"nodes":[
              {"name":"node-a","member":"up","affineBlocks":["198.18.0.0/26","fd00:198::/122"],
               "borrowedBlocks":[],"attachments":12,
               "labels":{"kubernetes.io/hostname":"node-a","topology.kubernetes.io/zone":"a"},"removed":false},
              {"name":"node-b","member":"absent","affineBlocks":["198.18.0.64/26"],
               "borrowedBlocks":["198.18.0.0/26"],"attachments":65,"labels":{},"removed":true}]}
            """;

    static final String NODE_A =
            """
            {"name":"node-a","member":"up","affineBlocks":["198.18.0.0/26"],"borrowedBlocks":["198.18.0.64/26"],
             "attachments":2,"labels":{"zone":"a"},"removed":false,"attachmentList":[
              {"handle":"cadastre.0123456789abcdef0123","ifname":"eth0","network":"cadastre",
               "containerId":"0123456789abcdef0123","podNamespace":"ns","podName":"p",
               "addresses":["198.18.0.3","fd00:198::3"],"createdAtMillis":1795338734951},
              {"handle":"macvlan.c2","ifname":"net1","network":"macvlan","containerId":"c2",
               "podNamespace":"","podName":"","addresses":["198.18.0.4"],"createdAtMillis":0}],
             "peer":{"mode":"cross-subnet","underlayInterface":"eth0","ipv4":"198.19.255.11/24","ipv6":"fd00:19:255::11/64",
              "vtepMac":"0e:3c:91:2a:57:d0","tunnelIpv4":"198.18.0.1","tunnelIpv6":null,"mtu":1500},
             "routing":{"mode":"cross-subnet","computedOn":"node-a","programmed":true,
              "peers":[{"node":"node-b","ipv4":"direct","ipv6":"direct","underlay":"198.19.255.12/24, fd00:19:255::12/64",
                "tunnel":null,"vtepMac":"0a:11:22:33:44:55"},
               {"node":"node-c","ipv4":"vxlan","ipv6":null,"underlay":"198.19.254.14/24","tunnel":"198.18.0.129",
                "vtepMac":"0a:66:77:88:99:aa"}],
              "routes":[{"destination":"169.254.1.1/32","type":"gateway","node":"node-a","route":"169.254.1.1/32 dev lo"},
               {"destination":"198.18.0.0/26","type":"blackhole","node":"node-a","route":"blackhole 198.18.0.0/26"},
               {"destination":"198.18.0.64/26","type":"block","node":"node-b","route":"198.18.0.64/26 via 198.19.255.12 dev eth0 onlink"},
               {"destination":"198.18.0.128/26","type":"block","node":"node-c","route":"198.18.0.128/26 via 198.18.0.129 dev cadastre.vx4 onlink"}],
              "problems":["node node-c has no IPv6 underlay address: fd00:198::80/122 on node-c is not routed"],
              "outgoingNat":"masquerade 198.18.0.0/16 except to 10.0.0.0/8, 198.18.0.0/16",
              "lastReconcile":{"atMillis":1795338734951,"summary":"added 4, removed 0, replaced 0, conflicts 0, errors 0 in 3 ms",
               "errors":[],"conflicts":[],"failure":null}}}
            """;

    static final String ADDRESS_HELD =
            """
            {"address":"198.18.0.3","pool":"default-ipv4","block":"198.18.0.0/26",
             "allocation":{"handle":"cadastre.c1","ifname":"eth0","node":"node-a","podNamespace":"ns",
              "podName":"p","allocatedAtMillis":1795338734951}}
            """;

    static final String ADDRESS_FREE =
            """
            {"address":"fd00:198::9","pool":"default-ipv6","block":"fd00:198::/122","allocation":null}
            """;

    static final String CHECK_CLEAN =
            """
            {"clean":true,"checkedAllocations":130,"checkedAttachments":65,"tookMillis":42,
             "allocationsWithoutAttachment":[],"attachmentsWithoutAllocation":[],"blocksAffineToUnknownNodes":[],
             "allocationsOfRemovedNodes":[],"routesCheckedOn":"node-a","routeFindings":[]}
            """;

    static final String CHECK_DIRTY =
            """
            {"clean":false,"checkedAllocations":130,"checkedAttachments":65,"tookMillis":42,
             "allocationsWithoutAttachment":[{"address":"198.18.0.9","block":"198.18.0.0/26",
               "allocation":{"handle":"cadastre.c9","ifname":"eth0","node":"node-a","podNamespace":"ns",
                "podName":"p9","allocatedAtMillis":1795338734951}}],
             "attachmentsWithoutAllocation":[{"node":"node-b","attachment":{"handle":"cadastre.c3","ifname":"eth0",
               "network":"cadastre","containerId":"c3","podNamespace":"ns","podName":"p3",
               "addresses":["198.18.0.70","fd00:198::46"],"createdAtMillis":1795338734951},
               "missing":["198.18.0.70"]}],
             "blocksAffineToUnknownNodes":[{"block":"198.18.1.0/26","pool":"default-ipv4","affinity":"node-x"}],
             "allocationsOfRemovedNodes":[{"address":"198.18.1.5","block":"198.18.1.0/26",
               "allocation":{"handle":"cadastre.c5","ifname":"eth0","node":"node-x","podNamespace":"ns",
                "podName":"p5","allocatedAtMillis":1795338734951}}],
             "routesCheckedOn":"node-a",
             "routeFindings":[{"block":"198.18.0.64/26","pool":"default-ipv4","affinity":"node-b","problem":"wrong-node",
               "expected":"198.18.0.64/26 via 198.19.255.12 dev eth0 onlink",
               "actual":"198.18.0.64/26 via 198.19.255.13 dev eth0 onlink proto 202","actualNode":"node-c"}]}
            """;
}
