package io.cadastre.ctl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * Reading the agent's answers as JSON trees and printing them back. {@code -o json} promises the
 * server's JSON unchanged but for layout, so the trees keep what a default mapper would alter:
 * field order (kept by {@code ObjectNode}), integers of any size (an IPv6 pool's size is 2^80),
 * and decimals digit for digit.
 */
final class Json {
    static final ObjectMapper MAPPER =
            JsonMapper.builder()
                    .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                    .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
                    .build();

    /** Two-space indentation, arrays one element per line, {@code "key": value} (as jq prints). */
    private static final ObjectWriter PRETTY =
            MAPPER.writer(
                    new DefaultPrettyPrinter(
                                    Separators.createDefaultInstance()
                                            .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
                                            .withObjectEmptySeparator("")
                                            .withArrayEmptySeparator(""))
                            .withObjectIndenter(new DefaultIndenter("  ", "\n"))
                            .withArrayIndenter(new DefaultIndenter("  ", "\n")));

    private Json() {}

    /** @return {@code node} as indented JSON text, without a trailing newline */
    static String pretty(JsonNode node) {
        try {
            return PRETTY.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            // A tree read from text always writes back; this would be a bug here.
            throw new IllegalStateException(e);
        }
    }

    /** @return {@code node} as compact JSON text (request bodies) */
    static String compact(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * @param body an answer's body
     * @return the JSON value it holds, or {@code null} when it is empty or not JSON
     */
    static JsonNode parseOrNull(String body) {
        try {
            JsonNode node = MAPPER.readTree(body);
            return node == null || node.isMissingNode() ? null : node;
        } catch (JsonProcessingException e) {
            return null;
        }
    }
}
