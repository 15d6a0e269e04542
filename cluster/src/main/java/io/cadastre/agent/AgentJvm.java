package io.cadastre.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The agent's default JVM flags, from the launcher argument file {@code agent.jvm.options} beside
 * this class (the file {@code bin/cadastre-agent} and the image pass to {@code java @file}), for
 * code that starts an agent JVM itself (tests, benchmarks) so it runs what users get.
 */
public final class AgentJvm {
    /** The resource's name, relative to this class. */
    public static final String OPTIONS_RESOURCE = "agent.jvm.options";

    private AgentJvm() {}

    /**
     * @return the flags in file order, without comments ({@code #} to the end of a line) and blank lines
     * @throws UncheckedIOException when the resource is missing from the class path
     */
    public static List<String> defaultOptions() {
        try (InputStream in = AgentJvm.class.getResourceAsStream(OPTIONS_RESOURCE)) {
            if (in == null) {
                throw new IOException(OPTIONS_RESOURCE + " is not on the class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8)
                    .lines()
                    .map(line -> line.replaceFirst("#.*", "").strip())
                    .filter(line -> !line.isEmpty())
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
