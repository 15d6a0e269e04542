package io.cadastre.journal;

import com.typesafe.config.Config;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.apache.pekko.actor.AbstractExtensionId;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Extension;
import org.apache.pekko.actor.ExtensionIdProvider;

/**
 * The one {@link SegmentLog} of an actor system, shared by {@link EmbeddedJournal} and
 * {@link EmbeddedSnapshotStore}, opened on first use from {@code cadastre.embedded-journal}
 * ({@code dir}, {@code segment-size}, {@code compact-above}) and closed when the system
 * terminates.
 */
public final class EmbeddedStore implements Extension {
    /** The extension's id: {@code EmbeddedStore.ID.get(system)}. */
    public static final Id ID = new Id();

    private final SegmentLog log;

    private EmbeddedStore(ExtendedActorSystem system) {
        Config c = system.settings().config().getConfig("cadastre.embedded-journal");
        try {
            log = SegmentLog.open(Path.of(c.getString("dir")), c.getBytes("segment-size"), c.getBytes("compact-above"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the embedded journal in " + c.getString("dir"), e);
        }
        system.registerOnTermination(() -> {
            try {
                log.close();
            } catch (IOException e) {
                system.log().warning("closing the embedded journal: {}", e);
            }
        });
    }

    /** @return the log */
    public SegmentLog log() {
        return log;
    }

    /** The extension's id. */
    public static final class Id extends AbstractExtensionId<EmbeddedStore> implements ExtensionIdProvider {
        @Override
        public EmbeddedStore createExtension(ExtendedActorSystem system) {
            return new EmbeddedStore(system);
        }

        @Override
        public Id lookup() {
            return ID;
        }
    }
}
