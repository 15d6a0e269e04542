package io.cadastre.shards;

/**
 * Marker for every message, event and snapshot that crosses the wire or the journal; bound to
 * Pekko's {@code jackson-cbor} serializer in {@code reference.conf}.
 */
public interface CborSerializable {}
