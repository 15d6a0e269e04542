package io.cadastre.node;

import io.cadastre.dataplane.WiredPod;
import io.cadastre.shards.AttachmentRecord;

/**
 * The outcome of an ADD.
 *
 * @param attachment the addresses as recorded by IPAM
 * @param pod what the dataplane configured; {@code null} for IPAM-only
 */
public record Wired(AttachmentRecord attachment, WiredPod pod) {}
