package io.cadastre.ctl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code cadastrectl ipam ...}: pools' utilisation, the consistency check, releasing an allocation
 * by hand, and looking an address up. Each subcommand sends one request (two for
 * {@code show --show-blocks}) and prints the answer; none retries.
 */
@Command(
        name = "ipam",
        description = "Pools' utilisation, consistency check, release, address look-up.",
        subcommands = {
            IpamCommand.Show.class,
            IpamCommand.Check.class,
            IpamCommand.Release.class,
            IpamCommand.Address.class
        })
final class IpamCommand extends GroupCommand {

    /** {@code GET /v1/pools} (and {@code GET /v1/blocks} with {@code --show-blocks}). */
    @Command(
            name = "show",
            description = {
                "Every pool: claimed blocks, allocated addresses, utilisation, non-default settings.",
                "With --show-blocks, then every claimed block: its node, use and borrowers.",
                "-o json prints {\"pools\": [...]} (and \"blocks\": [...]) as the agent answered them."
            })
    static final class Show extends Subcommand {
        @Option(
                names = "--show-blocks",
                description = "Also list the claimed blocks, one row each.")
        boolean showBlocks;

        @Override
        public Integer call() {
            Cadastrectl ctl = ctl();
            AdminClient client = ctl.client();
            JsonNode pools = client.get("/v1/pools");
            JsonNode blocks = showBlocks ? client.get("/v1/blocks") : null;
            if (ctl.json()) {
                // Two answers, one document: both are objects with distinct keys ("pools",
                // "blocks").
                ObjectNode merged = pools.deepCopy();
                if (blocks != null) {
                    merged.setAll((ObjectNode) blocks);
                }
                ctl.printJson(merged);
            } else {
                ctl.print(
                        Views.poolUsage(pools)
                                + (blocks == null ? "" : "\n" + Views.blocks(blocks)));
            }
            return Cadastrectl.EXIT_OK;
        }
    }

    /** {@code GET /v1/check}. */
    @Command(
            name = "check",
            description = {
                "Cross-checks blocks' allocations against nodes' attachments (a snapshot).",
                "Exit 0 when clean, 1 when not; -o json prints the report and exits the same way."
            })
    static final class Check extends Subcommand {
        @Override
        public Integer call() {
            JsonNode report = client().get("/v1/check");
            // Decide before printing: a report without a verdict is an error (exit 2), not output.
            boolean clean = Views.clean(report);
            print(report, Views::check);
            return clean ? Cadastrectl.EXIT_OK : Cadastrectl.EXIT_NOT_CLEAN;
        }
    }

    /** {@code POST /v1/release}. */
    @Command(
            name = "release",
            description = {
                "Frees one address, or every address of one attachment (node, handle, interface).",
                "Idempotent: releasing what is not held prints that nothing was released."
            })
    static final class Release extends Subcommand {
        @ArgGroup(exclusive = true, multiplicity = "1")
        Target target;

        static final class Target {
            @Option(
                    names = "--address",
                    paramLabel = "IP",
                    required = true,
                    converter = IpLiteral.Converter.class,
                    description = "The address to free; its holder's node forgets the attachment.")
            String address;

            @ArgGroup(exclusive = false, multiplicity = "1")
            Attachment attachment;
        }

        static final class Attachment {
            @Option(
                    names = "--node",
                    paramLabel = "NODE",
                    required = true,
                    description = "The node holding the attachment.")
            String node;

            @Option(
                    names = "--handle",
                    paramLabel = "HANDLE",
                    required = true,
                    description = "The allocation handle (network.containerId, e.g. cadastre.c1).")
            String handle;

            @Option(
                    names = "--ifname",
                    paramLabel = "IFNAME",
                    defaultValue = "eth0",
                    description = "The pod's interface (default: ${DEFAULT-VALUE}).")
            String ifname;
        }

        @Override
        public Integer call() {
            ObjectNode body = Json.MAPPER.createObjectNode();
            if (target.address != null) {
                body.put("address", target.address);
            } else {
                Attachment a = target.attachment;
                body.put("node", nonBlank("--node", a.node))
                        .put("handle", nonBlank("--handle", a.handle))
                        .put("ifname", nonBlank("--ifname", a.ifname));
            }
            return print(client().post("/v1/release", body), Views::released);
        }
    }

    /** {@code GET /v1/addresses/{address}}. */
    @Command(name = "address", description = "Shows an address's pool and block, and who holds it.")
    static final class Address extends Subcommand {
        @Parameters(
                paramLabel = "IP",
                converter = IpLiteral.Converter.class,
                description = "An IPv4 or IPv6 address.")
        String address;

        @Override
        public Integer call() {
            return print(
                    client().get("/v1/addresses/" + AdminClient.segment(address)), Views::address);
        }
    }
}
