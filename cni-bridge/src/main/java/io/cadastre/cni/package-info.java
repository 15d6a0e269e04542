/**
 * The CNI protocol, agent side: everything the C plugin ({@code cni-bridge}) forwards is parsed,
 * validated and answered here. Pure Java and Jackson, no Pekko: the transport is
 * {@code io.cadastre.http.CniSocketServer}; the work is a {@link io.cadastre.cni.CniBackend}.
 *
 * <p>Flow: {@link io.cadastre.cni.CniRequest} (headers decoded) → {@link io.cadastre.cni.CniHandler}
 * → {@link io.cadastre.cni.CniCall#validate} ({@link io.cadastre.cni.NetConf},
 * {@link io.cadastre.cni.CniArgs}, {@link io.cadastre.cni.CniVersions}, environment) → backend →
 * {@link io.cadastre.cni.CniResults} → {@link io.cadastre.cni.CniResponse}.
 *
 * <h2>Decisions on points the spec (CNI 1.1) leaves open</h2>
 *
 * <ul>
 *   <li><b>Unknown {@code CNI_ARGS} keys</b>: code 2 (unsupported field, key and value in the
 *       message) unless {@code IgnoreUnknown=1|true}, as the reference plugins refuse them;
 *       malformed pairs and a bad {@code IgnoreUnknown} value are code 4 (§Error: invalid
 *       environment variable).
 *   <li><b>DEL with an unsupported cniVersion</b>: code 1, like libcni's skeleton does for every
 *       verb. No ADD can have succeeded under that version (it was refused the same way), so there
 *       is nothing to clean up; leftovers of a config whose version was changed in between are
 *       GC's to reclaim.
 *   <li><b>DEL validation</b>: the same netconf and CNI_ARGS checks as ADD, so a DEL is never
 *       refused for input its ADD was accepted with; {@code CNI_NETNS} optional; {@code prevResult}
 *       ignored (§DEL: "should still return without error if prevResult is empty").
 *   <li><b>Missing {@code cniVersion}</b>: code 7 (libcni would read it as 0.1.0 and answer 1).
 *   <li><b>Wrong JSON types</b> (and duplicate keys, trailing garbage): code 6, "failed to decode";
 *       well-typed but invalid values: code 7.
 *   <li><b>CHECK differences</b>: {@link io.cadastre.cni.CniCodes#CHECK_FAILED} (104), one
 *       difference per line in {@code details}; the spec has no code for them.
 *   <li><b>GC without {@code cni.dev/valid-attachments}</b>: code 7, never "release everything".
 *       {@code CNI_PATH}, required by the spec for GC, is not checked: the agent never uses it.
 *   <li><b>{@code prevResult} on ADD</b>: the full plugin chains its result onto it (§ADD: MUST
 *       handle it); the IPAM role ignores it (its caller merges).
 *   <li><b>IPAM role</b>: the top-level {@code mtu} and {@code agentSocket} belong to the calling
 *       plugin and are not read; {@code ipam.routes} are appended to the result, as host-local
 *       does. The full plugin refuses {@code ipam.routes} (code 2): it installs its own routes.
 *   <li><b>{@code CNI_NETNS}</b>, when given, must be an absolute path (code 4): the agent, not the
 *       plugin process, opens it.
 *   <li><b>Requested addresses</b>: {@code IP=} (no prefix), {@code args.cni.ips} and
 *       {@code runtimeConfig.ips} (a prefix allowed and dropped), in that order (host-local's),
 *       literal IPv4/IPv6 only (never a name lookup), canonicalised and de-duplicated.
 * </ul>
 */
package io.cadastre.cni;
